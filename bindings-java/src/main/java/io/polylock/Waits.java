package io.polylock;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.function.LongFunction;

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

    /**
     * The future an {@code *Async} method returns for {@code future} (started with the cancel
     * handle {@code cancel}, which this frees): {@code onValue} of its value, {@code onTimeout}
     * when its wait ran out, or its error. Completed on the common pool, never on polylock's
     * runtime threads (where blocking polylock calls are refused). Cancelling it cancels the
     * native call, and gives back a result that beat the cancel.
     */
    static <T> CompletableFuture<T> async(NativeFuture future, long cancel, LongFunction<T> onValue, T onTimeout) {
        CompletableFuture<T> result = new CompletableFuture<>();
        // The cancel handle is used by a cancel of `result` and freed once `future` is handled:
        // the two never overlap.
        boolean[] freed = {false};
        result.whenComplete((v, e) -> {
            if (result.isCancelled()) {
                synchronized (freed) {
                    if (!freed[0]) {
                        Native.cancel(cancel);
                    }
                }
            }
        });
        future.whenCompleteAsync((v, e) -> {
            try {
                if (future.succeeded()) {
                    if (!result.complete(onValue.apply(future.value()))) {
                        Native.giveBack(cancel); // cancelled meanwhile: nobody takes it
                    }
                } else if (future.timedOut()) {
                    result.complete(onTimeout);
                } else {
                    result.completeExceptionally(future.error());
                }
            } catch (RuntimeException | Error thrown) {
                result.completeExceptionally(thrown);
            } finally {
                synchronized (freed) {
                    freed[0] = true;
                    Native.freeCancel(cancel);
                }
            }
        }, ForkJoinPool.commonPool());
        return result;
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
            throw new InvalidArgumentException("leaseTime must be positive (or -1 for the watchdog), got " + leaseTime);
        }
        return Math.max(1, unit.toMillis(leaseTime));
    }

    /** What is left of {@code waitMs} (positive) since {@code startNanos}; 0 when nothing is left. */
    static long remaining(long waitMs, long startNanos) {
        long left = waitMs - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
        return Math.max(0, left);
    }
}
