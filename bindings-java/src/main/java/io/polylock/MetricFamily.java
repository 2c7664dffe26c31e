package io.polylock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A metric of polylock and its series, as the core records them for every client of the process
 * (closed clients' counts kept, so counters never go down): {@code polylock_acquire_wait_seconds}
 * by kind, backend and outcome, {@code polylock_hold_seconds}, {@code polylock_holds}, {@code
 * polylock_waiters}, {@code polylock_reentries_total}, {@code polylock_losses_total} by reason,
 * {@code polylock_renewals_total}, {@code polylock_renewal_seconds}, and the {@code
 * polylock_name_*} series of the names opted in with {@link Polylock.Options#metricNames}. Names
 * and labels are Prometheus's ({@link Polylock#metricsText()} is the same in its text format);
 * counters' names end in {@code _total}. For Micrometer, bind {@code
 * io.polylock.metrics.PolylockMetrics}, which reads these.
 */
public final class MetricFamily {
    /** What kind of metric a family is. */
    public enum Type {
        /** Only goes up; the name ends in {@code _total}. */
        COUNTER,
        /** Goes up and down. */
        GAUGE,
        /** Observations (in seconds) counted in buckets, with their count and sum. */
        HISTOGRAM
    }

    /** One series of a family: its labels and its value. */
    public static final class Sample {
        private final Map<String, String> labels;
        private final double value;
        private final long count;
        private final double[] bounds;
        private final long[] buckets;

        Sample(Map<String, String> labels, double value, long count, double[] bounds, long[] buckets) {
            this.labels = Collections.unmodifiableMap(labels);
            this.value = value;
            this.count = count;
            this.bounds = bounds;
            this.buckets = buckets;
        }

        /** Label names and values, in the family's order ({@code kind}, {@code backend}, ...). */
        public Map<String, String> getLabels() {
            return labels;
        }

        /** A counter's or gauge's value; a histogram's sum (seconds). */
        public double getValue() {
            return value;
        }

        /** A histogram's number of observations (0 for a counter or gauge). */
        public long getCount() {
            return count;
        }

        /** A histogram's sum of observations, in seconds (the same as {@link #getValue()}). */
        public double getSum() {
            return value;
        }

        /** A histogram's bucket upper bounds in seconds, {@code +Inf} left out (empty for others). */
        public double[] getBucketBounds() {
            return bounds.clone();
        }

        /** The cumulative count of each bound of {@link #getBucketBounds()}. */
        public long[] getBucketCounts() {
            return buckets.clone();
        }

        @Override
        public String toString() {
            return labels + "=" + (bounds.length == 0 && count == 0 ? String.valueOf(value)
                    : "{count=" + count + ", sum=" + value + "}");
        }
    }

    private static final double[] NO_BOUNDS = new double[0];
    private static final long[] NO_COUNTS = new long[0];
    private static final List<Runnable> LISTENERS = new CopyOnWriteArrayList<>();

    private final String name;
    private final Type type;
    private final String help;
    private final List<Sample> samples;

    MetricFamily(String name, Type type, String help, List<Sample> samples) {
        this.name = name;
        this.type = type;
        this.help = help;
        this.samples = Collections.unmodifiableList(samples);
    }

    /** Every family of the process's clients, added up; {@code includeZero} lists every kind
     * and outcome of each backend in use even where nothing happened yet (for libraries that
     * register their series once). Families without a series are left out. */
    public static List<MetricFamily> snapshot(boolean includeZero) {
        Native.init();
        return parse(Native.metricsSnapshot(includeZero));
    }

    /**
     * Run {@code listener} after each client of the process connects (on the connecting thread):
     * with {@code snapshot(true)}, the series of its backend are there from then on, at zero.
     * The series of an opted-in name appear when the name is first used. An exception of the
     * listener is ignored.
     */
    public static void addConnectListener(Runnable listener) {
        LISTENERS.add(Objects.requireNonNull(listener, "listener"));
    }

    /** Stop running a listener of {@link #addConnectListener}. */
    public static void removeConnectListener(Runnable listener) {
        LISTENERS.remove(listener);
    }

    static void clientConnected() {
        for (Runnable r : LISTENERS) {
            try {
                r.run();
            } catch (RuntimeException e) {
                // A listener's failure is not the connect's.
            }
        }
    }

    /** The Prometheus name ({@code polylock_acquire_wait_seconds}). */
    public String getName() {
        return name;
    }

    /** Counter, gauge or histogram. */
    public Type getType() {
        return type;
    }

    /** What it measures. */
    public String getHelp() {
        return help;
    }

    /** Its series. */
    public List<Sample> getSamples() {
        return samples;
    }

    @Override
    public String toString() {
        return name + " " + type + " " + samples;
    }

    /** The families of the native snapshot's text (see bindings-java/src/metrics.rs). */
    static List<MetricFamily> parse(String text) {
        List<MetricFamily> out = new ArrayList<>();
        String name = null;
        Type type = null;
        String help = null;
        List<Sample> samples = null;
        int at = 0;
        while (at < text.length()) {
            int end = text.indexOf('\n', at);
            if (end < 0) {
                end = text.length();
            }
            List<String> f = fields(text, at, end);
            at = end + 1;
            String tag = f.get(0);
            if (tag.equals("F")) {
                if (name != null) {
                    out.add(new MetricFamily(name, type, help, samples));
                }
                name = f.get(1);
                type = Type.valueOf(f.get(2).toUpperCase(java.util.Locale.ROOT));
                help = f.get(3);
                samples = new ArrayList<>();
                continue;
            }
            if (samples == null) {
                throw new IllegalStateException("a series before its family: " + f);
            }
            int i;
            double value;
            long count = 0;
            double[] bounds = NO_BOUNDS;
            long[] buckets = NO_COUNTS;
            if (tag.equals("N")) {
                value = Double.parseDouble(f.get(1));
                i = 2;
            } else if (tag.equals("H")) {
                count = Long.parseLong(f.get(1));
                value = Double.parseDouble(f.get(2));
                int n = Integer.parseInt(f.get(3));
                bounds = new double[n];
                buckets = new long[n];
                for (int b = 0; b < n; b++) {
                    bounds[b] = Double.parseDouble(f.get(4 + 2 * b));
                    buckets[b] = Long.parseLong(f.get(5 + 2 * b));
                }
                i = 4 + 2 * n;
            } else {
                throw new IllegalStateException("unknown line of the metrics snapshot: " + f);
            }
            Map<String, String> labels = new LinkedHashMap<>();
            for (; i + 1 < f.size(); i += 2) {
                labels.put(f.get(i), f.get(i + 1));
            }
            samples.add(new Sample(labels, value, count, bounds, buckets));
        }
        if (name != null) {
            out.add(new MetricFamily(name, type, help, samples));
        }
        return Collections.unmodifiableList(out);
    }

    /** The tab-separated fields of {@code text[from, to)}, with {@code \\ \t \n} undone. */
    private static List<String> fields(String text, int from, int to) {
        List<String> out = new ArrayList<>();
        StringBuilder b = new StringBuilder();
        for (int i = from; i < to; i++) {
            char c = text.charAt(i);
            if (c == '\t') {
                out.add(b.toString());
                b.setLength(0);
            } else if (c == '\\' && i + 1 < to) {
                char e = text.charAt(++i);
                b.append(e == 't' ? '\t' : e == 'n' ? '\n' : e);
            } else {
                b.append(c);
            }
        }
        out.add(b.toString());
        return out;
    }
}
