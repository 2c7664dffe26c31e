package io.polylock;

import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * The SLF4J side of {@link Logs}, loaded only when SLF4J is on the class path. Only the API of
 * SLF4J 1.7 is used, so either 1.7 or 2.x works.
 *
 * <p>Loggers: the Rust target with {@code polylock} as {@code io.polylock} and {@code ::} as
 * {@code .}: {@code io.polylock.acquire} and {@code io.polylock.release} (debug, every acquire and
 * release with its wait and outcome), {@code io.polylock.hold} (a lock lost), and the module of
 * the backend for connection events. The message names the lock; the MDC has it as {@code
 * polylock.lock} while the event is logged, with the event's other fields as {@code
 * polylock.<field>} ({@code polylock.kind}, {@code polylock.owner}, {@code polylock.outcome},
 * {@code polylock.wait_ms}, ...). What the thread's MDC had under those keys is put back after.
 */
final class Slf4jLogs {
    static final String MDC_PREFIX = "polylock.";
    private static final ConcurrentHashMap<String, Logger> LOGGERS = new ConcurrentHashMap<>();

    private Slf4jLogs() {}

    /** {@code polylock::hold} as {@code io.polylock.hold}. */
    static String loggerName(String target) {
        String t = target == null || target.isEmpty() ? "polylock" : target;
        return "io." + t.replace("::", ".");
    }

    private static Logger logger(String target) {
        Logger l = LOGGERS.get(target);
        if (l == null) {
            l = LoggerFactory.getLogger(loggerName(target));
            Logger had = LOGGERS.putIfAbsent(target, l);
            if (had != null) {
                l = had;
            }
        }
        return l;
    }

    /** The most verbose level on for polylock's loggers now, or {@link Logs#OFF}. */
    static int enabledLevel() {
        int max = Logs.OFF;
        for (String target : new String[] {"polylock", "polylock::acquire", "polylock::release"}) {
            Logger l = logger(target);
            int on = l.isDebugEnabled() ? Logs.DEBUG
                    : l.isInfoEnabled() ? Logs.INFO
                    : l.isWarnEnabled() ? Logs.WARN
                    : l.isErrorEnabled() ? Logs.ERROR : Logs.OFF;
            max = Math.max(max, on);
        }
        return max;
    }

    private static boolean enabled(Logger l, int level) {
        switch (level) {
            case Logs.ERROR:
                return l.isErrorEnabled();
            case Logs.WARN:
                return l.isWarnEnabled();
            case Logs.INFO:
                return l.isInfoEnabled();
            default:
                return l.isDebugEnabled();
        }
    }

    /** The message, naming the lock when it does not already ({@code ... (lock 'orders:1')}). */
    static String text(String message, String lock) {
        String m = message == null ? "" : message;
        if (lock == null || m.contains("'" + lock + "'")) {
            return m;
        }
        return m + " (lock '" + lock + "')";
    }

    static void log(int level, String target, String message, String lock, String[] fields) {
        Logger l = logger(target);
        if (!enabled(l, level)) {
            return;
        }
        int n = fields == null ? 0 : fields.length / 2;
        String[] keys = new String[n + 1];
        String[] had = new String[n + 1];
        int put = 0;
        try {
            if (lock != null) {
                keys[put] = MDC_PREFIX + "lock";
                had[put] = MDC.get(keys[put]);
                MDC.put(keys[put++], lock);
            }
            for (int i = 0; i < n; i++) {
                String key = fields[2 * i];
                String value = fields[2 * i + 1];
                if (key == null || value == null) {
                    continue;
                }
                keys[put] = MDC_PREFIX + key;
                had[put] = MDC.get(keys[put]);
                MDC.put(keys[put++], value);
            }
            String text = text(message, lock);
            switch (level) {
                case Logs.ERROR:
                    l.error(text);
                    break;
                case Logs.WARN:
                    l.warn(text);
                    break;
                case Logs.INFO:
                    l.info(text);
                    break;
                default:
                    l.debug(text);
                    break;
            }
        } finally {
            for (int i = put - 1; i >= 0; i--) {
                if (had[i] == null) {
                    MDC.remove(keys[i]);
                } else {
                    MDC.put(keys[i], had[i]);
                }
            }
        }
    }
}
