package io.polylock.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.polylock.DistributedLock;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** What {@link PolylockAutoConfiguration} creates, on the real Redis. */
class AutoConfigurationTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(PolylockAutoConfiguration.class, AopAutoConfiguration.class));

    @Test
    void aClientFromTheUrlClosedWithTheContext() {
        AtomicReference<PolylockClient> seen = new AtomicReference<>();
        runner.withPropertyValues("polylock.url=" + RedisProbe.URL, "polylock.watchdog-timeout=1s").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(PolylockClient.class)
                    .hasSingleBean(DistributedLockedAspect.class);
            PolylockClient client = context.getBean(PolylockClient.class);
            seen.set(client);
            DistributedLock lock = client.getLock("spring-test:auto:" + UUID.randomUUID());
            lock.lock();
            try {
                assertThat(lock.remainTimeToLive()).as("watchdog-timeout=1s is the lease").isBetween(1L, 1000L);
            } finally {
                lock.unlock();
            }
            assertThat(client.isClosed()).isFalse();
        });
        assertThat(seen.get()).isNotNull();
        assertThat(seen.get().isClosed()).as("closed on context shutdown").isTrue();
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnClient {
        static final PolylockClient CLIENT = Polylock.connect(RedisProbe.URL);

        @Bean
        PolylockClient myClient() {
            return CLIENT;
        }
    }

    @Test
    void aClientOfTheApplicationIsUsedInstead() {
        runner.withUserConfiguration(OwnClient.class).run(context -> {
            // No polylock.url: the auto-configured client would fail without it.
            assertThat(context).hasNotFailed().hasSingleBean(PolylockClient.class)
                    .hasSingleBean(DistributedLockedAspect.class);
            assertThat(context.getBean(PolylockClient.class)).isSameAs(OwnClient.CLIENT);
        });
    }

    @Test
    void withoutAUrlTheContextFailsWithAClearMessage() {
        runner.run(context -> assertThat(context).hasFailed().getFailure()
                .rootCause().hasMessageContaining("polylock.url is not set"));
    }

    @Test
    void disabledConfiguresNothing() {
        runner.withPropertyValues("polylock.enabled=false", "polylock.url=" + RedisProbe.URL).run(context -> {
            assertThat(context).hasNotFailed().doesNotHaveBean(PolylockClient.class)
                    .doesNotHaveBean(DistributedLockedAspect.class);
        });
    }
}
