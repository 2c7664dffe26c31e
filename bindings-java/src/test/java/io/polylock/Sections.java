package io.polylock;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;

/**
 * Critical sections that would show a broken lock: each counts overlaps (another section inside at
 * the same time) and increments a counter by read, yield, write, which loses updates when two run
 * at once. Reader sections (under the read half of a read-write lock) may overlap one another but
 * never a writer's: they count an overlap when a writer is inside or the counter moves under them.
 */
final class Sections {
    final AtomicInteger counter = new AtomicInteger();
    final AtomicInteger overlaps = new AtomicInteger();
    /** The most reader sections seen inside at once. */
    final AtomicInteger maxReaders = new AtomicInteger();
    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger readers = new AtomicInteger();

    /** A worker that runs {@code n} sections under {@code lock}. */
    Runnable worker(Lock lock, int n) {
        return () -> {
            for (int k = 0; k < n; k++) {
                lock.lock();
                try {
                    if (inside.incrementAndGet() != 1 || readers.get() != 0) {
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

    /** A worker that runs {@code n} reader sections under {@code readLock}, each {@code sleepMs} long. */
    Runnable reader(Lock readLock, int n, long sleepMs) {
        return () -> {
            for (int k = 0; k < n; k++) {
                readLock.lock();
                try {
                    int now = readers.incrementAndGet();
                    maxReaders.accumulateAndGet(now, Math::max);
                    if (inside.get() != 0) {
                        overlaps.incrementAndGet();
                    }
                    int v = counter.get();
                    Thread.sleep(sleepMs);
                    if (counter.get() != v || inside.get() != 0) {
                        overlaps.incrementAndGet();
                    }
                    readers.decrementAndGet();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } finally {
                    readLock.unlock();
                }
            }
        };
    }
}
