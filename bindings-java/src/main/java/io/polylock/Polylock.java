package io.polylock;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Entry point: {@code try (PolylockClient client = Polylock.connect("redis://127.0.0.1:6379"))}.
 *
 * <p>URLs: {@code redis://[user:password@]host:port[/db]}, {@code rediss://...} (TLS), and
 * {@code zk://[user:password@]host:port[,host:port...][/chroot][?session_timeout_ms=N]}.
 * On Redis, locks are stored in Redisson's RLock (and RReadWriteLock) format; on ZooKeeper, in
 * Curator's InterProcessMutex (and InterProcessReadWriteLock) format: polylock and
 * Redisson/Curator services exclude each other. {@link #connectRedlock} connects a RedLock over
 * independent Redis masters; {@link #multiLock} takes several locks, of any clients, as one.
 */
public final class Polylock {
    private Polylock() {}

    /**
     * Connect with default {@link Options}: {@code redis://host:6379}, {@code rediss://...},
     * {@code redis+sentinel://...}, {@code redis+cluster://...}, {@code zk://host:2181[/chroot]},
     * {@code zks://...}, {@code etcd://...}, {@code mysql://...} or {@code postgres://...}. Every
     * form with its options: the URL table in docs/src/contract.md#urls.
     *
     * @throws InvalidArgumentException for a malformed URL (its message points to that table)
     */
    public static PolylockClient connect(String url) {
        return connect(url, new Options());
    }

    /** {@link #connect(String)} with these options. */
    public static PolylockClient connect(String url, Options options) {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(options, "options");
        Native.init();
        long handle = Native.connect(url, options.watchdogTimeout.toMillis(),
                options.connectTimeout.toMillis(), options.commandTimeout.toMillis(),
                options.sessionTimeout.toMillis(), options.fairWaitTimeout.toMillis(),
                options.metricNames.toArray(new String[0]), options.service, runtime());
        return connected(handle);
    }

    /**
     * Connect a RedLock over independent Redis masters, with default {@link Options}: the
     * client's {@link PolylockClient#getLock getLock(name)} is held while a majority of the
     * masters hold it (Redisson's {@code RLock} on each). 3 to 16 {@code redis://} or {@code
     * rediss://} URLs of different servers. A master that does not answer now is tried again
     * every second, as long as a majority answers. Only {@code getLock} exists on such a client:
     * fair locks, read-write locks, semaphores, latches and mutexes throw {@link
     * UnsupportedOperationException}. RedLock's safety rests on bounded process pauses and clock
     * drift (see the README's RedLock section); prefer one Redis with replicas, or ZooKeeper,
     * where you can.
     *
     * @throws NullPointerException for a null array or a null URL in it
     * @throws IllegalArgumentException for fewer than 3 or more than 16 URLs, a URL given twice,
     *     or a URL that is not {@code redis://} or {@code rediss://}
     * @throws PolylockConnectionException when a majority of the masters cannot be reached
     */
    public static PolylockClient connectRedlock(String... urls) {
        Objects.requireNonNull(urls, "urls");
        return connectRedlock(Arrays.asList(urls), new Options());
    }

    /** {@link #connectRedlock(String...)} with a list of URLs and these options. */
    public static PolylockClient connectRedlock(List<String> urls, Options options) {
        Objects.requireNonNull(urls, "urls");
        Objects.requireNonNull(options, "options");
        String[] all = urls.toArray(new String[0]);
        for (int i = 0; i < all.length; i++) {
            Objects.requireNonNull(all[i], "urls[" + i + "]");
        }
        Native.init();
        long handle = Native.connectRedlock(all, options.watchdogTimeout.toMillis(),
                options.connectTimeout.toMillis(), options.commandTimeout.toMillis(),
                options.sessionTimeout.toMillis(), options.fairWaitTimeout.toMillis(),
                options.metricNames.toArray(new String[0]), options.service, runtime());
        return connected(handle);
    }

    /** The client of a new handle; the metrics' listeners then look for its backend's series. */
    private static PolylockClient connected(long handle) {
        PolylockClient client = new PolylockClient(handle);
        MetricFamily.clientConnected();
        return client;
    }

    /** The runtime operators see beside this process's clients ({@code polylock status}). */
    static String runtime() {
        return "java " + System.getProperty("java.version", "unknown");
    }

    /**
     * Every client of this process in the Prometheus text format (version 0.0.4), closed clients'
     * counts included: acquire wait by outcome, hold time, holds and waiters now, re-entries,
     * losses, the watchdog's renewals, per kind and backend (and per name for the names of
     * {@link Options#metricNames}). For an exporter without Micrometer; with Micrometer, bind
     * {@code io.polylock.metrics.PolylockMetrics} instead. {@link MetricFamily#snapshot} has the
     * same as values.
     */
    public static String metricsText() {
        Native.init();
        return Native.metricsText();
    }

    /**
     * A multi-lock over {@code locks}: all of them or none (Curator's {@code new
     * InterProcessMultiLock(locks)}; the same as {@link PolylockClient#getMultiLock}). The locks
     * may be of any clients and servers (Redis and ZooKeeper together); see {@link
     * DistributedLock} for what a multi-lock does. Close it when done with it: it holds a native
     * lock.
     *
     * @throws NullPointerException for a null list or a null lock in it
     * @throws IllegalArgumentException for no lock, or the same lock twice (the same name and
     *     kind on the same client)
     */
    public static DistributedLock multiLock(List<DistributedLock> locks) {
        return DistributedLock.multi(locks);
    }

    /** The version of polylock (JAR and native library, which must match). */
    public static String version() {
        Native.init();
        return Native.JAR_VERSION;
    }

    /** Client options; every duration must be positive (whole milliseconds). */
    public static final class Options {
        Duration watchdogTimeout = Duration.ofSeconds(30);
        Duration connectTimeout = Duration.ofSeconds(5);
        Duration commandTimeout = Duration.ofSeconds(5);
        Duration sessionTimeout = Duration.ofSeconds(10);
        Duration fairWaitTimeout = Duration.ofSeconds(5);
        java.util.List<String> metricNames = java.util.Collections.emptyList();
        String service;

        /**
         * Lease of locks taken without an explicit lease time; renewed every third of it while the
         * holder lives (Redisson's {@code lockWatchdogTimeout}). Default 30 s.
         */
        public Options watchdogTimeout(Duration d) {
            watchdogTimeout = positive(d, "watchdogTimeout");
            return this;
        }

        /** Limit of one connection attempt. Default 5 s. */
        public Options connectTimeout(Duration d) {
            connectTimeout = positive(d, "connectTimeout");
            return this;
        }

        /** Limit of one command's answer. Default 5 s. */
        public Options commandTimeout(Duration d) {
            commandTimeout = positive(d, "commandTimeout");
            return this;
        }

        /** ZooKeeper session timeout (a {@code session_timeout_ms} in the URL wins). Default 10 s. */
        public Options sessionTimeout(Duration d) {
            sessionTimeout = positive(d, "sessionTimeout");
            return this;
        }

        /**
         * How long a waiter of a fair lock ({@link PolylockClient#getFairLock}, Redis) keeps its
         * place in the queue without asking again: a live waiter refreshes it every third of
         * this, so only a dead waiter's place expires, after this long. At least 30 ms. Default
         * 5 s (Redisson's {@code fairLockWaitTimeout} is 5 minutes).
         */
        public Options fairWaitTimeout(Duration d) {
            fairWaitTimeout = positive(d, "fairWaitTimeout");
            return this;
        }

        /**
         * Lock names that get metric series of their own (a {@code name} label: acquires by
         * outcome, wait, holds, waiters, the last fencing token), as Redis-style globs ({@code
         * "orders:*"}, {@code ?} one character). None by default: series per kind and backend
         * only, so that the number of series stays bounded whatever names the application uses.
         * A {@code metric_names=A,B} in the URL adds to these.
         */
        public Options metricNames(String... globs) {
            Objects.requireNonNull(globs, "globs");
            return metricNames(Arrays.asList(globs));
        }

        /** {@link #metricNames(String...)} from a collection. */
        public Options metricNames(java.util.Collection<String> globs) {
            Objects.requireNonNull(globs, "globs");
            java.util.List<String> copy = new java.util.ArrayList<>(globs);
            for (int i = 0; i < copy.size(); i++) {
                Objects.requireNonNull(copy.get(i), "globs[" + i + "]");
            }
            metricNames = java.util.Collections.unmodifiableList(copy);
            return this;
        }

        /**
         * The service name operators see next to this client's holds ({@code polylock status},
         * {@code top}) with its host, pid, runtime ({@code java <version>}) and version. Unset: a
         * {@code service} in the URL, else the {@code POLYLOCK_SERVICE} environment variable,
         * else the program's name.
         */
        public Options service(String name) {
            service = Objects.requireNonNull(name, "name");
            return this;
        }

        private static Duration positive(Duration d, String what) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || d.toMillis() <= 0) {
                throw new InvalidArgumentException(what + " must be at least 1 ms, got " + d);
            }
            return d;
        }
    }
}
