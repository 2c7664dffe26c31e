package io.polylock.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.LockLostException;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** A lock lost while the method runs (short watchdog, so the renewal notices within ~200 ms). */
@SpringBootTest(classes = TestApp.class, properties = "polylock.watchdog-timeout=600ms")
class LockLostTest {
    private static PolylockClient other;

    @Autowired
    private LockedService service;

    @BeforeAll
    static void connectOther() {
        other = Polylock.connect(RedisProbe.URL);
    }

    @AfterAll
    static void closeOther() {
        other.close();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Test
    void theWatchdogKeepsALongCallAlive() {
        String key = "spring-test:alive:" + UUID.randomUUID();
        AtomicBoolean finished = new AtomicBoolean();
        service.run(key, () -> {
            long ttl = other.getLock(key).remainTimeToLive();
            assertTrue(ttl > 0 && ttl <= 600, "polylock.watchdog-timeout=600ms is the lease: " + ttl);
            sleep(1500); // longer than the 600 ms lease: only the watchdog keeps it
            assertTrue(other.getLock(key).isLocked());
            finished.set(true);
        });
        assertTrue(finished.get(), "no LockLostException without interference");
        assertFalse(other.getLock(key).isLocked());
    }

    @Test
    void interruptOnLostStopsTheMethodAtTheLoss() {
        String key = "spring-test:interrupt:" + UUID.randomUUID();
        AtomicBoolean interrupted = new AtomicBoolean();
        long started = System.nanoTime();
        assertThrows(LockLostException.class, () -> service.interruptible(key, () -> {
            assertTrue(other.getLock(key).forceUnlock());
            try {
                Thread.sleep(10_000);
            } catch (InterruptedException e) {
                interrupted.set(true);
            }
        }));
        long tookMs = (System.nanoTime() - started) / 1_000_000;
        assertTrue(interrupted.get(), "the method was interrupted at the loss");
        assertTrue(tookMs < 3000, "stopped at the loss, not after the 10 s sleep: " + tookMs + " ms");
        assertFalse(Thread.currentThread().isInterrupted(), "no interrupt left on the caller's thread");
        // Without a loss nothing is interrupted.
        AtomicBoolean clean = new AtomicBoolean();
        service.interruptible(key, () -> {
            sleep(300);
            clean.set(!Thread.currentThread().isInterrupted());
        });
        assertTrue(clean.get());
    }

    @Test
    void aForceUnlockWhileTheMethodRunsThrowsLockLostAfterItReturns() {
        String key = "spring-test:lost:" + UUID.randomUUID();
        AtomicBoolean forced = new AtomicBoolean();
        AtomicBoolean finished = new AtomicBoolean();
        LockLostException e = assertThrows(LockLostException.class, () -> service.run(key, () -> {
            forced.set(other.getLock(key).forceUnlock());
            sleep(1000);
            finished.set(true);
        }));
        assertTrue(forced.get(), "the other client deleted a held lock");
        assertTrue(finished.get(), "the method ran to its end before the loss was thrown");
        assertEquals(io.polylock.PolylockException.Code.LOCK_LOST, e.getCode());
        assertFalse(other.getLock(key).isLocked());
        assertTrue(other.getLock(key).tryLock(), "nothing left behind");
        other.getLock(key).unlock();
    }

    @Test
    void aLossWhileTheMethodThrowsIsAttachedToItsException() {
        String key = "spring-test:lost-throws:" + UUID.randomUUID();
        IllegalStateException boom = new IllegalStateException("boom");
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> service.run(key, () -> {
            assertTrue(other.getLock(key).forceUnlock());
            sleep(1000);
            throw boom;
        }));
        assertSame(boom, thrown);
        assertEquals(1, thrown.getSuppressed().length);
        assertInstanceOf(LockLostException.class, thrown.getSuppressed()[0]);
    }
}
