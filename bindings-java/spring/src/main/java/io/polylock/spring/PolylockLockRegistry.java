package io.polylock.spring;

import io.polylock.DistributedLock;
import io.polylock.PolylockClient;
import java.util.Objects;
import java.util.concurrent.locks.Lock;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * Spring Integration's {@link LockRegistry} on polylock: {@link #obtain(Object)} hands out the
 * distributed lock of {@code prefix + key}, a {@link DistributedLock} (a {@link Lock} reentrant per
 * thread, kept alive by the watchdog while the client lives), so that {@code @ServiceActivator}
 * flows, aggregators ({@code setLockRegistry}), {@code LockRegistryLeaderInitiator} and every other
 * lock user of Spring Integration take polylock locks, on any backend: Redis, ZooKeeper (give a
 * path prefix such as {@code "/spring-integration/"}), etcd, MySQL or PostgreSQL.
 *
 * <p>The starter makes one from the {@link PolylockClient} bean when Spring Integration is on the
 * class path and the application has no {@link LockRegistry} of its own (prefix {@code
 * polylock.integration.prefix}, default {@code "spring-integration:"}).
 */
public class PolylockLockRegistry implements LockRegistry {
    private final PolylockClient client;
    private final String prefix;

    /** Locks of {@code client} named {@code prefix + key}. */
    public PolylockLockRegistry(PolylockClient client, String prefix) {
        this.client = Objects.requireNonNull(client, "client");
        this.prefix = Objects.requireNonNull(prefix, "prefix");
    }

    /** Locks named {@code "spring-integration:" + key}. */
    public PolylockLockRegistry(PolylockClient client) {
        this(client, "spring-integration:");
    }

    /**
     * The lock of {@code lockKey} ({@code String.valueOf(lockKey)} after the prefix). Cheap: a
     * handle's native lock is freed when it is unreachable, and two handles of one name are one
     * lock for each thread.
     */
    @Override
    public Lock obtain(Object lockKey) {
        Objects.requireNonNull(lockKey, "lockKey");
        return client.getLock(prefix + lockKey);
    }

    /** The name prefix of this registry's locks. */
    public String getPrefix() {
        return prefix;
    }
}
