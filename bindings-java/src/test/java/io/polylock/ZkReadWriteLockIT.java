package io.polylock;

import static io.polylock.Servers.zkPath;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The read-write lock on the real ZooKeeper (Curator's InterProcessReadWriteLock format). */
class ZkReadWriteLockIT extends ReadWriteLockCases {
    @Override
    String url() {
        return Servers.zkUrl();
    }

    @Override
    String name(String prefix) {
        return zkPath("rw-" + prefix);
    }

    @Override
    PolylockClient holderClient() {
        return Polylock.connect(url());
    }

    @Test
    void leasesAreUnsupportedAndBadPathsRefused() {
        DistributedReadWriteLock rw = client.getReadWriteLock(zkPath("rw-lease"));
        assertThrows(UnsupportedOperationException.class, () -> rw.readLock().lock(5, TimeUnit.SECONDS));
        assertThrows(UnsupportedOperationException.class, () -> rw.writeLock().tryLock(1, 5, TimeUnit.SECONDS));
        assertFalse(rw.readLock().isLocked());
        assertFalse(rw.writeLock().isLocked());
        for (String bad : new String[] {"", "no-slash", "/trailing/", "/a//b", "/a\0b"}) {
            assertThrows(IllegalArgumentException.class, () -> client.getReadWriteLock(bad), bad);
        }
    }

    @Test
    void heldWithoutExpiry() throws Exception {
        DistributedReadWriteLock rw = client.getReadWriteLock(zkPath("rw-ttl"));
        assertEquals(-2, rw.readLock().remainTimeToLive());
        rw.readLock().lock();
        assertEquals(-1, rw.readLock().remainTimeToLive(), "held, no lease on ZooKeeper");
        rw.readLock().unlock();
    }

    @Test
    void anInterruptedWaitingReaderLeavesNoNode() throws Exception {
        DistributedReadWriteLock rw = client.getReadWriteLock(zkPath("rw-interrupt"));
        rw.writeLock().lock();
        Servers.Interrupted r = Servers.interruptWhileWaiting(() -> {
            rw.readLock().acquire();
            return null;
        }, 200);
        assertInstanceOf(InterruptedException.class, r.outcome);
        assertTrue(r.answeredMs < 3_000, "interrupt answered in " + r.answeredMs + " ms");
        rw.writeLock().unlock();
        // A reader node left behind would now be first: the lock would read as held in read mode.
        assertFalse(rw.readLock().isLocked(), "the interrupted reader's node is gone");
        assertFalse(rw.writeLock().isLocked());
    }
}
