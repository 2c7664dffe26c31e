package io.polylock.spring;

import io.polylock.DistributedLock;
import io.polylock.PolylockClient;
import io.polylock.UnsupportedException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * ShedLock's {@link LockProvider} on polylock, so that {@code @SchedulerLock} tasks take polylock
 * locks. On a lease-table URL ({@code mysql://...?mode=table}, {@code postgres://...?mode=table})
 * it is ShedLock's own table format: the row of the task's name, with {@code lock_until} the lease,
 * so ShedLock's JDBC provider and this one exclude each other on the same table. Elsewhere (Redis,
 * ZooKeeper, etcd, SQL session locks) it is the lock of the task's name.
 *
 * <p>A lock is one attempt, held for {@code lockAtMostFor} (a fixed lease; where the backend has
 * no leases, the session holds it and the watchdog keeps it until it is unlocked). Its hold
 * belongs to the {@link SimpleLock}, not to a thread, so a second run on the same scheduler thread
 * is refused while the first holds. Unlocked before {@code lockAtLeastFor} ran out, the lock is
 * released when it runs out (the lease still covers it), as ShedLock's providers keep a lock until
 * {@code lockAtLeastUntil}.
 */
public class PolylockLockProvider implements LockProvider, AutoCloseable {
    private final PolylockClient client;
    private final String prefix;
    private final ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "polylock-shedlock");
        t.setDaemon(true);
        return t;
    });

    /** Locks of {@code client} named {@code prefix + name} ({@code ""}: the task's name itself). */
    public PolylockLockProvider(PolylockClient client, String prefix) {
        this.client = Objects.requireNonNull(client, "client");
        this.prefix = Objects.requireNonNull(prefix, "prefix");
    }

    /** Locks named as the tasks are (ShedLock's table rows). */
    public PolylockLockProvider(PolylockClient client) {
        this(client, "");
    }

    @Override
    public Optional<SimpleLock> lock(LockConfiguration config) {
        DistributedLock lock = client.getLock(prefix + config.getName());
        long atMost = Math.max(1, config.getLockAtMostFor().toMillis());
        DistributedLock.Hold hold;
        try {
            try {
                hold = lock.tryHoldForAnyThread(0, atMost, TimeUnit.MILLISECONDS);
            } catch (UnsupportedException sessionHoldsIt) {
                hold = lock.tryHoldForAnyThread(0, -1, TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
        if (hold == null) {
            return Optional.empty();
        }
        DistributedLock.Hold held = hold;
        Instant atLeastUntil = config.getLockAtLeastUntil();
        return Optional.of(() -> {
            Duration left = Duration.between(Instant.now(), atLeastUntil);
            if (left.isNegative() || left.isZero()) {
                held.close();
            } else {
                later.schedule(held::close, left.toMillis(), TimeUnit.MILLISECONDS);
            }
        });
    }

    /** Stop the timer of pending releases (their leases end them). */
    @Override
    public void close() {
        later.shutdownNow();
    }
}
