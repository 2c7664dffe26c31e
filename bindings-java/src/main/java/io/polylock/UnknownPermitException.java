package io.polylock;

/**
 * {@link DistributedPermitExpirableSemaphore#release(String)} of a permit that is not there (never
 * taken, released before, or expired and taken again): an {@link IllegalArgumentException}, as
 * Redisson's {@code RPermitExpirableSemaphore.release} throws, with polylock's code {@link
 * PolylockException.Code#NOT_OWNER} (4).
 */
public class UnknownPermitException extends IllegalArgumentException implements PolylockError {
    private static final long serialVersionUID = 1L;

    public UnknownPermitException(String message, Throwable cause) {
        super(message, cause);
    }

    @Override
    public PolylockException.Code getCode() {
        return PolylockException.Code.NOT_OWNER;
    }
}
