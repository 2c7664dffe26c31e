package io.polylock;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.Logger;
import org.slf4j.MDC;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.BasicMDCAdapter;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * The tests' SLF4J binding (META-INF/services): polylock's loggers ({@code io.polylock*}) are on
 * at DEBUG and their events kept (the last few thousand) for LogsIT; every other logger
 * (Redisson's, Curator's, the JDBC drivers') is off, as slf4j-nop had it. DEBUG makes every
 * acquire and release of every suite go through the native library's log forwarding.
 */
public final class CapturedLogs implements SLF4JServiceProvider {
    /** One event as the application's logging would have seen it. */
    public static final class Event {
        public final Level level;
        public final String logger;
        public final String message;
        public final Map<String, String> mdc;
        public final String thread;
        public final boolean daemon;

        Event(Level level, String logger, String message, Map<String, String> mdc, Thread t) {
            this.level = level;
            this.logger = logger;
            this.message = message;
            this.mdc = mdc == null ? Collections.<String, String>emptyMap() : mdc;
            this.thread = t.getName();
            this.daemon = t.isDaemon();
        }

        @Override
        public String toString() {
            return level + " " + logger + " [" + thread + (daemon ? ", daemon" : "") + "] " + message + " " + mdc;
        }
    }

    private static final int KEEP = 5000;
    private static final ArrayDeque<Event> EVENTS = new ArrayDeque<>();
    /** When set, the next polylock event makes the logger throw this (once). */
    static volatile RuntimeException throwNext;

    private final MDCAdapter mdc = new BasicMDCAdapter();
    private final IMarkerFactory markers = new BasicMarkerFactory();

    static boolean ours(String name) {
        return name.equals("io.polylock") || name.startsWith("io.polylock.");
    }

    /** The events kept, oldest first. */
    public static List<Event> events() {
        synchronized (EVENTS) {
            return new ArrayList<>(EVENTS);
        }
    }

    /** The first event kept that {@code p} accepts within {@code ms}, or null. */
    public static Event await(Predicate<Event> p, long ms) throws InterruptedException {
        long end = System.nanoTime() + ms * 1_000_000L;
        do {
            for (Event e : events()) {
                if (p.test(e)) {
                    return e;
                }
            }
            Thread.sleep(10);
        } while (System.nanoTime() < end);
        return null;
    }

    private static final class CapturingLogger extends LegacyAbstractLogger {
        private static final long serialVersionUID = 1L;
        private final boolean on;

        CapturingLogger(String name) {
            this.name = name;
            this.on = ours(name);
        }

        @Override
        public boolean isTraceEnabled() {
            return false;
        }

        @Override
        public boolean isDebugEnabled() {
            return on;
        }

        @Override
        public boolean isInfoEnabled() {
            return on;
        }

        @Override
        public boolean isWarnEnabled() {
            return on;
        }

        @Override
        public boolean isErrorEnabled() {
            return on;
        }

        @Override
        protected String getFullyQualifiedCallerName() {
            return null;
        }

        @Override
        protected void handleNormalizedLoggingCall(Level level, Marker marker, String pattern, Object[] args,
                Throwable t) {
            if (!on) {
                return;
            }
            RuntimeException boom = throwNext;
            if (boom != null) {
                throwNext = null;
                throw boom;
            }
            String message = MessageFormatter.basicArrayFormat(pattern, args);
            Event e = new Event(level, name, message, MDC.getCopyOfContextMap(), Thread.currentThread());
            synchronized (EVENTS) {
                EVENTS.addLast(e);
                while (EVENTS.size() > KEEP) {
                    EVENTS.removeFirst();
                }
            }
        }
    }

    private final ILoggerFactory loggers = new ILoggerFactory() {
        private final java.util.concurrent.ConcurrentHashMap<String, Logger> made =
                new java.util.concurrent.ConcurrentHashMap<>();

        @Override
        public Logger getLogger(String name) {
            return made.computeIfAbsent(name, CapturingLogger::new);
        }
    };

    @Override
    public ILoggerFactory getLoggerFactory() {
        return loggers;
    }

    @Override
    public IMarkerFactory getMarkerFactory() {
        return markers;
    }

    @Override
    public MDCAdapter getMDCAdapter() {
        return mdc;
    }

    @Override
    public String getRequestedApiVersion() {
        return "2.0.99";
    }

    @Override
    public void initialize() {}
}
