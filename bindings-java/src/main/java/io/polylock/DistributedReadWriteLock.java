package io.polylock;

import java.util.concurrent.locks.ReadWriteLock;

/**
 * A distributed read-write lock: many readers or one writer, in Redisson's {@code RReadWriteLock}
 * format on Redis and Curator's {@code InterProcessReadWriteLock} format on ZooKeeper, so that
 * polylock and those libraries share readers and exclude writers on the same name. From {@link
 * PolylockClient#getReadWriteLock(String)}.
 *
 * <p>{@link #readLock()} and {@link #writeLock()} are {@link DistributedLock}s: {@code lock},
 * {@code tryLock}, {@code unlock}, {@code hold()}, Curator's {@code acquire}/{@code release},
 * fencing tokens, lost listeners, the watchdog (Redis) and every other method work on each half.
 * Both halves are reentrant per Java thread, and a thread is the same owner for both:
 *
 * <ul>
 *   <li>Downgrade is allowed: a thread holding the write lock may take the read lock, then release
 *       the write lock and keep reading; no other writer can come in between.
 *   <li>Upgrade is refused: while a thread holds the read lock, {@code writeLock().lock()}, {@code
 *       tryLock} (with or without a wait), {@code lockInterruptibly}, {@code acquire} and {@code
 *       hold} throw {@link UpgradeNotSupportedException} at once, never waiting, and the read
 *       lock stays held. (Redisson and Curator wait forever there: the other readers could ask
 *       the same.) Release the read lock first, or take the write lock first and downgrade.
 * </ul>
 *
 * <p>A listener added to one half hears only of lost holds of that half. Readers are let in while
 * a writer waits, as Redisson does on Redis (a stream of readers can hold a writer off); on
 * ZooKeeper a reader queues behind a waiting writer, as Curator's does.
 *
 * <p>Each half is a {@link DistributedLock} with its native lock (freed when unreachable, as a
 * lock's is); {@link #close()} closes both halves' handles (their holds stay held).
 */
public final class DistributedReadWriteLock implements ReadWriteLock, AutoCloseable {
    private final DistributedLock read;
    private final DistributedLock write;

    DistributedReadWriteLock(DistributedLock read, DistributedLock write) {
        this.read = read;
        this.write = write;
    }

    /** The lock's name (a ZooKeeper path on ZooKeeper). */
    public String getName() {
        return read.getName();
    }

    /**
     * The read half: shared by any number of threads while nobody holds the write half. Always
     * the same object.
     */
    @Override
    public DistributedLock readLock() {
        return read;
    }

    /**
     * The write half: excludes readers and other writers. Always the same object. Its acquiring
     * methods throw {@link UpgradeNotSupportedException} at once while the calling thread holds
     * the read half.
     */
    @Override
    public DistributedLock writeLock() {
        return write;
    }

    /** Close both halves' handles (see {@link DistributedLock#close()}). Idempotent. */
    @Override
    public void close() {
        read.close();
        write.close();
    }

    @Override
    public String toString() {
        return "DistributedReadWriteLock[" + getName() + "]";
    }
}
