package io.polylock;

/**
 * A program that waits for a fair lock and, should it ever get it, keeps it until it is killed
 * (the fair-lock test runs it in a JVM of its own, queued among other waiters, and kills it with
 * destroyForcibly while it waits, so no shutdown hook takes it out of the queue). Says "waiting"
 * when it starts to wait. Arguments: the Redis URL and the lock name.
 */
public final class WaitForFairLockUntilKilled {
    private WaitForFairLockUntilKilled() {}

    public static void main(String[] args) throws Exception {
        PolylockClient client = Polylock.connect(args[0]);
        DistributedLock lock = client.getFairLock(args[1]);
        System.out.println("waiting");
        System.out.flush();
        lock.lock();
        System.out.println("held");
        System.out.flush();
        Thread.sleep(120_000);
    }
}
