package io.polylock;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A hold taken and given back on a thread of its own (polylock, Redisson and Curator all own locks
 * per thread): {@code acquire} runs at once, {@code release} when {@link #release()} is called.
 * Remembers when the acquire returned, to measure how fast a release elsewhere woke it.
 */
final class Holder {
    /** An acquire or a release that may throw. */
    interface Step {
        void run() throws Exception;
    }

    private final Thread thread;
    private final CountDownLatch held = new CountDownLatch(1);
    private final CountDownLatch letGo = new CountDownLatch(1);
    private final AtomicLong heldAt = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    private Holder(String name, Step acquire, Step release) {
        thread = new Thread(() -> {
            try {
                acquire.run();
                heldAt.set(System.nanoTime());
                held.countDown();
                letGo.await();
                release.run();
            } catch (Throwable e) {
                failure.set(e);
                held.countDown();
            }
        }, name);
    }

    /** Start a thread that acquires, holds until {@link #release()}, then releases. */
    static Holder start(String name, Step acquire, Step release) {
        Holder h = new Holder(name, acquire, release);
        h.thread.start();
        return h;
    }

    /** True once the acquire returned (false also when it failed: see {@link #release()}). */
    boolean isHeld() {
        return heldAt.get() != 0;
    }

    /** Wait up to {@code ms} for the acquire; true if it returned. */
    boolean awaitHeld(long ms) throws InterruptedException {
        held.await(ms, TimeUnit.MILLISECONDS);
        throwIfFailed();
        return isHeld();
    }

    /** When the acquire returned ({@link System#nanoTime()}), 0 if it did not. */
    long heldAt() {
        return heldAt.get();
    }

    /** Release on the holder's thread and wait for it; rethrows what the thread threw. */
    void release() throws Exception {
        letGo.countDown();
        thread.join(10_000);
        if (thread.isAlive()) {
            throw new AssertionError(thread.getName() + " did not finish");
        }
        throwIfFailed();
    }

    private void throwIfFailed() {
        Throwable t = failure.get();
        if (t != null) {
            throw new AssertionError(thread.getName() + " failed: " + t, t);
        }
    }
}
