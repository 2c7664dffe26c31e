package io.polylock;

/**
 * The lock was held, but its lease ended (expired, deleted, force-unlocked, session expired,
 * client closed) before it was released: the protected work may have overlapped with another
 * holder. Thrown by {@code unlock()} of a lost hold, and handed to {@link DistributedLock.Listener}s.
 */
public class LockLostException extends PolylockException {
    private static final long serialVersionUID = 1L;

    private final LostReason reason;

    public LockLostException(String message) {
        this(message, null);
    }

    public LockLostException(String message, LostReason reason) {
        super(Code.LOCK_LOST, message);
        this.reason = reason;
    }

    /**
     * Why the hold was lost, as the listeners hear it; {@code null} where it is not known (the
     * error of an {@code unlock()} of a lost hold).
     */
    public LostReason getReason() {
        return reason;
    }
}
