package io.polylock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The native snapshot's text read back, and the log events' names and messages (no server). */
class MetricFamilyTest {
    @Test
    void theSnapshotTextIsReadWithItsEscapes() {
        String text = "F\tpolylock_holds\tgauge\tHolds now.\n"
                + "N\t2\tkind\tlock\tbackend\tredis\n"
                + "N\t0.5\tname\ta\\tb\\nc\\\\d\n"
                + "F\tpolylock_hold_seconds\thistogram\tTime held.\n"
                + "H\t3\t1.25\t2\t0.5\t1\t1\t2\tkind\tlock\n";
        List<MetricFamily> f = MetricFamily.parse(text);
        assertEquals(2, f.size());
        assertEquals("polylock_holds", f.get(0).getName());
        assertEquals(MetricFamily.Type.GAUGE, f.get(0).getType());
        assertEquals("Holds now.", f.get(0).getHelp());
        assertEquals(2.0, f.get(0).getSamples().get(0).getValue());
        assertEquals("[kind, backend]", f.get(0).getSamples().get(0).getLabels().keySet().toString());
        assertEquals("a\tb\nc\\d", f.get(0).getSamples().get(1).getLabels().get("name"));
        MetricFamily.Sample h = f.get(1).getSamples().get(0);
        assertEquals(MetricFamily.Type.HISTOGRAM, f.get(1).getType());
        assertEquals(3, h.getCount());
        assertEquals(1.25, h.getSum());
        assertArrayEquals(new double[] {0.5, 1}, h.getBucketBounds());
        assertArrayEquals(new long[] {1, 2}, h.getBucketCounts());
        assertEquals("lock", h.getLabels().get("kind"));
        assertEquals(0, MetricFamily.parse("").size());
    }

    @Test
    void targetsAreLoggersUnderIoPolylockAndMessagesNameTheLock() {
        assertEquals("io.polylock", Slf4jLogs.loggerName("polylock"));
        assertEquals("io.polylock.acquire", Slf4jLogs.loggerName("polylock::acquire"));
        assertEquals("io.polylock.redis.lock", Slf4jLogs.loggerName("polylock::redis::lock"));
        assertEquals("polylock: lock lost: gone (lock 'a:1')", Slf4jLogs.text("polylock: lock lost: gone", "a:1"));
        assertEquals("acquire of 'a:1' acquired", Slf4jLogs.text("acquire of 'a:1' acquired", "a:1"));
        assertEquals("no lock", Slf4jLogs.text("no lock", null));
        assertEquals(Logs.DEBUG, Logs.parse("DEBUG"));
        assertEquals(Logs.WARN, Logs.parse(" warn"));
        assertEquals(Logs.OFF, Logs.parse("off"));
    }
}
