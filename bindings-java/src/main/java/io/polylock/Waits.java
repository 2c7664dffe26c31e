package io.polylock;

import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * How every waiting call ends on the Java side (a lock's, a semaphore's acquire, a latch's wait):
 * the native side runs the wait and completes a {@link NativeFuture}, and the calling thread waits
 * on it, so that {@link Thread#interrupt()} cancels the native wait. A result that beat the
 * cancel is given back natively (a hold released, permits returned), so an interrupted call
 * leaves nothing taken.
 */
final class Waits {
    private Waits() {}

    /**
     * Wait for {@code future} (started with the cancel handle {@code cancel}, which this frees),
     * and return it once it succeeded or timed out; throw its error otherwise. Interruptible: an
     * interrupt cancels the call, gives back what it got, and throws InterruptedException. Not
     * interruptible: waits on and keeps the interrupt for the caller.
     */
    static NativeFuture await(NativeFuture future, long cancel, boolean interruptible) throws InterruptedException {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    future.get();
                    break;
                } catch (ExecutionException e) {
                    throw new AssertionError("a NativeFuture is never completed exceptionally", e);
                } catch (InterruptedException e) {
                    if (!interruptible) {
                        interrupted = true;
                        continue;
                    }
                    Native.cancel(cancel);
                    getUninterruptibly(future);
                    if (future.succeeded()) {
                        // Got it just before the cancel reached it: give it back.
                        try {
                            Native.giveBack(cancel);
                        } catch (RuntimeException giveBackFailed) {
                            e.addSuppressed(giveBackFailed);
                        }
                    }
                    throw e;
                }
            }
        } finally {
            Native.freeCancel(cancel);
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        if (future.succeeded() || future.timedOut()) {
            return future;
        }
        throw future.error();
    }

    /** {@link #await} for a call that is never interrupted. */
    static NativeFuture awaitUninterruptibly(NativeFuture future, long cancel) {
        try {
            return await(future, cancel, false);
        } catch (InterruptedException e) {
            throw new AssertionError("an uninterruptible wait was interrupted", e);
        }
    }

    private static void getUninterruptibly(NativeFuture future) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    future.get();
                    return;
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    throw new AssertionError(e);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A wait time as the natives take it: 0 (zero or less) tries once, else at least 1 ms. */
    static long waitMs(long time, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        if (time <= 0) {
            return 0;
        }
        return Math.max(1, unit.toMillis(time));
    }

    /** A lease time as the natives take it: -1 the watchdog, else positive, at least 1 ms. */
    static long leaseMs(long leaseTime, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        if (leaseTime == -1) {
            return -1;
        }
        if (leaseTime <= 0) {
            throw new IllegalArgumentException("leaseTime must be positive (or -1 for the watchdog), got " + leaseTime);
        }
        return Math.max(1, unit.toMillis(leaseTime));
    }

    /** What is left of {@code waitMs} (positive) since {@code startNanos}; 0 when nothing is left. */
    static long remaining(long waitMs, long startNanos) {
        long left = waitMs - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
        return Math.max(0, left);
    }
}
