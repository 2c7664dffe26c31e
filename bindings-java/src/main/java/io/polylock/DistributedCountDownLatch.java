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
 * <p>This object holds no native memory; creating one per request is cheap.
 */
public final class DistributedCountDownLatch {
    private final PolylockClient client;
    private final String name;

    DistributedCountDownLatch(PolylockClient client, String name) {
        this.client = client;
        this.name = name;
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
        long h = client.enter();
        try {
            return Native.latchTrySetCount(h, name, count);
        } finally {
            client.exit();
        }
    }

    /** Count down by one; at 0 every waiter wakes. Does nothing on an open latch. */
    public void countDown() {
        long h = client.enter();
        try {
            Native.latchCountDown(h, name);
        } finally {
            client.exit();
        }
    }

    /** The count now (0 when open); asks the server. */
    public long getCount() {
        long h = client.enter();
        try {
            return Native.latchCount(h, name);
        } finally {
            client.exit();
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
        long h = client.enter();
        try {
            return Native.latchDelete(h, name);
        } finally {
            client.exit();
        }
    }

    @Override
    public String toString() {
        return "DistributedCountDownLatch[" + name + "]";
    }

    private boolean await(long waitMs) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        long h = client.enter();
        try {
            NativeFuture future = new NativeFuture();
            long cancel = Native.latchAwaitAsync(h, name, waitMs, future);
            NativeFuture done = Waits.await(future, cancel, true);
            return done.succeeded() && done.value() != 0;
        } finally {
            client.exit();
        }
    }
}
