package io.polylock;

import java.time.Duration;

/**
 * A program that takes an expiring permit kept by a short watchdog, says "held", and waits to be
 * killed (the crash test runs it in a JVM of its own and kills it with destroyForcibly, so no
 * shutdown hook gives the permit back). Arguments: the Redis URL, the semaphore name, the
 * watchdog timeout in milliseconds.
 */
public final class HoldPermitUntilKilled {
    private HoldPermitUntilKilled() {}

    public static void main(String[] args) throws Exception {
        PolylockClient client = Polylock.connect(args[0],
                new Polylock.Options().watchdogTimeout(Duration.ofMillis(Long.parseLong(args[2]))));
        DistributedPermitExpirableSemaphore s = client.getPermitExpirableSemaphore(args[1]);
        s.trySetPermits(1);
        String id = s.acquire();
        System.out.println("held " + id);
        System.out.flush();
        Thread.sleep(120_000);
    }
}
