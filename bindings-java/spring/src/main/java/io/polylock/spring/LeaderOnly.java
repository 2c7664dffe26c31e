package io.polylock.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Run the method only on the leader of the election {@link #value()}: the instance of the service
 * whose polylock leader latch leads (Curator's LeaderLatch on ZooKeeper, etcd's election, a
 * Redisson lock plus a leader record on Redis). On the others the call returns at once with what
 * {@link DistributedLocked#skipIfLocked()} returns (null, an empty Optional, 0 or false). The
 * typical use is a scheduled job that must run on one instance:
 *
 * <pre>{@code
 * @Scheduled(fixedRate = 60_000)
 * @LeaderOnly("nightly-report")
 * public void report() { ... }
 * }</pre>
 *
 * <p>The first call on an instance starts its candidacy (one latch per election and instance,
 * campaigning in the background and again after a lost leadership, closed with the context), so
 * that call and any made before the latch is elected are skipped. The candidate's id is {@code
 * polylock.leader-id}, else {@code spring.application.name} with the host and process id.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface LeaderOnly {
    /** The election's name (a ZooKeeper path on ZooKeeper). */
    String value();

    /** A named backend of {@code polylock.backends}; empty: the default client. */
    String backend() default "";
}
