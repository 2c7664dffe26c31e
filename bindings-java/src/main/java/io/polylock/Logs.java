package io.polylock;

import java.util.Locale;

/**
 * The core's log events, handed to SLF4J: a lock lost, a renewal that failed, a connection
 * suspended or back, a clean-up that failed (warnings and errors), and every acquire and release
 * with its wait (debug). Installed once, when the native library loads, at the most verbose level
 * SLF4J then has on for {@code io.polylock}, {@code io.polylock.acquire} or {@code
 * io.polylock.release} (so an application that logs nothing of polylock pays nothing); {@code
 * -Dpolylock.log=off|error|warn|info|debug} chooses that level instead. Without SLF4J on the
 * class path nothing is installed.
 *
 * <p>The native library calls {@link #log} from its own threads (attached to the JVM as daemon
 * threads) and from Java threads inside a native call; it never throws.
 */
final class Logs {
    // The levels, shared with bindings-java/src/log.rs.
    static final int OFF = -1;
    static final int ERROR = 0;
    static final int WARN = 1;
    static final int INFO = 2;
    static final int DEBUG = 3;

    /** Whether the forwarding was installed (for tests). */
    static volatile boolean installed;
    /** The level it was installed at, or {@link #OFF}. */
    static volatile int level = OFF;

    private Logs() {}

    /** Called once, by {@code Native}'s initialiser, once the library is loaded. */
    static void install() {
        int max;
        try {
            String chosen = System.getProperty("polylock.log");
            if (chosen != null && !chosen.trim().isEmpty()) {
                max = parse(chosen);
                if (max != OFF) {
                    Class.forName("org.slf4j.LoggerFactory", false, Logs.class.getClassLoader());
                }
            } else {
                Class.forName("org.slf4j.LoggerFactory", false, Logs.class.getClassLoader());
                max = Slf4jLogs.enabledLevel();
            }
        } catch (Throwable noSlf4j) {
            // No SLF4J (a LinkageError or ClassNotFoundException): nobody to hand the events to.
            return;
        }
        if (max == OFF) {
            return;
        }
        try {
            installed = Native.forwardLogs(Logs.class, max);
            level = max;
        } catch (RuntimeException | LinkageError e) {
            // Logging is not worth failing the library's loading for.
        }
    }

    static int parse(String word) {
        switch (word.trim().toLowerCase(Locale.ROOT)) {
            case "error":
                return ERROR;
            case "warn":
            case "warning":
                return WARN;
            case "info":
                return INFO;
            case "debug":
            case "trace":
                return DEBUG;
            default:
                return OFF;
        }
    }

    /**
     * One event of the core: its level, its Rust target ({@code polylock::acquire}), message, the
     * lock it is about (or null) and its other fields as {@code key, value, key, value...}.
     * Called by the native library only.
     */
    static void log(int level, String target, String message, String lock, String[] fields) {
        try {
            Slf4jLogs.log(level, target, message, lock, fields);
        } catch (Throwable e) {
            // Nowhere to report it: the event is dropped, the core's thread goes on.
        }
    }
}
