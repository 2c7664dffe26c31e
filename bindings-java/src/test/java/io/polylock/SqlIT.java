package io.polylock;

import static io.polylock.Servers.onOtherThread;
import static io.polylock.SqlDb.eventually;
import static io.polylock.SqlDb.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Session locks through Java on the real MariaDB (GET_LOCK) and PostgreSQL (advisory locks) of
 * scripts/servers.sh: exclusion, reentrancy, timeouts, fencing tokens, and the loss of a lock whose
 * connection is killed on the server. After each test every client is closed and the server is
 * checked: no session left waiting and no connection of the test left open.
 */
class SqlIT extends SqlSuite {
    /**
     * Four threads on each of two clients take turns 10 times each around a read-yield-write
     * counter: never two inside at once, the counter is exact, and the fencing tokens, read inside
     * the sections, rise in the order the sections ran.
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void exclusionWithACounterAcrossThreadsAndClients(SqlDb db) throws Exception {
        observe(db);
        String name = unique("excl");
        PolylockClient a = client(db);
        PolylockClient b = client(db);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicLong counter = new AtomicLong();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        AtomicReference<Throwable> failed = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            DistributedLock lock = (i % 2 == 0 ? a : b).getLock(name);
            Thread t = new Thread(() -> {
                try {
                    for (int k = 0; k < 10; k++) {
                        lock.lock();
                        try {
                            if (inside.incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            tokens.add(lock.getFencingToken());
                            long v = counter.get();
                            Thread.sleep(1);
                            counter.set(v + 1);
                            inside.decrementAndGet();
                        } finally {
                            lock.unlock();
                        }
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            }, "sql-excl-" + i);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join(45_000);
            assertFalse(t.isAlive(), t.getName() + " did not finish");
        }
        if (failed.get() != null) {
            throw new AssertionError("a worker failed: " + failed.get(), failed.get());
        }
        assertEquals(0, overlaps.get(), "two holders inside at once");
        assertEquals(80, counter.get());
        assertEquals(80, tokens.size());
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i - 1) < tokens.get(i), "tokens out of order at " + i + ": " + tokens);
        }
        // The tokens came from the shared sequence: no counter row for this lock.
        assertEquals(-1, observer.fence(db.fenceRow(name)), "a counter row without fencing=table");
        assertFalse(a.getLock(name).isLocked());
        assertEquals(0, observer.holders(name));
    }

    /**
     * One thread takes the lock three times: its hold count goes up and down, one token, one hold
     * on the server; another client and another thread of the same client are kept out until the
     * last unlock, after which the server's lock is free for a plain session too.
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void reentrantPerThreadWithHoldCount(SqlDb db) throws Exception {
        SqlDb.Session o = observe(db);
        String name = unique("reent");
        // The counter row (fencing=table) shows that a re-entry draws no token.
        PolylockClient a = client(db.url("fencing=table"), new Polylock.Options());
        PolylockClient b = client(db);
        DistributedLock la = a.getLock(name);
        DistributedLock lb = b.getLock(name);
        assertEquals(0, la.getHoldCount());
        la.lock();
        long token = la.getFencingToken();
        long session = o.holder(name);
        assertTrue(session > 0, "no session holds the lock on the server");
        assertTrue(la.tryLock());
        assertTrue(la.tryLock(1, TimeUnit.SECONDS));
        assertEquals(3, la.getHoldCount());
        assertTrue(la.isHeldByCurrentThread());
        assertEquals(token, la.getFencingToken(), "a re-entry keeps the token");
        // Re-entries are counted by polylock: still the one session, and no new token drawn.
        assertEquals(session, o.holder(name));
        assertEquals(1, o.holders(name));
        assertEquals(token, o.fence(db.fenceRow(name)));
        assertFalse(Servers.<Boolean>onOtherThread(lb::tryLock), "another client took a held lock");
        assertFalse(Servers.<Boolean>onOtherThread(la::tryLock), "another thread of the holder's client took it");
        assertEquals(0, (int) onOtherThread(la::getHoldCount));
        assertThrows(IllegalMonitorStateException.class, () -> onOtherThread(() -> {
            la.unlock();
            return null;
        }), "another thread unlocked the holder's lock");
        la.unlock();
        la.unlock();
        assertEquals(1, la.getHoldCount());
        assertTrue(lb.isLocked());
        assertFalse(Servers.<Boolean>onOtherThread(lb::tryLock), "free before the last unlock");
        try (SqlDb.Session plain = db.session()) {
            assertFalse(plain.tryLock(name), "the server's lock is free before the last unlock");
        }
        la.unlock();
        assertEquals(0, la.getHoldCount());
        assertThrows(IllegalMonitorStateException.class, la::unlock);
        assertEquals(0, o.holders(name), "the server's lock is still held after the last unlock");
        try (SqlDb.Session plain = db.session()) {
            assertTrue(plain.tryLock(name), "the server's lock is not free after the last unlock");
            assertTrue(plain.unlock(name));
        }
        long next = onOtherThread(() -> {
            lb.lock();
            try {
                return lb.getFencingToken();
            } finally {
                lb.unlock();
            }
        });
        assertTrue(next > token, next + " > " + token);
    }

    /**
     * A bounded wait for a held lock gives up on time and leaves no session waiting on the server;
     * a try without waiting answers at once; a wait that outlasts the holder gets the lock soon
     * after the release.
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void tryLockTimesOutAndLeavesNoWaiter(SqlDb db) throws Exception {
        SqlDb.Session o = observe(db);
        String name = unique("wait");
        PolylockClient a = client(db);
        PolylockClient b = client(db);
        DistributedLock la = a.getLock(name);
        DistributedLock lb = b.getLock(name);
        la.lock();
        long t0 = System.nanoTime();
        assertFalse(Servers.<Boolean>onOtherThread(lb::tryLock));
        long tryMs = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(tryMs < 1_000, "tryLock() took " + tryMs + " ms");
        for (long waitMs : new long[] {400, 900}) {
            long[] took = new long[1];
            boolean got = onOtherThread(() -> {
                long s = System.nanoTime();
                boolean r = lb.tryLock(waitMs, TimeUnit.MILLISECONDS);
                took[0] = (System.nanoTime() - s) / 1_000_000;
                return r;
            });
            assertFalse(got, "got a held lock");
            assertTrue(took[0] >= waitMs - 20 && took[0] < waitMs + 1_000, "tryLock(" + waitMs + " ms) took " + took[0] + " ms");
            assertTrue(eventually(2_000, () -> count(() -> o.waiters(name)) == 0), "a timed-out wait still waits on the server");
        }
        // A wait the holder outlasts: the server shows it waiting, the release wakes it.
        Holder waiter = Holder.start("sql-waiter", () -> {
            if (!lb.tryLock(10, TimeUnit.SECONDS)) {
                throw new AssertionError("not granted within 10 s");
            }
        }, lb::unlock);
        assertTrue(eventually(3_000, () -> count(() -> o.waiters(name)) == 1), "the wait is not the server's");
        assertFalse(waiter.isHeld());
        Thread.sleep(200);
        long released = System.nanoTime();
        la.unlock();
        assertTrue(waiter.awaitHeld(5_000), "the waiter was not woken");
        long woke = (waiter.heldAt() - released) / 1_000_000;
        // Woken by the release, not at its 10 s wait's end.
        assertTrue(woke < 5_000, "woken " + woke + " ms after the release");
        assertEquals(0, o.waiters(name));
        assertTrue(o.holder(name) > 0, "the woken waiter holds no lock on the server");
        waiter.release();
        assertEquals(0, o.holders(name));
    }

    /** An interrupted wait is cancelled on the server too, and never takes the lock afterwards. */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void interruptedWaitLeavesNoWaiterOnTheServer(SqlDb db) throws Exception {
        SqlDb.Session o = observe(db);
        String name = unique("intr");
        PolylockClient a = client(db);
        PolylockClient b = client(db);
        DistributedLock la = a.getLock(name);
        DistributedLock lb = b.getLock(name);
        la.lock();
        for (int round = 0; round < 2; round++) {
            AtomicReference<Throwable> outcome = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(1);
            Thread t = new Thread(() -> {
                started.countDown();
                try {
                    lb.lockInterruptibly();
                    outcome.set(new AssertionError("acquired a held lock"));
                } catch (Throwable e) {
                    outcome.set(e);
                }
            }, "sql-interrupted");
            t.start();
            started.await();
            int r = round;
            assertTrue(eventually(3_000, () -> count(() -> o.waiters(name)) == 1), "round " + r + ": the wait is not on the server");
            long t0 = System.nanoTime();
            t.interrupt();
            t.join(5_000);
            assertFalse(t.isAlive());
            long answered = (System.nanoTime() - t0) / 1_000_000;
            assertInstanceOf(InterruptedException.class, outcome.get());
            assertTrue(answered < 1_000, "answered the interrupt after " + answered + " ms");
            assertTrue(eventually(3_000, () -> count(() -> o.waiters(name)) == 0), "round " + r + ": a cancelled wait still waits on the server");
        }
        long holder = o.holder(name);
        la.unlock();
        Thread.sleep(300);
        assertFalse(lb.isLocked(), "a cancelled waiter took the lock");
        assertEquals(0, o.holders(name));
        assertNotEquals(-1, holder);
        onOtherThread(() -> {
            assertTrue(lb.tryLock());
            lb.unlock();
            return null;
        });
    }

    /**
     * Fencing tokens rise with every new holder, across threads and clients, stay the same for a
     * re-entry, and with fencing=table are the counter the server keeps in polylock_fencing (the
     * default source, the shared sequence, is checked by core's suites).
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void fencingTokensRiseAcrossHolders(SqlDb db) throws Exception {
        SqlDb.Session o = observe(db);
        String name = unique("fence");
        PolylockClient a = client(db.url("fencing=table"), new Polylock.Options());
        PolylockClient b = client(db.url("fencing=table"), new Polylock.Options());
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            DistributedLock lock = (i % 2 == 0 ? a : b).getLock(name);
            long t = i % 3 == 0 ? onOtherThread(() -> holdOnce(lock)) : holdOnce(lock);
            tokens.add(t);
            assertEquals(t, o.fence(db.fenceRow(name)), "the server's counter");
        }
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i - 1) < tokens.get(i), "tokens " + tokens);
        }
        DistributedLock la = a.getLock(name);
        try (DistributedLock.Hold h = la.hold()) {
            assertTrue(h.getFencingToken() > tokens.get(5));
            try (DistributedLock.Hold again = la.hold()) {
                assertEquals(h.getFencingToken(), again.getFencingToken(), "a re-entry keeps the token");
                assertEquals(2, la.getHoldCount());
            }
            assertEquals(1, la.getHoldCount());
        }
        assertThrows(IllegalMonitorStateException.class, la::getFencingToken);
    }

    private static long holdOnce(DistributedLock lock) {
        lock.lock();
        try {
            return lock.getFencingToken();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The server session holding the lock (found by its state: IS_USED_LOCK, pg_locks) is killed
     * from outside (KILL, pg_terminate_backend): the listener hears of it within about one
     * keep-alive period, the holder sees isLost(), its unlock says LockLostException, and the
     * next holder, on another client, gets a larger token.
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void killedSessionFiresTheLostSignal(SqlDb db) throws Exception {
        SqlDb.Session o = observe(db);
        String name = unique("kill");
        Duration watchdog = Duration.ofMillis(1500); // a keep-alive ping every 500 ms
        PolylockClient a = client(db.url(), new Polylock.Options().watchdogTimeout(watchdog));
        PolylockClient b = client(db);
        DistributedLock la = a.getLock(name);
        CountDownLatch heard = new CountDownLatch(1);
        AtomicLong heardAt = new AtomicLong();
        AtomicReference<Exception> cause = new AtomicReference<>();
        AtomicReference<DistributedLock> which = new AtomicReference<>();
        la.addListener((l, e) -> {
            heardAt.set(System.nanoTime());
            cause.set(e);
            which.set(l);
            heard.countDown();
        });
        la.lock();
        long token = la.getFencingToken();
        long session = o.holder(name);
        assertTrue(session > 0, "no session holds the lock on the server");
        String who = o.describe(session);
        assertNotNull(who);
        if (db == SqlDb.POSTGRES) {
            assertTrue(who.contains("polylock"), "the holder is not polylock's session: " + who);
        }
        // Kept while nothing happens: two keep-alive periods pass without a loss.
        Thread.sleep(1_100);
        assertEquals(1, heard.getCount(), "lost before the kill: " + cause.get());
        assertFalse(la.isLost());
        long killedAt = System.nanoTime();
        o.kill(session);
        assertTrue(heard.await(5, TimeUnit.SECONDS), "the listener did not hear of the kill");
        long after = (heardAt.get() - killedAt) / 1_000_000;
        // Found by a keep-alive (every watchdog / 3); only one could find it.
        assertTrue(after <= watchdog.toMillis() / 3 + 3_000, "lost " + after + " ms after the kill");
        assertInstanceOf(LockLostException.class, cause.get());
        assertSame(la, which.get(), "the listener was told of another lock");
        assertTrue(eventually(3_000, () -> !aliveQuietly(o, session)), "the killed session is still there");
        assertTrue(la.isLost());
        assertEquals(0, la.getHoldCount());
        assertEquals(0, o.holders(name), "the killed session's lock is still held");
        DistributedLock lb = b.getLock(name);
        long next = onOtherThread(() -> {
            assertTrue(lb.tryLock(5, TimeUnit.SECONDS));
            try {
                assertNotEquals(session, o.holder(name));
                return lb.getFencingToken();
            } finally {
                lb.unlock();
            }
        });
        assertTrue(next > token, next + " > " + token);
        assertThrows(LockLostException.class, la::unlock);
        assertFalse(la.isLost(), "the lost hold is gone once its unlock reported it");
        // The client itself lives on: it locks again on a fresh connection.
        assertTrue(la.tryLock());
        assertTrue(la.getFencingToken() > next);
        assertNotEquals(session, o.holder(name));
        la.unlock();
    }

    private static boolean aliveQuietly(SqlDb.Session o, long id) {
        try {
            return o.alive(id);
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    /** Closing a client gives its locks back on the server at once and closes its connections. */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void closeReleasesOnTheServer(SqlDb db) throws Exception {
        SqlDb.Session o = observe(db);
        String n1 = unique("close");
        String n2 = unique("close");
        PolylockClient a = Polylock.connect(db.url());
        try {
            DistributedLock l1 = a.getLock(n1);
            l1.lock();
            l1.lock();
            assertTrue(onOtherThread(() -> a.getLock(n2).tryLock()));
            long s1 = o.holder(n1);
            long s2 = o.holder(n2);
            assertTrue(s1 > 0 && s2 > 0 && s1 != s2, "one connection per held lock: " + s1 + ", " + s2);
            // The after-test check counts these: they are sessions of the database.
            assertTrue(o.otherSessions() >= sessionsBefore() + 2, o.otherSessions() + " sessions, " + sessionsBefore() + " before");
        } finally {
            a.close();
        }
        assertTrue(eventually(3_000, () -> count(() -> o.holders(n1) + o.holders(n2)) == 0),
                "the closed client's locks are still held on the server");
        try (SqlDb.Session plain = db.session()) {
            assertTrue(plain.tryLock(n1));
            assertTrue(plain.tryLock(n2));
        }
    }
}
