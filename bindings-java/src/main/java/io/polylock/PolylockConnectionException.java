package io.polylock;

/** The lock server could not be reached or stopped answering. */
public class PolylockConnectionException extends PolylockException {
    private static final long serialVersionUID = 1L;

    public PolylockConnectionException(Code code, String message) {
        super(code, message);
    }
}
