package io.polylock;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A distributed counting semaphore with {@link java.util.concurrent.Semaphore}'s method names,
 * Redisson's {@code RSemaphore} extras ({@link #trySetPermits}, {@link #addPermits}) and Curator's
 * {@code InterProcessSemaphoreV2} words ({@link #acquireLease()}, {@link #returnLease}). From
 * {@link PolylockClient#getSemaphore(String)}.
 *
 * <p>The two servers differ in who a permit belongs to:
 *
 * <ul>
 *   <li><b>Redis</b>, in Redisson's {@code RSemaphore} format (the name's key holds the number of
 *       free permits): permits belong to nobody, as in {@code java.util.concurrent.Semaphore}. Any
 *       thread or process may {@link #release()}, even permits it never acquired, and the
 *       permits of a process that dies are <em>not</em> given back by anybody. For permits that
 *       come back after a crash, use {@link PolylockClient#getPermitExpirableSemaphore}.
 *   <li><b>ZooKeeper</b>, in Curator's {@code InterProcessSemaphoreV2} format on the path, its
 *       number of permits in a {@code SharedCount} at {@code <path>/count}: an acquired permit
 *       is a lease of this client (an ephemeral node). Any thread of this client may release it,
 *       but only this client: {@link #release(int)} gives back that many of the client's leases
 *       and throws {@link IllegalMonitorStateException} if it holds fewer. A lost session frees
 *       them, and {@link Listener}s hear of it. A Curator service shares the semaphore with
 *       {@code new InterProcessSemaphoreV2(client, path, new SharedCount(client, path + "/count",
 *       0))}, or a constant {@code maxLeases} equal to the permits set here.
 * </ul>
 *
 * <p>The waiting forms wait for a release notification (Redis pub/sub, ZooKeeper watches), never
 * by polling. {@link #acquire()} and the timed {@code tryAcquire}/{@code acquireLease} forms
 * answer {@link Thread#interrupt()} with an {@link InterruptedException} at once, leaving
 * nothing taken: the native acquire is cancelled, and a try it had in flight (a script on Redis,
 * a grant on ZooKeeper) is undone on the server in the background (a permit it took may be
 * missing for a few milliseconds after the exception).
 *
 * <p>Unlike {@code java.util.concurrent.Semaphore}, acquiring or releasing 0 permits is refused
 * with an {@link IllegalArgumentException}, as negative numbers are. Errors of the server are
 * {@link PolylockException}s.
 *
 * <p>This object holds the native semaphore, freed by {@link #close()} or once it is unreachable
 * (a {@link Lease} holds a little native memory too, until it is returned).
 */
public final class DistributedSemaphore implements AutoCloseable {
    /** Hears that permits this client held were lost (ZooKeeper: its session ended, or the client closed). */
    public interface Listener {
        /** Runs on the client's {@code polylock-events} thread and may call back into polylock. */
        void onLost(DistributedSemaphore semaphore, LockLostException cause);
    }

    private final PolylockClient client;
    /** The native semaphore (the core's, made once). */
    private final NativeHandle handle;
    private final String name;
    private final CopyOnWriteArrayList<Listener> listeners = new CopyOnWriteArrayList<>();
    private final LostRoute route;
    private volatile boolean closed;

    /**
     * Over the native semaphore {@code nativeSemaphore} ({@link Native#semaphoreNew}), which it
     * owns from here on.
     */
    DistributedSemaphore(PolylockClient client, String name, long nativeSemaphore) {
        this.client = client;
        this.handle = NativeHandle.own(nativeSemaphore, this, Native::semaphoreFree, "semaphore");
        this.name = name;
        this.route = new LostRoute(name, Native.KIND_PERMIT, this::fireLost);
    }

    /** The semaphore's name (a ZooKeeper path on ZooKeeper). */
    public String getName() {
        return name;
    }

    // ---- permits ----------------------------------------------------------------------------

    /**
     * Set the number of permits if nobody set it yet (Redisson's {@code trySetPermits}; on
     * ZooKeeper, create the {@code SharedCount}); true if this call set it.
     *
     * @throws IllegalArgumentException for a negative number
     */
    public boolean trySetPermits(int permits) {
        long h = enter();
        try {
            return Native.semaphoreTrySetPermits(h, permits);
        } finally {
            exit();
        }
    }

    /** Add permits, or take free ones away with a negative number (Redisson's {@code addPermits}). */
    public void addPermits(int permits) {
        long h = enter();
        try {
            Native.semaphoreAddPermits(h, permits);
        } finally {
            exit();
        }
    }

    /** The permits free now (asks the server). */
    public int availablePermits() {
        long h = enter();
        try {
            return clamp(Native.semaphoreAvailablePermits(h));
        } finally {
            exit();
        }
    }

    /**
     * Take every permit free now; how many. On ZooKeeper they are leases of this client, given
     * back by {@link #release(int)}.
     */
    public int drainPermits() {
        long h = enter();
        try {
            return clamp(Native.semaphoreDrainPermits(h));
        } finally {
            exit();
        }
    }

    /**
     * How many permits this client holds: its ZooKeeper leases, by every thread (local, no round
     * trip). Always 0 on Redis, where permits belong to nobody.
     */
    public int heldPermits() {
        long h = enter();
        try {
            return clamp(Native.semaphoreHeldPermits(h));
        } finally {
            exit();
        }
    }

    // ---- java.util.concurrent.Semaphore's acquiring forms -----------------------------------

    /** Take one permit, waiting as long as it takes; interruptible. */
    public void acquire() throws InterruptedException {
        acquire(1);
    }

    /** Take {@code permits} permits at once, waiting as long as it takes; interruptible. */
    public void acquire(int permits) throws InterruptedException {
        take(permits, -1, false, true);
    }

    /** Take one permit, waiting as long as it takes; an interrupt is kept for later, not answered. */
    public void acquireUninterruptibly() {
        acquireUninterruptibly(1);
    }

    /** Take {@code permits} permits, waiting as long as it takes, not interruptibly. */
    public void acquireUninterruptibly(int permits) {
        try {
            take(permits, -1, false, false);
        } catch (InterruptedException e) {
            throw new AssertionError("an uninterruptible wait was interrupted", e);
        }
    }

    /** One try for one permit, no waiting; true if taken. */
    public boolean tryAcquire() {
        return tryAcquire(1);
    }

    /** One try for {@code permits} permits (all or none), no waiting; true if taken. */
    public boolean tryAcquire(int permits) {
        try {
            return take(permits, 0, false, false) != 0;
        } catch (InterruptedException e) {
            throw new AssertionError("one try does not wait", e);
        }
    }

    /** Wait up to {@code timeout} for one permit (zero or less: one try); false if it ran out. */
    public boolean tryAcquire(long timeout, TimeUnit unit) throws InterruptedException {
        return tryAcquire(1, timeout, unit);
    }

    /** Wait up to {@code timeout} for {@code permits} permits; false if it ran out (nothing taken). */
    public boolean tryAcquire(int permits, long timeout, TimeUnit unit) throws InterruptedException {
        return take(permits, Waits.waitMs(timeout, unit), false, true) != 0;
    }

    /**
     * Give back one permit and wake a waiter.
     *
     * @throws IllegalMonitorStateException on ZooKeeper, if this client holds no lease
     */
    public void release() {
        release(1);
    }

    /**
     * Give back {@code permits} permits and wake waiters. Redis: anyone may, the free count just
     * grows. ZooKeeper: {@code permits} of this client's leases (lost ones first, then the newest).
     *
     * @throws IllegalMonitorStateException on ZooKeeper, if this client holds fewer leases
     * @throws LockLostException on ZooKeeper, if one of the leases given back had been lost
     */
    public void release(int permits) {
        long h = enter();
        try {
            Native.semaphoreRelease(h, permits);
        } finally {
            exit();
        }
    }

    // ---- Curator's leases -------------------------------------------------------------------

    /**
     * Curator's {@code acquire()}: take one permit, waiting as long as it takes (interruptibly),
     * as a {@link Lease} to give back with {@link Lease#close()} or {@link #returnLease}.
     */
    public Lease acquireLease() throws InterruptedException {
        return lease(1, take(1, -1, true, true));
    }

    /** Curator's {@code acquire(time, unit)}: a {@link Lease}, or null if {@code time} ran out. */
    public Lease acquireLease(long time, TimeUnit unit) throws InterruptedException {
        return acquireLease(1, time, unit);
    }

    /**
     * Curator's {@code acquire(qty, time, unit)}: {@code permits} permits as one {@link Lease}
     * (all or none), or null if {@code time} ran out.
     */
    public Lease acquireLease(int permits, long time, TimeUnit unit) throws InterruptedException {
        return lease(permits, take(permits, Waits.waitMs(time, unit), true, true));
    }

    /** Curator's {@code returnLease}: {@link Lease#close()}. Null is ignored. */
    public void returnLease(Lease lease) {
        if (lease != null) {
            lease.close();
        }
    }

    /**
     * Curator's {@code returnAll}: return every lease; all are returned even if one fails (the
     * first failure is thrown, the others are suppressed in it).
     */
    public void returnAll(Collection<Lease> leases) {
        RuntimeException first = null;
        for (Lease l : new ArrayList<>(leases)) {
            try {
                returnLease(l);
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * Permits of one acquire, given back by {@link #close()} (once; later closes do nothing), from
     * any thread. On ZooKeeper exactly these leases are given back, and {@link #isLost()} says
     * whether they were lost; on Redis {@code close()} releases {@link #getPermits()} permits.
     * Hold it in a try-with-resources block, or return it: a lease never returned keeps its
     * permits (and a little native memory) until the client closes.
     */
    public final class Lease implements AutoCloseable {
        private final int permits;
        /** The native lease handle; 0 once returned. Guarded by this. */
        private long handle;

        Lease(int permits, long handle) {
            this.permits = permits;
            this.handle = handle;
        }

        /** How many permits this lease holds. */
        public int getPermits() {
            return permits;
        }

        /** The semaphore it is a lease of. */
        public DistributedSemaphore getSemaphore() {
            return DistributedSemaphore.this;
        }

        /** True once returned. */
        public synchronized boolean isReturned() {
            return handle == 0;
        }

        /** True if its permits were lost (ZooKeeper: the session ended) and it is not returned yet. */
        public synchronized boolean isLost() {
            return handle != 0 && Native.leaseIsLost(handle);
        }

        /**
         * Give the permits back. Idempotent.
         *
         * @throws LockLostException if they had been lost (ZooKeeper); the lease is returned all
         *     the same
         * @throws PolylockException with code {@code INVALID_STATE} if the client was closed
         *     (which gave them back already)
         */
        @Override
        public synchronized void close() {
            long h = handle;
            if (h != 0) {
                handle = 0;
                Native.leaseReturn(h);
            }
        }

        @Override
        public String toString() {
            return "Lease[" + name + ", " + permits + (permits == 1 ? " permit" : " permits") + "]";
        }
    }

    // ---- listeners --------------------------------------------------------------------------

    /**
     * Listen for the loss of permits this client holds on this semaphore: its ZooKeeper leases
     * end with the session (and when the client closes). Never fires on Redis, where nobody
     * holds permits.
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
     * Stop using this handle: later calls throw {@code INVALID_STATE}, its listeners are removed
     * and its native semaphore is freed. Permits and leases stay taken. Idempotent.
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
        return "DistributedSemaphore[" + name + "]";
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

    private Lease lease(int permits, long handle) {
        return handle == 0 ? null : new Lease(permits, handle);
    }

    private void checkOpen() {
        if (closed) {
            throw new PolylockException(PolylockException.Code.INVALID_STATE, "this DistributedSemaphore handle is closed");
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
     * Take {@code permits}: 0 if {@code waitMs} ran out, else 1, or a lease handle when {@code
     * lease}. {@code waitMs} -1 waits forever, 0 tries once. The uncontended case is one round trip
     * on the calling thread; a wait runs natively and completes a future this thread waits on.
     */
    private long take(int permits, long waitMs, boolean lease, boolean interruptible) throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        long start = System.nanoTime();
        long h = enter();
        try {
            // One try first, except on ZooKeeper, where a try queues on the semaphore's internal
            // mutex like a wait does: a try and then a wait would queue twice.
            if (waitMs == 0 || !client.queuesWaiters()) {
                long got = Native.semaphoreTryAcquire(h, permits, lease);
                if (got != 0 || waitMs == 0) {
                    return got;
                }
            }
            long remaining = waitMs;
            if (waitMs > 0) {
                remaining = Waits.remaining(waitMs, start);
                if (remaining <= 0) {
                    return 0;
                }
            }
            NativeFuture future = new NativeFuture();
            long cancel = Native.semaphoreAcquireAsync(h, permits, remaining, lease, future);
            NativeFuture done = Waits.await(future, cancel, interruptible);
            return done.succeeded() ? done.value() : 0;
        } finally {
            exit();
        }
    }

    static int clamp(long n) {
        return (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, n));
    }
}
