package io.polylock;

import static io.polylock.Servers.zkPath;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Semaphores and the latch on the real ZooKeeper (Curator's InterProcessSemaphoreV2 with a
 * SharedCount, and a SharedCount latch), beyond the shared cases: permits are leases of the
 * client that took them, lost with it, and expiring permits are Unsupported.
 */
class ZkSemaphoreIT extends SemaphoreCases {
    @Override
    String url() {
        return Servers.zkUrl();
    }

    @Override
    String name(String prefix) {
        return zkPath(prefix);
    }

    @Test
    void permitsAreLeasesOfTheClientThatTookThem() throws Exception {
        String path = name("leases");
        DistributedSemaphore sem = client.getSemaphore(path);
        DistributedSemaphore other = second.getSemaphore(path);
        sem.trySetPermits(3);
        sem.acquire(2);
        assertEquals(2, sem.heldPermits());
        assertEquals(0, other.heldPermits());
        assertEquals(1, other.availablePermits());
        assertThrows(IllegalMonitorStateException.class, other::release, "another client holds no lease");
        assertThrows(IllegalMonitorStateException.class, () -> sem.release(3), "holds only 2");
        assertEquals(2, sem.heldPermits(), "a refused release gives nothing back");
        // Any thread of the client may release its leases.
        Servers.onOtherThread(() -> {
            sem.release();
            return null;
        });
        assertEquals(1, sem.heldPermits());
        assertEquals(2, other.availablePermits());
        sem.release();
        assertEquals(3, other.availablePermits());
        // Drained permits are leases too.
        assertEquals(3, other.drainPermits());
        assertEquals(3, other.heldPermits());
        assertFalse(sem.tryAcquire());
        other.release(3);
        assertEquals(3, sem.availablePermits());
    }

    @Test
    void closingTheClientLosesItsLeasesAndTellsOnlyPermitListeners() throws Exception {
        String path = name("lost");
        PolylockClient c = Polylock.connect(url());
        DistributedSemaphore sem = c.getSemaphore(path);
        DistributedLock sameName = c.getLock(path);
        BlockingQueue<Object[]> heard = new ArrayBlockingQueue<>(4);
        BlockingQueue<Exception> lockHeard = new ArrayBlockingQueue<>(4);
        sem.addListener((s, e) -> heard.add(new Object[] {s, e}));
        sameName.addListener((l, e) -> lockHeard.add(e));
        sem.trySetPermits(2);
        DistributedSemaphore.Lease lease = sem.acquireLease();
        assertFalse(lease.isLost());
        assertEquals(1, client.getSemaphore(path).availablePermits());
        c.close();
        Object[] ev = heard.poll(5, TimeUnit.SECONDS);
        assertNotNull(ev, "the semaphore's listener heard of the lost lease");
        assertEquals(sem, ev[0]);
        assertInstanceOf(LockLostException.class, ev[1]);
        assertTrue(lease.isLost());
        assertNull(lockHeard.poll(200, TimeUnit.MILLISECONDS), "a lock listener of the same path heard a lease's loss");
        PolylockException e = assertThrows(PolylockException.class, lease::close, "the client is closed");
        assertEquals(PolylockException.Code.INVALID_STATE, e.getCode());
        assertTrue(lease.isReturned());
        assertEquals(2, client.getSemaphore(path).availablePermits(), "the closed client's lease is gone");
    }

    @Test
    void expiringPermitsAreUnsupportedAndBadPathsRefused() {
        assertThrows(UnsupportedOperationException.class, () -> client.getPermitExpirableSemaphore(zkPath("expiring")));
        for (String bad : new String[] {"", "no-slash", "/trailing/", "/a//b", "/a\0b"}) {
            assertThrows(IllegalArgumentException.class, () -> client.getSemaphore(bad), bad);
            assertThrows(IllegalArgumentException.class, () -> client.getCountDownLatch(bad), bad);
        }
    }
}
