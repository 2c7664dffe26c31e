package io.polylock;

/**
 * A program whose threads take and release a lock as fast as they can, each event logged at
 * DEBUG through SLF4J from native code, and that exits in the middle of it (LogsIT runs it in a
 * JVM of its own). Arguments: the server URL and the lock name.
 */
public final class LogWhileExiting {
    private LogWhileExiting() {}

    public static void main(String[] args) throws Exception {
        PolylockClient client = Polylock.connect(args[0]);
        for (int i = 0; i < 4; i++) {
            DistributedLock lock = client.getLock(args[1] + ":" + i);
            Thread t = new Thread(() -> {
                try {
                    while (true) {
                        lock.lock();
                        lock.unlock();
                    }
                } catch (RuntimeException closedByTheShutdownHook) {
                    // the end
                }
            }, "locker-" + i);
            t.setDaemon(true);
            t.start();
        }
        long end = System.currentTimeMillis() + 300;
        while (System.currentTimeMillis() < end && CapturedLogs.events().size() < 200) {
            Thread.sleep(5);
        }
        System.out.println("logged " + CapturedLogs.events().size());
        System.exit(0);
    }
}
