package io.polylock.spring;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;

/** The application of the tests: auto-configuration (polylock's included), {@link LockedService} and {@link LeaderService}. */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({LockedService.class, LeaderService.class})
public class TestApp {}
