package io.polylock.spring;

import io.polylock.LockTimeoutException;

/**
 * A {@link DistributedLocked} method was not run: its lock could not be had within its {@link
 * DistributedLocked#waitTime() waitTime} (or the waiting thread was interrupted, which stays
 * interrupted; then the cause is the {@link InterruptedException}). It is polylock's one timeout
 * error of Java, a {@link LockTimeoutException} and so a {@link io.polylock.PolylockException}
 * with code {@code TIMEOUT} (3), like every section-running form's.
 */
public class LockNotAcquiredException extends LockTimeoutException {
    private static final long serialVersionUID = 1L;

    private final String lockName;

    public LockNotAcquiredException(String lockName, String message) {
        super(message);
        this.lockName = lockName;
    }

    public LockNotAcquiredException(String lockName, String message, Throwable cause) {
        super(message, cause);
        this.lockName = lockName;
    }

    /** The evaluated key: the name of the lock that was not acquired. */
    public String getLockName() {
        return lockName;
    }
}
