package io.polylock;

import static io.polylock.Servers.cli;
import static io.polylock.Servers.zkPath;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** polylock and the real Curator (5.x) on the same ZooKeeper paths, in one JVM. */
class CuratorInteropIT {
    private static CuratorFramework curator;
    private static PolylockClient polylock;

    @BeforeAll
    static void connect() throws Exception {
        curator = CuratorFrameworkFactory.newClient(Servers.zkConnect(), new ExponentialBackoffRetry(100, 3));
        curator.start();
        assertTrue(curator.blockUntilConnected(10, TimeUnit.SECONDS), "Curator connected");
        polylock = Polylock.connect(Servers.zkUrl());
    }

    @AfterAll
    static void close() {
        polylock.close();
        curator.close();
    }

    private int contenders(String path) throws Exception {
        if (curator.checkExists().forPath(path) == null) {
            return 0;
        }
        return curator.getChildren().forPath(path).size();
    }

    private void awaitContenders(String path, int n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (contenders(path) < n) {
            assertTrue(System.nanoTime() < deadline, "contender " + n + " queued on " + path);
            Thread.sleep(5);
        }
    }

    /**
     * polylock's election on ZooKeeper is Curator's LeaderLatch: a `polylock elect` candidate and
     * Curator's latches on one path agree on the participants (with their ids) and on the leader,
     * one leader at a time, and leadership passes both ways.
     */
    @Test
    void electionIsCuratorsLeaderLatch() throws Exception {
        String path = zkPath("election");
        LeaderLatch first = new LeaderLatch(curator, path, "curator-1");
        first.start();
        assertTrue(first.await(10, TimeUnit.SECONDS), "Curator leads first");
        Process cli = new ProcessBuilder(cli(), "elect", "--url", Servers.zkUrl(), path, "--identity", "cli-1",
                "--", "sh", "-c", "echo \"$POLYLOCK_TERM\"; exec sleep 60")
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        awaitContenders(path, 2);
        assertEquals(List.of("curator-1", "cli-1"),
                first.getParticipants().stream().map(Participant::getId).toList());
        assertEquals("curator-1", first.getLeader().getId());
        assertTrue(leaderLine(path).contains("\"leader\":\"curator-1\""), leaderLine(path));
        // Curator's leader leaves: the polylock candidate leads and its command starts.
        first.close();
        java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(cli.getInputStream()));
        String term = out.readLine();
        assertNotNull(term, "the command ran once polylock led");
        assertTrue(Long.parseLong(term.trim()) > 0, term);
        LeaderLatch second = new LeaderLatch(curator, path, "curator-2");
        second.start();
        awaitContenders(path, 2);
        assertEquals("cli-1", second.getLeader().getId());
        assertFalse(second.hasLeadership());
        // polylock's leader leaves (SIGTERM: its command ends, it resigns): Curator leads.
        cli.destroy();
        assertTrue(cli.waitFor(10, TimeUnit.SECONDS));
        assertTrue(second.await(10, TimeUnit.SECONDS), "leadership passed back to Curator");
        assertEquals(List.of("curator-2"), second.getParticipants().stream().map(Participant::getId).toList());
        second.close();
    }

    /**
     * polylock's DistributedLeaderLatch and Curator's LeaderLatch on one path, in one JVM: one
     * leader at a time, both sides name the same leader and participants, leadership passes
     * both ways on close.
     */
    @Test
    void leaderLatchesOfBothLibrariesShareOneElection() throws Exception {
        String path = zkPath("latch-both");
        DistributedLeaderLatch ours = polylock.getLeaderLatch(path, "polylock-1");
        ours.start();
        assertTrue(ours.await(10, TimeUnit.SECONDS));
        LeaderLatch theirs = new LeaderLatch(curator, path, "curator-1");
        theirs.start();
        awaitContenders(path, 2);
        assertFalse(theirs.await(300, TimeUnit.MILLISECONDS), "one leader at a time");
        assertEquals("polylock-1", theirs.getLeader().getId());
        assertEquals(List.of("polylock-1", "curator-1"),
                theirs.getParticipants().stream().map(Participant::getId).toList());
        assertEquals(List.of("polylock-1", "curator-1"),
                ours.getParticipants().stream().map(io.polylock.Participant::getId).toList());
        ours.close();
        assertTrue(theirs.await(10, TimeUnit.SECONDS), "Curator leads once polylock's latch closed");
        DistributedLeaderLatch again = polylock.getLeaderLatch(path, "polylock-2");
        again.start();
        awaitContenders(path, 2);
        assertEquals("curator-1", again.getLeader().getId());
        assertFalse(again.hasLeadership());
        theirs.close();
        assertTrue(again.await(10, TimeUnit.SECONDS), "polylock leads once Curator's latch closed");
        again.close();
    }

    /** `polylock leader PATH`'s line of JSON. */
    private static String leaderLine(String path) throws Exception {
        Process p = new ProcessBuilder(cli(), "leader", "--url", Servers.zkUrl(), path).start();
        String line = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(p.waitFor(10, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), line);
        return line;
    }

    /**
     * While Curator holds a lock, a `polylock run --wait 300ms` times out: its node is gone when the
     * process has exited, so a third waiter gets the lock as soon as Curator releases it (it used
     * to queue behind the dead node until the session timed out). 20 rounds.
     */
    @Test
    void aTimedOutCliWaitLeavesNothingBehindACuratorHolder() throws Exception {
        String path = zkPath("curator-cli-timeout");
        InterProcessMutex holder = new InterProcessMutex(curator, path);
        long slowest = 0;
        for (int round = 0; round < 20; round++) {
            holder.acquire();
            Process p = new ProcessBuilder(cli(), "run", "--url", Servers.zkUrl(), "--name", path,
                    "--wait", "300ms", "--", "true").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(75, p.exitValue(), "round " + round + ": " + out);
            assertEquals(1, contenders(path), "round " + round + ": only Curator's node is left");
            DistributedLock waiter = polylock.getLock(path);
            Holder third = Holder.start("third-waiter", waiter::lock, waiter::unlock);
            awaitContenders(path, 2);
            long released = System.nanoTime();
            holder.release();
            assertTrue(third.awaitHeld(10_000), "round " + round + ": the third waiter got the lock");
            long took = third.heldAt() - released;
            slowest = Math.max(slowest, took);
            // Woken by its watch on Curator's node: a waiter left watching a node of the CLI's
            // would wait for that session's end (10 s); 3 s leaves room for a loaded machine.
            assertTrue(took < TimeUnit.SECONDS.toNanos(3),
                    "round " + round + ": the third waiter got it " + took / 1000 + " us after the release");
            third.release();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (contenders(path) > 0) {
                assertTrue(System.nanoTime() < deadline, "nodes left on " + path);
                Thread.sleep(5);
            }
        }
        System.out.println("CLI timeouts beside Curator: the third waiter got the lock at most "
                + slowest / 1000 + " us after the release");
    }

    @Test
    void eachExcludesTheOther() throws Exception {
        String path = zkPath("curator-excl");
        InterProcessMutex c = new InterProcessMutex(curator, path);
        DistributedLock p = polylock.getLock(path);
        p.lock();
        assertFalse(Servers.<Boolean>onOtherThread(() -> c.acquire(100, TimeUnit.MILLISECONDS)));
        assertEquals(-1, p.remainTimeToLive(), "held, no lease on ZooKeeper");
        p.unlock();
        c.acquire();
        assertTrue(p.isLocked(), "polylock sees Curator's node");
        assertFalse(Servers.<Boolean>onOtherThread(() -> p.tryLock(100, TimeUnit.MILLISECONDS)));
        c.release();
        assertFalse(p.isLocked());
        assertEquals(0, contenders(path), "no node left behind by either");
    }

    @Test
    void fifoOrderHoldsAcrossBothAndEitherReleaseWakesTheOther() throws Exception {
        String path = zkPath("curator-fifo");
        DistributedLock holder = polylock.getLock(path);
        holder.lock();
        List<String> order = Collections.synchronizedList(new ArrayList<String>());
        List<AtomicLong> gotAt = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        String[] labels = {"curator-1", "polylock-2", "curator-3", "polylock-4", "curator-5", "polylock-6"};
        for (int i = 0; i < labels.length; i++) {
            String label = labels[i];
            AtomicLong at = new AtomicLong();
            gotAt.add(at);
            Thread t = new Thread(() -> {
                try {
                    if (label.startsWith("curator")) {
                        InterProcessMutex m = new InterProcessMutex(curator, path);
                        m.acquire();
                        at.set(System.nanoTime());
                        order.add(label);
                        Thread.sleep(20);
                        m.release();
                    } else {
                        DistributedLock l = polylock.getLock(path);
                        l.lock();
                        at.set(System.nanoTime());
                        order.add(label);
                        Thread.sleep(20);
                        l.unlock();
                    }
                } catch (Exception e) {
                    order.add(label + " failed: " + e);
                }
            }, label);
            t.start();
            threads.add(t);
            awaitContenders(path, i + 2); // queued behind the previous one
        }
        long released = System.nanoTime();
        holder.unlock();
        for (Thread t : threads) {
            t.join(20_000);
        }
        assertEquals(Arrays.asList(labels), order, "FIFO across Curator and polylock");
        long firstWake = TimeUnit.NANOSECONDS.toMillis(gotAt.get(0).get() - released);
        System.out.printf("interop wake-up: Curator after a polylock release %d ms%n", firstWake);
        assertTrue(firstWake < 1_000, "woken by a watch in " + firstWake + " ms");
        assertEquals(0, contenders(path), "no node left behind");
    }

    @Test
    void aCuratorReleaseWakesAPolylockWaiter() throws Exception {
        String path = zkPath("curator-wake");
        InterProcessMutex c = new InterProcessMutex(curator, path);
        c.acquire();
        AtomicLong got = new AtomicLong();
        DistributedLock p = polylock.getLock(path);
        Thread t = new Thread(() -> {
            p.lock();
            got.set(System.nanoTime());
            p.unlock();
        });
        t.start();
        awaitContenders(path, 2);
        long released = System.nanoTime();
        c.release();
        t.join(10_000);
        assertTrue(got.get() != 0);
        long ms = TimeUnit.NANOSECONDS.toMillis(got.get() - released);
        System.out.printf("interop wake-up: polylock after a Curator release %d ms%n", ms);
        assertTrue(ms < 5_000, "woken by a watch (the waiter has no other wake-up) in " + ms + " ms");
    }

    @Test
    void semaphoreMutexesExcludeEachOther() throws Exception {
        String path = zkPath("curator-semaphore");
        InterProcessSemaphoreMutex c = new InterProcessSemaphoreMutex(curator, path);
        DistributedLock p = polylock.getMutex(path);
        assertTrue(p.tryLock());
        assertFalse(c.acquire(100, TimeUnit.MILLISECONDS), "Curator's semaphore mutex is excluded");
        assertTrue(p.isAcquiredInThisProcess());
        // Held by the client, not the thread: another thread may release it.
        Servers.onOtherThread(() -> {
            p.unlock();
            return null;
        });
        assertTrue(c.acquire(5, TimeUnit.SECONDS));
        assertFalse(p.tryLock(100, TimeUnit.MILLISECONDS), "polylock's mutex is excluded");
        c.release();
        assertTrue(p.tryLock(5, TimeUnit.SECONDS));
        p.unlock();
    }

    @Test
    void readWriteLocksShareReadersAndExcludeWriters() throws Exception {
        String path = zkPath("curator-rw");
        InterProcessReadWriteLock c = new InterProcessReadWriteLock(curator, path);
        DistributedReadWriteLock p = polylock.getReadWriteLock(path);
        // A polylock reader and a Curator reader hold at once.
        p.readLock().lock();
        Holder curatorReader = Holder.start("curator-reader", () -> c.readLock().acquire(), () -> c.readLock().release());
        assertTrue(curatorReader.awaitHeld(5_000), "Curator's reader joins polylock's");
        assertTrue(p.readLock().isLocked());
        assertFalse(p.writeLock().isLocked());
        assertEquals(2, contenders(path));
        // Their writers are excluded, by both readers and by each one alone.
        assertFalse(Servers.<Boolean>onOtherThread(() -> c.writeLock().acquire(100, TimeUnit.MILLISECONDS)), "Curator writer");
        assertFalse(Servers.<Boolean>onOtherThread(() -> p.writeLock().tryLock(100, TimeUnit.MILLISECONDS)), "polylock writer");
        p.readLock().unlock();
        assertFalse(Servers.<Boolean>onOtherThread(() -> p.writeLock().tryLock(100, TimeUnit.MILLISECONDS)),
                "Curator's reader alone excludes polylock's writer");
        curatorReader.release();
        assertFalse(p.readLock().isLocked());
        assertEquals(0, contenders(path), "the timed-out writers of both left no node");
        Holder polylockReader = Holder.start("polylock-reader", p.readLock()::lock, p.readLock()::unlock);
        assertTrue(polylockReader.awaitHeld(5_000));
        assertFalse(Servers.<Boolean>onOtherThread(() -> c.writeLock().acquire(100, TimeUnit.MILLISECONDS)),
                "polylock's reader alone excludes Curator's writer");
        polylockReader.release();

        // polylock's writer excludes Curator's readers and writers.
        p.writeLock().lock();
        assertFalse(Servers.<Boolean>onOtherThread(() -> c.readLock().acquire(100, TimeUnit.MILLISECONDS)), "Curator reader");
        assertFalse(Servers.<Boolean>onOtherThread(() -> c.writeLock().acquire(100, TimeUnit.MILLISECONDS)), "Curator writer");
        assertEquals(-1, p.writeLock().remainTimeToLive(), "held, no lease on ZooKeeper");
        p.writeLock().unlock();
        assertEquals(0, contenders(path));

        // Curator's writer excludes polylock's readers and writers.
        Holder curatorWriter = Holder.start("curator-writer", () -> c.writeLock().acquire(), () -> c.writeLock().release());
        assertTrue(curatorWriter.awaitHeld(5_000));
        assertTrue(p.writeLock().isLocked(), "polylock sees Curator's write node");
        assertFalse(p.readLock().isLocked());
        assertFalse(p.readLock().tryLock(100, TimeUnit.MILLISECONDS), "polylock reader");
        assertFalse(p.writeLock().tryLock(), "polylock writer");
        curatorWriter.release();
        assertFalse(p.writeLock().isLocked());
        assertEquals(0, contenders(path), "no node left behind by either");
    }

    /**
     * One side holds on this thread, the other side's waiter starts on a thread of its own and
     * queues (its node appears); the holder releases. Returns how long the waiter took to get it.
     */
    private long wakeMs(String path, String what, Holder.Step hold, Holder.Step release, Holder.Step wait, Holder.Step done)
            throws Exception {
        hold.run();
        Holder waiter = Holder.start(what, wait, done);
        awaitContenders(path, 2);
        Thread.sleep(50); // queued: let it set its watch
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
        String path = zkPath("curator-rw-wake");
        InterProcessReadWriteLock c = new InterProcessReadWriteLock(curator, path);
        DistributedReadWriteLock p = polylock.getReadWriteLock(path);
        Holder.Step pw = p.writeLock()::lock;
        Holder.Step pwu = p.writeLock()::unlock;
        Holder.Step pr = p.readLock()::lock;
        Holder.Step pru = p.readLock()::unlock;
        Holder.Step cw = () -> c.writeLock().acquire();
        Holder.Step cwu = () -> c.writeLock().release();
        Holder.Step cr = () -> c.readLock().acquire();
        Holder.Step cru = () -> c.readLock().release();
        List<Long> all = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            long[] ms = {
                wakeMs(path, "Curator reader after a polylock writer", pw, pwu, cr, cru),
                wakeMs(path, "Curator writer after a polylock writer", pw, pwu, cw, cwu),
                wakeMs(path, "Curator writer after a polylock reader", pr, pru, cw, cwu),
                wakeMs(path, "polylock reader after a Curator writer", cw, cwu, pr, pru),
                wakeMs(path, "polylock writer after a Curator writer", cw, cwu, pw, pwu),
                wakeMs(path, "polylock writer after a Curator reader", cr, cru, pw, pwu),
            };
            System.out.printf("interop read-write wake-up (ms): Curator reader/writer after polylock writer %d/%d, "
                    + "Curator writer after polylock reader %d, polylock reader/writer after Curator writer %d/%d, "
                    + "polylock writer after Curator reader %d%n", ms[0], ms[1], ms[2], ms[3], ms[4], ms[5]);
            for (long m : ms) {
                all.add(m);
            }
        }
        // A wake by a watch takes milliseconds; a missed one would never come.
        WakeUps.assertNotified(all);
        assertEquals(0, contenders(path), "no node left behind");
    }

    // ---- InterProcessSemaphoreV2 ------------------------------------------------------------

    @Test
    void semaphoreLeasesAreCountedOnceAcrossBoth() throws Exception {
        String path = zkPath("curator-sem");
        DistributedSemaphore p = polylock.getSemaphore(path);
        assertTrue(p.trySetPermits(3));
        // Curator's semaphore with polylock's SharedCount as its number of permits.
        SharedCount count = new SharedCount(curator, path + "/count", 0);
        count.start();
        try {
            assertEquals(3, count.getCount(), "Curator reads polylock's SharedCount");
            InterProcessSemaphoreV2 c = new InterProcessSemaphoreV2(curator, path, count);
            // 3 permits: 2 taken by polylock, 1 by Curator; the next try of either fails.
            assertTrue(p.tryAcquire(2));
            Lease cl = c.acquire(1, TimeUnit.SECONDS);
            assertNotNull(cl, "Curator gets the third");
            assertEquals(0, p.availablePermits());
            assertFalse(p.tryAcquire());
            assertFalse(p.tryAcquire(100, TimeUnit.MILLISECONDS));
            assertNull(c.acquire(100, TimeUnit.MILLISECONDS));
            c.returnLease(cl);
            assertEquals(1, p.availablePermits());
            p.release(2);
            assertEquals(3, p.availablePermits());
            // 2 taken by Curator, 1 by polylock.
            Collection<Lease> two = c.acquire(2, 1, TimeUnit.SECONDS);
            assertNotNull(two);
            try (DistributedSemaphore.Lease mine = p.acquireLease(1, TimeUnit.SECONDS)) {
                assertNotNull(mine);
                assertNull(c.acquire(100, TimeUnit.MILLISECONDS));
                assertNull(p.acquireLease(100, TimeUnit.MILLISECONDS));
            }
            c.returnAll(two);
            // polylock's addPermits moves Curator's SharedCount.
            p.addPermits(1);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (count.getCount() != 4 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(4, count.getCount());
            assertEquals(4, p.availablePermits());
        } finally {
            count.close();
        }
        // A Curator semaphore with a constant maxLeases equal to polylock's permits agrees too.
        InterProcessSemaphoreV2 fixed = new InterProcessSemaphoreV2(curator, path, 4);
        Collection<Lease> three = fixed.acquire(3, 1, TimeUnit.SECONDS);
        assertNotNull(three);
        assertTrue(p.tryAcquire());
        assertFalse(p.tryAcquire());
        assertNull(fixed.acquire(100, TimeUnit.MILLISECONDS));
        fixed.returnAll(three);
        p.release();
        assertEquals(4, p.availablePermits());
        assertEquals(0, contenders(path + "/leases"), "no lease node left behind by either");
    }

    @Test
    void aSemaphoreReleaseByEitherWakesTheOthersWaiter() throws Exception {
        String path = zkPath("curator-sem-wake");
        DistributedSemaphore p = polylock.getSemaphore(path);
        p.trySetPermits(1);
        SharedCount count = new SharedCount(curator, path + "/count", 0);
        count.start();
        try {
            InterProcessSemaphoreV2 c = new InterProcessSemaphoreV2(curator, path, count);
            AtomicReference<Lease> held = new AtomicReference<>();
            AtomicReference<Lease> waited = new AtomicReference<>();
            Holder.Step pa = p::acquire;
            Holder.Step prl = p::release;
            Holder.Step ca = () -> held.set(c.acquire());
            Holder.Step crl = () -> c.returnLease(held.get());
            Holder.Step cw = () -> waited.set(c.acquire());
            Holder.Step cwd = () -> c.returnLease(waited.get());
            List<Long> all = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                // The waiter's lease node appears beside the holder's while it waits.
                long curatorWoke = wakeMs(path + "/leases", "Curator acquire after a polylock release", pa, prl, cw, cwd);
                long polylockWoke = wakeMs(path + "/leases", "polylock acquire after a Curator release", ca, crl, pa, prl);
                System.out.printf("interop semaphore wake-up: Curator after a polylock release %d ms, "
                        + "polylock after a Curator release %d ms%n", curatorWoke, polylockWoke);
                all.add(curatorWoke);
                all.add(polylockWoke);
            }
            WakeUps.assertNotified(all);
        } finally {
            count.close();
        }
        assertEquals(1, p.availablePermits());
        assertEquals(0, contenders(path + "/leases"), "no lease node left behind");
    }

    @Test
    void aLatchIsASharedCountThatCuratorCountsDown() throws Exception {
        String path = zkPath("curator-latch");
        DistributedCountDownLatch p = polylock.getCountDownLatch(path);
        assertTrue(p.trySetCount(2));
        SharedCount count = new SharedCount(curator, path, 0);
        count.start();
        try {
            assertEquals(2, count.getCount(), "Curator reads polylock's count");
            Holder waiter = Holder.start("polylock-await", () -> assertTrue(p.await(10, TimeUnit.SECONDS)), () -> { });
            Thread.sleep(200);
            // Curator counts down with versioned sets, as polylock does.
            assertTrue(count.trySetCount(count.getVersionedValue(), 1));
            assertEquals(1, p.getCount());
            Thread.sleep(100);
            assertFalse(waiter.isHeld(), "still counting");
            long opened = System.nanoTime();
            assertTrue(count.trySetCount(count.getVersionedValue(), 0));
            assertTrue(waiter.awaitHeld(10_000), "Curator's count down to 0 opened polylock's latch");
            long ms = TimeUnit.NANOSECONDS.toMillis(waiter.heldAt() - opened);
            waiter.release();
            System.out.printf("interop latch wake-up: polylock waiter %d ms after Curator set the SharedCount to 0%n", ms);
            // One wake-up, so no median: a missed watch would never come.
            assertTrue(ms < WakeUps.EVERY_MS, "woken in " + ms + " ms");
            // polylock's count down moves Curator's SharedCount.
            assertTrue(p.trySetCount(1));
            p.countDown();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (count.getCount() != 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(0, count.getCount());
        } finally {
            count.close();
        }
    }
}
