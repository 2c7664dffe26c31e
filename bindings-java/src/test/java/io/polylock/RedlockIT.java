package io.polylock;

import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * RedLock over the three independent masters of scripts/servers.sh (POLYLOCK_REDLOCK_URLS), each
 * master read directly.
 */
class RedlockIT {
    private static List<String> urls;
    private static List<Peek> masters;

    @BeforeAll
    static void peekAtEachMaster() {
        String env = System.getenv("POLYLOCK_REDLOCK_URLS");
        if (env == null || env.isEmpty()) {
            env = "redis://127.0.0.1:6381,redis://127.0.0.1:6382,redis://127.0.0.1:6383";
        }
        urls = Arrays.asList(env.split(","));
        masters = new ArrayList<>();
        for (String u : urls) {
            masters.add(new Peek(u));
        }
    }

    @AfterAll
    static void close() {
        for (Peek p : masters) {
            p.close();
        }
    }

    private static String[] all() {
        return urls.toArray(new String[0]);
    }

    @Test
    void fourThreadsOnTwoRedlockClientsKeepACounterExact() throws Exception {
        String name = unique("redlock-counter");
        int threads = 4;
        int rounds = 25;
        int[] count = {0};
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        long t0 = System.nanoTime();
        try (PolylockClient one = Polylock.connectRedlock(all());
                PolylockClient two = Polylock.connectRedlock(urls, new Polylock.Options().watchdogTimeout(Duration.ofSeconds(5)))) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int i = 0; i < threads; i++) {
                    DistributedLock lock = (i % 2 == 0 ? one : two).getLock(name);
                    done.add(pool.submit(() -> {
                        for (int round = 0; round < rounds; round++) {
                            lock.lock();
                            try {
                                if (inside.incrementAndGet() > 1) {
                                    overlaps.incrementAndGet();
                                }
                                int v = count[0];
                                Thread.sleep(1);
                                count[0] = v + 1;
                                inside.decrementAndGet();
                            } finally {
                                lock.unlock();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(120, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.out.printf("RedLock over %d masters: %d rounds on %d threads of two clients in %d ms, %d overlaps%n",
                urls.size(), count[0], threads, ms, overlaps.get());
        assertEquals(threads * rounds, count[0], "the non-atomic counter is exact");
        assertEquals(0, overlaps.get());
        for (int i = 0; i < masters.size(); i++) {
            assertEquals(0, masters.get(i).exists(name), "released on " + urls.get(i));
        }
    }

    @Test
    void heldOnEveryMasterWhileHeldAndReleasedOnEachAfter() throws Exception {
        String name = unique("redlock-each");
        try (PolylockClient c = Polylock.connectRedlock(urls, new Polylock.Options());
                PolylockClient other = Polylock.connectRedlock(all())) {
            DistributedLock lock = c.getLock(name);
            lock.lock();
            String field = c.getId() + ":" + PolylockClient.currentOwner();
            for (int i = 0; i < masters.size(); i++) {
                assertEquals(Map.of(field, "1"), masters.get(i).hash(name), "Redisson's RLock hash on " + urls.get(i));
            }
            assertTrue(lock.getFencingToken() > 0);
            assertTrue(lock.isLocked());
            long ttl = lock.remainTimeToLive();
            assertTrue(ttl > 0 && ttl <= 30_000, "the watchdog lease: " + ttl);
            // Re-entries are counted by the client: one field, count 1, on each master.
            lock.lock();
            assertEquals(2, lock.getHoldCount());
            for (Peek m : masters) {
                assertEquals(Map.of(field, "1"), m.hash(name));
            }
            DistributedLock theirs = other.getLock(name);
            assertFalse(Servers.<Boolean>onOtherThread(() -> theirs.tryLock(300, TimeUnit.MILLISECONDS)),
                    "another RedLock client is excluded");
            assertFalse(Servers.<Boolean>onOtherThread(lock::tryLock), "another thread is excluded");
            lock.unlock();
            for (Peek m : masters) {
                assertEquals(1, m.exists(name), "still held after the first of two releases");
            }
            lock.unlock();
            for (int i = 0; i < masters.size(); i++) {
                assertEquals(0, masters.get(i).exists(name), "released on " + urls.get(i));
            }
            assertFalse(lock.isLocked());
            assertTrue(Servers.<Boolean>onOtherThread(() -> {
                boolean got = theirs.tryLock(5, TimeUnit.SECONDS);
                if (got) {
                    theirs.unlock();
                }
                return got;
            }), "the other client gets it once released");
        }
    }

    @Test
    void badInputGetsTypedExceptions() throws Exception {
        String a = urls.get(0);
        String b = urls.get(1);
        assertThrows(IllegalArgumentException.class, () -> Polylock.connectRedlock(a, b), "two masters");
        assertThrows(IllegalArgumentException.class, () -> Polylock.connectRedlock(), "none");
        assertThrows(IllegalArgumentException.class, () -> Polylock.connectRedlock(a, b, a), "a master twice");
        assertThrows(IllegalArgumentException.class, () -> Polylock.connectRedlock(a, b, Servers.zkUrl()), "not Redis");
        assertThrows(NullPointerException.class, () -> Polylock.connectRedlock((String[]) null));
        assertThrows(NullPointerException.class, () -> Polylock.connectRedlock(a, null, b));
        assertThrows(NullPointerException.class, () -> Polylock.connectRedlock(null, new Polylock.Options()));
        assertThrows(NullPointerException.class, () -> Polylock.connectRedlock(urls, null));
        long t0 = System.nanoTime();
        PolylockConnectionException down = assertThrows(PolylockConnectionException.class,
                () -> Polylock.connectRedlock(a, "redis://127.0.0.1:1", "redis://127.0.0.1:2"));
        assertEquals(PolylockException.Code.CONNECTION, down.getCode());
        System.out.printf("RedLock with a majority of masters down: %s after %d ms (%s)%n", down.getClass().getSimpleName(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0), down.getMessage());

        try (PolylockClient c = Polylock.connectRedlock(all())) {
            String name = unique("redlock-kinds");
            assertThrows(UnsupportedOperationException.class, () -> c.getFairLock(name));
            assertThrows(UnsupportedOperationException.class, () -> c.getReadWriteLock(name));
            assertThrows(UnsupportedOperationException.class, () -> c.getSemaphore(name));
            assertThrows(UnsupportedOperationException.class, () -> c.getPermitExpirableSemaphore(name));
            assertThrows(UnsupportedOperationException.class, () -> c.getCountDownLatch(name));
            assertThrows(UnsupportedOperationException.class, () -> c.getMutex(name));
            // The RedLock itself works beside the refusals.
            DistributedLock lock = c.getLock(name);
            assertTrue(lock.tryLock());
            lock.unlock();
        }
    }
}
