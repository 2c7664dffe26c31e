package io.polylock;

import static io.polylock.Servers.onOtherThread;
import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract every runtime shares (docs/src/contract.md), as Java says it: every error carries
 * its code and number (the JDK exceptions too), the section form's timeout is a {@link
 * LockTimeoutException}, lost listeners hear the reason, and Redisson's async and fenced-lock
 * vocabulary. The conformance suite (conformance/runners/java) runs the shared scenarios.
 */
class ContractIT {
    private PolylockClient client;

    @BeforeEach
    void connect() {
        client = Polylock.connect(Servers.redisUrl(), new Polylock.Options().watchdogTimeout(Duration.ofMillis(900)));
    }

    @AfterEach
    void close() {
        client.close();
    }

    @Test
    void everyErrorCarriesItsCodeAndNumber() throws Exception {
        DistributedLock lock = client.getLock(unique("codes"));
        NotOwnerException notOwner = assertThrows(NotOwnerException.class, lock::unlock);
        assertInstanceOf(IllegalMonitorStateException.class, notOwner);
        assertEquals(PolylockException.Code.NOT_OWNER, notOwner.getCode());
        assertEquals(4, notOwner.getNumber());
        assertEquals(4, assertThrows(NotOwnerException.class, lock::getFencingToken).getNumber());
        UnsupportedException unsupported = assertThrows(UnsupportedException.class, () -> client.getMutex(unique("m")));
        assertInstanceOf(UnsupportedOperationException.class, unsupported);
        assertEquals(13, unsupported.getNumber());
        InvalidArgumentException invalid = assertThrows(InvalidArgumentException.class, () -> client.getLock(""));
        assertInstanceOf(IllegalArgumentException.class, invalid);
        assertEquals(2, invalid.getNumber());
        InvalidArgumentException url = assertThrows(InvalidArgumentException.class, () -> Polylock.connect("nosuch://127.0.0.1:1"));
        assertTrue(url.getMessage().contains("docs/src/contract.md#urls"), url.getMessage());
        DistributedPermitExpirableSemaphore pes = client.getPermitExpirableSemaphore(unique("pes"));
        pes.trySetPermits(1);
        String id = pes.acquire();
        pes.release(id);
        UnknownPermitException gone = assertThrows(UnknownPermitException.class, () -> pes.release(id));
        assertInstanceOf(IllegalArgumentException.class, gone);
        assertEquals(PolylockException.Code.NOT_OWNER, gone.getCode());
        // Every kind but C's NULL_PARAMETER (a NullPointerException in Java) carries its code.
        for (PolylockException.Code c : PolylockException.Code.values()) {
            RuntimeException e = PolylockException.fromNative(c.number(), "x");
            if (c == PolylockException.Code.NULL_PARAMETER) {
                assertInstanceOf(NullPointerException.class, e);
                continue;
            }
            assertEquals(c, assertInstanceOf(PolylockError.class, e).getCode(), c.name());
        }
    }

    @Test
    void theSectionFormThrowsLockTimeoutExceptionAPolylockException() throws Exception {
        DistributedLock lock = client.getLock(unique("section"));
        lock.lock();
        LockTimeoutException timeout = onOtherThread(() -> {
            try (DistributedLock.Hold h = lock.hold(100, -1, TimeUnit.MILLISECONDS)) {
                return null;
            } catch (LockTimeoutException e) {
                return e;
            }
        });
        assertNotNull(timeout);
        assertInstanceOf(PolylockException.class, timeout);
        assertEquals(PolylockException.Code.TIMEOUT, timeout.getCode());
        assertEquals(3, timeout.getNumber());
        lock.unlock();
        try (DistributedLock.Hold h = lock.hold(100, 5000, TimeUnit.MILLISECONDS)) {
            assertTrue(lock.isHeldByCurrentThread());
            assertTrue(h.getFencingToken() > 0);
            long left = lock.remainTimeToLive();
            assertTrue(left > 0 && left <= 5000, "a fixed lease, got " + left);
        }
        assertFalse(lock.isLocked());
    }

    @Test
    void listenersHearTheReasonEvenForAHoldTakenBefore() throws Exception {
        DistributedLock lock = client.getLock(unique("reason"));
        lock.lock();
        BlockingQueue<Exception> heard = new ArrayBlockingQueue<>(4);
        lock.addListener((l, cause) -> heard.add(cause));
        try (PolylockClient admin = Polylock.connect(Servers.redisUrl())) {
            assertTrue(admin.getLock(lock.getName()).forceUnlock());
        }
        LockLostException lost = (LockLostException) heard.poll(10, TimeUnit.SECONDS);
        assertNotNull(lost);
        assertEquals(LostReason.DELETED, lost.getReason());
        assertEquals(2, lost.getReason().number());
        assertTrue(lock.isLost());
        assertThrows(LockLostException.class, lock::unlock);
    }

    @Test
    void redissonsAsyncVocabulary() throws Exception {
        DistributedLock lock = client.getLock(unique("async"));
        CompletableFuture<Void> locked = lock.lockAsync();
        assertNull(locked.get(5, TimeUnit.SECONDS));
        assertTrue(lock.isHeldByCurrentThread(), "the owner is the thread that called lockAsync");
        assertEquals(1, lock.getHoldCount());
        // Another thread's tryLockAsync: false after its wait, without blocking it meanwhile.
        CompletableFuture<Boolean> other = onOtherThread(() -> lock.tryLockAsync(150, 5000, TimeUnit.MILLISECONDS));
        assertFalse(other.get(5, TimeUnit.SECONDS));
        assertFalse(onOtherThread(() -> lock.tryLockAsync()).get(5, TimeUnit.SECONDS));
        assertTrue(lock.tryLockAsync(0, TimeUnit.MILLISECONDS).get(5, TimeUnit.SECONDS), "a re-entry");
        assertEquals(2, lock.getHoldCount());
        assertNull(lock.unlockAsync().get(5, TimeUnit.SECONDS));
        assertNull(lock.unlockAsync().get(5, TimeUnit.SECONDS));
        assertFalse(lock.isLocked());
        ExecutionException notOwner = assertThrows(ExecutionException.class, () -> lock.unlockAsync().get(5, TimeUnit.SECONDS));
        assertInstanceOf(NotOwnerException.class, notOwner.getCause());
        // A waiting lockAsync completes once the holder lets go; its stages run off polylock's threads.
        CompletableFuture<Void> holding = onOtherThread(() -> lock.lockAsync(5, TimeUnit.SECONDS));
        holding.get(5, TimeUnit.SECONDS);
        CompletableFuture<Boolean> waiting = lock.tryLockAsync(10, -1, TimeUnit.SECONDS);
        CompletableFuture<String> stage = waiting.thenApply(got -> Thread.currentThread().getName());
        Thread.sleep(200);
        assertFalse(waiting.isDone());
        assertTrue(lock.forceUnlockAsync().get(5, TimeUnit.SECONDS));
        assertTrue(waiting.get(5, TimeUnit.SECONDS));
        assertFalse(stage.get(5, TimeUnit.SECONDS).startsWith("polylock"), stage.get());
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
        assertFalse(lock.forceUnlockAsync().get(5, TimeUnit.SECONDS));
        // Cancelling a waiting future cancels the wait and leaves nothing taken.
        lock.lock();
        CompletableFuture<Boolean> cancelled = onOtherThread(() -> lock.tryLockAsync(30, -1, TimeUnit.SECONDS));
        Thread.sleep(100);
        assertTrue(cancelled.cancel(true));
        lock.unlock();
        Thread.sleep(300);
        assertFalse(lock.isLocked(), "the cancelled wait took nothing");
    }

    @Test
    void fencedLockNames() throws Exception {
        DistributedLock lock = client.getLock(unique("fenced"));
        Long first = lock.lockAndGetToken();
        assertNotNull(first);
        assertEquals(first, lock.getFencingToken());
        assertNull(onOtherThread(lock::tryLockAndGetToken));
        assertNull(onOtherThread(() -> lock.tryLockAndGetToken(100, -1, TimeUnit.MILLISECONDS)));
        lock.unlock();
        Long second = onOtherThread(() -> {
            Long t = lock.tryLockAndGetToken(1, 5, TimeUnit.SECONDS);
            lock.unlock();
            return t;
        });
        assertTrue(second > first);
        Long third = lock.lockAndGetToken(5, TimeUnit.SECONDS);
        assertTrue(third > second);
        lock.unlock();
    }

    @Test
    void aHoldForAnyThreadIsNoThreadsAndAnyThreadEndsIt() throws Exception {
        DistributedLock lock = client.getLock(unique("any-thread"));
        DistributedLock.Hold hold = lock.tryHoldForAnyThread(0, 5000, TimeUnit.MILLISECONDS);
        assertNotNull(hold);
        assertFalse(lock.isHeldByCurrentThread(), "not the calling thread's");
        assertFalse(lock.tryLock(), "the calling thread does not re-enter it");
        assertNull(lock.tryHoldForAnyThread(0, -1, TimeUnit.MILLISECONDS));
        onOtherThread(() -> {
            hold.close();
            return null;
        });
        assertFalse(lock.isLocked());
        assertSame(lock, hold.getLock());
    }
}
