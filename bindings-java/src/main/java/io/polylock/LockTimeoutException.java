package io.polylock;

/**
 * A section-running form ({@link DistributedLock#hold(long, long, java.util.concurrent.TimeUnit)},
 * the Spring starter's {@code @DistributedLocked}) could not have its lock within its wait: the
 * section did not run. Code {@link PolylockException.Code#TIMEOUT} (3). The bounded acquires
 * themselves ({@code tryLock}, {@code tryAcquire}) say "not acquired" with {@code false} (or
 * {@code null} where they return a permit id, as Redisson's do) instead of throwing.
 */
public class LockTimeoutException extends PolylockException {
    private static final long serialVersionUID = 1L;

    public LockTimeoutException(String message) {
        super(Code.TIMEOUT, message);
    }

    public LockTimeoutException(String message, Throwable cause) {
        super(Code.TIMEOUT, message);
        initCause(cause);
    }
}
