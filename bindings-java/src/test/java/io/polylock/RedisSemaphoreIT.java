package io.polylock;

import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Semaphores and the latch on the real Redis (Redisson's RSemaphore, RPermitExpirableSemaphore and
 * RCountDownLatch formats), beyond the shared cases: permits that belong to nobody, expiring
 * permits with ids, the watchdog, the lost signal, and a killed holder's permit coming back.
 */
class RedisSemaphoreIT extends SemaphoreCases {
    /** The short watchdog of the renewal tests: renewed every 200 ms. */
    private static final Duration QUICK = Duration.ofMillis(600);

    @Override
    String url() {
        return Servers.redisUrl();
    }

    @Override
    String name(String prefix) {
        return unique(prefix);
    }

    @Test
    void permitsBelongToNobody() throws Exception {
        String name = name("nobody");
        DistributedSemaphore sem = client.getSemaphore(name);
        sem.trySetPermits(1);
        sem.acquire();
        assertEquals(0, sem.heldPermits(), "nobody holds Redis permits");
        // Another client releases a permit it never acquired: the count just grows.
        second.getSemaphore(name).release(2);
        assertEquals(2, sem.availablePermits());
        // A lease on Redis gives back its count.
        DistributedSemaphore.Lease lease = sem.acquireLease(2, 1, TimeUnit.SECONDS);
        assertNotNull(lease);
        assertFalse(lease.isLost());
        assertEquals(0, sem.availablePermits());
        lease.close();
        assertEquals(2, sem.availablePermits());
    }

    @Test
    void expiringPermitsHaveIdsAndAreKeptByTheWatchdog() throws Exception {
        try (PolylockClient quick = Polylock.connect(url(), new Polylock.Options().watchdogTimeout(QUICK))) {
            String name = name("expiring");
            DistributedPermitExpirableSemaphore sem = quick.getPermitExpirableSemaphore(name);
            DistributedPermitExpirableSemaphore other = second.getPermitExpirableSemaphore(name);
            assertTrue(sem.trySetPermits(2));
            assertFalse(other.trySetPermits(5));
            String kept = sem.acquire();
            assertTrue(kept.matches("[0-9a-f]{32}"), kept);
            String fixed = sem.tryAcquire(1, 30, TimeUnit.SECONDS);
            assertNotNull(fixed);
            assertNotEquals(kept, fixed);
            assertNull(other.tryAcquire(), "no permit left");
            long t0 = System.nanoTime();
            assertNull(other.tryAcquire(200, TimeUnit.MILLISECONDS));
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(waited >= 190 && waited < 2_000, "waited " + waited + " ms");
            Thread.sleep(4 * QUICK.toMillis());
            assertEquals(0, other.availablePermits(), "the watchdog kept it past four leases");
            // Anyone may release by id; a release wakes a waiter by notification.
            Holder waiter = Holder.start("permit-waiter", () -> assertNotNull(other.tryAcquire(10, TimeUnit.SECONDS)),
                    () -> { });
            Thread.sleep(150);
            assertFalse(waiter.isHeld());
            long released = System.nanoTime();
            other.release(kept);
            assertTrue(waiter.awaitHeld(10_000));
            long ms = TimeUnit.NANOSECONDS.toMillis(waiter.heldAt() - released);
            waiter.release();
            System.out.printf("expiring permits: a release woke the waiter in %d ms%n", ms);
            assertTrue(ms < 5_000, "woken in " + ms + " ms");
            assertTrue(sem.tryRelease(fixed));
            assertFalse(sem.tryRelease(fixed), "released before");
            assertEquals(1, sem.availablePermits(), "the waiter's permit is still taken");
            sem.addPermits(1);
            assertEquals(2, sem.availablePermits());
        }
    }

    @Test
    void badIdsAndUnknownPermitsAreIllegalArguments() throws Exception {
        DistributedPermitExpirableSemaphore sem = client.getPermitExpirableSemaphore(name("badids"));
        sem.trySetPermits(1);
        String id = sem.acquire();
        sem.release(id);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sem.release(id));
        assertTrue(e.getMessage().startsWith("Permit with id " + id + " has already been released or doesn't exist"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> sem.release("0123456789abcdef0123456789abcdef"));
        assertThrows(IllegalArgumentException.class, () -> sem.release("not-an-id"));
        assertThrows(IllegalArgumentException.class, () -> sem.tryRelease("not-an-id"));
        assertFalse(sem.tryRelease("0123456789abcdef0123456789abcdef"));
        assertThrows(NullPointerException.class, () -> sem.release(null));
        assertThrows(IllegalArgumentException.class, () -> sem.acquire(0, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> sem.tryAcquire(1, -5, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> sem.trySetPermits(-1));
        assertEquals(1, sem.availablePermits(), "nothing taken by the refused calls");
    }

    @Test
    void anExpiredPermitFiresTheLostSignalAndOnlyPermitListenersHearIt() throws Exception {
        String name = name("expired");
        DistributedPermitExpirableSemaphore sem = client.getPermitExpirableSemaphore(name);
        // A lock listener of the same name (the lock itself cannot be taken: Redisson's
        // semaphore and lock would share the key).
        DistributedLock sameName = client.getLock(name);
        BlockingQueue<Object[]> heard = new ArrayBlockingQueue<>(4);
        BlockingQueue<Exception> lockHeard = new ArrayBlockingQueue<>(4);
        sem.addListener((s, e) -> heard.add(new Object[] {s, e, Thread.currentThread().getName()}));
        sameName.addListener((l, e) -> lockHeard.add(e));
        sem.trySetPermits(1);
        long t0 = System.nanoTime();
        String id = sem.acquire(300, TimeUnit.MILLISECONDS);
        Object[] ev = heard.poll(5, TimeUnit.SECONDS);
        assertNotNull(ev, "the listener heard of the expiry");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms >= 250 && ms < 3_000, "heard " + ms + " ms after a 300 ms lease began");
        assertEquals(sem, ev[0]);
        assertInstanceOf(LockLostException.class, ev[1]);
        assertTrue(((Exception) ev[1]).getMessage().startsWith("a permit of semaphore '" + name + "' was lost: "),
                ((Exception) ev[1]).getMessage());
        assertEquals("polylock-events", ev[2]);
        // The client declares the lease lost at (send time + lease), a little before the server's
        // expiry (stamped when the script was built): let the server's moment pass too.
        Thread.sleep(50);
        // Its release says it was lost (Redisson says "already released" here); it is counted
        // back once.
        assertThrows(LockLostException.class, () -> sem.release(id));
        assertEquals(1, sem.availablePermits());
        assertNull(lockHeard.poll(200, TimeUnit.MILLISECONDS), "a lock listener of the same name heard a permit's loss");
        assertNull(heard.poll(10, TimeUnit.MILLISECONDS), "heard once");
        // The kinds are one numbering with the native side, and a permit is no lock.
        assertEquals("permit", Native.kindName(Native.KIND_PERMIT));
        long h = client.enter();
        try {
            assertThrows(IllegalArgumentException.class, () -> Native.lockNew(h, name, Native.KIND_PERMIT));
        } finally {
            client.exit();
        }
    }

    @Test
    void anInterruptCancelsAWaitingPermitAcquireAndTakesNothing() throws Exception {
        String name = name("permit-interrupt");
        DistributedPermitExpirableSemaphore sem = client.getPermitExpirableSemaphore(name);
        DistributedPermitExpirableSemaphore other = second.getPermitExpirableSemaphore(name);
        sem.trySetPermits(1);
        String id = sem.acquire();
        for (int i = 0; i < 3; i++) {
            int form = i;
            Servers.Interrupted r = Servers.interruptWhileWaiting(() -> form == 0 ? other.acquire()
                    : form == 1 ? other.tryAcquire(30, TimeUnit.SECONDS) : other.tryAcquire(30, 5, TimeUnit.SECONDS), 150);
            assertInstanceOf(InterruptedException.class, r.outcome);
            assertTrue(r.answeredMs < INTERRUPT_BOUND_MS, "interrupt answered in " + r.answeredMs + " ms");
        }
        sem.release(id);
        assertEquals(1, sem.availablePermits(), "the interrupted waits took nothing");
    }

    @Test
    void aKilledHoldersExpiringPermitComesBackWithinItsLease() throws Exception {
        String name = name("permit-killed");
        long watchdogMs = 1_000;
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("java.home") + "/bin/java");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        String lib = System.getProperty("polylock.native.library");
        if (lib != null) {
            cmd.add("-Dpolylock.native.library=" + lib);
        }
        cmd.add(HoldPermitUntilKilled.class.getName());
        cmd.add(url());
        cmd.add(name);
        cmd.add(Long.toString(watchdogMs));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        DistributedPermitExpirableSemaphore sem = client.getPermitExpirableSemaphore(name);
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            assertNotNull(line, "the child printed nothing");
            assertTrue(line.startsWith("held "), line);
            // Kept by the child's watchdog while it lives.
            Thread.sleep(2 * watchdogMs);
            assertEquals(0, sem.availablePermits(), "the living child's permit is renewed");
        } finally {
            p.destroyForcibly(); // SIGKILL: no shutdown hook, no release
        }
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        long killed = System.nanoTime();
        String id = sem.tryAcquire(10, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
        assertNotNull(id, "the killed holder's permit came back");
        System.out.printf("a killed JVM's expiring permit (watchdog %d ms) came back %d ms after the kill%n", watchdogMs, ms);
        assertTrue(ms < watchdogMs + 1_000, "back within its lease: " + ms + " ms");
        sem.release(id);
    }

    @Test
    void closingTheClientGivesItsExpiringPermitsBackAndTellsTheListeners() throws Exception {
        String name = name("permit-close");
        PolylockClient c = Polylock.connect(url());
        DistributedPermitExpirableSemaphore sem = c.getPermitExpirableSemaphore(name);
        BlockingQueue<Exception> heard = new ArrayBlockingQueue<>(4);
        sem.addListener((s, e) -> heard.add(e));
        sem.trySetPermits(2);
        sem.acquire();
        sem.acquire(30, TimeUnit.SECONDS);
        c.close();
        assertNotNull(heard.poll(5, TimeUnit.SECONDS));
        assertNotNull(heard.poll(5, TimeUnit.SECONDS), "both permits' losses heard");
        assertEquals(2, client.getPermitExpirableSemaphore(name).availablePermits());
        PolylockException e = assertThrows(PolylockException.class, sem::tryAcquire);
        assertEquals(PolylockException.Code.INVALID_STATE, e.getCode());
    }
}
