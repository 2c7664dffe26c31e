package io.polylock;

import java.util.UUID;

/**
 * The real servers the IT suites use: scripts/servers.sh starts them on 127.0.0.1. A server that
 * cannot be reached fails the test; nothing is skipped.
 */
final class Servers {
    private Servers() {}

    static String redisUrl() {
        String u = System.getenv("POLYLOCK_REDIS_URL");
        return u == null || u.isEmpty() ? "redis://127.0.0.1:6379" : u;
    }

    static String zkUrl() {
        String u = System.getenv("POLYLOCK_ZK_URL");
        return u == null || u.isEmpty() ? "zk://127.0.0.1:2181" : u;
    }

    static String etcdUrl() {
        String u = System.getenv("POLYLOCK_ETCD_URL");
        return u == null || u.isEmpty() ? "etcd://127.0.0.1:2379" : u;
    }

    /** host:port of the ZooKeeper URL, for Curator. */
    static String zkConnect() {
        String rest = zkUrl().substring("zk://".length());
        int slash = rest.indexOf('/');
        return slash < 0 ? rest : rest.substring(0, slash);
    }

    /** redis://host:port of the Redis URL, for Redisson. */
    static String redisAddress() {
        return redisUrl();
    }

    /** The polylock command (built by the test scripts): $POLYLOCK_CLI, else target/debug. */
    static String cli() {
        String explicit = System.getenv("POLYLOCK_CLI");
        if (explicit != null && !explicit.isEmpty()) {
            return explicit;
        }
        java.io.File f = new java.io.File("../target/debug/polylock");
        if (!f.canExecute()) {
            throw new AssertionError("build the polylock command first: cargo build -p polylock");
        }
        return f.getAbsolutePath();
    }

    static String unique(String prefix) {
        return "polylock-test:java:" + prefix + ":" + UUID.randomUUID();
    }

    static String zkPath(String prefix) {
        return "/polylock-test/java-" + prefix + "-" + UUID.randomUUID();
    }

    /** What a waiting call did when its thread was interrupted. */
    static final class Interrupted {
        final Throwable outcome;
        final long answeredMs;

        Interrupted(Throwable outcome, long answeredMs) {
            this.outcome = outcome;
            this.answeredMs = answeredMs;
        }
    }

    /**
     * Start {@code wait} on a new thread, let it wait {@code settleMs}, interrupt the thread, and
     * report what the call threw and how long the thread took to end after the interrupt.
     */
    static Interrupted interruptWhileWaiting(java.util.concurrent.Callable<?> wait, long settleMs) throws Exception {
        java.util.concurrent.atomic.AtomicReference<Throwable> outcome = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
        Thread t = new Thread(() -> {
            started.countDown();
            try {
                wait.call();
                outcome.set(new AssertionError("the wait returned instead of answering the interrupt"));
            } catch (Throwable e) {
                outcome.set(e);
            }
        }, "polylock-test-interrupted");
        t.start();
        started.await();
        Thread.sleep(settleMs);
        long t0 = System.nanoTime();
        t.interrupt();
        t.join(5_000);
        return new Interrupted(outcome.get(), java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }

    /** Run on a new thread and wait for it (owners are per thread). */
    static <T> T onOtherThread(java.util.concurrent.Callable<T> work) throws Exception {
        java.util.concurrent.FutureTask<T> task = new java.util.concurrent.FutureTask<>(work);
        Thread t = new Thread(task, "polylock-test-other");
        t.start();
        try {
            return task.get(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof Exception) {
                throw (Exception) e.getCause();
            }
            throw e;
        }
    }
}
