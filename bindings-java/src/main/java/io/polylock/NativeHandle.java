package io.polylock;

import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.util.Collections;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;

/**
 * A native handle (the core lock of a multi-lock from {@link Native#multiLockNew}, a count-down
 * latch from {@link Native#latchNew}) owned by one Java object: counted while a call uses it, and
 * freed exactly once, by the last call out after {@link #close()}, as {@link PolylockClient} does
 * with a client handle.
 *
 * <p>A handle whose owner became unreachable without {@code close()} is freed too: its owner is
 * tracked by a phantom reference, and the handles of unreachable owners are freed whenever a new
 * one is made (no thread of its own; the library targets Java 8, which has no {@code Cleaner}).
 * Freeing a handle never releases a hold: holds taken through a multi-lock are its members'
 * holds, in their clients; a latch holds nothing.
 */
final class NativeHandle {
    /** Bit of {@link #users} set once closed; the bits below count calls in flight. */
    private static final int CLOSED = 1 << 30;

    private static final ReferenceQueue<Object> UNREACHABLE = new ReferenceQueue<>();
    /** Keeps the phantom references themselves reachable until their owner is gone or closed. */
    private static final Set<Reclaim> TRACKED = Collections.newSetFromMap(new ConcurrentHashMap<Reclaim, Boolean>());

    private final long handle;
    private final LongConsumer free;
    private final String what;
    private final AtomicInteger users = new AtomicInteger();
    private final AtomicBoolean closing = new AtomicBoolean();
    private final AtomicBoolean freed = new AtomicBoolean();
    private final Reclaim reclaim;

    private NativeHandle(long handle, Object owner, LongConsumer free, String what) {
        this.handle = handle;
        this.free = free;
        this.what = what;
        this.reclaim = new Reclaim(owner, this);
    }

    /**
     * Own {@code handle} on behalf of {@code owner}, which must not be reachable from the handle;
     * {@code free} frees it, {@code what} names it in the error of a call after close.
     */
    static NativeHandle own(long handle, Object owner, LongConsumer free, String what) {
        reclaimUnreachable();
        NativeHandle h = new NativeHandle(handle, owner, free, what);
        TRACKED.add(h.reclaim);
        return h;
    }

    /** Count a call in flight and return the handle it may use. */
    long enter() {
        int u = users.incrementAndGet();
        if ((u & CLOSED) != 0) {
            exit();
            throw new PolylockException(PolylockException.Code.INVALID_STATE, "this " + what + " handle is closed");
        }
        return handle;
    }

    /**
     * Count a call in flight on this handle and on {@code client} (whose close waits for the
     * calls on it); the handle it may use. End it with {@link #exit(PolylockClient)}.
     */
    long enter(PolylockClient client) {
        client.enter();
        try {
            return enter();
        } catch (RuntimeException e) {
            client.exit();
            throw e;
        }
    }

    /** End a call begun with {@link #enter(PolylockClient)}. */
    void exit(PolylockClient client) {
        exit();
        client.exit();
    }

    /** End a call; the last one out after close frees the native handle. */
    void exit() {
        if (users.decrementAndGet() == CLOSED && freed.compareAndSet(false, true)) {
            free.accept(handle);
        }
    }

    /** True once the native handle was freed (tests). */
    boolean isFreed() {
        return freed.get();
    }

    /** Refuse new calls and free the handle once the calls in flight are done. Idempotent. */
    void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        TRACKED.remove(reclaim);
        reclaim.clear();
        users.incrementAndGet();
        users.addAndGet(CLOSED);
        exit();
    }

    /** Close the handles whose owners were collected without closing them. */
    static void reclaimUnreachable() {
        Reference<?> r;
        while ((r = UNREACHABLE.poll()) != null) {
            Reclaim gone = (Reclaim) r;
            TRACKED.remove(gone);
            gone.handle.close();
        }
    }

    private static final class Reclaim extends PhantomReference<Object> {
        final NativeHandle handle;

        Reclaim(Object owner, NativeHandle handle) {
            super(owner, UNREACHABLE);
            this.handle = handle;
        }
    }
}
