package io.polylock;

import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The fair lock: on Redis, Redisson's RFairLock shared with the real Redisson 3.x (one queue for
 * both), a waiter killed in its queue, and on ZooKeeper the ordinary lock.
 */
class FairLockIT {
    private static RedissonClient redisson;
    private static PolylockClient polylock;
    private static Peek peek;

    @BeforeAll
    static void connect() {
        Config config = new Config();
        config.useSingleServer().setAddress(Servers.redisAddress());
        redisson = Redisson.create(config);
        polylock = Polylock.connect(Servers.redisUrl());
        peek = new Peek(Servers.redisUrl());
    }

    @AfterAll
    static void close() {
        polylock.close();
        redisson.shutdown();
        peek.close();
    }

    private static String queue(String name) {
        return "redisson_lock_queue:{" + name + "}";
    }

    /** Wait until the lock's queue has {@code n} waiters (each waiter asks only once queued). */
    private static void awaitQueued(String name, int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int seen;
        while ((seen = peek.length(queue(name))) != n) {
            assertTrue(System.nanoTime() < deadline, "queue of " + name + " has " + seen + " waiters, expected " + n);
            Thread.sleep(5);
        }
    }

    /**
     * A waiter on a thread of its own: acquires, records {@code index} (inside the lock), holds a
     * moment, releases.
     */
    private static Thread waiter(String who, int index, Holder.Step acquire, Holder.Step release, List<Integer> order,
            List<Throwable> errors) {
        Thread t = new Thread(() -> {
            try {
                acquire.run();
                try {
                    order.add(index);
                    Thread.sleep(20);
                } finally {
                    release.run();
                }
            } catch (Throwable e) {
                errors.add(new AssertionError(who + " failed: " + e, e));
            }
        }, who);
        t.start();
        return t;
    }

    @Test
    void eightWaitersAlternatingPolylockAndRedissonGetTheLockInTheOrderTheyAsked() throws Exception {
        String name = unique("fair-order");
        DistributedLock holderLock = polylock.getFairLock(name);
        assertEquals("DistributedFairLock[" + name + "]", holderLock.toString());
        holderLock.lock();
        assertTrue(redisson.getFairLock(name).isLocked(), "Redisson sees polylock's fair hold");
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        List<String> asked = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            if (i % 2 == 0) {
                DistributedLock p = polylock.getFairLock(name);
                threads.add(waiter("polylock-" + i, i, p::lock, p::unlock, order, errors));
                asked.add("polylock");
            } else {
                RLock r = redisson.getFairLock(name);
                threads.add(waiter("redisson-" + i, i, r::lock, r::unlock, order, errors));
                asked.add("Redisson");
            }
            awaitQueued(name, i + 1); // queued before the next one asks
        }
        // Held for a while with eight waiters queued: every one keeps its place (polylock's
        // refresh theirs; Redisson's deadlines are 5 minutes apart).
        Thread.sleep(2_000);
        awaitQueued(name, 8);
        long released = System.nanoTime();
        holderLock.unlock();
        for (Thread t : threads) {
            t.join(30_000);
            assertFalse(t.isAlive(), t.getName() + " still waits");
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
        assertTrue(errors.isEmpty(), errors.toString());
        System.out.printf("fair lock, waiters %s: order %s, all done %d ms after the release%n", asked, order, ms);
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), order, "the waiters (" + asked + ") got the lock out of the order"
                + " they asked in: Redisson 3.52.0's grant moves every queued deadline 300 s earlier, and polylock's"
                + " waiters' deadlines (5 s ahead) are then past, so the next stale-head sweep drops them");
        assertEquals(0, peek.exists(name), "the lock is free");
        assertEquals(0, peek.exists(queue(name)), "the queue is empty");
        assertEquals(0, peek.exists("redisson_lock_timeout:{" + name + "}"), "no deadlines left");
    }

    @Test
    void aFairLockIsReentrantAndExcludesRedissonsFairLock() throws Exception {
        String name = unique("fair-excl");
        DistributedLock p = polylock.getFairLock(name);
        RLock r = redisson.getFairLock(name);
        p.lock();
        assertTrue(p.tryLock(1, TimeUnit.SECONDS), "re-entered");
        assertEquals(2, p.getHoldCount());
        assertFalse(Servers.<Boolean>onOtherThread(() -> r.tryLock(200, TimeUnit.MILLISECONDS)));
        assertEquals(0, peek.length(queue(name)), "Redisson's timed-out waiter left the queue");
        p.unlock();
        p.unlock();
        assertFalse(p.isLocked());
        r.lock();
        assertTrue(p.isLocked(), "polylock sees Redisson's fair hold");
        assertFalse(Servers.<Boolean>onOtherThread(() -> p.tryLock(200, TimeUnit.MILLISECONDS)));
        assertEquals(0, peek.length(queue(name)), "polylock's timed-out waiter left the queue");
        r.unlock();
        assertFalse(p.isLocked());
    }

    /**
     * A waiter in a JVM of its own, queued among in-process waiters, is killed (SIGKILL: nothing
     * takes it out of the queue) while it waits: it loses its place once its deadline (the fair
     * wait timeout, 5 s) passes, and the others get the lock in the order they asked, all within
     * 15 s of the release. Polylock waiters only: Redisson 3.52.0 moves every queued waiter's
     * deadline 300 s earlier whenever it grants the lock (its rule for its own chained deadlines),
     * which evicts polylock's live waiters along with the dead one (the alternating test above
     * shows the same thing).
     */
    @Test
    void aWaiterKilledInTheQueueLosesItsPlaceAndTheOthersKeepTheirOrder() throws Exception {
        String name = unique("fair-killed");
        DistributedLock holderLock = polylock.getFairLock(name);
        holderLock.lock();
        long held = System.nanoTime();
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        // Two other clients besides the holder's: waiters of several processes' worth.
        try (PolylockClient second = Polylock.connect(Servers.redisUrl())) {
            PolylockClient[] clients = {polylock, second};
            Process child = null;
            try {
                int queued = 0;
                for (int i = 0; i < 5; i++) {
                    if (i == 2) {
                        child = startChildWaiter(name);
                        awaitQueued(name, ++queued);
                        continue;
                    }
                    int index = i < 2 ? i : i - 1;
                    DistributedLock p = clients[i % 2].getFairLock(name);
                    threads.add(waiter("polylock-" + index, index, p::lock, p::unlock, order, errors));
                    awaitQueued(name, ++queued);
                }
                Thread.sleep(1_000);
                child.destroyForcibly(); // SIGKILL while queued: its place stays until its deadline
                assertTrue(child.waitFor(30, TimeUnit.SECONDS));
                awaitQueued(name, 5);
            } finally {
                if (child != null) {
                    child.destroyForcibly();
                }
            }
            long holdMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - held);
            long released = System.nanoTime();
            holderLock.unlock();
            for (Thread t : threads) {
                t.join(30_000);
                assertFalse(t.isAlive(), t.getName() + " still waits");
            }
            long afterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
            assertTrue(errors.isEmpty(), errors.toString());
            System.out.printf("fair lock with a killed waiter in the queue: order %s; held %d ms, the four others"
                    + " done %d ms after the release%n", order, holdMs, afterMs);
            assertEquals(List.of(0, 1, 2, 3), order);
            assertTrue(afterMs < 15_000, "all done within the holder's time + 15 s: " + afterMs + " ms after the release");
            assertEquals(0, peek.exists(queue(name)), "the dead waiter's place is gone");
        }
    }

    private static Process startChildWaiter(String name) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("java.home") + "/bin/java");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        String lib = System.getProperty("polylock.native.library");
        if (lib != null) {
            cmd.add("-Dpolylock.native.library=" + lib);
        }
        cmd.add(WaitForFairLockUntilKilled.class.getName());
        cmd.add(Servers.redisUrl());
        cmd.add(name);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        assertNotNull(line, "the child printed nothing");
        assertEquals("waiting", line);
        return p;
    }

    @Test
    void onZooKeeperTheFairLockIsTheOrdinaryLock() throws Exception {
        String path = Servers.zkPath("fair");
        CuratorFramework curator = CuratorFrameworkFactory.newClient(Servers.zkConnect(), new ExponentialBackoffRetry(100, 3));
        curator.start();
        try (PolylockClient zk = Polylock.connect(Servers.zkUrl())) {
            assertTrue(curator.blockUntilConnected(10, TimeUnit.SECONDS));
            DistributedLock fair = zk.getFairLock(path);
            fair.lock();
            assertTrue(zk.getLock(path).isLocked(), "the ordinary lock's queue holds the fair lock's node");
            assertEquals(1, curator.getChildren().forPath(path).size());
            assertFalse(Servers.<Boolean>onOtherThread(() -> zk.getLock(path).tryLock(100, TimeUnit.MILLISECONDS)));
            fair.unlock();
            assertEquals(0, curator.getChildren().forPath(path).size());
            // Its losses are the ordinary lock's there too, and its listeners hear them.
            java.util.concurrent.BlockingQueue<Exception> heard = new java.util.concurrent.ArrayBlockingQueue<>(2);
            fair.addListener((l, e) -> heard.add(e));
            fair.lock();
            try (PolylockClient other = Polylock.connect(Servers.zkUrl())) {
                assertTrue(other.getLock(path).forceUnlock());
            }
            assertInstanceOf(LockLostException.class, heard.poll(5, TimeUnit.SECONDS), "the fair lock's listener heard its loss");
            assertThrows(LockLostException.class, fair::unlock);
        } finally {
            curator.close();
        }
        assertThrows(UnsupportedOperationException.class, () -> polylock.getMutex("x"), "still no mutex on Redis");
    }
}
