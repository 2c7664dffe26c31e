package io.polylock;

/**
 * Base of polylock's own errors. Unchecked, like Redisson's and Curator's runtime failures. The
 * {@link #getCode() code} comes from the one error table of polylock's core, whose numbers never
 * change meaning (they are also the C result codes).
 *
 * <p>Three kinds are the JDK exception a Java caller expects instead, each carrying its code
 * through {@link PolylockError}: "not owner" is a {@link NotOwnerException}, an {@link
 * IllegalMonitorStateException} (the {@link java.util.concurrent.locks.Lock#unlock()} contract), a
 * bad argument an {@link InvalidArgumentException} ({@link IllegalArgumentException}), an
 * operation the backend does not have an {@link UnsupportedException} ({@link
 * UnsupportedOperationException}). A section that could not have its lock in time throws {@link
 * LockTimeoutException}.
 */
public class PolylockException extends RuntimeException implements PolylockError {
    private static final long serialVersionUID = 1L;

    /** The stable kinds of polylock errors, with their numbers. */
    public enum Code {
        // BEGIN generated from core/api/errors.toml by `python3 scripts/gen-bindings.py`: do not edit
        /**
         * A required pointer/handle was NULL (only produced by the C ABI; Java throws
         * NullPointerException).
         */
        NULL_PARAMETER(1),
        /**
         * An argument was malformed: empty or oversized name, NUL or non-UTF-8 text, bad duration,
         * malformed URL, ...
         */
        INVALID_ARGUMENT(2),
        /** The lock was not acquired within the allowed wait. */
        TIMEOUT(3),
        /** The caller released a lock it does not hold. */
        NOT_OWNER(4),
        /**
         * The lock was held, but its lease ended (expired, deleted, session lost) before the
         * release.
         */
        LOCK_LOST(5),
        /** The server could not be reached or stopped answering. */
        CONNECTION(6),
        /** The server refused the credentials. */
        AUTH(7),
        /** The server answered with an error polylock did not expect. */
        BACKEND(8),
        /**
         * The call is not valid in the current state (closed client, used after fork, blocking call
         * from a polylock runtime thread, ...).
         */
        INVALID_STATE(9),
        /** A bug in polylock (an invariant did not hold). */
        INTERNAL(10),
        /** A panic was caught at a language boundary (a bug, please report it). */
        PANIC(11),
        /**
         * The operation was cancelled by the caller (abort signal, interrupt, task cancellation).
         */
        CANCELLED(12),
        /**
         * The backend does not support this operation (for example a semaphore mutex on Redis, a
         * lease on ZooKeeper).
         */
        UNSUPPORTED(13),
        /**
         * An owner that holds the read half of a read-write lock asked for the write half. Neither
         * Redisson nor Curator can ever grant that (they wait forever); polylock says so at once.
         * Release the read lock first, or take the write lock first and downgrade.
         */
        UPGRADE_NOT_SUPPORTED(14),
        /**
         * Fewer replicas than the client asks for (the URL's `wait_replicas`) acknowledged an
         * acquire in time (Redis `WAIT`); the lock was given back.
         */
        NOT_REPLICATED(15),
        /**
         * A fenced write carried a fencing token smaller than one the resource already accepted for
         * the name: a holder whose lease ended wrote late, and the resource refused it (nothing of
         * the write was applied).
         */
        STALE_TOKEN(16);
        // END generated (errors)

        private final int number;

        Code(int number) {
            this.number = number;
        }

        /** The stable number of this code. */
        public int number() {
            return number;
        }

        /** The code with this number, or INTERNAL for an unknown one. */
        public static Code of(int number) {
            for (Code c : values()) {
                if (c.number == number) {
                    return c;
                }
            }
            return INTERNAL;
        }
    }

    private final Code code;

    public PolylockException(Code code, String message) {
        super(message);
        this.code = code;
    }

    /** The stable kind of this error. */
    @Override
    public Code getCode() {
        return code;
    }

    /**
     * The exception for a code of core's error table: the single place where codes become Java
     * types. Called by the native library too.
     */
    static RuntimeException fromNative(int number, String message) {
        Code code = Code.of(number);
        switch (code) {
            case NOT_OWNER:
                return new NotOwnerException(message);
            case INVALID_ARGUMENT:
                return new InvalidArgumentException(message);
            case NULL_PARAMETER:
                return new NullPointerException(message);
            case UNSUPPORTED:
                return new UnsupportedException(message);
            case TIMEOUT:
                return new LockTimeoutException(message);
            case LOCK_LOST:
                return new LockLostException(message);
            case CONNECTION:
                return new PolylockConnectionException(code, message);
            case AUTH:
                return new PolylockAuthException(message);
            case UPGRADE_NOT_SUPPORTED:
                return new UpgradeNotSupportedException(message);
            case STALE_TOKEN:
                return new StaleTokenException(message);
            default:
                return new PolylockException(code, message);
        }
    }
}
