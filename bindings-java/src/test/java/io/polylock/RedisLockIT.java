package io.polylock;

import static io.polylock.Servers.onOtherThread;
import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The core behaviours through Java, against the real Redis. */
class RedisLockIT {
    private PolylockClient client;

    @BeforeEach
    void connect() {
        client = Polylock.connect(Servers.redisUrl());
    }

    @AfterEach
    void close() {
        client.close();
    }

    @Test
    void lockUnlockReentrantPerThread() throws Exception {
        DistributedLock lock = client.getLock(unique("reentrant"));
        assertFalse(lock.isLocked());
        assertEquals(-2, lock.remainTimeToLive());
        lock.lock();
        lock.lock();
        assertTrue(lock.tryLock());
        assertEquals(3, lock.getHoldCount());
        assertTrue(lock.isHeldByCurrentThread());
        assertTrue(lock.isAcquiredInThisProcess());
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 20_000 && ttl <= 30_000, "watchdog lease, got " + ttl);
        long token = lock.getFencingToken();
        // Another thread of the same client is another owner: excluded.
        assertFalse((boolean) Servers.<Boolean>onOtherThread(lock::tryLock));
        assertFalse((boolean) Servers.<Boolean>onOtherThread(lock::isHeldByCurrentThread));
        assertEquals(0, (int) onOtherThread(lock::getHoldCount));
        assertThrows(IllegalMonitorStateException.class, () -> {
            try {
                onOtherThread(() -> {
                    lock.unlock();
                    return null;
                });
            } catch (Exception e) {
                throw e;
            }
        });
        lock.unlock();
        lock.unlock();
        assertEquals(1, lock.getHoldCount());
        assertEquals(token, lock.getFencingToken(), "a re-entry keeps the token");
        lock.unlock();
        assertFalse(lock.isLocked());
        assertThrows(IllegalMonitorStateException.class, lock::unlock, "double release");
        assertThrows(IllegalMonitorStateException.class, lock::getFencingToken);
        assertTrue((boolean) Servers.<Boolean>onOtherThread(() -> {
            boolean got = lock.tryLock();
            if (got) {
                assertTrue(lock.getFencingToken() > token, "the next holder's token is greater");
                lock.unlock();
            }
            return got;
        }));
    }

    @Test
    void tryLockWaitsForAReleaseAndTimesOut() throws Exception {
        DistributedLock lock = client.getLock(unique("wait"));
        lock.lock();
        long t0 = System.nanoTime();
        assertFalse((boolean) Servers.<Boolean>onOtherThread(() -> lock.tryLock(200, TimeUnit.MILLISECONDS)));
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(waited >= 190 && waited < 2_000, "waited " + waited + " ms");
        assertFalse((boolean) Servers.<Boolean>onOtherThread(() -> lock.tryLock(0, TimeUnit.SECONDS)), "zero wait: one try");
        CountDownLatch waiting = new CountDownLatch(1);
        AtomicReference<Long> wokeAt = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                waiting.countDown();
                if (lock.tryLock(10, TimeUnit.SECONDS)) {
                    wokeAt.set(System.nanoTime());
                    lock.unlock();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        waiter.start();
        waiting.await();
        Thread.sleep(150);
        long releasedAt = System.nanoTime();
        lock.unlock();
        waiter.join(10_000);
        assertNotNull(wokeAt.get(), "the waiter got the lock");
        long ms = TimeUnit.NANOSECONDS.toMillis(wokeAt.get() - releasedAt);
        assertTrue(ms < 5_000, "woken by the release notification (not a 30 s lease's expiry) in " + ms + " ms");
    }

    @Test
    void fixedLeaseExpiresAndTheListenerHearsOfIt() throws Exception {
        DistributedLock lock = client.getLock(unique("lease"));
        BlockingQueue<Object[]> heard = new ArrayBlockingQueue<>(4);
        lock.addListener((l, e) -> {
            // Listeners may call back into polylock, blocking calls included.
            heard.add(new Object[] {l, e, Thread.currentThread().getName(), l.remainTimeToLive()});
        });
        lock.lock(300, TimeUnit.MILLISECONDS);
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= 300, "fixed lease, got " + ttl);
        Object[] ev = heard.poll(5, TimeUnit.SECONDS);
        assertNotNull(ev, "the listener heard of the expiry");
        assertEquals(lock, ev[0]);
        assertInstanceOf(LockLostException.class, ev[1]);
        assertEquals("polylock-events", ev[2]);
        assertTrue(((LockLostException) ev[1]).getMessage().startsWith("lock '" + lock.getName() + "' was lost: "),
                ((Exception) ev[1]).getMessage());
        // The client declares a fixed lease lost at (send time + lease), at most a round trip
        // before the server expires the key: by then the key is gone or has only moments left.
        long leftOnServer = (Long) ev[3];
        assertTrue(leftOnServer <= 50, "the server still gave the lease " + leftOnServer + " ms");
        assertTrue(lock.isLost());
        LockLostException lost = assertThrows(LockLostException.class, lock::unlock);
        assertEquals(PolylockException.Code.LOCK_LOST, lost.getCode());
        assertFalse(lock.isLost(), "the release cleared the lost hold");
        assertTrue(lock.tryLock(), "free again");
        lock.unlock();
    }

    @Test
    void listeningToManyNamesInTurnLeavesNoEntryBehind() throws Exception {
        // Issue 46 §6: the client's map of names with listeners drops a name with its last one.
        String prefix = unique("listened");
        DistributedLock.Listener listener = (l, e) -> { };
        for (int i = 0; i < 1000; i++) {
            DistributedLock lock = client.getLock(prefix + ":" + i);
            lock.addListener(listener);
            lock.lock();
            lock.unlock();
            lock.removeListener(listener);
            DistributedPermitExpirableSemaphore sem = client.getPermitExpirableSemaphore(prefix + ":sem:" + i);
            sem.addListener((s, e) -> { });
            sem.close();
        }
        assertEquals(0, client.listenedNames(), "every listener removed: no name left");
        // A handle that listens keeps its entry and hears each loss. With a fixed lease that runs
        // out unreleased (Redisson's lock(lease) without unlock) its thread takes the lock again.
        DistributedLock kept = client.getLock(prefix + ":kept");
        BlockingQueue<Exception> heard = new ArrayBlockingQueue<>(4);
        kept.addListener((l, e) -> heard.add(e));
        kept.addListener(listener);
        for (int round = 0; round < 2; round++) {
            assertTrue(kept.tryLock(0, 200, TimeUnit.MILLISECONDS), "round " + round + ": taken");
            Exception e = heard.poll(5, TimeUnit.SECONDS);
            assertNotNull(e, "round " + round + ": the lease's end is told");
            assertEquals(LostReason.EXPIRED, assertInstanceOf(LockLostException.class, e).getReason());
        }
        assertEquals(1, client.listenedNames());
        kept.close();
        assertEquals(0, client.listenedNames());
    }

    @Test
    void theWatchdogKeepsALockPastItsLease() throws Exception {
        try (PolylockClient c = Polylock.connect(Servers.redisUrl(),
                new Polylock.Options().watchdogTimeout(Duration.ofMillis(300)))) {
            DistributedLock lock = c.getLock(unique("watchdog"));
            lock.lock();
            Thread.sleep(1_000);
            assertTrue(lock.isHeldByCurrentThread(), "renewed past three leases");
            assertFalse(lock.isLost());
            lock.unlock();
        }
    }

    @Test
    void forceUnlockLosesTheHoldAndTellsTheListener() throws Exception {
        // A short watchdog, so that its next renewal (a third of it) finds the entry gone soon.
        PolylockClient quick = Polylock.connect(Servers.redisUrl(),
                new Polylock.Options().watchdogTimeout(Duration.ofMillis(600)));
        DistributedLock lock = quick.getLock(unique("force"));
        CountDownLatch heard = new CountDownLatch(1);
        lock.addListener((l, e) -> heard.countDown());
        lock.lock();
        try (PolylockClient other = Polylock.connect(Servers.redisUrl())) {
            assertTrue(other.getLock(lock.getName()).forceUnlock());
            assertFalse(other.getLock(lock.getName()).forceUnlock(), "nothing left to unlock");
        }
        assertTrue(heard.await(5, TimeUnit.SECONDS), "the watchdog noticed and the listener heard");
        assertThrows(LockLostException.class, lock::unlock);
        quick.close();
    }

    @Test
    void holdIsATryWithResources() throws Exception {
        DistributedLock lock = client.getLock(unique("hold"));
        long token;
        try (DistributedLock.Hold h = lock.hold()) {
            token = h.getFencingToken();
            assertEquals(token, lock.getFencingToken());
            assertTrue(lock.isHeldByCurrentThread());
            try (DistributedLock.Hold inner = lock.hold(5, TimeUnit.SECONDS)) {
                assertEquals(2, lock.getHoldCount());
                assertEquals(token, inner.getFencingToken());
            }
            assertEquals(1, lock.getHoldCount());
            h.close();
            h.close(); // idempotent
            assertFalse(lock.isLocked());
        }
        assertFalse(lock.isLocked());
    }

    @Test
    void lockInterruptiblyAnswersAnInterruptAndLeavesNothing() throws Exception {
        DistributedLock lock = client.getLock(unique("interrupt"));
        lock.lock();
        for (int round = 0; round < 3; round++) {
            Servers.Interrupted r = Servers.interruptWhileWaiting(() -> {
                lock.lockInterruptibly();
                return null;
            }, 100);
            assertInstanceOf(InterruptedException.class, r.outcome);
            assertTrue(r.answeredMs < 3_000, "interrupt answered in " + r.answeredMs + " ms");
        }
        // tryLock(wait) and Curator's acquire() too; an interrupt already set is seen at once.
        assertThrows(InterruptedException.class, () -> onOtherThread(() -> {
            Thread.currentThread().interrupt();
            return lock.tryLock(10, TimeUnit.SECONDS);
        }));
        lock.unlock();
        assertFalse(lock.isLocked(), "no waiter took the lock after its interrupt");
        // lock() is not interruptible: it keeps waiting and keeps the interrupt.
        lock.lock();
        AtomicReference<Boolean> interruptedAfter = new AtomicReference<>();
        Thread t = new Thread(() -> {
            lock.lock();
            interruptedAfter.set(Thread.currentThread().isInterrupted());
            lock.unlock();
        });
        t.start();
        Thread.sleep(100);
        t.interrupt();
        Thread.sleep(100);
        assertTrue(t.isAlive(), "lock() waits on through an interrupt");
        lock.unlock();
        t.join(5_000);
        assertEquals(Boolean.TRUE, interruptedAfter.get());
    }

    @Test
    void hundredThreadsOnOneLockKeepACounterExact() throws Exception {
        String name = unique("counter");
        Sections sections = new Sections();
        List<Thread> threads = new ArrayList<>();
        // Two clients, so exclusion between them goes through the server.
        try (PolylockClient second = Polylock.connect(Servers.redisUrl())) {
            for (int i = 0; i < 100; i++) {
                DistributedLock lock = (i % 2 == 0 ? client : second).getLock(name);
                Thread t = new Thread(sections.worker(lock, 5));
                threads.add(t);
                t.start();
            }
            for (Thread t : threads) {
                t.join(60_000);
                assertFalse(t.isAlive(), "a thread is stuck");
            }
        }
        assertEquals(0, sections.overlaps.get());
        assertEquals(500, sections.counter.get());
    }

    @Test
    void badArgumentsGetClearErrors() throws Exception {
        assertThrows(IllegalArgumentException.class, () -> client.getLock(""));
        assertThrows(IllegalArgumentException.class, () -> client.getLock("a\0b"));
        // A lone surrogate has no UTF-8 form: refused, never made U+FFFD (two such names were one lock).
        for (String bad : new String[] {"a\uD800", "a\uDC00b", "\uDBFF"}) {
            assertThrows(IllegalArgumentException.class, () -> client.getLock(bad), bad);
            assertThrows(IllegalArgumentException.class, () -> client.getSemaphore(bad), bad);
            assertThrows(IllegalArgumentException.class, () -> client.getCountDownLatch(bad), bad);
        }
        assertEquals("a\uD83D\uDD12", client.getLock("a\uD83D\uDD12").getName());
        char[] big = new char[100_000];
        java.util.Arrays.fill(big, 'x');
        assertThrows(IllegalArgumentException.class, () -> client.getLock(new String(big)));
        assertThrows(NullPointerException.class, () -> client.getLock(null));
        assertThrows(UnsupportedOperationException.class, () -> client.getMutex("/x"), "no mutex on Redis");
        DistributedLock lock = client.getLock(unique("args"));
        assertThrows(IllegalArgumentException.class, () -> lock.lock(0, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.lock(-5, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(1, -2, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.lock(Long.MAX_VALUE, TimeUnit.DAYS), "too long");
        assertThrows(NullPointerException.class, () -> lock.tryLock(1, null));
        assertThrows(UnsupportedOperationException.class, lock::newCondition);
        assertThrows(NullPointerException.class, () -> lock.addListener(null));
        assertFalse(lock.isLocked(), "nothing was acquired by the bad calls");
        // A Unicode name beyond the BMP survives Java's modified UTF-8.
        DistributedLock emoji = client.getLock(unique("\uD83D\uDD12-é"));
        emoji.lock();
        emoji.unlock();
        // Wrong password: an auth error, not a crash.
        PolylockException auth = assertThrows(PolylockException.class,
                () -> Polylock.connect("redis://nobody:wrong@127.0.0.1:" + port(Servers.redisUrl())));
        assertEquals(PolylockException.Code.AUTH, auth.getCode());
        assertInstanceOf(PolylockAuthException.class, auth);
    }

    @Test
    void useAfterCloseIsAnInvalidState() throws Exception {
        PolylockClient c = Polylock.connect(Servers.redisUrl());
        DistributedLock lock = c.getLock(unique("closed"));
        lock.lock();
        DistributedLock handle = c.getLock(lock.getName());
        handle.close();
        handle.close();
        assertEquals(PolylockException.Code.INVALID_STATE, assertThrows(PolylockException.class, handle::tryLock).getCode());
        // A waiter on another thread is ended by the close.
        AtomicReference<Throwable> waiterOutcome = new AtomicReference<>();
        DistributedLock waiterLock = c.getLock(lock.getName());
        Thread waiter = new Thread(() -> {
            try {
                waiterLock.lock();
                waiterOutcome.set(new AssertionError("acquired"));
            } catch (Throwable e) {
                waiterOutcome.set(e);
            }
        });
        waiter.start();
        Thread.sleep(100);
        c.close();
        c.close();
        assertTrue(c.isClosed());
        waiter.join(5_000);
        assertInstanceOf(PolylockException.class, waiterOutcome.get());
        assertEquals(PolylockException.Code.INVALID_STATE, ((PolylockException) waiterOutcome.get()).getCode());
        for (org.junit.jupiter.api.function.Executable call : new org.junit.jupiter.api.function.Executable[] {
                lock::lock, lock::unlock, lock::isLocked, () -> c.getLock("x"), c::isSuspended}) {
            PolylockException e = assertThrows(PolylockException.class, call);
            assertEquals(PolylockException.Code.INVALID_STATE, e.getCode());
        }
        try (PolylockClient other = Polylock.connect(Servers.redisUrl())) {
            assertFalse(other.getLock(lock.getName()).isLocked(), "close released the held lock");
        }
    }

    private static int port(String url) {
        String hostPort = url.substring(url.indexOf("://") + 3);
        int at = hostPort.lastIndexOf('@');
        hostPort = hostPort.substring(at + 1);
        int slash = hostPort.indexOf('/');
        if (slash >= 0) {
            hostPort = hostPort.substring(0, slash);
        }
        return Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
    }

    @SuppressWarnings("unused")
    private static void unreachable() {
        fail();
    }
}
