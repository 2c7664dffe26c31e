package io.polylock;

import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.polylock.metrics.PolylockMetrics;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The core's metrics through Java: {@link MetricFamily}, the Prometheus text, and the Micrometer
 * binder {@link PolylockMetrics} in a SimpleMeterRegistry and in Micrometer's Prometheus
 * registry, against the real Redis. The counts are the whole process's (every suite of this JVM
 * adds to them), so each test compares before and after.
 */
class MetricsIT {
    /** The names of this class's clients that get series of their own. */
    private static final String NAMED = "polylock-test:java:metrics-named:";

    private PolylockClient client;
    private PolylockMetrics binder;

    @BeforeEach
    void connect() {
        client = Polylock.connect(Servers.redisUrl(), new Polylock.Options().metricNames(NAMED + "*"));
    }

    @AfterEach
    void close() {
        if (binder != null) {
            binder.close();
        }
        client.close();
    }

    /** A binder that takes a new snapshot at every read, bound to a new SimpleMeterRegistry. */
    private MeterRegistry simple() {
        MeterRegistry registry = new SimpleMeterRegistry();
        binder = new PolylockMetrics(Tags.of("app", "metrics-it"), Duration.ZERO);
        binder.bindTo(registry);
        return registry;
    }

    private static FunctionTimer waits(MeterRegistry r, String outcome) {
        FunctionTimer t = r.find("polylock.acquire.wait")
                .tags("kind", "lock", "backend", "redis", "outcome", outcome, "app", "metrics-it").functionTimer();
        assertNotNull(t, "polylock.acquire.wait outcome=" + outcome + " in " + r.getMeters().size() + " meters");
        return t;
    }

    private static double holds(MeterRegistry r) {
        Gauge g = r.find("polylock.holds").tags("kind", "lock", "backend", "redis").gauge();
        assertNotNull(g, "polylock.holds of redis locks");
        return g.value();
    }

    /** A meter of {@code name} for the lock {@code lock} (read after any meter's read registered it). */
    private static Gauge named(MeterRegistry r, String name, String lock) {
        holds(r); // a read: the snapshot is taken again and new series registered
        return r.find(name).tags("name", lock, "kind", "lock", "backend", "redis").gauge();
    }

    @Test
    void anAcquireCountsAndTheHoldsGaugeFollowsTheHold() throws Exception {
        MeterRegistry r = simple();
        DistributedLock lock = client.getLock(unique("metrics-count"));
        double acquired = waits(r, "acquired").count();
        double held = holds(r);
        double holdCount = r.find("polylock.hold").tags("kind", "lock", "backend", "redis").functionTimer().count();
        lock.lock();
        try {
            assertEquals(acquired + 1, waits(r, "acquired").count(), 0.0);
            assertEquals(held + 1, holds(r), 0.0, "one more hold while it is held");
        } finally {
            lock.unlock();
        }
        assertEquals(held, holds(r), 0.0, "back after the release");
        FunctionTimer hold = r.find("polylock.hold").tags("kind", "lock", "backend", "redis").functionTimer();
        assertEquals(holdCount + 1, hold.count(), 0.0, "the hold's time observed at its release");
        assertTrue(hold.totalTime(TimeUnit.SECONDS) > 0);
        assertTrue(waits(r, "acquired").totalTime(TimeUnit.NANOSECONDS) > 0, "the wait's time");
    }

    @Test
    void aRefusedTryLockCountsAsNotAcquired() throws Exception {
        MeterRegistry r = simple();
        DistributedLock lock = client.getLock(unique("metrics-refused"));
        double refused = waits(r, "not_acquired").count();
        double acquired = waits(r, "acquired").count();
        lock.lock();
        try {
            assertFalse((boolean) Servers.<Boolean>onOtherThread(lock::tryLock));
            assertEquals(refused + 1, waits(r, "not_acquired").count(), 0.0, "the try");
            assertFalse((boolean) Servers.<Boolean>onOtherThread(() -> lock.tryLock(50, TimeUnit.MILLISECONDS)));
            // The wait that ran out, once: its one-try fast path on the calling thread records no
            // refusal of its own (Native.tryAcquire with beforeWait).
            assertEquals(refused + 2, waits(r, "not_acquired").count(), 0.0, "the wait that ran out");
        } finally {
            lock.unlock();
        }
        assertEquals(acquired + 1, waits(r, "acquired").count(), 0.0);
    }

    @Test
    void aNameOptedInGetsItsOwnSeriesRegisteredAfterTheBind() throws Exception {
        MeterRegistry r = simple();
        String name = NAMED + UUID.randomUUID();
        assertNull(named(r, "polylock.name.fencing.token", name), "no series before the name is used");
        DistributedLock lock = client.getLock(name);
        lock.lock();
        long token;
        try {
            token = lock.getFencingToken();
            Gauge t = named(r, "polylock.name.fencing.token", name);
            assertNotNull(t, "registered once the name was used: " + r.getMeters().size() + " meters");
            assertEquals(token, t.value(), 0.0);
            assertEquals(1, named(r, "polylock.name.holds", name).value(), 0.0);
        } finally {
            lock.unlock();
        }
        assertEquals(0, named(r, "polylock.name.holds", name).value(), 0.0);
        assertEquals(token, named(r, "polylock.name.fencing.token", name).value(), 0.0, "the last grant's");
        FunctionCounter acquires = r.find("polylock.name.acquires")
                .tags("name", name, "outcome", "acquired").functionCounter();
        assertNotNull(acquires);
        assertEquals(1, acquires.count(), 0.0);
        // A name the patterns do not match gets none.
        DistributedLock other = client.getLock(unique("metrics-unnamed"));
        other.lock();
        other.unlock();
        assertNull(named(r, "polylock.name.holds", other.getName()));
    }

    @Test
    void aClientOfANewBackendRegistersItsSeriesAtOnce() throws Exception {
        MeterRegistry r = simple();
        try (PolylockClient zk = Polylock.connect(Servers.zkUrl())) {
            // No meter was read since the connect: the connect itself registered the series.
            assertNotNull(r.find("polylock.acquire.wait").tags("backend", "zookeeper", "kind", "lock",
                    "outcome", "acquired").functionTimer(), "zookeeper's series at zero after its connect");
            assertNotNull(zk.getId());
        }
    }

    @Test
    void aSnapshotIsReadOnceForItsMaxAge() throws Exception {
        MeterRegistry r = new SimpleMeterRegistry();
        binder = new PolylockMetrics();
        binder.bindTo(r);
        DistributedLock lock = client.getLock(unique("metrics-cached"));
        FunctionTimer t = r.find("polylock.acquire.wait")
                .tags("kind", "lock", "backend", "redis", "outcome", "acquired").functionTimer();
        double before = t.count();
        long read = System.nanoTime();
        lock.lock();
        lock.unlock();
        double cached = t.count();
        boolean withinAge = System.nanoTime() - read < TimeUnit.MILLISECONDS.toNanos(900);
        Thread.sleep(1_100);
        assertEquals(before + 1, t.count(), 0.0, "a new snapshot once the last is 1 s old");
        if (withinAge) {
            assertEquals(before, cached, 0.0, "the snapshot of the first read, within 1 s");
        }
    }

    @Test
    void thePrometheusRegistryNamesTheSeriesAsTheCoreDoes() throws Exception {
        PrometheusMeterRegistry r = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        binder = new PolylockMetrics(Tags.empty(), Duration.ZERO);
        binder.bindTo(r);
        String name = NAMED + UUID.randomUUID();
        DistributedLock lock = client.getLock(name);
        long token;
        lock.lock();
        try {
            token = lock.getFencingToken();
            assertTrue(lock.tryLock(), "a re-entry");
            lock.unlock();
        } finally {
            lock.unlock();
        }
        r.scrape(); // registers the name's series
        String text = r.scrape();
        List<MetricFamily> families = MetricFamily.snapshot(true);
        assertTrue(families.size() >= 12, "families: " + families.size());
        for (MetricFamily f : families) {
            String series = f.getType() == MetricFamily.Type.HISTOGRAM ? f.getName() + "_count" : f.getName();
            assertTrue(text.contains("\n" + series + "{"), series + " is not in the scrape:\n" + text);
        }
        assertTrue(text.contains("polylock_name_fencing_token{backend=\"redis\",kind=\"lock\",name=\"" + name + "\"} "
                + (double) token), text);
        assertTrue(text.contains("polylock_name_acquires_total{backend=\"redis\",kind=\"lock\",name=\"" + name
                + "\",outcome=\"acquired\"} 2.0"), text);
        assertTrue(text.contains("# TYPE polylock_reentries_total counter"), text);
        assertTrue(text.contains("# TYPE polylock_name_acquire_wait_seconds_total counter"), text);
    }

    @Test
    void theTextAndTheSnapshotHaveWhatTheCoreCounted() throws Exception {
        String name = NAMED + "tab\there, back\\slash, new\nline, quote\" " + UUID.randomUUID();
        DistributedLock lock = client.getLock(name);
        lock.lock();
        lock.unlock();
        MetricFamily token = null;
        for (MetricFamily f : MetricFamily.snapshot(false)) {
            if (f.getName().equals("polylock_name_fencing_token")) {
                token = f;
            }
        }
        assertNotNull(token);
        assertEquals(MetricFamily.Type.GAUGE, token.getType());
        boolean found = false;
        for (MetricFamily.Sample s : token.getSamples()) {
            found |= name.equals(s.getLabels().get("name"));
        }
        assertTrue(found, "the name comes back whole: " + token);
        String all = Polylock.metricsText();
        assertTrue(all.contains("# TYPE polylock_acquire_wait_seconds histogram"), all);
        assertTrue(all.contains("polylock_acquire_wait_seconds_bucket{kind=\"lock\",backend=\"redis\",outcome=\"acquired\",le=\"+Inf\"} "), all);
        String mine = client.metricsText();
        assertTrue(mine.contains("polylock_name_acquires_total{name=\"" + name.replace("\\", "\\\\").replace("\"", "\\\"")
                .replace("\n", "\\n") + "\",kind=\"lock\",backend=\"redis\",outcome=\"acquired\"} 1"), mine);
        for (MetricFamily f : MetricFamily.snapshot(false)) {
            if (f.getType() == MetricFamily.Type.HISTOGRAM) {
                for (MetricFamily.Sample s : f.getSamples()) {
                    long[] b = s.getBucketCounts();
                    assertEquals(16, b.length, f.getName());
                    assertTrue(b[b.length - 1] <= s.getCount(), f.getName() + " " + s);
                }
            }
        }
    }

    @Test
    void aLostHoldCountsByReason() throws Exception {
        MeterRegistry r = simple();
        PolylockClient quick = Polylock.connect(Servers.redisUrl(),
                new Polylock.Options().watchdogTimeout(Duration.ofMillis(600)));
        try {
            FunctionCounter deleted = r.find("polylock.losses").tags("kind", "lock", "backend", "redis", "reason", "deleted")
                    .functionCounter();
            assertNotNull(deleted, "losses by reason: " + r.find("polylock.losses").meters());
            double before = deleted.count();
            DistributedLock lock = quick.getLock(unique("metrics-lost"));
            CountDownLatch heard = new CountDownLatch(1);
            lock.addListener((l, e) -> heard.countDown());
            lock.lock();
            assertTrue(client.getLock(lock.getName()).forceUnlock());
            assertTrue(heard.await(5, TimeUnit.SECONDS));
            assertEquals(before + 1, deleted.count(), 0.0);
        } finally {
            quick.close();
        }
    }

    @Test
    void theServiceAndRuntimeAreWhatOperatorsSee() throws Exception {
        String service = "metrics-it-" + UUID.randomUUID();
        try (PolylockClient c = Polylock.connect(Servers.redisUrl(), new Polylock.Options().service(service));
                Peek peek = new Peek(Servers.redisAddress())) {
            String identity = peek.get("polylock_client:" + c.getId());
            assertNotNull(identity, "polylock_client:" + c.getId() + " is not on the server");
            assertTrue(identity.contains("\"service\":\"" + service + "\""), identity);
            assertTrue(identity.contains("\"runtime\":\"java " + System.getProperty("java.version") + "\""), identity);
        }
    }
}
