package io.polylock.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.DistributedLock;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** {@link DistributedLocked} through the auto-configured client and aspect, on the real Redis. */
@SpringBootTest(classes = TestApp.class)
class DistributedLockedTest {
    /** Another process's view: a client of its own, as a second instance of the service would have. */
    private static PolylockClient other;

    @Autowired
    private LockedService service;

    @Autowired
    private PolylockClient client;

    private final ExecutorService pool = Executors.newCachedThreadPool();

    @BeforeAll
    static void connectOther() {
        other = Polylock.connect(RedisProbe.URL);
    }

    @AfterAll
    static void closeOther() {
        other.close();
    }

    @AfterEach
    void stopPool() throws InterruptedException {
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    }

    private static String freshKey(String what) {
        return "spring-test:" + what + ":" + UUID.randomUUID();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aNamedBackendLocksOnItsOwnServer() throws Exception {
        // polylock.backends.zk: the ZooKeeper of scripts/servers.sh; the key is a znode path.
        String id = UUID.randomUUID().toString();
        AtomicBoolean checked = new AtomicBoolean();
        try (PolylockClient zk = Polylock.connect(System.getenv().getOrDefault("POLYLOCK_ZK_URL",
                "zk://127.0.0.1:2181"))) {
            service.onZooKeeper(id, () -> {
                assertTrue(zk.getLock("/spring-test/" + id).isLocked(), "held on ZooKeeper");
                assertFalse(other.getLock("/spring-test/" + id).isLocked(), "not on the Redis");
                checked.set(true);
            });
            assertTrue(checked.get());
            assertFalse(zk.getLock("/spring-test/" + id).isLocked(), "released after the call");
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> service.onAnUnknownBackend(freshKey("nowhere"), () -> { }));
        assertTrue(e.getMessage().contains("polylock.backends.nowhere"), e.getMessage());
    }

    @Test
    void theKeyFillsFromTheArgumentsAndIsHeldInside() throws Exception {
        String orderId = UUID.randomUUID().toString();
        String name = "order:" + orderId;
        AtomicBoolean checked = new AtomicBoolean();
        String result = service.byOrder(orderId, () -> {
            assertTrue(other.getLock(name).isLocked(), "another client sees the lock held");
            try {
                assertEquals(1, RedisProbe.exists(name), "the Redis key exists");
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
            assertFalse(other.getLock("order:" + orderId + "x").isLocked());
            assertTrue(client.getLock(name).isHeldByCurrentThread(), "held by the calling thread");
            checked.set(true);
            return "done " + orderId;
        });
        assertTrue(checked.get());
        assertEquals("done " + orderId, result, "the method's value comes back");
        assertFalse(other.getLock(name).isLocked(), "released after the call");
        assertEquals(0, RedisProbe.exists(name));
    }

    @Test
    void callsWithTheSameKeyExcludeEachOther() throws Exception {
        String key = freshKey("same");
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        AtomicInteger runs = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(3);
        List<Future<?>> calls = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            calls.add(pool.submit(() -> {
                start.await(5, TimeUnit.SECONDS);
                service.run(key, () -> {
                    maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                    sleep(250);
                    inside.decrementAndGet();
                    runs.incrementAndGet();
                });
                return null;
            }));
        }
        long t0 = System.nanoTime();
        for (Future<?> f : calls) {
            f.get(30, TimeUnit.SECONDS);
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(3, runs.get(), "every call ran");
        assertEquals(1, maxInside.get(), "never two inside at once");
        assertTrue(ms >= 700, "three 250 ms bodies ran one after another: " + ms + " ms");
    }

    @Test
    void callsWithDifferentKeysRunTogether() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        CountDownLatch bothInside = new CountDownLatch(2);
        List<Future<Boolean>> calls = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            String key = freshKey("different-" + i);
            calls.add(pool.submit(() -> {
                AtomicBoolean met = new AtomicBoolean();
                service.run(key, () -> {
                    maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                    bothInside.countDown();
                    try {
                        met.set(bothInside.await(10, TimeUnit.SECONDS));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    inside.decrementAndGet();
                });
                return met.get();
            }));
        }
        for (Future<Boolean> f : calls) {
            assertTrue(f.get(30, TimeUnit.SECONDS), "each call saw the other one inside");
        }
        assertEquals(2, maxInside.get());
    }

    @Test
    void anExceptionInsideReleasesTheLock() {
        String key = freshKey("throws");
        IllegalStateException boom = new IllegalStateException("boom");
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> service.run(key, () -> {
            assertTrue(other.getLock(key).isLocked());
            throw boom;
        }));
        assertSame(boom, thrown, "the method's own exception comes through");
        assertEquals(0, thrown.getSuppressed().length);
        assertFalse(other.getLock(key).isLocked(), "released");
        DistributedLock again = other.getLock(key);
        assertTrue(again.tryLock(), "another client takes it at once");
        again.unlock();
    }

    @Test
    void skipIfLockedSkipsWhileAnotherHolderHasTheKey() {
        String key = freshKey("skip");
        AtomicInteger ran = new AtomicInteger();
        DistributedLock held = other.getLock(key);
        held.lock();
        try {
            long t0 = System.nanoTime();
            assertNull(service.skipping(key, () -> "ran " + ran.incrementAndGet()));
            assertEquals(Optional.empty(), service.skippingOptional(key, () -> "ran " + ran.incrementAndGet()));
            assertEquals(0, service.skippingInt(key, ran::incrementAndGet));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals(0, ran.get(), "no body ran");
            assertTrue(ms < 2000, "skipping does not wait: " + ms + " ms");
        } finally {
            held.unlock();
        }
        assertEquals("ran 1", service.skipping(key, () -> "ran " + ran.incrementAndGet()));
        assertEquals(Optional.of("ran 2"), service.skippingOptional(key, () -> "ran " + ran.incrementAndGet()));
        assertFalse(other.getLock(key).isLocked());
    }

    @Test
    void aBoundedWaitThrowsLockNotAcquiredInTime() {
        String key = freshKey("bounded");
        AtomicBoolean ran = new AtomicBoolean();
        DistributedLock held = other.getLock(key);
        held.lock();
        try {
            long t0 = System.nanoTime();
            LockNotAcquiredException e = assertThrows(LockNotAcquiredException.class,
                    () -> service.bounded(key, () -> ran.set(true)));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals(key, e.getLockName());
            assertFalse(ran.get(), "the method did not run");
            assertTrue(ms >= 250 && ms < 3000, "gave up after its 300 ms wait: " + ms + " ms");
        } finally {
            held.unlock();
        }
        service.bounded(key, () -> ran.set(true));
        assertTrue(ran.get(), "runs once the lock is free");
    }

    @Test
    void theDefaultWaitsUntilTheHolderReleases() throws Exception {
        String key = freshKey("wait");
        CountDownLatch holding = new CountDownLatch(1);
        Future<?> holder = pool.submit(() -> {
            DistributedLock l = other.getLock(key);
            l.lock();
            holding.countDown();
            sleep(800);
            l.unlock();
            return null;
        });
        assertTrue(holding.await(10, TimeUnit.SECONDS));
        long t0 = System.nanoTime();
        AtomicBoolean ran = new AtomicBoolean();
        service.run(key, () -> ran.set(!other.getLock(key).isHeldByCurrentThread()));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        holder.get(10, TimeUnit.SECONDS);
        assertTrue(ran.get());
        assertTrue(ms >= 500, "waited for the holder: " + ms + " ms");
    }

    @Test
    void leaseTimeGivesAFixedLeaseAndTheDefaultTheWatchdog() {
        String key = freshKey("lease");
        AtomicLong leasedTtl = new AtomicLong();
        AtomicLong watchdogTtl = new AtomicLong();
        service.leased(key, () -> leasedTtl.set(other.getLock(key).remainTimeToLive()));
        service.run(key, () -> watchdogTtl.set(other.getLock(key).remainTimeToLive()));
        assertTrue(leasedTtl.get() > 0 && leasedTtl.get() <= 3000, "a 3 s lease: " + leasedTtl.get());
        assertTrue(watchdogTtl.get() > 3000 && watchdogTtl.get() <= 30_000,
                "the default 30 s watchdog lease: " + watchdogTtl.get());
    }

    @Test
    void fairTakesTheFairLockAndQueuesTheWaiter() throws Exception {
        String key = freshKey("fair");
        String queue = "redisson_lock_queue:{" + key + "}";
        DistributedLock held = other.getLock(key);
        held.lock();
        AtomicBoolean ran = new AtomicBoolean();
        Future<?> call;
        try {
            call = pool.submit(() -> service.fair(key, () -> ran.set(true)));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (RedisProbe.llen(queue) != 1 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(1, RedisProbe.llen(queue), "the waiter queued in the fair lock's queue");
            assertFalse(ran.get());
        } finally {
            held.unlock();
        }
        call.get(10, TimeUnit.SECONDS);
        assertTrue(ran.get());
        assertEquals(0, RedisProbe.llen(queue));
    }

    @Test
    void aNestedCallWithTheSameKeyReenters() {
        String key = freshKey("nested");
        AtomicInteger holdCount = new AtomicInteger();
        service.run(key, () -> service.bounded(key, () -> holdCount.set(client.getLock(key).getHoldCount())));
        assertEquals(2, holdCount.get(), "held twice by the thread inside the inner call");
        assertFalse(other.getLock(key).isLocked(), "both holds released");
    }

    @Test
    void aKeyThatEvaluatesToNullIsRejected() {
        AtomicBoolean ran = new AtomicBoolean();
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> service.run(null, () -> ran.set(true)));
        assertTrue(e.getMessage().contains("#key"), e.getMessage());
        assertFalse(ran.get());
    }
}
