package io.polylock;

import java.util.concurrent.CompletableFuture;

/**
 * A waiting call in flight (an acquire, a latch's wait). The native side completes it exactly
 * once, from one of its runtime threads, with a value (and for some calls a text), or with a code
 * saying why not. {@link Waits#await} waits on it.
 */
final class NativeFuture extends CompletableFuture<Long> {
    private int code;
    private String text;

    /** Called by the native library. Plain fields, published by {@code complete}. */
    void done(int code, long value, String text) {
        this.code = code;
        this.text = text;
        complete(code == 0 ? value : 0L);
    }

    /** The call succeeded: {@link #value()} (and {@link #text()}) are its result. */
    boolean succeeded() {
        return code == 0;
    }

    /** The call's wait ran out. */
    boolean timedOut() {
        return code == PolylockException.Code.TIMEOUT.number();
    }

    /** The value of a successful call. */
    long value() {
        return getNow(0L);
    }

    /** The text of a successful call (a permit's id), or the message of a failed one. */
    String text() {
        return text;
    }

    /** The error of a failed call, made on the caller's thread so its stack trace is useful. */
    RuntimeException error() {
        return PolylockException.fromNative(code, text);
    }
}
