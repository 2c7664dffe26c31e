package io.polylock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A distributed lock, reentrant per Java thread, in Redisson's {@code RLock} vocabulary (and
 * Curator's {@code InterProcessMutex} words: {@link #acquire()}, {@link #release()}).
 *
 * <p>Without a lease time a lock is kept by a watchdog while this client lives (Redisson's
 * {@code lock()}); with one it expires after it unless released first, and nobody renews it.
 * The waiting forms wait for a release notification (Redis pub/sub, ZooKeeper watches), never
 * by polling. {@link #lockInterruptibly()} and the waiting {@code tryLock}/{@code acquire} forms
 * answer {@link Thread#interrupt()} within milliseconds, leaving nothing acquired.
 *
 * <p>The same class is each half of a {@link DistributedReadWriteLock} ({@link
 * PolylockClient#getReadWriteLock}): its {@link DistributedReadWriteLock#readLock() readLock()}
 * is shared by any number of threads while nobody holds the write lock, its {@link
 * DistributedReadWriteLock#writeLock() writeLock()} excludes readers and writers, and every method
 * below works on either half. Both halves are reentrant per thread, and one thread's read and
 * write holds are the same owner's: a thread holding the write lock may take the read lock and
 * keep it after releasing the write lock (a downgrade). The opposite, an upgrade, is refused:
 * the acquiring methods of the write lock ({@code lock}, {@code tryLock}, {@code
 * lockInterruptibly}, {@code acquire}, {@code hold}) throw {@link UpgradeNotSupportedException}
 * at once, without waiting, while the calling thread holds the read lock, which it keeps
 * (Redisson and Curator wait forever there).
 *
 * <p>A fair lock ({@link PolylockClient#getFairLock}) is this class too: on Redis, Redisson's
 * {@code RFairLock}, granted in the order the waiters asked, polylock's and Redisson's alike.
 *
 * <p>So is a multi-lock ({@link PolylockClient#getMultiLock}, {@link Polylock#multiLock}): all of
 * several locks or none, whatever clients and servers they are on (Redis and ZooKeeper together).
 * Its members are taken in one canonical order (by name, then server, then kind), whatever order
 * they were given in, so that multi-locks over overlapping sets never deadlock, and an acquire
 * that cannot have every member within its wait gives back the ones it took. It is reentrant per
 * thread as its members are; {@link #getFencingToken()} is the largest of its members' tokens,
 * and each member's own token stays readable on the member, by the thread holding the
 * multi-lock; its listeners hear the loss of any member's hold by a thread that holds the
 * multi-lock (of a ZooKeeper mutex member, held by the client: of any); {@link #isLocked()} is
 * true when every member is held, {@link #getHoldCount()} is the least of the members' counts.
 *
 * <p>Each lock object holds a native lock (the core lock, made once, so a call builds nothing): it
 * is freed by {@link #close()}, or when the object becomes unreachable (reclaimed as the next
 * native handle is made), so creating one per request is fine. Closing stops this handle (and its
 * listeners) and never releases its holds.
 */
public final class DistributedLock implements Lock, AutoCloseable {
    /**
     * Hears that a hold of this lock (by any thread of the client) was lost; for a half of a
     * read-write lock, a hold of that half only.
     */
    public interface Listener {
        /**
         * The lock was lost: expired, deleted or force-unlocked elsewhere, unrenewable, its
         * session expired, or the client closed. Runs on the client's {@code polylock-events}
         * thread and may call back into polylock.
         */
        void onAbort(DistributedLock lock, Exception cause);
    }

    /** A lost hold's owner when the whole client held it (a ZooKeeper mutex): core's client owner. */
    private static final long CLIENT_OWNER = -1L;

    /** The client of a named lock; null for a multi-lock. */
    private final PolylockClient client;
    /** The native lock (the core lock, made once), which every native call takes. */
    private final NativeHandle handle;
    private final String name;
    /** One of {@code Native.KIND_*}, or {@code Native.MULTI} for a multi-lock. */
    private final int kind;
    /**
     * The kind its holds' losses are reported with ({@link Native#lockHoldKind}): {@link #kind}, but
     * the ordinary lock's for a fair lock on ZooKeeper; unused for a multi-lock.
     */
    private final int holdKind;
    /** A wait takes a queue place (ZooKeeper, a fair lock): no one-try fast path before it. */
    private final boolean queuesWaiters;
    /** A multi-lock's locks as given; a named lock's: itself. */
    private final List<DistributedLock> members;
    private final CopyOnWriteArrayList<Listener> listeners = new CopyOnWriteArrayList<>();
    /** Where the losses this lock's listeners hear come from: each named lock under it, on its client. */
    private final List<Route> routes = new ArrayList<>();
    private volatile boolean closed;

    /**
     * A named lock of {@code client}, over the native lock {@code nativeLock} ({@link
     * Native#lockNew}), which it owns from here on.
     */
    DistributedLock(PolylockClient client, String name, int kind, long nativeLock) {
        this.client = client;
        this.handle = NativeHandle.own(nativeLock, this, Native::lockFree, "lock");
        this.name = name;
        this.kind = kind;
        long h = handle.enter();
        try {
            this.holdKind = Native.lockHoldKind(h);
            this.queuesWaiters = Native.lockQueuesWaiters(h);
        } catch (RuntimeException e) {
            handle.close();
            throw e;
        } finally {
            handle.exit();
        }
        this.members = Collections.singletonList(this);
        this.routes.add(new Route(client, new LostRoute(name, holdKind, this::fireLost)));
    }

    private DistributedLock(List<DistributedLock> members, long nativeLock) {
        this.client = null;
        this.handle = NativeHandle.own(nativeLock, this, Native::lockFree, "multi-lock");
        this.kind = Native.MULTI;
        this.holdKind = -1;
        this.members = members;
        long h = handle.enter();
        try {
            this.name = Native.lockName(h);
            this.queuesWaiters = Native.lockQueuesWaiters(h);
        } catch (RuntimeException e) {
            handle.close();
            throw e;
        } finally {
            handle.exit();
        }
        for (DistributedLock named : namedLocks(members)) {
            LostRoute r = new LostRoute(named.name, named.holdKind, this::fireLostIfHeld);
            routes.add(new Route(named.client, r));
        }
    }

    /**
     * A multi-lock over {@code locks} (named locks or multi-locks, whose members it takes), built
     * natively once. The locks' handles must be open while it is built, not afterwards.
     *
     * @throws NullPointerException for a null list or a null lock in it
     * @throws IllegalArgumentException for no lock, or the same lock twice (the same name and kind
     *     on the same client, as one object or two)
     */
    static DistributedLock multi(List<DistributedLock> locks) {
        Objects.requireNonNull(locks, "locks");
        List<DistributedLock> given = new ArrayList<>(locks);
        int n = given.size();
        long[] handles = new long[n];
        for (int i = 0; i < n; i++) {
            Objects.requireNonNull(given.get(i), "locks[" + i + "]");
        }
        int entered = 0;
        try {
            for (; entered < n; entered++) {
                handles[entered] = given.get(entered).enter();
            }
            long nativeLock = Native.multiLockNew(handles);
            return new DistributedLock(Collections.unmodifiableList(given), nativeLock);
        } finally {
            for (int i = 0; i < entered; i++) {
                given.get(i).exit();
            }
        }
    }

    /** The named locks under {@code locks} (a multi-lock's members, recursively). */
    private static List<DistributedLock> namedLocks(List<DistributedLock> locks) {
        List<DistributedLock> named = new ArrayList<>();
        for (DistributedLock l : locks) {
            if (l.client != null) {
                named.add(l);
            } else {
                named.addAll(namedLocks(l.members));
            }
        }
        return named;
    }

    /**
     * The lock's name (a ZooKeeper path on ZooKeeper). A multi-lock's: its members' names joined
     * by {@code +}, in the order it takes them.
     */
    public String getName() {
        return name;
    }

    /**
     * A multi-lock's locks, in the order they were given (it takes them in its own order, see the
     * class comment); a single lock's: itself. Unmodifiable.
     */
    public List<DistributedLock> getMembers() {
        return members;
    }

    /** The native lock (tests). */
    NativeHandle lockHandle() {
        return handle;
    }

    /** True for a multi-lock ({@link PolylockClient#getMultiLock}, {@link Polylock#multiLock}). */
    public boolean isMultiLock() {
        return client == null;
    }

    // ---- acquiring --------------------------------------------------------------------------

    /**
     * Wait until acquired; kept by the watchdog. Not interruptible (the interrupt is kept).
     *
     * @throws UpgradeNotSupportedException at once, for the write lock of a read-write lock whose
     *     read lock the current thread holds
     */
    @Override
    public void lock() {
        acquireUninterruptibly(-1);
    }

    /** Wait until acquired, with a fixed lease; no watchdog. {@code leaseTime} -1 means the watchdog. */
    public void lock(long leaseTime, TimeUnit unit) {
        acquireUninterruptibly(leaseMs(leaseTime, unit));
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        acquireToken(-1, -1, true);
    }

    /** {@link #lockInterruptibly()} with a fixed lease ({@code -1}: the watchdog). */
    public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        acquireToken(-1, leaseMs(leaseTime, unit), true);
    }

    /**
     * One attempt, no waiting; kept by the watchdog if acquired.
     *
     * @throws UpgradeNotSupportedException for the write lock of a read-write lock whose read
     *     lock the current thread holds (every acquiring method throws it, at once)
     */
    @Override
    public boolean tryLock() {
        return once(-1) >= 0;
    }

    /** Wait up to {@code time} (zero or less: one attempt); kept by the watchdog. */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return acquireToken(waitMs(time, unit), -1, true) >= 0;
    }

    /** Wait up to {@code waitTime}, then hold for {@code leaseTime} ({@code -1}: the watchdog). */
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long lease = leaseMs(leaseTime, unit);
        return acquireToken(waitMs(waitTime, unit), lease, true) >= 0;
    }

    /** Curator's {@code acquire()}: wait until acquired, interruptibly. */
    public void acquire() throws InterruptedException {
        lockInterruptibly();
    }

    /** Curator's {@code acquire(time, unit)}: wait up to {@code time}; true if acquired. */
    public boolean acquire(long time, TimeUnit unit) throws InterruptedException {
        return tryLock(time, unit);
    }

    /**
     * {@link #lock()} as a resource: {@code try (DistributedLock.Hold h = lock.hold()) { ... }}.
     * The hold remembers its thread and its fencing token.
     */
    public Hold hold() {
        long token = acquireUninterruptibly(-1);
        return new Hold(PolylockClient.currentOwner(), token);
    }

    /** {@link #hold()} with a fixed lease. */
    public Hold hold(long leaseTime, TimeUnit unit) {
        long token = acquireUninterruptibly(leaseMs(leaseTime, unit));
        return new Hold(PolylockClient.currentOwner(), token);
    }

    /**
     * The section-running form with a bounded wait: wait up to {@code waitTime} (zero or less: one
     * attempt), hold for {@code leaseTime} ({@code -1}: the watchdog), and return the hold to close
     * when the section ends: {@code try (DistributedLock.Hold h = lock.hold(5, -1, SECONDS)) { ...
     * }}. Interruptible.
     *
     * @throws LockTimeoutException if the lock was not acquired in time (a {@link
     *     PolylockException} with code {@code TIMEOUT}): the section must not run
     */
    public Hold hold(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long owner = PolylockClient.currentOwner();
        long token = acquireToken(owner, waitMs(waitTime, unit), leaseMs(leaseTime, unit), true);
        if (token < 0) {
            throw new LockTimeoutException("lock '" + name + "' not acquired within " + waitTime + " "
                    + unit.toString().toLowerCase(java.util.Locale.ROOT));
        }
        return new Hold(owner, token);
    }

    /**
     * An acquisition that belongs to the returned {@link Hold}, not to the calling thread: no
     * thread re-enters it (the calling thread's own {@link #lock()} waits for it like anybody
     * else's), and any thread may {@link Hold#close() close} it. What Spring Integration's and
     * ShedLock's lock users expect of a lock that one task takes and another may end. Waits up
     * to {@code waitTime} (zero or less: one attempt), holds for {@code leaseTime} ({@code -1}:
     * the watchdog); {@code null} if not acquired in time.
     */
    public Hold tryHoldForAnyThread(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long owner = Native.freshOwner();
        long token = acquireToken(owner, waitMs(waitTime, unit), leaseMs(leaseTime, unit), true);
        return token < 0 ? null : new Hold(owner, token);
    }

    /**
     * {@link #lock()} that returns the hold's fencing token (Redisson's {@code
     * RFencedLock.lockAndGetToken()}): greater than every earlier holder's.
     */
    public Long lockAndGetToken() {
        return acquireUninterruptibly(-1);
    }

    /** {@link #lockAndGetToken()} with a fixed lease ({@code -1}: the watchdog). */
    public Long lockAndGetToken(long leaseTime, TimeUnit unit) {
        return acquireUninterruptibly(leaseMs(leaseTime, unit));
    }

    /** {@link #tryLock()} that returns the fencing token, or {@code null} if not acquired. */
    public Long tryLockAndGetToken() {
        long token = once(-1);
        return token < 0 ? null : token;
    }

    /**
     * {@link #tryLock(long, long, TimeUnit)} that returns the fencing token, or {@code null} if
     * not acquired in time (Redisson's {@code RFencedLock.tryLockAndGetToken}).
     */
    public Long tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long token = acquireToken(waitMs(waitTime, unit), leaseMs(leaseTime, unit), true);
        return token < 0 ? null : token;
    }

    // ---- Redisson's async vocabulary --------------------------------------------------------

    /**
     * Acquire without blocking the calling thread (Redisson's {@code lockAsync()}): the future
     * completes once the lock is held, kept by the watchdog. The owner is the calling thread, as
     * for {@link #lock()}: release it with {@link #unlock()} or {@link #unlockAsync()} from this
     * thread. The future's stages run on the common pool, never on polylock's threads.
     * Cancelling the future cancels the wait and leaves nothing acquired.
     */
    public CompletableFuture<Void> lockAsync() {
        return acquireAsync(-1, -1).thenApply(held -> null);
    }

    /** {@link #lockAsync()} with a fixed lease ({@code -1}: the watchdog). */
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
        return acquireAsync(-1, leaseMs(leaseTime, unit)).thenApply(held -> null);
    }

    /** One attempt without blocking (Redisson's {@code tryLockAsync()}): true if acquired. */
    public CompletableFuture<Boolean> tryLockAsync() {
        return acquireAsync(0, -1);
    }

    /** Wait up to {@code waitTime} without blocking (Redisson's {@code tryLockAsync(time, unit)}). */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
        return acquireAsync(waitMs(waitTime, unit), -1);
    }

    /**
     * Wait up to {@code waitTime}, then hold for {@code leaseTime} ({@code -1}: the watchdog),
     * without blocking (Redisson's {@code tryLockAsync(waitTime, leaseTime, unit)}): true if
     * acquired, false if the wait ran out.
     */
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return acquireAsync(waitMs(waitTime, unit), leaseMs(leaseTime, unit));
    }

    /**
     * Release one hold of the calling thread without blocking it (Redisson's {@code
     * unlockAsync()}); the future fails with {@link NotOwnerException} or {@link
     * LockLostException} as {@link #unlock()} throws them.
     */
    public CompletableFuture<Void> unlockAsync() {
        long owner = PolylockClient.currentOwner();
        long h = enter();
        try {
            NativeFuture future = new NativeFuture();
            long cancel = Native.lockReleaseAsync(h, owner, future);
            return Waits.async(future, cancel, kept -> null, null);
        } finally {
            exit();
        }
    }

    /** {@link #forceUnlock()} without blocking (Redisson's {@code forceUnlockAsync()}). */
    public CompletableFuture<Boolean> forceUnlockAsync() {
        long h = enter();
        try {
            NativeFuture future = new NativeFuture();
            long cancel = Native.lockForceUnlockAsync(h, future);
            return Waits.async(future, cancel, was -> was != 0, null);
        } finally {
            exit();
        }
    }

    /** An acquire of the calling thread's owner on the runtime: true once held, false if the wait ran out. */
    private CompletableFuture<Boolean> acquireAsync(long waitMs, long leaseMs) {
        long owner = PolylockClient.currentOwner();
        long h = enter();
        try {
            NativeFuture future = new NativeFuture();
            long cancel = Native.lockAcquireAsync(h, owner, waitMs, leaseMs, future);
            return Waits.async(future, cancel, token -> Boolean.TRUE, Boolean.FALSE);
        } finally {
            exit();
        }
    }

    // ---- releasing --------------------------------------------------------------------------

    /**
     * Release one hold of the current thread; the last one frees the lock and wakes one waiter.
     *
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     * @throws LockLostException if the hold was lost before this release
     */
    @Override
    public void unlock() {
        releaseFor(PolylockClient.currentOwner());
    }

    /** Curator's {@code release()}: the same as {@link #unlock()}. */
    public void release() {
        unlock();
    }

    /**
     * Delete the lock whoever holds it and wake its waiters; true if it was held. For a half of a
     * read-write lock: only while the lock is held in that half's mode (all its readers, or its
     * writer). The holds it deletes are lost, and their holders hear of it (their listeners, their
     * next {@code unlock}): on ZooKeeper at once, on Redis at the next watchdog renewal.
     */
    public boolean forceUnlock() {
        long h = enter();
        try {
            return Native.lockForceUnlock(h);
        } finally {
            exit();
        }
    }

    // ---- state ------------------------------------------------------------------------------

    /** Whether anybody holds the lock (asks the server); for a half, in that half's mode. */
    public boolean isLocked() {
        long h = enter();
        try {
            return Native.lockIsLocked(h);
        } finally {
            exit();
        }
    }

    /** Whether the current thread holds the lock. */
    public boolean isHeldByCurrentThread() {
        return getHoldCount() > 0;
    }

    /** How many times the current thread holds the lock (0 if not, or if its hold was lost). */
    public int getHoldCount() {
        long h = enter();
        try {
            return Native.lockHoldCount(h, PolylockClient.currentOwner());
        } finally {
            exit();
        }
    }

    /** Curator's {@code isAcquiredInThisProcess}: whether any thread of this client holds it. */
    public boolean isAcquiredInThisProcess() {
        long h = enter();
        try {
            return Native.lockIsHeldLocally(h);
        } finally {
            exit();
        }
    }

    /**
     * Remaining lease, the contract's three answers in Redisson's convention (Redis's {@code
     * PTTL}): -2 if nobody holds the lock, -1 if it is held with no expiry (ZooKeeper, SQL
     * session locks), else the milliseconds left.
     */
    public long remainTimeToLive() {
        long h = enter();
        try {
            return Native.lockRemainingLease(h);
        } finally {
            exit();
        }
    }

    /**
     * The fencing token of the current thread's hold: greater than the token of every earlier
     * holder of this lock. Pass it to the protected resource so it can refuse a late writer.
     * On an SQL client whose URL says {@code fencing=none} it is 0.
     *
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     */
    public long getFencingToken() {
        long h = enter();
        try {
            long t = Native.lockFencingToken(h, PolylockClient.currentOwner());
            if (t < 0) {
                throw new NotOwnerException("lock '" + name + "' is not held by the current thread");
            }
            return t;
        } finally {
            exit();
        }
    }

    /** True if the current thread's hold was lost and not yet released. */
    public boolean isLost() {
        long h = enter();
        try {
            return Native.lockIsLost(h, PolylockClient.currentOwner());
        } finally {
            exit();
        }
    }

    /** Listen for the loss of any hold of this lock by this client (see {@link Listener}). */
    public void addListener(Listener listener) {
        Objects.requireNonNull(listener, "listener");
        checkOpen();
        listeners.add(listener);
        for (Route r : routes) {
            r.client.addListening(r.route);
        }
    }

    /** Stop a listener; true if it was registered. */
    public boolean removeListener(Listener listener) {
        boolean removed = listeners.remove(listener);
        if (listeners.isEmpty()) {
            stopListening();
        }
        return removed;
    }

    /** Conditions are not supported on distributed locks. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedException("polylock's distributed locks have no conditions");
    }

    /**
     * Stop using this handle: later calls throw {@code INVALID_STATE} and its listeners are
     * removed; a multi-lock frees its native lock (its members' handles stay usable). Holds stay
     * held (release them with {@link #unlock()} first). Idempotent.
     */
    @Override
    public void close() {
        closed = true;
        listeners.clear();
        stopListening();
        handle.close();
    }

    @Override
    public String toString() {
        switch (kind) {
            case Native.MULTI:
                return "DistributedMultiLock[" + name + "]";
            case Native.KIND_FAIR:
                return "DistributedFairLock[" + name + "]";
            case Native.KIND_MUTEX:
                return "DistributedMutex[" + name + "]";
            case Native.KIND_READ:
                return "DistributedReadWriteLock[" + name + "].readLock()";
            case Native.KIND_WRITE:
                return "DistributedReadWriteLock[" + name + "].writeLock()";
            default:
                return "DistributedLock[" + name + "]";
        }
    }

    // ---- the hold as a resource -------------------------------------------------------------

    /** One acquisition, released by {@link #close()} (once; later closes do nothing). */
    public final class Hold implements AutoCloseable {
        private final long owner;
        private final long token;
        private boolean released;

        Hold(long owner, long token) {
            this.owner = owner;
            this.token = token;
        }

        /** The fencing token of this hold. */
        public long getFencingToken() {
            return token;
        }

        /** The lock this hold is of. */
        public DistributedLock getLock() {
            return DistributedLock.this;
        }

        /** Release this hold (from any thread). */
        @Override
        public synchronized void close() {
            if (!released) {
                released = true;
                releaseFor(owner);
            }
        }
    }

    // ---- internals --------------------------------------------------------------------------

    private void fireLost(long owner, LockLostException e) {
        for (Listener l : listeners) {
            try {
                l.onAbort(this, e);
            } catch (RuntimeException | Error thrown) {
                LostRoute.uncaught(thrown);
            }
        }
    }

    /**
     * A member's hold was lost: the multi-lock's listeners hear of it if its owner holds every
     * member (a thread holding the multi-lock), or if the client held it (a mutex member).
     */
    private void fireLostIfHeld(long owner, LockLostException e) {
        if (owner != CLIENT_OWNER) {
            long h;
            try {
                h = enter();
            } catch (PolylockException closedMeanwhile) {
                return;
            }
            try {
                if (!Native.lockHasHold(h, owner)) {
                    return;
                }
            } finally {
                exit();
            }
        }
        fireLost(owner, e);
    }

    private void stopListening() {
        for (Route r : routes) {
            r.client.removeListening(r.route);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new PolylockException(PolylockException.Code.INVALID_STATE, "this DistributedLock handle is closed");
        }
    }

    /**
     * Count a call in flight on the native lock (and on a named lock's client, whose close waits for
     * it); the lock handle it uses.
     */
    private long enter() {
        checkOpen();
        return client == null ? handle.enter() : handle.enter(client);
    }

    private void exit() {
        if (client == null) {
            handle.exit();
        } else {
            handle.exit(client);
        }
    }

    private void releaseFor(long owner) {
        long h = enter();
        try {
            Native.lockRelease(h, owner);
        } finally {
            exit();
        }
    }

    private long once(long leaseMs) {
        long h = enter();
        try {
            return Native.lockTryAcquire(h, PolylockClient.currentOwner(), leaseMs, false);
        } finally {
            exit();
        }
    }

    private long acquireUninterruptibly(long leaseMs) {
        try {
            return acquireToken(-1, leaseMs, false);
        } catch (InterruptedException e) {
            throw new AssertionError("an uninterruptible wait was interrupted", e);
        }
    }

    /**
     * Acquire: the fencing token, or -1 if {@code waitMs} ran out. {@code waitMs} -1 waits
     * forever, 0 tries once. The uncontended case is one round trip on the calling thread; a
     * wait runs natively and completes a future this thread waits on, so an interrupt can cancel
     * it.
     */
    private long acquireToken(long waitMs, long leaseMs, boolean interruptible) throws InterruptedException {
        return acquireToken(PolylockClient.currentOwner(), waitMs, leaseMs, interruptible);
    }

    /** {@link #acquireToken(long, long, boolean)} for {@code owner}. */
    private long acquireToken(long owner, long waitMs, long leaseMs, boolean interruptible) throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        long start = System.nanoTime();
        long h = enter();
        try {
            // The uncontended case costs one round trip on this thread. Not on ZooKeeper, where a
            // try and then a wait would queue twice and lose this waiter's FIFO place.
            if (waitMs == 0 || !queuesWaiters) {
                long token = Native.lockTryAcquire(h, owner, leaseMs, waitMs != 0);
                if (token >= 0 || waitMs == 0) {
                    return token;
                }
            }
            long remaining = waitMs;
            if (waitMs > 0) {
                // A wait whose time the fast path used up still makes its one try: that try is
                // what records the refusal (the fast path records none), on a loaded machine too.
                remaining = Math.max(0, Waits.remaining(waitMs, start));
            }
            NativeFuture future = new NativeFuture();
            long cancel = Native.lockAcquireAsync(h, owner, remaining, leaseMs, future);
            NativeFuture done = Waits.await(future, cancel, interruptible);
            return done.succeeded() ? done.value() : -1;
        } finally {
            exit();
        }
    }

    /** A lost-event route of a named lock, on the client it is reported by. */
    private static final class Route {
        final PolylockClient client;
        final LostRoute route;

        Route(PolylockClient client, LostRoute route) {
            this.client = client;
            this.route = route;
        }
    }

    private static long waitMs(long time, TimeUnit unit) {
        return Waits.waitMs(time, unit);
    }

    private static long leaseMs(long leaseTime, TimeUnit unit) {
        return Waits.leaseMs(leaseTime, unit);
    }
}
