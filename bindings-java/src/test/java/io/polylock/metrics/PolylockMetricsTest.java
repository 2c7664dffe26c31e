package io.polylock.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The meters' names (no server). */
class PolylockMetricsTest {
    @Test
    void prometheusNamesBecomeMicrometerNames() {
        assertEquals("polylock.reentries", PolylockMetrics.meterName("polylock_reentries_total"));
        assertEquals("polylock.acquire.wait", PolylockMetrics.meterName("polylock_acquire_wait_seconds"));
        assertEquals("polylock.name.acquire.wait", PolylockMetrics.meterName("polylock_name_acquire_wait_seconds_total"));
        assertEquals("polylock.name.fencing.token", PolylockMetrics.meterName("polylock_name_fencing_token"));
        assertEquals("polylock.holds", PolylockMetrics.meterName("polylock_holds"));
    }
}
