package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The semaphore and count-down latch cases every server runs (RedisSemaphoreIT, ZkSemaphoreIT):
 * N permits bound 16 threads to exactly N inside at once, timeouts, a release waking a waiter by
 * notification, bad input, interrupts that leave nothing taken, leases, and the latch waking every
 * waiter at zero.
 */
abstract class SemaphoreCases {
    PolylockClient client;
    /** A second connection: the permits are counted by the server, not by one client. */
    PolylockClient second;

    abstract String url();

    /** A fresh name (a ZooKeeper path on ZooKeeper). */
    abstract String name(String prefix);

    /**
     * How soon an interrupted acquire must answer, in milliseconds: a cancelled acquire runs on
     * for 100 ms first, so that a try in flight is finished and given back
     * (bindings-java/src/semaphore.rs, CANCEL_GRACE).
     */
    static final long INTERRUPT_BOUND_MS = 300;

    @BeforeEach
    void connect() {
        client = Polylock.connect(url());
        second = Polylock.connect(url());
    }

    @AfterEach
    void close() {
        client.close();
        second.close();
    }

    /**
     * Wait up to 5 s for the server to show {@code n} free permits (a cancelled ZooKeeper wait
     * deletes its node in the background).
     */
    /**
     * Wait until the server has {@code n} free permits and still has them 100 ms later: an acquire
     * cancelled by an interrupt while its script was on the way may take a permit for a moment
     * after the thread got its InterruptedException, and gives it back in the background.
     */
    static void awaitAvailable(DistributedSemaphore s, int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < deadline) {
            if (s.availablePermits() == n) {
                Thread.sleep(100);
                if (s.availablePermits() == n) {
                    return;
                }
            }
            Thread.sleep(10);
        }
        assertEquals(n, s.availablePermits(), "free permits on the server");
    }

    @Test
    void nPermitsLetExactlyNOf16ThreadsInAndEveryThreadFinishes() throws Exception {
        String name = name("sem16");
        assertTrue(client.getSemaphore(name).trySetPermits(3));
        assertFalse(second.getSemaphore(name).trySetPermits(7), "set once");
        assertEquals(3, second.getSemaphore(name).availablePermits());
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger finished = new AtomicInteger();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            DistributedSemaphore sem = (i % 2 == 0 ? client : second).getSemaphore(name);
            boolean timed = i % 4 < 2;
            Thread t = new Thread(() -> {
                try {
                    for (int k = 0; k < 3; k++) {
                        if (timed) {
                            assertTrue(sem.tryAcquire(60, TimeUnit.SECONDS));
                        } else {
                            sem.acquire();
                        }
                        try {
                            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            // Until all 3 permits have been seen held at once, stay up to 2 s for
                            // the others: a slow acquire must not pass for a semaphore that admits
                            // fewer than its permits.
                            long stayUntil = System.nanoTime() + 2_000_000_000L;
                            while (most.get() < 3 && System.nanoTime() < stayUntil) {
                                Thread.sleep(1);
                            }
                            Thread.sleep(10);
                            inside.decrementAndGet();
                        } finally {
                            sem.release();
                        }
                    }
                    finished.incrementAndGet();
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            }, "sem-worker-" + i);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join(50_000);
            assertFalse(t.isAlive(), t.getName() + " is stuck");
        }
        if (failed.get() != null) {
            throw new AssertionError("a worker failed: " + failed.get(), failed.get());
        }
        System.out.printf("semaphore on %s: 3 permits, 16 threads, at most %d inside at once%n", url(), most.get());
        assertEquals(16, finished.get(), "every thread finished");
        assertEquals(3, most.get(), "the most inside at once");
        assertEquals(3, client.getSemaphore(name).availablePermits(), "every permit came back");
    }

    @Test
    void tryAcquireTimesOutAndAReleaseWakesAWaiterByNotification() throws Exception {
        String name = name("semwait");
        DistributedSemaphore sem = client.getSemaphore(name);
        DistributedSemaphore other = second.getSemaphore(name);
        sem.trySetPermits(1);
        sem.acquire();
        assertEquals(0, other.availablePermits());
        long t0 = System.nanoTime();
        assertFalse(other.tryAcquire(200, TimeUnit.MILLISECONDS));
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(waited >= 190 && waited < 2_000, "waited " + waited + " ms");
        assertFalse(other.tryAcquire(), "one try");
        assertFalse(other.tryAcquire(0, TimeUnit.SECONDS), "zero wait: one try");
        assertNull(other.acquireLease(100, TimeUnit.MILLISECONDS), "Curator's acquire(time): null on timeout");
        List<Long> wakeMs = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            boolean timed = round % 2 == 0;
            Holder waiter = Holder.start("sem-waiter", () -> {
                if (timed) {
                    assertTrue(other.tryAcquire(10, TimeUnit.SECONDS));
                } else {
                    other.acquire();
                }
            }, other::release);
            Thread.sleep(200);
            assertFalse(waiter.isHeld(), "waits while no permit is free");
            long released = System.nanoTime();
            sem.release();
            assertTrue(waiter.awaitHeld(10_000), "the waiter got the permit");
            wakeMs.add(TimeUnit.NANOSECONDS.toMillis(waiter.heldAt() - released));
            waiter.release();
            sem.acquire();
        }
        sem.release();
        System.out.printf("semaphore on %s: a release woke the waiter in %s ms%n", url(), wakeMs);
        for (long ms : wakeMs) {
            assertTrue(ms < 5_000, "woken by the release notification in " + wakeMs + " ms");
        }
        assertEquals(1, sem.availablePermits());
    }

    @Test
    void badInputIsATypedError() throws Exception {
        DistributedSemaphore sem = client.getSemaphore(name("sembad"));
        sem.trySetPermits(1);
        List<Executable> bad = Arrays.asList(
                () -> sem.acquire(0),
                () -> sem.acquire(-1),
                () -> sem.acquireUninterruptibly(0),
                () -> sem.tryAcquire(0),
                () -> sem.tryAcquire(-2),
                () -> sem.tryAcquire(0, 1, TimeUnit.SECONDS),
                () -> sem.tryAcquire(-1, 1, TimeUnit.SECONDS),
                () -> sem.acquireLease(0, 1, TimeUnit.SECONDS),
                () -> sem.release(0),
                () -> sem.release(-1),
                () -> sem.trySetPermits(-1));
        for (int i = 0; i < bad.size(); i++) {
            assertThrows(IllegalArgumentException.class, bad.get(i), "bad call " + i);
        }
        assertThrows(NullPointerException.class, () -> client.getSemaphore(null));
        assertThrows(NullPointerException.class, () -> sem.tryAcquire(1, null));
        assertThrows(IllegalArgumentException.class, () -> client.getSemaphore(""));
        assertThrows(IllegalArgumentException.class, () -> client.getCountDownLatch(""));
        assertEquals(1, sem.availablePermits(), "nothing was taken by the refused calls");
        // addPermits and drainPermits (Redisson's words).
        sem.addPermits(2);
        assertEquals(3, sem.availablePermits());
        sem.addPermits(-1);
        assertEquals(2, sem.availablePermits());
        assertEquals(2, sem.drainPermits());
        assertEquals(0, sem.availablePermits());
        assertFalse(sem.tryAcquire());
        sem.release(2);
        assertEquals(2, sem.availablePermits());
    }

    @Test
    void anInterruptCancelsAWaitingAcquireAndLeavesNothingTaken() throws Exception {
        String name = name("seminterrupt");
        DistributedSemaphore sem = client.getSemaphore(name);
        DistributedSemaphore other = second.getSemaphore(name);
        sem.trySetPermits(1);
        sem.acquire();
        List<Holder.Step> waits = Arrays.asList(
                other::acquire,
                () -> other.acquire(1),
                () -> other.tryAcquire(30, TimeUnit.SECONDS),
                () -> other.acquireLease(),
                () -> other.acquireLease(30, TimeUnit.SECONDS));
        for (Holder.Step w : waits) {
            Servers.Interrupted r = Servers.interruptWhileWaiting(() -> {
                w.run();
                return null;
            }, 150);
            assertInstanceOf(InterruptedException.class, r.outcome);
            assertTrue(r.answeredMs < INTERRUPT_BOUND_MS, "interrupt answered in " + r.answeredMs + " ms");
        }
        // An interrupted thread does not even start waiting.
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, other::acquire);
        assertFalse(Thread.interrupted());
        // acquireUninterruptibly keeps the interrupt for later.
        Holder stubborn = Holder.start("uninterruptible", () -> {
            Thread.currentThread().interrupt();
            other.acquireUninterruptibly();
            assertTrue(Thread.interrupted(), "the interrupt is kept");
        }, other::release);
        Thread.sleep(150);
        assertFalse(stubborn.isHeld());
        sem.release();
        assertTrue(stubborn.awaitHeld(10_000));
        stubborn.release();
        awaitAvailable(sem, 1);
        assertEquals(0, second.getSemaphore(name).heldPermits(), "the interrupted waits hold nothing");
    }

    @Test
    void anAcquireThatBeatsTheInterruptGivesItsPermitBack() throws Exception {
        // The release and the interrupt race: whichever wins, the waiter ends with the permit
        // (and gives it back itself) or without it, and none is left taken.
        String name = name("semrace");
        DistributedSemaphore sem = client.getSemaphore(name);
        DistributedSemaphore other = second.getSemaphore(name);
        sem.trySetPermits(1);
        int got = 0;
        int interrupted = 0;
        for (int round = 0; round < 20; round++) {
            sem.acquire();
            AtomicReference<Object> outcome = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    other.acquire();
                    outcome.set("acquired");
                    other.release();
                } catch (Throwable e) {
                    outcome.set(e);
                }
            }, "racer");
            t.start();
            Thread.sleep(30);
            sem.release();
            if (round % 2 == 1) {
                Thread.sleep(0, 200_000);
            }
            t.interrupt();
            t.join(10_000);
            assertFalse(t.isAlive());
            if ("acquired".equals(outcome.get())) {
                got++;
            } else {
                assertInstanceOf(InterruptedException.class, outcome.get());
                interrupted++;
            }
            awaitAvailable(sem, 1);
        }
        System.out.printf("semaphore on %s: release vs interrupt, %d acquired, %d interrupted, none left taken%n",
                url(), got, interrupted);
        assertEquals(0, other.heldPermits());
    }

    @Test
    void leasesAreAutoCloseableAndReturnedOnce() throws Exception {
        String name = name("semlease");
        DistributedSemaphore sem = client.getSemaphore(name);
        sem.trySetPermits(3);
        try (DistributedSemaphore.Lease lease = sem.acquireLease()) {
            assertEquals(1, lease.getPermits());
            assertSame(sem, lease.getSemaphore());
            assertFalse(lease.isLost());
            assertEquals(2, sem.availablePermits());
        }
        assertEquals(3, sem.availablePermits());
        DistributedSemaphore.Lease two = sem.acquireLease(2, 1, TimeUnit.SECONDS);
        assertNotNull(two);
        assertEquals(2, two.getPermits());
        DistributedSemaphore.Lease one = second.getSemaphore(name).acquireLease(1, TimeUnit.SECONDS);
        assertNotNull(one);
        assertEquals(0, sem.availablePermits());
        assertNull(sem.acquireLease(100, TimeUnit.MILLISECONDS));
        sem.returnAll(Arrays.asList(two, one));
        assertTrue(two.isReturned());
        two.close(); // idempotent
        sem.returnLease(one);
        sem.returnLease(null);
        assertEquals(3, sem.availablePermits());
        // A lease returned from another thread.
        DistributedSemaphore.Lease l = sem.acquireLease();
        Servers.onOtherThread(() -> {
            l.close();
            return null;
        });
        assertEquals(3, sem.availablePermits());
    }

    @Test
    void aLatchIsANativeHandleFreedOnceUnreachableAndTypedAfterItsClientCloses() throws Exception {
        NativeHandle h = forgottenLatch(name("latch-gc"));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!h.isFreed() && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
            NativeHandle.reclaimUnreachable(); // what every new native handle does first
        }
        assertTrue(h.isFreed(), "the native latch of a collected latch was freed");
        // A latch whose client closed answers every call with INVALID_STATE (its handle lives on).
        PolylockClient c = Polylock.connect(url());
        DistributedCountDownLatch latch = c.getCountDownLatch(name("latch-closed"));
        c.close();
        for (Executable call : Arrays.<Executable>asList(
                latch::countDown, latch::getCount, () -> latch.trySetCount(1), latch::delete,
                () -> latch.await(1, TimeUnit.SECONDS))) {
            PolylockException e = assertThrows(PolylockException.class, call);
            assertEquals(PolylockException.Code.INVALID_STATE, e.getCode());
        }
        assertThrows(PolylockException.class, () -> c.getCountDownLatch(name("latch-after")));
    }

    /** A latch made and dropped; its native handle. */
    private NativeHandle forgottenLatch(String name) {
        DistributedCountDownLatch latch = client.getCountDownLatch(name);
        assertEquals(0, latch.getCount());
        NativeHandle h = latch.nativeHandle();
        assertFalse(h.isFreed());
        return h;
    }

    @Test
    void latchWaitersAllWakeAtZeroAndTimeOutOtherwise() throws Exception {
        String name = name("latch");
        DistributedCountDownLatch latch = client.getCountDownLatch(name);
        DistributedCountDownLatch other = second.getCountDownLatch(name);
        assertEquals(name, latch.getName());
        assertEquals(0, latch.getCount(), "not counting: open");
        assertTrue(latch.await(0, TimeUnit.SECONDS));
        latch.await(); // open: returns at once
        assertThrows(IllegalArgumentException.class, () -> latch.trySetCount(0));
        assertThrows(IllegalArgumentException.class, () -> latch.trySetCount(-3));
        assertTrue(latch.trySetCount(2));
        assertFalse(other.trySetCount(9), "set once");
        assertEquals(2, other.getCount());
        long t0 = System.nanoTime();
        assertFalse(other.await(200, TimeUnit.MILLISECONDS), "times out while counting");
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(waited >= 190 && waited < 2_000, "waited " + waited + " ms");
        List<Holder> waiters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            DistributedCountDownLatch l = (i % 2 == 0 ? other : latch);
            boolean timed = i < 2;
            waiters.add(Holder.start("latch-waiter-" + i, () -> {
                if (timed) {
                    assertTrue(l.await(10, TimeUnit.SECONDS));
                } else {
                    l.await();
                }
            }, () -> { }));
        }
        Thread.sleep(150);
        latch.countDown();
        assertEquals(1, latch.getCount());
        Thread.sleep(100);
        for (Holder w : waiters) {
            assertFalse(w.isHeld(), "still counting");
        }
        long opened = System.nanoTime();
        other.countDown();
        long slowest = 0;
        for (Holder w : waiters) {
            assertTrue(w.awaitHeld(10_000), "every waiter woke");
            slowest = Math.max(slowest, TimeUnit.NANOSECONDS.toMillis(w.heldAt() - opened));
            w.release();
        }
        System.out.printf("latch on %s: 3 waiters woken within %d ms of the count reaching 0%n", url(), slowest);
        assertTrue(slowest < 5_000, "woken by notification in " + slowest + " ms");
        assertEquals(0, latch.getCount());
        latch.countDown(); // nothing on an open latch
        assertEquals(0, latch.getCount());
        // An interrupt ends a wait; delete opens the latch and wakes its waiters.
        assertTrue(latch.trySetCount(5));
        Servers.Interrupted r = Servers.interruptWhileWaiting(() -> {
            other.await();
            return null;
        }, 150);
        assertInstanceOf(InterruptedException.class, r.outcome);
        assertTrue(r.answeredMs < 3_000, "interrupt answered in " + r.answeredMs + " ms");
        Holder deleted = Holder.start("latch-deleted", other::await, () -> { });
        Thread.sleep(150);
        assertFalse(deleted.isHeld());
        assertTrue(latch.delete());
        assertTrue(deleted.awaitHeld(10_000), "delete woke the waiter");
        deleted.release();
        assertFalse(latch.delete(), "not counting any more");
        assertEquals(0, latch.getCount());
    }
}
