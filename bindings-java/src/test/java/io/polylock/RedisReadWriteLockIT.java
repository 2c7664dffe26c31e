package io.polylock;

import static io.polylock.Servers.onOtherThread;
import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The read-write lock on the real Redis (Redisson's RReadWriteLock format). */
class RedisReadWriteLockIT extends ReadWriteLockCases {
    /** The short watchdog of the renewal and loss tests: renewed every 200 ms. */
    private static final Duration QUICK = Duration.ofMillis(600);

    @Override
    String url() {
        return Servers.redisUrl();
    }

    @Override
    String name(String prefix) {
        return unique("rw-" + prefix);
    }

    @Override
    PolylockClient holderClient() {
        // A short watchdog, so that its next renewal (a third of it) finds a deleted hold soon.
        return Polylock.connect(url(), new Polylock.Options().watchdogTimeout(QUICK));
    }

    @Test
    void theWatchdogKeepsAReadHoldPastItsLease() throws Exception {
        try (PolylockClient quick = holderClient()) {
            String name = name("watchdog");
            DistributedReadWriteLock rw = quick.getReadWriteLock(name);
            DistributedLock r = rw.readLock();
            r.lock();
            long ttl = r.remainTimeToLive();
            assertTrue(ttl > 0 && ttl <= QUICK.toMillis(), "the watchdog lease, got " + ttl);
            Thread.sleep(4 * QUICK.toMillis());
            assertTrue(r.isHeldByCurrentThread(), "renewed past four leases");
            assertFalse(r.isLost());
            ttl = r.remainTimeToLive();
            assertTrue(ttl > 0 && ttl <= QUICK.toMillis(), "renewed to the watchdog lease, got " + ttl);
            assertFalse(Servers.<Boolean>onOtherThread(() -> client.getReadWriteLock(name).writeLock().tryLock()),
                    "the kept read hold still excludes writers");
            r.unlock();
            assertFalse(r.isLocked());
            assertEquals(-2, r.remainTimeToLive());
        }
    }

    @Test
    void aFixedLeaseOnTheReadLockExpiresAndItsListenerHears() throws Exception {
        DistributedReadWriteLock rw = client.getReadWriteLock(name("read-lease"));
        DistributedLock r = rw.readLock();
        BlockingQueue<Exception> heard = new ArrayBlockingQueue<>(4);
        r.addListener((l, e) -> heard.add(e));
        r.lock(300, TimeUnit.MILLISECONDS);
        long ttl = r.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= 300, "fixed lease, got " + ttl);
        assertNotNull(heard.poll(5, TimeUnit.SECONDS), "the read half's listener heard of the expiry");
        assertThrows(LockLostException.class, r::unlock);
        assertTrue(onOtherThread(() -> {
            // The client declares a fixed lease lost up to a round trip before the server drops
            // it: wait for the key to go rather than try once.
            boolean got = rw.writeLock().tryLock(2, TimeUnit.SECONDS);
            if (got) {
                rw.writeLock().unlock();
            }
            return got;
        }), "free for a writer once the lease ran out");
    }

    @Test
    void noMutexOnRedisEvenBesideAReadWriteLock() {
        assertThrows(UnsupportedOperationException.class, () -> client.getMutex("/rw"));
        assertThrows(IllegalArgumentException.class, () -> client.getReadWriteLock(name("x")).writeLock()
                .lock(Long.MAX_VALUE, TimeUnit.DAYS), "too long");
    }
}
