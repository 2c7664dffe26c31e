package io.polylock;

/**
 * Where the client sends the loss of a hold of one name and kind: a handle with listeners (a
 * lock, a half of a read-write lock, a semaphore). One per handle, registered with {@link
 * PolylockClient#addListening} while the handle has listeners.
 */
final class LostRoute {
    /** Hears a loss, on the client's {@code polylock-events} thread. */
    interface Target {
        void fireLost(long owner, LockLostException cause);
    }

    final String name;
    /** One of {@code Native.KIND_*}: a lock's kind, or {@code KIND_PERMIT}. */
    final int kind;
    final Target target;

    LostRoute(String name, int kind, Target target) {
        this.name = name;
        this.kind = kind;
        this.target = target;
    }

    /** What a listener threw: to the events thread's uncaught-exception handler. */
    static void uncaught(Throwable thrown) {
        Thread t = Thread.currentThread();
        t.getUncaughtExceptionHandler().uncaughtException(t, thrown);
    }
}
