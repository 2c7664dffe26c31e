package io.polylock;

import static io.polylock.Servers.onOtherThread;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReadWriteLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The read-write lock cases every server runs (RedisReadWriteLockIT, ZkReadWriteLockIT): readers
 * share, a writer excludes, both halves are reentrant, a downgrade works and an upgrade is refused
 * at once, a lost hold is heard by its own half's listeners only. Owners are Java threads.
 */
abstract class ReadWriteLockCases {
    PolylockClient client;
    /** A second connection: exclusion between two clients goes through the server. */
    PolylockClient second;

    abstract String url();

    /** A fresh lock name (a ZooKeeper path on ZooKeeper). */
    abstract String name(String prefix);

    /**
     * A client that learns soon that another client force-unlocked its hold (Redis: a short
     * watchdog, whose next renewal finds the entry gone; ZooKeeper watches the holder's node).
     */
    abstract PolylockClient holderClient();

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

    private static boolean tryAndRelease(DistributedLock lock, long waitMs) throws Exception {
        return onOtherThread(() -> {
            boolean got = lock.tryLock(waitMs, TimeUnit.MILLISECONDS);
            if (got) {
                lock.unlock();
            }
            return got;
        });
    }

    @Test
    void readersShareAndAWriterExcludesReadersAndWriters() throws Exception {
        String name = name("share");
        DistributedReadWriteLock rw = client.getReadWriteLock(name);
        DistributedReadWriteLock rw2 = second.getReadWriteLock(name);
        ReadWriteLock jdk = rw;
        assertSame(rw.readLock(), jdk.readLock(), "one object per half");
        assertSame(rw.writeLock(), rw.writeLock());
        assertEquals(name, rw.getName());
        assertFalse(rw.readLock().isLocked());
        assertFalse(rw.writeLock().isLocked());
        // Four reader threads over two clients hold at once.
        List<Holder> readers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            DistributedLock r = (i % 2 == 0 ? rw : rw2).readLock();
            readers.add(Holder.start("reader-" + i, r::lock, r::unlock));
        }
        for (Holder h : readers) {
            assertTrue(h.awaitHeld(10_000), "every reader holds while the others do");
        }
        assertTrue(rw.readLock().isLocked());
        assertFalse(rw.writeLock().isLocked(), "held in read mode");
        assertTrue(rw.readLock().isAcquiredInThisProcess());
        assertFalse(rw.writeLock().isAcquiredInThisProcess());
        assertFalse(tryAndRelease(rw.writeLock(), 0), "readers exclude a writer");
        assertFalse(tryAndRelease(rw2.writeLock(), 100), "readers exclude a writer of the other client");
        // A writer waits for the last reader and is woken by its release.
        Holder writer = Holder.start("writer", rw2.writeLock()::lock, rw2.writeLock()::unlock);
        Thread.sleep(200);
        assertFalse(writer.isHeld(), "the writer waits while readers hold");
        for (int i = 0; i < 3; i++) {
            readers.get(i).release();
        }
        Thread.sleep(200);
        assertFalse(writer.isHeld(), "one reader still holds");
        long released = System.nanoTime();
        readers.get(3).release();
        assertTrue(writer.awaitHeld(10_000), "the writer got it");
        long ms = TimeUnit.NANOSECONDS.toMillis(writer.heldAt() - released);
        assertTrue(ms < 5_000, "woken by the last reader's release in " + ms + " ms");
        // While the writer holds, no reader and no other writer gets in, from either client.
        assertTrue(rw.writeLock().isLocked());
        assertFalse(rw.readLock().isLocked());
        assertFalse(tryAndRelease(rw.readLock(), 0));
        assertFalse(tryAndRelease(rw2.readLock(), 100));
        assertFalse(tryAndRelease(rw.writeLock(), 100));
        writer.release();
        assertFalse(rw.writeLock().isLocked());
        assertTrue(tryAndRelease(rw.readLock(), 0), "free again");
        assertFalse(rw.readLock().isLocked());
    }

    @Test
    void mixedReadersAndWritersOverTwoClientsKeepACounterExact() throws Exception {
        String name = name("counter");
        Sections sections = new Sections();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            DistributedReadWriteLock rw = (i % 4 < 2 ? client : second).getReadWriteLock(name);
            Runnable work = i % 2 == 0 ? sections.worker(rw.writeLock(), 5) : sections.reader(rw.readLock(), 5, 2);
            Thread t = new Thread(work, (i % 2 == 0 ? "writer-" : "reader-") + i);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join(50_000);
            assertFalse(t.isAlive(), t.getName() + " is stuck");
        }
        System.out.printf("read-write counter on %s: %d writes, %d overlaps, up to %d readers at once%n",
                url(), sections.counter.get(), sections.overlaps.get(), sections.maxReaders.get());
        assertEquals(0, sections.overlaps.get(), "a writer overlapped a reader or another writer");
        assertEquals(30, sections.counter.get(), "every write counted once");
        assertFalse(client.getReadWriteLock(name).writeLock().isLocked());
        assertFalse(client.getReadWriteLock(name).readLock().isLocked());
    }

    @Test
    void bothHalvesAreReentrantPerThread() throws Exception {
        DistributedReadWriteLock rw = client.getReadWriteLock(name("reentrant"));
        DistributedLock r = rw.readLock();
        DistributedLock w = rw.writeLock();
        r.lock();
        assertTrue(r.tryLock());
        assertTrue(r.tryLock(1, TimeUnit.SECONDS));
        assertEquals(3, r.getHoldCount());
        assertTrue(r.isHeldByCurrentThread());
        assertFalse(w.isHeldByCurrentThread());
        long token = r.getFencingToken();
        try (DistributedLock.Hold h = r.hold()) {
            assertEquals(4, r.getHoldCount());
            assertEquals(token, h.getFencingToken(), "a re-entry keeps the token");
            assertSame(r, h.getLock());
        }
        assertEquals(0, (int) onOtherThread(r::getHoldCount), "another thread is another owner");
        assertThrows(IllegalMonitorStateException.class, () -> onOtherThread(() -> {
            r.unlock();
            return null;
        }), "only the holding thread releases");
        assertThrows(IllegalMonitorStateException.class, w::unlock, "the write half is not held");
        r.unlock();
        r.unlock();
        assertEquals(1, r.getHoldCount());
        r.release(); // Curator's word
        assertFalse(r.isLocked());
        assertThrows(IllegalMonitorStateException.class, r::unlock, "double release");
        assertThrows(IllegalMonitorStateException.class, r::getFencingToken);

        w.lock();
        w.lockInterruptibly();
        assertTrue(w.acquire(1, TimeUnit.SECONDS));
        assertEquals(3, w.getHoldCount());
        long wt = w.getFencingToken();
        assertTrue(wt > token, "the writer's token " + wt + " follows the reader's " + token);
        assertFalse(tryAndRelease(w, 0), "another thread's writer is excluded");
        assertFalse(tryAndRelease(r, 0), "another thread's reader is excluded");
        w.unlock();
        w.unlock();
        assertEquals(1, w.getHoldCount());
        assertEquals(wt, w.getFencingToken());
        assertTrue(w.isLocked());
        w.unlock();
        assertFalse(w.isLocked());
        assertThrows(IllegalMonitorStateException.class, w::unlock);
    }

    @Test
    void aWriterDowngradesToAReader() throws Exception {
        String name = name("downgrade");
        DistributedReadWriteLock rw = client.getReadWriteLock(name);
        DistributedReadWriteLock rw2 = second.getReadWriteLock(name);
        DistributedLock r = rw.readLock();
        DistributedLock w = rw.writeLock();
        w.lock();
        assertFalse(tryAndRelease(r, 0), "other threads' readers wait for the writer");
        assertTrue(r.tryLock(), "the writer takes the read lock at once");
        assertTrue(w.tryLock(), "holding both, the write lock is re-entered (no upgrade)");
        assertEquals(2, w.getHoldCount());
        w.unlock();
        w.unlock();
        // Downgraded: still reading, no longer writing.
        assertFalse(w.isHeldByCurrentThread());
        assertEquals(1, r.getHoldCount());
        assertTrue(r.isLocked());
        assertFalse(w.isLocked());
        assertTrue(tryAndRelease(rw2.readLock(), 5_000), "readers of the other client join the downgraded reader");
        assertFalse(tryAndRelease(rw2.writeLock(), 100), "a writer waits for the downgraded reader");
        UpgradeNotSupportedException up = assertThrows(UpgradeNotSupportedException.class, w::tryLock,
                "after the downgrade, the write lock is an upgrade again");
        assertEquals(PolylockException.Code.UPGRADE_NOT_SUPPORTED, up.getCode());
        r.unlock();
        assertFalse(r.isLocked());
        assertTrue(tryAndRelease(rw2.writeLock(), 5_000));
    }

    @Test
    void anUpgradeIsRefusedAtOnceAndTheReadLockStaysHeld() throws Exception {
        String name = name("upgrade");
        DistributedReadWriteLock rw = client.getReadWriteLock(name);
        DistributedLock r = rw.readLock();
        DistributedLock w = rw.writeLock();
        r.lock();
        r.lock();
        Map<String, Executable> attempts = new LinkedHashMap<>();
        attempts.put("lock()", w::lock);
        attempts.put("tryLock()", w::tryLock);
        attempts.put("tryLock(10 s)", () -> w.tryLock(10, TimeUnit.SECONDS));
        attempts.put("tryLock(10 s, watchdog)", () -> w.tryLock(10, -1, TimeUnit.SECONDS));
        attempts.put("lockInterruptibly()", w::lockInterruptibly);
        attempts.put("acquire()", w::acquire);
        attempts.put("acquire(10 s)", () -> w.acquire(10, TimeUnit.SECONDS));
        attempts.put("hold()", w::hold);
        long slowest = 0;
        for (Map.Entry<String, Executable> a : attempts.entrySet()) {
            long t0 = System.nanoTime();
            UpgradeNotSupportedException e = assertThrows(UpgradeNotSupportedException.class, a.getValue(), a.getKey());
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            slowest = Math.max(slowest, ms);
            assertTrue(ms < 5_000, a.getKey() + " took " + ms + " ms: it waited (up to 10 s) instead of refusing");
            assertEquals(PolylockException.Code.UPGRADE_NOT_SUPPORTED, e.getCode());
            assertInstanceOf(PolylockException.class, e);
            assertTrue(e.getMessage().contains(name), e.getMessage());
        }
        System.out.printf("upgrade refused on %s within %d ms%n", url(), slowest);
        assertEquals(2, r.getHoldCount(), "the read lock stays held");
        assertFalse(w.isHeldByCurrentThread());
        assertEquals(0, w.getHoldCount());
        assertTrue(r.isLocked());
        assertFalse(w.isLocked());
        assertTrue(tryAndRelease(second.getReadWriteLock(name).readLock(), 5_000), "still a read lock: readers join");
        assertFalse(tryAndRelease(w, 0), "and still excludes writers");
        r.unlock();
        r.unlock();
        assertFalse(r.isLocked());
        // Nothing of the refused attempts was left behind: the write lock is free for anybody.
        assertTrue(w.tryLock(), "no longer an upgrade");
        w.unlock();
        assertTrue(tryAndRelease(second.getReadWriteLock(name).writeLock(), 0));
    }

    @Test
    void aLostHoldIsHeardByItsOwnHalfOnly() throws Exception {
        for (boolean readHalf : new boolean[] {true, false}) {
            String name = name(readHalf ? "lost-read" : "lost-write");
            PolylockClient holder = holderClient();
            try {
                DistributedReadWriteLock rw = holder.getReadWriteLock(name);
                BlockingQueue<Object[]> readHeard = new ArrayBlockingQueue<>(4);
                BlockingQueue<Object[]> writeHeard = new ArrayBlockingQueue<>(4);
                rw.readLock().addListener((l, e) -> readHeard.add(new Object[] {l, e, Thread.currentThread().getName()}));
                rw.writeLock().addListener((l, e) -> writeHeard.add(new Object[] {l, e, Thread.currentThread().getName()}));
                DistributedLock half = readHalf ? rw.readLock() : rw.writeLock();
                BlockingQueue<Object[]> heard = readHalf ? readHeard : writeHeard;
                BlockingQueue<Object[]> other = readHalf ? writeHeard : readHeard;
                half.lock();
                long t0 = System.nanoTime();
                // Another client force-unlocks that half (only that half: the mode must match).
                DistributedReadWriteLock elsewhere = second.getReadWriteLock(name);
                assertFalse((readHalf ? elsewhere.writeLock() : elsewhere.readLock()).forceUnlock(),
                        "the other half is not held");
                assertTrue((readHalf ? elsewhere.readLock() : elsewhere.writeLock()).forceUnlock());
                assertFalse((readHalf ? elsewhere.readLock() : elsewhere.writeLock()).forceUnlock(), "nothing left");
                Object[] ev = heard.poll(10, TimeUnit.SECONDS);
                assertNotNull(ev, half + ": the listener heard of the loss");
                System.out.printf("%s on %s: loss heard after %d ms%n", half, url(),
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
                assertSame(half, ev[0]);
                assertEquals("polylock-events", ev[2]);
                assertInstanceOf(LockLostException.class, ev[1]);
                assertTrue(((Exception) ev[1]).getMessage().startsWith("lock '" + name + "' was lost: "),
                        ((Exception) ev[1]).getMessage());
                assertTrue(half.isLost());
                assertEquals(0, half.getHoldCount(), "a lost hold is not held");
                assertNull(other.poll(300, TimeUnit.MILLISECONDS), "the other half's listener heard of " + half);
                LockLostException lost = assertThrows(LockLostException.class, half::unlock);
                assertEquals(PolylockException.Code.LOCK_LOST, lost.getCode());
                assertFalse(half.isLost(), "the release cleared the lost hold");
                assertThrows(IllegalMonitorStateException.class, half::unlock);
            } finally {
                holder.close();
            }
            // The server kept nothing of the lost hold: another client writes at once.
            assertTrue(tryAndRelease(client.getReadWriteLock(name).writeLock(), 5_000));
        }
    }

    @Test
    void badArgumentsAndClosedHandles() throws Exception {
        assertThrows(NullPointerException.class, () -> client.getReadWriteLock(null));
        assertThrows(IllegalArgumentException.class, () -> client.getReadWriteLock(""));
        assertThrows(IllegalArgumentException.class, () -> client.getReadWriteLock(name("a\0b")));
        DistributedReadWriteLock rw = client.getReadWriteLock(name("args"));
        for (DistributedLock half : new DistributedLock[] {rw.readLock(), rw.writeLock()}) {
            assertThrows(IllegalArgumentException.class, () -> half.lock(0, TimeUnit.SECONDS));
            assertThrows(IllegalArgumentException.class, () -> half.tryLock(1, -2, TimeUnit.SECONDS));
            assertThrows(NullPointerException.class, () -> half.tryLock(1, null));
            assertThrows(UnsupportedOperationException.class, half::newCondition);
            assertThrows(NullPointerException.class, () -> half.addListener(null));
            assertThrows(IllegalMonitorStateException.class, half::unlock);
            assertThrows(IllegalMonitorStateException.class, half::getFencingToken);
            assertFalse(half.isLocked(), "nothing was acquired by the bad calls");
        }
        assertTrue(rw.readLock().toString().contains("readLock"), rw.readLock().toString());
        assertTrue(rw.writeLock().toString().contains("writeLock"), rw.writeLock().toString());
        rw.close();
        rw.close();
        for (DistributedLock half : new DistributedLock[] {rw.readLock(), rw.writeLock()}) {
            PolylockException e = assertThrows(PolylockException.class, half::tryLock);
            assertEquals(PolylockException.Code.INVALID_STATE, e.getCode());
        }
        PolylockClient closed = Polylock.connect(url());
        DistributedReadWriteLock onClosed = closed.getReadWriteLock(name("closed"));
        onClosed.readLock().lock();
        closed.close();
        assertEquals(PolylockException.Code.INVALID_STATE,
                assertThrows(PolylockException.class, onClosed.writeLock()::tryLock).getCode());
        assertEquals(PolylockException.Code.INVALID_STATE,
                assertThrows(PolylockException.class, () -> closed.getReadWriteLock(name("x"))).getCode());
        assertFalse(client.getReadWriteLock(onClosed.getName()).readLock().isLocked(), "close released the read hold");
    }
}
