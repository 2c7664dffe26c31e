package io.polylock.spring;

import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Service;

/** A job that runs only on the leader of its election. */
@Service
public class LeaderService {
    static final String ELECTION = "spring-test:leader-job";

    private final AtomicInteger runs = new AtomicInteger();

    /** How many times the job ran (a method: the bean the test gets is a proxy). */
    public int runs() {
        return runs.get();
    }

    @LeaderOnly(ELECTION)
    public Integer job() {
        return runs.incrementAndGet();
    }
}
