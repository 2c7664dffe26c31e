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

    static String unique(String prefix) {
        return "polylock-test:java:" + prefix + ":" + UUID.randomUUID();
    }

    static String zkPath(String prefix) {
        return "/polylock-test/java-" + prefix + "-" + UUID.randomUUID();
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
