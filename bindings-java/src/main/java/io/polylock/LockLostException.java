package io.polylock;

/**
 * The lock was held, but its lease ended (expired, deleted, force-unlocked, session expired,
 * client closed) before it was released: the protected work may have overlapped with another
 * holder. Thrown by {@code unlock()} of a lost hold, and handed to {@link DistributedLock.Listener}s.
 */
public class LockLostException extends PolylockException {
    private static final long serialVersionUID = 1L;

    public LockLostException(String message) {
        super(Code.LOCK_LOST, message);
    }
}
