package io.polylock;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;

/**
 * Critical sections that would show a broken lock: each counts overlaps (another section inside at
 * the same time) and increments a counter by read, yield, write, which loses updates when two run
 * at once.
 */
final class Sections {
    final AtomicInteger counter = new AtomicInteger();
    final AtomicInteger overlaps = new AtomicInteger();
    private final AtomicInteger inside = new AtomicInteger();

    /** A worker that runs {@code n} sections under {@code lock}. */
    Runnable worker(Lock lock, int n) {
        return () -> {
            for (int k = 0; k < n; k++) {
                lock.lock();
                try {
                    if (inside.incrementAndGet() != 1) {
                        overlaps.incrementAndGet();
                    }
                    int v = counter.get();
                    Thread.yield();
                    counter.set(v + 1);
                    inside.decrementAndGet();
                } finally {
                    lock.unlock();
                }
            }
        };
    }
}
