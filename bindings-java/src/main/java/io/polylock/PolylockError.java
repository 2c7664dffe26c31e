package io.polylock;

/**
 * What every polylock error carries, whatever Java class it is: its {@link #getCode() code} in
 * polylock's one error table (core/src/model/error.rs) and that code's stable {@link
 * #getNumber() number}, the same in every runtime (the C result codes, Python's {@code number},
 * Node's {@code number}).
 *
 * <p>{@link PolylockException} and its subclasses implement it, and so do the JDK exceptions a
 * Java caller expects for three kinds: {@link NotOwnerException} (an {@link
 * IllegalMonitorStateException}, the {@link java.util.concurrent.locks.Lock#unlock()} contract),
 * {@link InvalidArgumentException} (an {@link IllegalArgumentException}) and {@link
 * UnsupportedException} (an {@link UnsupportedOperationException}). Catch {@code PolylockError}
 * (with {@code catch (RuntimeException e)} and {@code instanceof}) to see every one of them.
 */
public interface PolylockError {
    /** The stable kind of this error. */
    PolylockException.Code getCode();

    /** The stable number of {@link #getCode()} (4 for {@code NOT_OWNER}). */
    default int getNumber() {
        return getCode().number();
    }
}
