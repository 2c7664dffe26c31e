package io.polylock;

import java.util.concurrent.TimeUnit;

/**
 * A distributed count-down latch with {@link java.util.concurrent.CountDownLatch}'s method names
 * and Redisson's {@code RCountDownLatch} extras ({@link #trySetCount}, {@link #delete}). From
 * {@link PolylockClient#getCountDownLatch(String)}.
 *
 * <p>On Redis it is stored in Redisson's format (the name's key holds the count; a message on
 * {@code redisson_countdownlatch__channel__{name}} wakes the waiters), so polylock and Redisson
 * count down and wait on the same latches. On ZooKeeper the count is a Curator {@code
 * SharedCount} at the path (a 4-byte big-endian integer), waited on with a data watch.
 *
 * <p>A latch counts only after {@link #trySetCount} (a latch that is not counting is open: its
 * count is 0 and {@link #await()} returns at once). When the count reaches 0 every waiter wakes,
 * by notification, and the latch can be set again. {@link #await()} and {@link #await(long,
 * TimeUnit)} answer {@link Thread#interrupt()} with an {@link InterruptedException}.
 *
 * <p>Each latch object holds a native handle (the core latch, made once): it is freed when the
 * object becomes unreachable (reclaimed as the next native handle is made), so creating one per
 * request stays cheap.
 */
public final class DistributedCountDownLatch {
    private final String name;
    private final NativeHandle handle;

    DistributedCountDownLatch(String name, long nativeLatch) {
        this.name = name;
        this.handle = NativeHandle.own(nativeLatch, this, Native::latchFree, "latch");
    }

    /** The latch's name (a ZooKeeper path on ZooKeeper). */
    public String getName() {
        return name;
    }

    /**
     * Set the count if the latch is not counting (Redisson's {@code trySetCount}); true if this
     * call set it.
     *
     * @throws IllegalArgumentException if {@code count} is less than 1
     */
    public boolean trySetCount(long count) {
        long h = handle.enter();
        try {
            return Native.latchTrySetCount(h, count);
        } finally {
            handle.exit();
        }
    }

    /** Count down by one; at 0 every waiter wakes. Does nothing on an open latch. */
    public void countDown() {
        long h = handle.enter();
        try {
            Native.latchCountDown(h);
        } finally {
            handle.exit();
        }
    }

    /** The count now (0 when open); asks the server. */
    public long getCount() {
        long h = handle.enter();
        try {
            return Native.latchCount(h);
        } finally {
            handle.exit();
        }
    }

    /** Wait until the count is 0, as long as it takes; interruptible. */
    public void await() throws InterruptedException {
        await(-1);
    }

    /**
     * Wait up to {@code timeout} (zero or less: just look) until the count is 0; true if it is,
     * false if the time ran out.
     */
    public boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        return await(Waits.waitMs(timeout, unit));
    }

    /** Delete the latch: it opens and its waiters wake; true if it was counting. */
    public boolean delete() {
        long h = handle.enter();
        try {
            return Native.latchDelete(h);
        } finally {
            handle.exit();
        }
    }

    /** The latch's native handle (tests). */
    NativeHandle nativeHandle() {
        return handle;
    }

    @Override
    public String toString() {
        return "DistributedCountDownLatch[" + name + "]";
    }

    private boolean await(long waitMs) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        long h = handle.enter();
        try {
            NativeFuture future = new NativeFuture();
            long cancel = Native.latchWaitAsync(h, waitMs, future);
            NativeFuture done = Waits.await(future, cancel, true);
            return done.succeeded() && done.value() != 0;
        } finally {
            handle.exit();
        }
    }
}
