package io.polylock;

import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A semaphore whose permits have ids and leases, in Redisson's {@code RPermitExpirableSemaphore}
 * format and vocabulary (Redis only). From {@link PolylockClient#getPermitExpirableSemaphore}.
 * Each acquire returns a permit id (32 lowercase hexadecimal characters, as Redisson shows them),
 * which any thread or client may {@link #release(String)}; a permit whose holder dies comes back
 * when its lease ends. polylock and Redisson share the permits of a name, and each releases the
 * other's ids.
 *
 * <p>Leases: with a lease time, a permit expires after it unless released first, as in Redisson.
 * Without one ({@link #acquire()}, {@link #tryAcquire()}, {@link #tryAcquire(long, TimeUnit)},
 * or a lease time of -1) polylock's watchdog renews the permit while this client lives, and it
 * expires one watchdog timeout ({@link Polylock.Options#watchdogTimeout}) after the client dies.
 * (Redisson's permits without a lease never expire: a crashed Redisson holder's permit is gone
 * for good.) A permit that expires anyway, or is removed by somebody else, is announced to this
 * handle's {@link Listener}s.
 *
 * <p>Releasing follows Redisson: an id that is not there (never acquired, released before, or
 * expired and reclaimed by another acquire) is an {@link IllegalArgumentException} ("Permit with
 * id ... has already been released or doesn't exist"), as is an id that is not 32 hexadecimal
 * characters. Where Redisson says the same for a permit whose lease had run out, polylock throws
 * a {@link LockLostException}: the permit was counted back all the same, but the work it guarded
 * may have overlapped with another holder's.
 *
 * <p>The waiting forms wait for a release notification (pub/sub), never by polling, and answer
 * {@link Thread#interrupt()} with an {@link InterruptedException} at once, leaving nothing
 * taken (the native acquire is cancelled; a try it had in flight is undone on the server in the
 * background, within milliseconds).
 *
 * <p>On ZooKeeper, {@link PolylockClient#getPermitExpirableSemaphore} throws {@link
 * UnsupportedOperationException}: use {@link DistributedSemaphore}, whose leases already end with
 * their session.
 */
public final class DistributedPermitExpirableSemaphore implements AutoCloseable {
    /** Hears that a permit taken through this client was lost (its lease ran out, or it was removed). */
    public interface Listener {
        /** Runs on the client's {@code polylock-events} thread and may call back into polylock. */
        void onLost(DistributedPermitExpirableSemaphore semaphore, LockLostException cause);
    }

    private final PolylockClient client;
    /** The native semaphore (the core's, made once). */
    private final NativeHandle handle;
    private final String name;
    private final CopyOnWriteArrayList<Listener> listeners = new CopyOnWriteArrayList<>();
    private final LostRoute route;
    private volatile boolean closed;

    /**
     * Over the native semaphore {@code nativeSemaphore} ({@link Native#permitSemaphoreNew}), which
     * it owns from here on.
     */
    DistributedPermitExpirableSemaphore(PolylockClient client, String name, long nativeSemaphore) {
        this.client = client;
        this.handle = NativeHandle.own(nativeSemaphore, this, Native::permitSemaphoreFree, "permit semaphore");
        this.name = name;
        this.route = new LostRoute(name, Native.KIND_PERMIT, this::fireLost);
    }

    /** The semaphore's name. */
    public String getName() {
        return name;
    }

    // ---- permits ----------------------------------------------------------------------------

    /**
     * Set the number of permits if nobody set it yet; true if this call set it.
     *
     * @throws IllegalArgumentException for a negative number
     */
    public boolean trySetPermits(int permits) {
        long h = enter();
        try {
            return Native.permitSemaphoreTrySetPermits(h, permits);
        } finally {
            exit();
        }
    }

    /** Add permits, or take free ones away with a negative number. */
    public void addPermits(int permits) {
        long h = enter();
        try {
            Native.permitSemaphoreAddPermits(h, permits);
        } finally {
            exit();
        }
    }

    /** The permits free now (expired ones are counted back first, as Redisson does). */
    public int availablePermits() {
        long h = enter();
        try {
            return DistributedSemaphore.clamp(Native.permitSemaphoreAvailablePermits(h));
        } finally {
            exit();
        }
    }

    // ---- acquiring --------------------------------------------------------------------------

    /** Take a permit, waiting as long as it takes (interruptibly); kept by the watchdog. Its id. */
    public String acquire() throws InterruptedException {
        return take(-1, -1, true);
    }

    /** Take a permit that expires after {@code leaseTime} ({@code -1}: the watchdog). Its id. */
    public String acquire(long leaseTime, TimeUnit unit) throws InterruptedException {
        return take(-1, Waits.leaseMs(leaseTime, unit), true);
    }

    /** One try, no waiting; kept by the watchdog. The permit's id, or null if none was free. */
    public String tryAcquire() {
        long h = enter();
        try {
            return Native.permitSemaphoreTryAcquire(h, -1);
        } finally {
            exit();
        }
    }

    /**
     * Wait up to {@code waitTime} (zero or less: one try); kept by the watchdog. The permit's id,
     * or null if the wait ran out.
     */
    public String tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
        return take(Waits.waitMs(waitTime, unit), -1, true);
    }

    /**
     * Wait up to {@code waitTime}, for a permit that expires after {@code leaseTime} ({@code -1}:
     * the watchdog). The permit's id, or null if the wait ran out.
     */
    public String tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long lease = Waits.leaseMs(leaseTime, unit);
        return take(Waits.waitMs(waitTime, unit), lease, true);
    }

    // ---- releasing --------------------------------------------------------------------------

    /**
     * Give back the permit {@code permitId} (any client may) and wake a waiter.
     *
     * @throws IllegalArgumentException if there is no such permit (Redisson's "has already been
     *     released or doesn't exist"), or the id is not 32 hexadecimal characters
     * @throws LockLostException if its lease had run out (it is counted back all the same)
     */
    public void release(String permitId) {
        Objects.requireNonNull(permitId, "permitId");
        long h = enter();
        try {
            Native.permitSemaphoreRelease(h, permitId);
        } catch (IllegalMonitorStateException notThere) {
            throw new UnknownPermitException("Permit with id " + permitId
                    + " has already been released or doesn't exist (" + notThere.getMessage() + ")", notThere);
        } finally {
            exit();
        }
    }

    /**
     * Redisson's {@code tryRelease}: give back the permit; true if it was there (expired or not),
     * false if it was not.
     *
     * @throws IllegalArgumentException if the id is not 32 hexadecimal characters
     */
    public boolean tryRelease(String permitId) {
        Objects.requireNonNull(permitId, "permitId");
        long h = enter();
        try {
            return Native.permitSemaphoreTryRelease(h, permitId);
        } finally {
            exit();
        }
    }

    // ---- listeners --------------------------------------------------------------------------

    /**
     * Listen for the loss of permits of this name taken through this client: a fixed lease that
     * ran out before the release, a watchdog that could not renew in time, a permit removed by
     * somebody else, or the client closing while the permit was held.
     */
    public void addListener(Listener listener) {
        Objects.requireNonNull(listener, "listener");
        checkOpen();
        listeners.add(listener);
        client.addListening(route);
    }

    /** Stop a listener; true if it was registered. */
    public boolean removeListener(Listener listener) {
        boolean removed = listeners.remove(listener);
        if (listeners.isEmpty()) {
            client.removeListening(route);
        }
        return removed;
    }

    /**
     * Stop using this handle: later calls throw {@code INVALID_STATE} and its listeners are
     * removed. Permits stay taken. Idempotent.
     */
    @Override
    public void close() {
        closed = true;
        listeners.clear();
        client.removeListening(route);
        handle.close();
    }

    @Override
    public String toString() {
        return "DistributedPermitExpirableSemaphore[" + name + "]";
    }

    // ---- internals --------------------------------------------------------------------------

    private void fireLost(long owner, LockLostException e) {
        for (Listener l : listeners) {
            try {
                l.onLost(this, e);
            } catch (RuntimeException | Error thrown) {
                LostRoute.uncaught(thrown);
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new PolylockException(PolylockException.Code.INVALID_STATE,
                    "this DistributedPermitExpirableSemaphore handle is closed");
        }
    }

    /**
     * Count a call in flight on the native semaphore and on the client (whose close waits for it);
     * the semaphore handle it uses.
     */
    private long enter() {
        checkOpen();
        return handle.enter(client);
    }

    private void exit() {
        handle.exit(client);
    }

    /**
     * Take a permit: its id, or null if {@code waitMs} ran out ({@code -1} waits forever, 0 tries
     * once). One try on the calling thread first; a wait runs natively.
     */
    private String take(long waitMs, long leaseMs, boolean interruptible) throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        long start = System.nanoTime();
        long h = enter();
        try {
            String id = Native.permitSemaphoreTryAcquire(h, leaseMs);
            if (id != null || waitMs == 0) {
                return id;
            }
            long remaining = waitMs;
            if (waitMs > 0) {
                remaining = Waits.remaining(waitMs, start);
                if (remaining <= 0) {
                    return null;
                }
            }
            NativeFuture future = new NativeFuture();
            long cancel = Native.permitSemaphoreAcquireAsync(h, remaining, leaseMs, future);
            NativeFuture done = Waits.await(future, cancel, interruptible);
            return done.succeeded() ? done.text() : null;
        } finally {
            exit();
        }
    }
}
