package io.polylock;

/**
 * A fenced write carried a fencing token older than one the resource already accepted for the
 * name: its holder's lease had ended and a later holder wrote, so the write was refused (on Redis
 * nothing of it ran; on SQL, roll the transaction back so that nothing of it commits). Code
 * {@link PolylockException.Code#STALE_TOKEN}.
 */
public class StaleTokenException extends PolylockException {
    private static final long serialVersionUID = 1L;

    public StaleTokenException(String message) {
        super(Code.STALE_TOKEN, message);
    }
}
