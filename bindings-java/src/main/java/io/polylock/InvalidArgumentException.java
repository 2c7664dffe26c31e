package io.polylock;

/**
 * An argument was invalid (an empty or oversized name, a bad duration, a malformed URL): an
 * {@link IllegalArgumentException} with polylock's code {@link
 * PolylockException.Code#INVALID_ARGUMENT} (2).
 */
public class InvalidArgumentException extends IllegalArgumentException implements PolylockError {
    private static final long serialVersionUID = 1L;

    public InvalidArgumentException(String message) {
        super(message);
    }

    @Override
    public PolylockException.Code getCode() {
        return PolylockException.Code.INVALID_ARGUMENT;
    }
}
