package io.polylock;

import java.time.Duration;
import java.util.Objects;

/**
 * Entry point: {@code try (PolylockClient client = Polylock.connect("redis://127.0.0.1:6379"))}.
 *
 * <p>URLs: {@code redis://[user:password@]host:port[/db]}, {@code rediss://...} (TLS), and
 * {@code zk://[user:password@]host:port[,host:port...][/chroot][?session_timeout_ms=N]}.
 * On Redis, locks are stored in Redisson's RLock (and RReadWriteLock) format; on ZooKeeper, in
 * Curator's InterProcessMutex (and InterProcessReadWriteLock) format: polylock and
 * Redisson/Curator services exclude each other.
 */
public final class Polylock {
    private Polylock() {}

    /** Connect with default {@link Options}. */
    public static PolylockClient connect(String url) {
        return connect(url, new Options());
    }

    /** Connect with these options. */
    public static PolylockClient connect(String url, Options options) {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(options, "options");
        Native.init();
        long handle = Native.connect(url, options.watchdogTimeout.toMillis(),
                options.connectTimeout.toMillis(), options.commandTimeout.toMillis(),
                options.sessionTimeout.toMillis());
        return new PolylockClient(handle);
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

        private static Duration positive(Duration d, String what) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || d.toMillis() <= 0) {
                throw new IllegalArgumentException(what + " must be at least 1 ms, got " + d);
            }
            return d;
        }
    }
}
