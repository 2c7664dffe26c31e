package io.polylock.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.polylock.MetricFamily;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * polylock's metrics as Micrometer meters: {@code new PolylockMetrics().bindTo(registry)}, or a
 * bean of it in Spring Boot (the starter defines one). Every client of the process is counted,
 * closed ones included.
 *
 * <p>Each family of {@link MetricFamily} becomes one meter per series, tagged with its labels
 * ({@code kind}, {@code backend}, {@code outcome}, {@code reason}, {@code name}) and the tags
 * given here: counters as {@link FunctionCounter}s without their {@code _total} ({@code
 * polylock.reentries}, {@code polylock.losses}, {@code polylock.renewals}, {@code
 * polylock.name.acquires}, {@code polylock.name.acquire.wait} in seconds), gauges as {@link
 * Gauge}s ({@code polylock.holds}, {@code polylock.waiters}, {@code polylock.name.holds}, {@code
 * polylock.name.waiters}, {@code polylock.name.fencing.token}), and the histograms as {@link
 * FunctionTimer}s of their count and total time ({@code polylock.acquire.wait}, {@code
 * polylock.hold}, {@code polylock.renewal}; Micrometer has no function meter with buckets: {@link
 * io.polylock.Polylock#metricsText()} has them). Micrometer's Prometheus registry names them back
 * as the core does ({@code polylock_reentries_total}, {@code polylock_acquire_wait_seconds_count}
 * and {@code _sum}).
 *
 * <p>The meters read one snapshot of the native library, taken again when it is older than
 * {@code maxAge} (1 s by default), not the library per meter. Series that appear after binding
 * (a backend's first client, a name opted in with {@link
 * io.polylock.Polylock.Options#metricNames} when first used) are registered when a snapshot is
 * taken, with every registry bound: a scrape registers them and the next one has them (a
 * backend's at once, when its client connects). {@link #close()} stops registering new ones.
 */
public final class PolylockMetrics implements MeterBinder, AutoCloseable {
    /** How old a snapshot the meters read at most, unless told otherwise. */
    public static final Duration DEFAULT_MAX_AGE = Duration.ofSeconds(1);

    private static final String TOTAL = "_total";
    private static final String SECONDS = "_seconds";

    private final Tags tags;
    private final long maxAgeNanos;
    private final Runnable onConnect = this::checkNewSeries;
    private final Object refreshing = new Object();
    private final Object registering = new Object();
    /** The registries bound, each with the series registered in it. */
    private final Map<MeterRegistry, Set<String>> registries = new java.util.IdentityHashMap<>();
    private boolean listening;
    private boolean closed;
    private volatile Snapshot snapshot;

    /** Meters with their labels as tags, reading a snapshot at most 1 s old. */
    public PolylockMetrics() {
        this(Collections.<Tag>emptyList(), DEFAULT_MAX_AGE);
    }

    /** Meters with {@code tags} besides their labels. */
    public PolylockMetrics(Iterable<Tag> tags) {
        this(tags, DEFAULT_MAX_AGE);
    }

    /**
     * Meters with {@code tags} besides their labels, reading a snapshot at most {@code maxAge}
     * old ({@link Duration#ZERO}: a new snapshot whenever a meter is read).
     */
    public PolylockMetrics(Iterable<Tag> tags, Duration maxAge) {
        this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
        Objects.requireNonNull(maxAge, "maxAge");
        if (maxAge.isNegative()) {
            throw new IllegalArgumentException("maxAge must not be negative, got " + maxAge);
        }
        this.maxAgeNanos = maxAge.toNanos();
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        synchronized (registering) {
            if (!registries.containsKey(registry)) {
                registries.put(registry, new HashSet<String>());
            }
            if (!listening && !closed) {
                listening = true;
                MetricFamily.addConnectListener(onConnect);
            }
        }
        register(fresh());
    }

    /** Stop registering series that appear from now on (the meters registered stay). */
    @Override
    public void close() {
        synchronized (registering) {
            closed = true;
            listening = false;
        }
        MetricFamily.removeConnectListener(onConnect);
    }

    /** A client connected: its backend's series are there now. */
    private void checkNewSeries() {
        register(fresh());
    }

    // ---- the snapshot ----

    /** One series: its family, labels and the meter's name. */
    private static final class Series {
        final String key;
        final MetricFamily family;
        final Map<String, String> labels;

        Series(String key, MetricFamily family, Map<String, String> labels) {
            this.key = key;
            this.family = family;
            this.labels = labels;
        }
    }

    /** A snapshot: each series' values ({@code {value}}, or {@code {count, seconds}}). */
    private static final class Snapshot {
        final long takenAt;
        final Map<String, double[]> values;
        final List<Series> series;

        Snapshot(long takenAt, Map<String, double[]> values, List<Series> series) {
            this.takenAt = takenAt;
            this.values = values;
            this.series = series;
        }
    }

    private static String key(String family, Map<String, String> labels) {
        StringBuilder b = new StringBuilder(family);
        for (Map.Entry<String, String> e : labels.entrySet()) {
            b.append('\u0000').append(e.getKey()).append('\u0000').append(e.getValue());
        }
        return b.toString();
    }

    /** A new snapshot; null if the native library could not give one. */
    private Snapshot fresh() {
        synchronized (refreshing) {
            return take(snapshot);
        }
    }

    private Snapshot take(Snapshot before) {
        List<MetricFamily> families;
        try {
            families = MetricFamily.snapshot(true);
        } catch (RuntimeException | LinkageError e) {
            return before;
        }
        Map<String, double[]> values = new HashMap<>();
        List<Series> series = new ArrayList<>();
        for (MetricFamily f : families) {
            for (MetricFamily.Sample s : f.getSamples()) {
                String key = key(f.getName(), s.getLabels());
                series.add(new Series(key, f, s.getLabels()));
                values.put(key, f.getType() == MetricFamily.Type.HISTOGRAM
                        ? new double[] {s.getCount(), s.getSum()}
                        : new double[] {s.getValue()});
            }
        }
        if (before != null) {
            // A counter never goes back: one that is not in this snapshot keeps its last value.
            for (Map.Entry<String, double[]> e : before.values.entrySet()) {
                if (!values.containsKey(e.getKey()) && e.getValue().length > 0 && isCounting(e.getKey(), before)) {
                    values.put(e.getKey(), e.getValue());
                }
            }
        }
        Snapshot s = new Snapshot(System.nanoTime(), values, series);
        snapshot = s;
        return s;
    }

    private static boolean isCounting(String key, Snapshot s) {
        for (Series x : s.series) {
            if (x.key.equals(key)) {
                return x.family.getType() != MetricFamily.Type.GAUGE;
            }
        }
        return false;
    }

    /** The snapshot the meters read now, taken again (and new series registered) when too old. */
    private Snapshot current() {
        Snapshot s = snapshot;
        if (s != null && System.nanoTime() - s.takenAt < maxAgeNanos) {
            return s;
        }
        Snapshot taken;
        synchronized (refreshing) {
            s = snapshot;
            if (s != null && System.nanoTime() - s.takenAt < maxAgeNanos) {
                return s;
            }
            taken = take(s);
        }
        register(taken);
        return taken;
    }

    private double value(String key, int i) {
        Snapshot s = current();
        double[] v = s == null ? null : s.values.get(key);
        return v == null || v.length <= i ? Double.NaN : v[i];
    }

    // ---- the meters ----

    /** Register the series of {@code s} that a bound registry does not have yet. */
    private void register(Snapshot s) {
        if (s == null) {
            return;
        }
        synchronized (registering) {
            if (closed) {
                return;
            }
            for (Map.Entry<MeterRegistry, Set<String>> r : registries.entrySet()) {
                for (Series x : s.series) {
                    // Marked first: a registry that reads the meter as it registers it finds
                    // nothing more to register.
                    if (r.getValue().add(x.key)) {
                        try {
                            meter(r.getKey(), x);
                        } catch (RuntimeException e) {
                            // A registry that refuses one meter (a filter, a clash of names)
                            // keeps the others.
                        }
                    }
                }
            }
        }
    }

    /** {@code polylock_name_acquire_wait_seconds_total} as {@code polylock.name.acquire.wait}. */
    static String meterName(String name) {
        String n = name;
        if (n.endsWith(TOTAL)) {
            n = n.substring(0, n.length() - TOTAL.length());
        }
        if (n.endsWith(SECONDS)) {
            n = n.substring(0, n.length() - SECONDS.length());
        }
        return n.replace('_', '.');
    }

    private static boolean inSeconds(String name) {
        String n = name.endsWith(TOTAL) ? name.substring(0, name.length() - TOTAL.length()) : name;
        return n.endsWith(SECONDS);
    }

    private void meter(MeterRegistry registry, Series x) {
        MetricFamily f = x.family;
        String name = meterName(f.getName());
        List<Tag> t = new ArrayList<>();
        for (Map.Entry<String, String> e : x.labels.entrySet()) {
            t.add(Tag.of(e.getKey(), e.getValue()));
        }
        Tags all = Tags.of(t).and(tags);
        final String key = x.key;
        // The functions hold this binder themselves (a registry holds the object of a function
        // meter only weakly): the meters keep working when the binder is not kept elsewhere.
        switch (f.getType()) {
            case COUNTER:
                FunctionCounter.builder(name, this, self -> value(key, 0))
                        .tags(all)
                        .description(f.getHelp())
                        .baseUnit(inSeconds(f.getName()) ? "seconds" : null)
                        .register(registry);
                break;
            case GAUGE:
                Gauge.builder(name, this, self -> value(key, 0))
                        .tags(all)
                        .description(f.getHelp())
                        .baseUnit(inSeconds(f.getName()) ? "seconds" : null)
                        .register(registry);
                break;
            default:
                FunctionTimer.builder(name, this, self -> (long) value(key, 0), self -> value(key, 1),
                                TimeUnit.SECONDS)
                        .tags(all)
                        .description(f.getHelp())
                        .register(registry);
                break;
        }
    }
}
