package io.polylock;

/**
 * The caller released (or asked for the fencing token of) a lock it does not hold: an {@link
 * IllegalMonitorStateException}, as {@link java.util.concurrent.locks.Lock#unlock()} promises,
 * with polylock's code {@link PolylockException.Code#NOT_OWNER} (4).
 */
public class NotOwnerException extends IllegalMonitorStateException implements PolylockError {
    private static final long serialVersionUID = 1L;

    public NotOwnerException(String message) {
        super(message);
    }

    @Override
    public PolylockException.Code getCode() {
        return PolylockException.Code.NOT_OWNER;
    }
}
