package io.polylock;

/**
 * The backend does not have this (a mutex on Redis, a lease on ZooKeeper, a read-write lock on
 * MySQL): an {@link UnsupportedOperationException} with polylock's code {@link
 * PolylockException.Code#UNSUPPORTED} (13).
 */
public class UnsupportedException extends UnsupportedOperationException implements PolylockError {
    private static final long serialVersionUID = 1L;

    public UnsupportedException(String message) {
        super(message);
    }

    @Override
    public PolylockException.Code getCode() {
        return PolylockException.Code.UNSUPPORTED;
    }
}
