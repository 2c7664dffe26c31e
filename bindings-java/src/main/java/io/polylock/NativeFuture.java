package io.polylock;

import java.util.concurrent.CompletableFuture;

/**
 * A waiting acquire in flight. The native side completes it exactly once, from one of its runtime
 * threads, with the fencing token, or with a code saying why not.
 */
final class NativeFuture extends CompletableFuture<Long> {
    static final long TIMED_OUT = -1;
    static final long FAILED = -2;

    private int code;
    private String message;

    /** Called by the native library. Plain fields, published by {@code complete}. */
    void done(int code, long value, String message) {
        this.code = code;
        this.message = message;
        if (code == 0) {
            complete(value);
        } else if (code == PolylockException.Code.TIMEOUT.number()) {
            complete(TIMED_OUT);
        } else {
            complete(FAILED);
        }
    }

    boolean cancelled() {
        return code == PolylockException.Code.CANCELLED.number();
    }

    /** The error of a FAILED result, made on the caller's thread so its stack trace is useful. */
    RuntimeException error() {
        return PolylockException.fromNative(code, message);
    }
}
