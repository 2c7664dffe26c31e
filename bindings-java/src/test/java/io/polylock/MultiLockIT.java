package io.polylock;

import static io.polylock.Servers.onOtherThread;
import static io.polylock.Servers.unique;
import static io.polylock.Servers.zkPath;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The multi-lock over a Redis lock and a ZooKeeper lock, with what is left on each server read
 * directly (Redis through a plain client, ZooKeeper through Curator).
 */
class MultiLockIT {
    private PolylockClient redis;
    private PolylockClient zk;
    private PolylockClient otherRedis;
    private PolylockClient otherZk;
    private CuratorFramework curator;
    private Peek peek;
    private String name;
    private String path;

    @BeforeEach
    void connect() throws Exception {
        redis = Polylock.connect(Servers.redisUrl());
        zk = Polylock.connect(Servers.zkUrl());
        otherRedis = Polylock.connect(Servers.redisUrl());
        otherZk = Polylock.connect(Servers.zkUrl());
        curator = CuratorFrameworkFactory.newClient(Servers.zkConnect(), new ExponentialBackoffRetry(100, 3));
        curator.start();
        assertTrue(curator.blockUntilConnected(10, TimeUnit.SECONDS), "Curator connected");
        peek = new Peek(Servers.redisUrl());
        name = unique("multi");
        path = zkPath("multi");
    }

    @AfterEach
    void close() {
        redis.close();
        zk.close();
        otherRedis.close();
        otherZk.close();
        curator.close();
        peek.close();
    }

    /** The lock nodes under the ZooKeeper member's path. */
    private int zkNodes() throws Exception {
        if (curator.checkExists().forPath(path) == null) {
            return 0;
        }
        return curator.getChildren().forPath(path).size();
    }

    /** The Redis member's hash: owner field to hold count. */
    private Map<String, String> redisHolders() {
        return peek.hash(name);
    }

    private static String field(PolylockClient c) {
        return c.getId() + ":" + PolylockClient.currentOwner();
    }

    @Test
    void aRedisAndAZooKeeperLockAreTakenAllOrNothing() throws Exception {
        DistributedLock a = redis.getLock(name);
        DistributedLock b = zk.getLock(path);
        DistributedLock both = redis.getMultiLock(a, b);
        assertTrue(both.isMultiLock());
        assertFalse(a.isMultiLock());
        assertEquals(List.of(a, b), both.getMembers(), "the members as given");
        assertEquals(path + "+" + name, both.getName(), "taken in the canonical order: the path sorts first");
        assertEquals("DistributedMultiLock[" + both.getName() + "]", both.toString());

        // The ZooKeeper member, taken first, is held by another client: nothing is taken.
        DistributedLock zkElsewhere = otherZk.getLock(path);
        zkElsewhere.lock();
        long t0 = System.nanoTime();
        assertFalse(both.tryLock(300, TimeUnit.MILLISECONDS));
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(waited >= 250, "waited for the ZooKeeper member: " + waited + " ms");
        assertEquals(0, peek.exists(name), "the Redis member was never taken");
        assertEquals(1, zkNodes(), "only the other client's node: ours left with the timeout");
        zkElsewhere.unlock();

        // The Redis member, taken second, is held by another client: the ZooKeeper member taken
        // first is given back, with and without a wait.
        DistributedLock redisElsewhere = otherRedis.getLock(name);
        redisElsewhere.lock();
        String theirs = field(otherRedis);
        assertFalse(both.tryLock(300, TimeUnit.MILLISECONDS));
        assertEquals(0, zkNodes(), "the ZooKeeper member taken first was given back");
        assertEquals(Map.of(theirs, "1"), redisHolders(), "the Redis hash is the other client's alone");
        assertFalse(both.tryLock());
        assertEquals(0, zkNodes(), "given back after one try too");
        assertEquals(Map.of(theirs, "1"), redisHolders());
        assertFalse(b.isLocked());
        // An interrupted wait gives back what it took as well.
        Servers.Interrupted r = Servers.interruptWhileWaiting(() -> {
            both.lockInterruptibly();
            return null;
        }, 300);
        assertInstanceOf(InterruptedException.class, r.outcome);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (zkNodes() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, zkNodes(), "the interrupted acquire gave the ZooKeeper member back");
        assertEquals(Map.of(theirs, "1"), redisHolders());
        redisElsewhere.unlock();

        // Both free: both taken, both on their servers, both released.
        assertTrue(both.tryLock(5, TimeUnit.SECONDS));
        assertEquals(Map.of(field(redis), "1"), redisHolders());
        assertEquals(1, zkNodes());
        assertTrue(both.isLocked());
        assertTrue(both.isAcquiredInThisProcess());
        assertTrue(both.remainTimeToLive() > 20_000, "the Redis member's watchdog lease");
        both.unlock();
        assertEquals(0, peek.exists(name));
        assertEquals(0, zkNodes());
        assertFalse(both.isLocked());
        assertEquals(-2, both.remainTimeToLive());
        assertThrows(IllegalMonitorStateException.class, both::unlock);
        both.close();
    }

    @Test
    void reentrantPerThreadWithEachMembersTokenReadableOnTheMember() throws Exception {
        DistributedLock a = redis.getLock(name);
        DistributedLock b = zk.getLock(path);
        DistributedLock both = Polylock.multiLock(List.of(b, a));
        both.lock();
        both.lockInterruptibly();
        assertTrue(both.tryLock());
        assertTrue(both.tryLock(1, TimeUnit.SECONDS));
        assertEquals(4, both.getHoldCount());
        assertEquals(4, a.getHoldCount(), "the Redis member held four times by this thread");
        assertEquals(4, b.getHoldCount(), "the ZooKeeper member held four times by this thread");
        assertEquals(Map.of(field(redis), "4"), redisHolders());
        assertEquals(1, zkNodes(), "one node, re-entries counted by the client");
        long ta = a.getFencingToken();
        long tb = b.getFencingToken();
        assertTrue(ta > 0 && tb > 0, ta + " " + tb);
        assertEquals(Math.max(ta, tb), both.getFencingToken(), "the multi-lock's token is the largest");
        // Another thread is another owner: excluded from the multi-lock and from each member.
        assertFalse(Servers.<Boolean>onOtherThread(both::tryLock));
        assertFalse(Servers.<Boolean>onOtherThread(a::tryLock));
        assertFalse(Servers.<Boolean>onOtherThread(() -> b.tryLock(100, TimeUnit.MILLISECONDS)));
        assertEquals(0, (int) onOtherThread(both::getHoldCount));
        assertThrows(IllegalMonitorStateException.class, () -> onOtherThread(() -> {
            both.unlock();
            return null;
        }));
        assertThrows(IllegalMonitorStateException.class, () -> onOtherThread(both::getFencingToken));
        both.unlock();
        both.unlock();
        both.unlock();
        assertEquals(1, both.getHoldCount());
        assertEquals(ta, a.getFencingToken(), "re-entries keep the members' tokens");
        assertEquals(tb, b.getFencingToken());
        both.unlock();
        assertFalse(a.isLocked());
        assertFalse(b.isLocked());
        assertThrows(IllegalMonitorStateException.class, both::unlock, "double release");
        assertThrows(IllegalMonitorStateException.class, a::getFencingToken);

        // The next holder's tokens are greater; the hold as a resource carries the largest.
        try (DistributedLock.Hold h = both.hold()) {
            assertTrue(a.getFencingToken() > ta && b.getFencingToken() > tb);
            assertEquals(Math.max(a.getFencingToken(), b.getFencingToken()), h.getFencingToken());
            assertSame(both, h.getLock());
        }
        assertEquals(0, peek.exists(name));
        assertEquals(0, zkNodes());
        both.close();
    }

    @Test
    void twoMultiLocksOverTheSameLocksInOppositeOrdersNeverDeadlock() throws Exception {
        // Two clients of each server, two multi-locks: one given (Redis, ZooKeeper), the other
        // (ZooKeeper, Redis); two threads on each, 200 rounds in all.
        DistributedLock one = redis.getMultiLock(redis.getLock(name), zk.getLock(path));
        DistributedLock two = Polylock.multiLock(List.of(otherZk.getLock(path), otherRedis.getLock(name)));
        int threads = 4;
        int rounds = 50;
        int[] count = {0};
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        long t0 = System.nanoTime();
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                DistributedLock m = i % 2 == 0 ? one : two;
                done.add(pool.submit(() -> {
                    for (int round = 0; round < rounds; round++) {
                        m.lock();
                        try {
                            if (inside.incrementAndGet() > 1) {
                                overlaps.incrementAndGet();
                            }
                            int v = count[0];
                            Thread.yield();
                            count[0] = v + 1;
                            inside.decrementAndGet();
                        } finally {
                            m.unlock();
                        }
                    }
                    return null;
                }));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            for (Future<?> f : done) {
                // A deadlock shows as a timeout here.
                f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.out.printf("two multi-locks (Redis+ZooKeeper) in opposite orders: %d rounds on %d threads in %d ms,"
                + " %d overlaps%n", count[0], threads, ms, overlaps.get());
        assertEquals(threads * rounds, count[0], "the non-atomic counter is exact");
        assertEquals(0, overlaps.get());
        assertEquals(0, peek.exists(name));
        assertEquals(0, zkNodes());
        one.close();
        two.close();
    }

    @Test
    void aLostMemberFiresTheMultiLocksListener() throws Exception {
        DistributedLock a = redis.getLock(name);
        DistributedLock b = zk.getLock(path);
        DistributedLock both = redis.getMultiLock(a, b);
        BlockingQueue<Object[]> heard = new ArrayBlockingQueue<>(8);
        both.addListener((lock, cause) -> heard.add(new Object[] {lock, cause}));
        both.lock();
        assertFalse(both.isLost());
        // Another client deletes the ZooKeeper member's node: lost at once (its watch fires).
        assertTrue(otherZk.getLock(path).forceUnlock());
        Object[] event = heard.poll(5, TimeUnit.SECONDS);
        assertTrue(event != null, "the multi-lock's listener heard the lost member");
        assertSame(both, event[0]);
        assertInstanceOf(LockLostException.class, event[1]);
        assertTrue(((Exception) event[1]).getMessage().contains(path), ((Exception) event[1]).getMessage());
        assertTrue(both.isLost());
        assertTrue(b.isLost(), "the member itself says so");
        assertFalse(a.isLost(), "the other member is not lost");
        assertThrows(LockLostException.class, both::unlock, "the release reports the loss");
        assertEquals(0, peek.exists(name), "and still gave the Redis member back");
        assertFalse(both.isLost(), "the lost hold is forgotten once released");

        // The ZooKeeper lock held and lost on its own (no multi-lock hold): not the multi-lock's.
        BlockingQueue<Exception> memberHeard = new ArrayBlockingQueue<>(4);
        b.addListener((lock, cause) -> memberHeard.add(cause));
        b.lock();
        assertTrue(otherZk.getLock(path).forceUnlock());
        assertTrue(memberHeard.poll(5, TimeUnit.SECONDS) != null, "the member's own listener heard it");
        assertNull(heard.poll(500, TimeUnit.MILLISECONDS), "the multi-lock's listener did not");
        assertThrows(LockLostException.class, b::unlock);

        // Removed or closed: nothing more is heard.
        both.lock();
        both.close();
        assertTrue(otherZk.getLock(path).forceUnlock());
        assertTrue(memberHeard.poll(5, TimeUnit.SECONDS) != null);
        assertNull(heard.poll(500, TimeUnit.MILLISECONDS), "a closed multi-lock's listener hears nothing");
        assertThrows(LockLostException.class, b::unlock, "its holds stayed: the members release them");
        assertEquals(Map.of(field(redis), "1"), redisHolders());
        a.unlock();
        assertEquals(0, peek.exists(name));
    }

    @Test
    void anUnreachableMultiLockIsFreedAndItsHoldsStayWithTheMembers() throws Exception {
        DistributedLock a = redis.getLock(name);
        DistributedLock b = zk.getLock(path);
        NativeHandle handle = lockAndForget(a, b);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!handle.isFreed() && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
            NativeHandle.reclaimUnreachable(); // what every new multi-lock does first
        }
        assertTrue(handle.isFreed(), "the native lock of a collected multi-lock was freed");
        assertEquals(1, a.getHoldCount(), "its holds stay: the Redis member");
        assertEquals(1, b.getHoldCount(), "and the ZooKeeper member");
        a.unlock();
        b.unlock();
        assertEquals(0, peek.exists(name));
        assertEquals(0, zkNodes());
    }

    /** Lock a multi-lock over {@code a} and {@code b} and drop it; its native lock. */
    private static NativeHandle lockAndForget(DistributedLock a, DistributedLock b) {
        DistributedLock m = Polylock.multiLock(List.of(a, b));
        m.lock();
        NativeHandle h = m.lockHandle();
        assertFalse(h.isFreed());
        return h;
    }

    @Test
    void badInputGetsTypedExceptions() throws Exception {
        DistributedLock a = redis.getLock(name);
        DistributedLock b = zk.getLock(path);
        assertThrows(IllegalArgumentException.class, () -> redis.getMultiLock());
        assertThrows(IllegalArgumentException.class, () -> Polylock.multiLock(Collections.emptyList()));
        assertThrows(IllegalArgumentException.class, () -> redis.getMultiLock(a, b, a), "the same object twice");
        assertThrows(IllegalArgumentException.class, () -> Polylock.multiLock(List.of(a, redis.getLock(name))),
                "the same lock through two objects");
        assertThrows(NullPointerException.class, () -> redis.getMultiLock((DistributedLock[]) null));
        assertThrows(NullPointerException.class, () -> redis.getMultiLock(a, null));
        assertThrows(NullPointerException.class, () -> Polylock.multiLock(null));

        // A multi-lock among the locks gives its members; overlapping, it is refused.
        DistributedLock both = redis.getMultiLock(a, b);
        DistributedLock c = redis.getLock(unique("multi-c"));
        DistributedLock three = Polylock.multiLock(List.of(c, both));
        assertEquals(3, three.getName().split("\\+").length, three.getName());
        assertThrows(IllegalArgumentException.class, () -> redis.getMultiLock(both, a));
        three.lock();
        assertTrue(a.isHeldByCurrentThread() && b.isHeldByCurrentThread() && c.isHeldByCurrentThread());
        three.unlock();
        assertFalse(a.isLocked() || b.isLocked() || c.isLocked());

        // Closed handles: a closed multi-lock refuses every call; a closed lock cannot be a member.
        three.close();
        assertTrue(three.lockHandle().isFreed(), "closing frees the native lock at once when no call uses it");
        three.close();
        PolylockException e = assertThrows(PolylockException.class, three::tryLock);
        assertEquals(PolylockException.Code.INVALID_STATE, e.getCode());
        assertTrue(both.tryLock(), "closing a multi-lock that has it as a member leaves it usable");
        both.unlock();
        c.close();
        e = assertThrows(PolylockException.class, () -> redis.getMultiLock(c, a));
        assertEquals(PolylockException.Code.INVALID_STATE, e.getCode());
        // A member's client closed: the multi-lock's calls say so.
        both.close();
        DistributedLock withClosed = redis.getMultiLock(otherRedis.getLock(name), b);
        otherRedis.close();
        e = assertThrows(PolylockException.class, withClosed::tryLock);
        assertEquals(PolylockException.Code.INVALID_STATE, e.getCode());
        assertEquals(0, zkNodes(), "nothing of the ZooKeeper member was left behind");
        withClosed.close();
    }
}
