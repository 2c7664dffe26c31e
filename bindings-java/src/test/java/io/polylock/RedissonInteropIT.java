package io.polylock;

import static io.polylock.Servers.cli;
import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/** polylock and the real Redisson (3.x) on the same lock names, in one JVM. */
class RedissonInteropIT {
    private static RedissonClient redisson;
    private static PolylockClient polylock;

    @BeforeAll
    static void connect() {
        Config config = new Config();
        config.useSingleServer().setAddress(Servers.redisAddress());
        redisson = Redisson.create(config);
        polylock = Polylock.connect(Servers.redisUrl());
    }

    @AfterAll
    static void close() {
        polylock.close();
        redisson.shutdown();
    }

    /** Run {@code work} on a new thread (both libraries own locks per thread). */
    private static Thread spawn(Runnable work) {
        Thread t = new Thread(work, "interop-other");
        t.start();
        return t;
    }

    @Test
    void eachExcludesTheOther() throws Exception {
        String name = unique("redisson-excl");
        RLock r = redisson.getLock(name);
        DistributedLock p = polylock.getLock(name);
        p.lock();
        assertTrue(r.isLocked(), "Redisson sees polylock's hold");
        assertFalse(Servers.<Boolean>onOtherThread(() -> r.tryLock(100, TimeUnit.MILLISECONDS)));
        p.unlock();
        r.lock();
        assertTrue(p.isLocked(), "polylock sees Redisson's hold");
        assertFalse(Servers.<Boolean>onOtherThread(p::tryLock));
        assertFalse(Servers.<Boolean>onOtherThread(() -> p.tryLock(100, TimeUnit.MILLISECONDS)));
        long ttl = p.remainTimeToLive();
        assertTrue(ttl > 20_000 && ttl <= 30_000, "Redisson's 30 s watchdog lease, read by polylock: " + ttl);
        r.unlock();
        assertFalse(p.isLocked());
    }

    @Test
    void aPolylockReleaseWakesAWaitingRedissonLockAndViceVersa() throws Exception {
        String name = unique("redisson-wake");
        DistributedLock p = polylock.getLock(name);
        RLock r = redisson.getLock(name);
        List<Long> wakeMs = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            // polylock holds, Redisson's lock() waits on its pub/sub channel.
            p.lock();
            AtomicLong got = new AtomicLong();
            CountDownLatch waiting = new CountDownLatch(1);
            Thread t = spawn(() -> {
                waiting.countDown();
                r.lock();
                got.set(System.nanoTime());
                r.unlock();
            });
            waiting.await();
            Thread.sleep(200);
            assertEquals(0, got.get(), "Redisson waits while polylock holds");
            long released = System.nanoTime();
            p.unlock();
            t.join(10_000);
            assertTrue(got.get() != 0, "Redisson got the lock");
            long redissonWoke = TimeUnit.NANOSECONDS.toMillis(got.get() - released);

            // Redisson holds, polylock's lock() waits.
            r.lock();
            AtomicLong got2 = new AtomicLong();
            CountDownLatch waiting2 = new CountDownLatch(1);
            Thread t2 = spawn(() -> {
                waiting2.countDown();
                p.lock();
                got2.set(System.nanoTime());
                p.unlock();
            });
            waiting2.await();
            Thread.sleep(200);
            assertEquals(0, got2.get(), "polylock waits while Redisson holds");
            long released2 = System.nanoTime();
            r.unlock();
            t2.join(10_000);
            assertTrue(got2.get() != 0, "polylock got the lock");
            long polylockWoke = TimeUnit.NANOSECONDS.toMillis(got2.get() - released2);
            wakeMs.add(redissonWoke);
            wakeMs.add(polylockWoke);
            System.out.printf("interop wake-up: Redisson after a polylock release %d ms, polylock after a Redisson release %d ms%n",
                    redissonWoke, polylockWoke);
        }
        // A wake by notification takes milliseconds; a missed one would take the 30 s lease.
        WakeUps.assertNotified(wakeMs);
    }

    @Test
    void holdCountsAndForceUnlockBehaveAlike() throws Exception {
        String name = unique("redisson-counts");
        RLock r = redisson.getLock(name);
        DistributedLock p = polylock.getLock(name);
        String other = unique("redisson-counts-p");
        DistributedLock p2 = polylock.getLock(other);
        RLock r2 = redisson.getLock(other);
        // Both count re-entries the same way: one hash field per owner, the count as its value.
        for (int i = 1; i <= 3; i++) {
            r.lock();
            p2.lock();
            assertEquals(i, r.getHoldCount());
            assertEquals(i, p2.getHoldCount());
        }
        assertTrue(p.isLocked());
        assertFalse(p.tryLock(), "Redisson's owner is not polylock's, even on the same thread");
        assertEquals(0, p.getHoldCount());
        assertTrue(r2.isLocked());
        assertFalse(r2.isHeldByCurrentThread());
        assertEquals(0, r2.getHoldCount());
        r.unlock();
        p2.unlock();
        assertEquals(2, r.getHoldCount());
        assertEquals(2, p2.getHoldCount());
        // polylock's forceUnlock frees Redisson's hold: Redisson's unlock then finds no owner.
        assertTrue(p.forceUnlock());
        assertFalse(r.isLocked());
        assertThrows(IllegalMonitorStateException.class, r::unlock);
        // Redisson's forceUnlock frees polylock's hold: polylock's unlock reports the loss.
        assertTrue(r2.forceUnlock());
        assertFalse(p2.isLocked());
        assertThrows(LockLostException.class, p2::unlock);
    }

    @Test
    void fencedLockTokensNeverGoBack() throws Exception {
        String name = unique("redisson-fenced");
        RFencedLock fenced = redisson.getFencedLock(name);
        DistributedLock p = polylock.getLock(name);
        long last = 0;
        for (int i = 0; i < 10; i++) {
            long t;
            if (i % 2 == 0) {
                Long token = fenced.lockAndGetToken();
                assertNotNull(token);
                t = token;
                assertTrue(p.isLocked());
                fenced.unlock();
            } else {
                p.lock();
                t = p.getFencingToken();
                assertFalse(fenced.tryLock(), "RFencedLock excluded while polylock holds");
                p.unlock();
            }
            assertTrue(t > last, "token " + t + " after " + last + " (round " + i + ")");
            last = t;
        }
        assertEquals(last, (long) fenced.getToken(), "both read the same counter");
    }

    @Test
    void readWriteLocksShareReadersAndExcludeWriters() throws Exception {
        String name = unique("redisson-rw");
        RReadWriteLock r = redisson.getReadWriteLock(name);
        DistributedReadWriteLock p = polylock.getReadWriteLock(name);
        // A polylock reader and a Redisson reader hold at once.
        p.readLock().lock();
        Holder redissonReader = Holder.start("redisson-reader", () -> r.readLock().lock(), () -> r.readLock().unlock());
        assertTrue(redissonReader.awaitHeld(5_000), "Redisson's reader joins polylock's");
        assertTrue(r.readLock().isLocked(), "Redisson sees a read lock");
        assertTrue(p.readLock().isLocked());
        assertFalse(p.writeLock().isLocked());
        // Their writers are excluded, by both readers and by each one alone.
        assertFalse(Servers.<Boolean>onOtherThread(() -> r.writeLock().tryLock(100, TimeUnit.MILLISECONDS)), "Redisson writer");
        assertFalse(Servers.<Boolean>onOtherThread(() -> p.writeLock().tryLock(100, TimeUnit.MILLISECONDS)), "polylock writer");
        p.readLock().unlock();
        assertFalse(Servers.<Boolean>onOtherThread(() -> p.writeLock().tryLock(100, TimeUnit.MILLISECONDS)),
                "Redisson's reader alone excludes polylock's writer");
        redissonReader.release();
        assertFalse(p.readLock().isLocked());
        Holder polylockReader = Holder.start("polylock-reader", p.readLock()::lock, p.readLock()::unlock);
        assertTrue(polylockReader.awaitHeld(5_000));
        assertFalse(Servers.<Boolean>onOtherThread(() -> r.writeLock().tryLock(100, TimeUnit.MILLISECONDS)),
                "polylock's reader alone excludes Redisson's writer");
        polylockReader.release();

        // polylock's writer excludes Redisson's readers and writers.
        p.writeLock().lock();
        assertTrue(r.writeLock().isLocked(), "Redisson sees polylock's write lock");
        assertFalse(r.readLock().isLocked());
        assertFalse(Servers.<Boolean>onOtherThread(() -> r.readLock().tryLock(100, TimeUnit.MILLISECONDS)), "Redisson reader");
        assertFalse(Servers.<Boolean>onOtherThread(() -> r.writeLock().tryLock(100, TimeUnit.MILLISECONDS)), "Redisson writer");
        p.writeLock().unlock();
        assertFalse(r.writeLock().isLocked());

        // Redisson's writer excludes polylock's readers and writers.
        Holder redissonWriter = Holder.start("redisson-writer", () -> r.writeLock().lock(), () -> r.writeLock().unlock());
        assertTrue(redissonWriter.awaitHeld(5_000));
        assertTrue(p.writeLock().isLocked(), "polylock sees Redisson's write lock");
        assertFalse(p.readLock().isLocked());
        long ttl = p.writeLock().remainTimeToLive();
        assertTrue(ttl > 20_000 && ttl <= 30_000, "Redisson's 30 s watchdog lease, read by polylock: " + ttl);
        assertFalse(p.readLock().tryLock(100, TimeUnit.MILLISECONDS), "polylock reader");
        assertFalse(p.writeLock().tryLock(), "polylock writer");
        redissonWriter.release();
        assertFalse(p.writeLock().isLocked());
        assertFalse(p.readLock().isLocked());
    }

    /**
     * One side holds on this thread, the other side's waiter starts on a thread of its own; after
     * 200 ms (it must still wait) the holder releases. Returns how long the waiter took to get it.
     */
    private static long wakeMs(String what, Holder.Step hold, Holder.Step release, Holder.Step wait, Holder.Step done)
            throws Exception {
        hold.run();
        Holder waiter = Holder.start(what, wait, done);
        Thread.sleep(200);
        assertFalse(waiter.isHeld(), what + ": waits while the other holds");
        long released = System.nanoTime();
        release.run();
        assertTrue(waiter.awaitHeld(10_000), what + ": got the lock");
        long ms = TimeUnit.NANOSECONDS.toMillis(waiter.heldAt() - released);
        waiter.release();
        return ms;
    }

    @Test
    void aReadWriteReleaseByEitherWakesTheOthersWaiter() throws Exception {
        String name = unique("redisson-rw-wake");
        RReadWriteLock r = redisson.getReadWriteLock(name);
        DistributedReadWriteLock p = polylock.getReadWriteLock(name);
        Holder.Step pw = p.writeLock()::lock;
        Holder.Step pwu = p.writeLock()::unlock;
        Holder.Step pr = p.readLock()::lock;
        Holder.Step pru = p.readLock()::unlock;
        Holder.Step rw = () -> r.writeLock().lock();
        Holder.Step rwu = () -> r.writeLock().unlock();
        Holder.Step rr = () -> r.readLock().lock();
        Holder.Step rru = () -> r.readLock().unlock();
        List<Long> all = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            long[] ms = {
                wakeMs("Redisson reader after a polylock writer", pw, pwu, rr, rru),
                wakeMs("Redisson writer after a polylock writer", pw, pwu, rw, rwu),
                wakeMs("Redisson writer after a polylock reader", pr, pru, rw, rwu),
                wakeMs("polylock reader after a Redisson writer", rw, rwu, pr, pru),
                wakeMs("polylock writer after a Redisson writer", rw, rwu, pw, pwu),
                wakeMs("polylock writer after a Redisson reader", rr, rru, pw, pwu),
            };
            System.out.printf("interop read-write wake-up (ms): Redisson reader/writer after polylock writer %d/%d, "
                    + "Redisson writer after polylock reader %d, polylock reader/writer after Redisson writer %d/%d, "
                    + "polylock writer after Redisson reader %d%n", ms[0], ms[1], ms[2], ms[3], ms[4], ms[5]);
            for (long m : ms) {
                all.add(m);
            }
        }
        // A wake by notification takes milliseconds; a missed one would take the 30 s lease.
        WakeUps.assertNotified(all);
        assertFalse(p.readLock().isLocked());
        assertFalse(p.writeLock().isLocked());
    }

    // ---- semaphores and the count-down latch ------------------------------------------------

    @Test
    void semaphorePermitsAreCountedOnceAcrossBoth() throws Exception {
        String name = unique("redisson-sem");
        RSemaphore r = redisson.getSemaphore(name);
        DistributedSemaphore p = polylock.getSemaphore(name);
        assertTrue(p.trySetPermits(3));
        assertFalse(r.trySetPermits(5), "Redisson sees polylock's permits");
        assertEquals(3, r.availablePermits());
        // 3 permits: 2 taken by polylock, 1 by Redisson; the next try of either fails.
        assertTrue(p.tryAcquire(2));
        assertEquals(1, r.availablePermits());
        assertTrue(r.tryAcquire());
        assertEquals(0, p.availablePermits());
        assertFalse(p.tryAcquire());
        assertFalse(r.tryAcquire());
        assertFalse(p.tryAcquire(100, TimeUnit.MILLISECONDS));
        assertFalse(r.tryAcquire(java.time.Duration.ofMillis(100)));
        // Permits belong to nobody in both: each gives back what the other took.
        r.release(2);
        p.release();
        assertEquals(3, r.availablePermits());
        assertEquals(3, p.drainPermits());
        assertEquals(0, r.availablePermits());
        r.addPermits(2);
        assertEquals(2, p.availablePermits());
        p.addPermits(-1);
        assertEquals(1, r.availablePermits());

        // Redisson sets, polylock reads.
        String other = unique("redisson-sem-set");
        assertTrue(redisson.getSemaphore(other).trySetPermits(2));
        assertFalse(polylock.getSemaphore(other).trySetPermits(9));
        assertEquals(2, polylock.getSemaphore(other).availablePermits());
    }

    @Test
    void aSemaphoreReleaseByEitherWakesTheOthersWaiter() throws Exception {
        String name = unique("redisson-sem-wake");
        RSemaphore r = redisson.getSemaphore(name);
        DistributedSemaphore p = polylock.getSemaphore(name);
        p.trySetPermits(1);
        Holder.Step pa = p::acquire;
        Holder.Step prl = p::release;
        Holder.Step ra = r::acquire;
        Holder.Step rrl = r::release;
        List<Long> all = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            long redissonWoke = wakeMs("Redisson acquire after a polylock release", pa, prl, ra, rrl);
            long polylockWoke = wakeMs("polylock acquire after a Redisson release", ra, rrl, pa, prl);
            System.out.printf("interop semaphore wake-up: Redisson after a polylock release %d ms, "
                    + "polylock after a Redisson release %d ms%n", redissonWoke, polylockWoke);
            all.add(redissonWoke);
            all.add(polylockWoke);
        }
        WakeUps.assertNotified(all);
        assertEquals(1, r.availablePermits());
    }

    @Test
    void expiringPermitsAreCountedOnceAndEitherReleasesTheOthersIds() throws Exception {
        String name = unique("redisson-permits");
        RPermitExpirableSemaphore r = redisson.getPermitExpirableSemaphore(name);
        DistributedPermitExpirableSemaphore p = polylock.getPermitExpirableSemaphore(name);
        assertTrue(p.trySetPermits(3));
        assertFalse(r.trySetPermits(5), "Redisson sees polylock's permits");
        assertEquals(3, r.availablePermits());
        // 2 taken by polylock (one kept by the watchdog, one with a lease), 1 by Redisson.
        String p1 = p.acquire();
        String p2 = p.acquire(30, TimeUnit.SECONDS);
        String r1 = r.acquire();
        assertTrue(r1.matches("[0-9a-f]{32}"), "Redisson's id: " + r1);
        assertEquals(0, r.availablePermits());
        assertEquals(0, p.availablePermits());
        assertNull(p.tryAcquire());
        assertNull(r.tryAcquire());
        assertNull(p.tryAcquire(100, TimeUnit.MILLISECONDS));
        assertNull(r.tryAcquire(100, TimeUnit.MILLISECONDS));
        // Each releases the other's ids (both store 16 raw bytes, shown as 32 hex characters).
        p.release(r1);
        assertEquals(1, r.availablePermits());
        r.release(p1);
        assertTrue(r.tryRelease(p2));
        assertEquals(3, p.availablePermits());
        assertFalse(p.tryRelease(r1), "released before");
        assertFalse(r.tryRelease(p1), "released before");
        // polylock throws what Redisson throws (Redisson wraps it in a RedisException).
        IllegalArgumentException ours = assertThrows(IllegalArgumentException.class, () -> p.release(r1));
        RuntimeException theirs = assertThrows(RuntimeException.class, () -> r.release(p1));
        Throwable cause = theirs;
        while (cause.getCause() != null) {
            cause = cause.getCause();
        }
        assertInstanceOf(IllegalArgumentException.class, cause);
        assertEquals("Permit with id " + p1 + " has already been released or doesn't exist", cause.getMessage());
        assertTrue(ours.getMessage().startsWith("Permit with id " + r1 + " has already been released or doesn't exist"),
                ours.getMessage());
        // Redisson's leased permit, released by polylock.
        String r2 = r.tryAcquire(1, 30, TimeUnit.SECONDS);
        assertNotNull(r2);
        assertEquals(2, p.availablePermits());
        p.release(r2);
        assertEquals(3, r.availablePermits());
    }

    @Test
    void anExpiringPermitReleaseByEitherWakesTheOthersWaiter() throws Exception {
        String name = unique("redisson-permits-wake");
        RPermitExpirableSemaphore r = redisson.getPermitExpirableSemaphore(name);
        DistributedPermitExpirableSemaphore p = polylock.getPermitExpirableSemaphore(name);
        p.trySetPermits(1);
        AtomicReference<String> held = new AtomicReference<>();
        AtomicReference<String> waited = new AtomicReference<>();
        Holder.Step pa = () -> held.set(p.acquire());
        Holder.Step prl = () -> p.release(held.get());
        Holder.Step ra = () -> held.set(r.acquire());
        Holder.Step rrl = () -> r.release(held.get());
        Holder.Step rw = () -> waited.set(r.tryAcquire(10, TimeUnit.SECONDS));
        Holder.Step rwd = () -> r.release(waited.get());
        Holder.Step pw = () -> waited.set(p.tryAcquire(10, TimeUnit.SECONDS));
        Holder.Step pwd = () -> p.release(waited.get());
        List<Long> all = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            long redissonWoke = wakeMs("Redisson tryAcquire after a polylock release", pa, prl, rw, rwd);
            long polylockWoke = wakeMs("polylock tryAcquire after a Redisson release", ra, rrl, pw, pwd);
            System.out.printf("interop expiring-permit wake-up: Redisson after a polylock release %d ms, "
                    + "polylock after a Redisson release %d ms%n", redissonWoke, polylockWoke);
            all.add(redissonWoke);
            all.add(polylockWoke);
        }
        WakeUps.assertNotified(all);
        assertEquals(1, p.availablePermits());
    }

    @Test
    void countDownLatchesAreSharedAndEitherOpensTheOthersWaiters() throws Exception {
        String name = unique("redisson-latch");
        RCountDownLatch r = redisson.getCountDownLatch(name);
        DistributedCountDownLatch p = polylock.getCountDownLatch(name);
        assertTrue(r.trySetCount(2));
        assertFalse(p.trySetCount(5), "polylock sees Redisson's count");
        assertEquals(2, p.getCount());
        List<Long> all = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            // Waiters of both libraries; one count down by each; the last one opens.
            Holder pw = Holder.start("polylock-await", () -> assertTrue(p.await(10, TimeUnit.SECONDS)), () -> { });
            Holder rw = Holder.start("redisson-await", () -> assertTrue(r.await(10, TimeUnit.SECONDS)), () -> { });
            Thread.sleep(200);
            assertFalse(pw.isHeld());
            assertFalse(rw.isHeld());
            if (round == 0) {
                p.countDown();
                assertEquals(1, r.getCount());
            } else {
                r.countDown();
                assertEquals(1, p.getCount());
            }
            Thread.sleep(100);
            assertFalse(pw.isHeld(), "still counting");
            assertFalse(rw.isHeld(), "still counting");
            long opened = System.nanoTime();
            if (round == 0) {
                r.countDown();
            } else {
                p.countDown();
            }
            assertTrue(pw.awaitHeld(10_000));
            assertTrue(rw.awaitHeld(10_000));
            long polylockWoke = TimeUnit.NANOSECONDS.toMillis(pw.heldAt() - opened);
            long redissonWoke = TimeUnit.NANOSECONDS.toMillis(rw.heldAt() - opened);
            pw.release();
            rw.release();
            System.out.printf("interop latch wake-up (opened by %s): polylock waiter %d ms, Redisson waiter %d ms%n",
                    round == 0 ? "Redisson" : "polylock", polylockWoke, redissonWoke);
            all.add(polylockWoke);
            all.add(redissonWoke);
            assertEquals(0, r.getCount());
            assertEquals(0, p.getCount());
            assertTrue(p.trySetCount(2), "open again: either may set it");
            assertEquals(2, r.getCount());
        }
        WakeUps.assertNotified(all);
        // Either deletes the other's latch.
        assertTrue(r.delete());
        assertEquals(0, p.getCount());
        assertTrue(p.trySetCount(3));
        assertTrue(p.delete());
        assertEquals(0, r.getCount());
    }

    /**
     * polylock's election on Redis is a Redisson RLock on the name: while a Redisson user holds
     * that RLock, `polylock elect --wait 300ms` is not elected (exit 75); while polylock leads,
     * Redisson's tryLock fails; when polylock's leader leaves, Redisson gets the lock.
     */
    @Test
    void electionExcludesARedissonLockOnTheSameName() throws Exception {
        String name = unique("election");
        RLock lock = redisson.getLock(name);
        assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));
        Process p = new ProcessBuilder(cli(), "elect", "--url", Servers.redisUrl(), name, "--wait", "300ms",
                "--", "true").start();
        assertTrue(p.waitFor(10, TimeUnit.SECONDS));
        assertEquals(75, p.exitValue(), "not elected while Redisson holds the lock");
        lock.unlock();
        Process leader = new ProcessBuilder(cli(), "elect", "--url", Servers.redisUrl(), name, "--identity", "cli-1",
                "--", "sh", "-c", "echo \"$POLYLOCK_TERM\"; exec sleep 60")
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(leader.getInputStream()));
        String term = out.readLine();
        assertNotNull(term, "polylock led");
        assertTrue(Long.parseLong(term.trim()) > 0, term);
        assertFalse(Servers.onOtherThread(() -> redisson.getLock(name).tryLock(0, 30, TimeUnit.SECONDS)),
                "Redisson's tryLock fails while polylock leads");
        leader.destroy();
        assertTrue(leader.waitFor(10, TimeUnit.SECONDS));
        assertTrue(Servers.onOtherThread(() -> {
            RLock l = redisson.getLock(name);
            boolean got = l.tryLock(5, 30, TimeUnit.SECONDS);
            if (got) {
                l.unlock();
            }
            return got;
        }), "Redisson gets the lock once polylock's leader left");
    }
}
