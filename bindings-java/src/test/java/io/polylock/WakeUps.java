package io.polylock;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Judges wake-up times measured over several rounds: were the waiters woken by a notification?
 * A missed notification waits for polylock's re-check (a third of the 30 s watchdog timeout on
 * Redis), for Redisson's 30 s lease, or for ever (a ZooKeeper watch); a waiter that polled every
 * P ms would put half its wake-ups past P / 2. One slow wake-up on a loaded machine is neither, so
 * the tight bound is on the median, and every wake-up must still come long before any re-check.
 */
final class WakeUps {
    /** The median wake-up: a notification is heard in a few milliseconds. */
    static final long MEDIAN_MS = 100;
    /** Every wake-up: far below the 10 s re-check, so no wake-up was a missed notification's. */
    static final long EVERY_MS = 2_000;

    private WakeUps() {
    }

    static void assertNotified(List<Long> ms) {
        assertTrue(ms.size() >= 3, "a median needs a few rounds: " + ms);
        List<Long> sorted = new ArrayList<>(ms);
        Collections.sort(sorted);
        long median = sorted.get(sorted.size() / 2);
        long worst = sorted.get(sorted.size() - 1);
        assertTrue(median < MEDIAN_MS, "median wake-up " + median + " ms, all " + ms);
        assertTrue(worst < EVERY_MS, "slowest wake-up " + worst + " ms, all " + ms);
    }
}
