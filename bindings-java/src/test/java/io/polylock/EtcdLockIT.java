package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** An etcd lock (etcd's own format) through Java on the real etcd. */
class EtcdLockIT {
    @Test
    void reentrantPerThreadWithRisingTokens() throws Exception {
        try (PolylockClient client = Polylock.connect(Servers.etcdUrl())) {
            DistributedLock lock = client.getLock("polylock-test/java-etcd/" + UUID.randomUUID());
            assertThrows(UnsupportedOperationException.class, () -> lock.lock(5, TimeUnit.SECONDS));
            lock.lock();
            assertTrue(lock.tryLock(1, TimeUnit.SECONDS));
            assertEquals(2, lock.getHoldCount());
            long token = lock.getFencingToken();
            assertFalse((boolean) Servers.<Boolean>onOtherThread(lock::tryLock));
            lock.unlock();
            lock.unlock();
            assertFalse(lock.isLocked());
            assertThrows(IllegalMonitorStateException.class, lock::unlock);
            long next = Servers.onOtherThread(() -> {
                lock.lock();
                try {
                    return lock.getFencingToken();
                } finally {
                    lock.unlock();
                }
            });
            assertTrue(next > token, next + " > " + token);
        }
    }
}
