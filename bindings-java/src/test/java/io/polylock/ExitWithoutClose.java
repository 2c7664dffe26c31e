package io.polylock;

/**
 * A program that takes a lock and ends without closing its client (the shutdown-hook test runs
 * it in a JVM of its own). Arguments: the server URL and the lock name.
 */
public final class ExitWithoutClose {
    private ExitWithoutClose() {}

    public static void main(String[] args) {
        PolylockClient client = Polylock.connect(args[0]);
        client.getLock(args[1]).lock();
        System.out.println("held");
    }
}
