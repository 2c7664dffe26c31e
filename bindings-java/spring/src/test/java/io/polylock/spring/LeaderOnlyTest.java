package io.polylock.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylock.DistributedLeaderLatch;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** {@link LeaderOnly} through the auto-configured aspect, on the real Redis. */
@SpringBootTest(classes = TestApp.class)
class LeaderOnlyTest {
    @Autowired
    private LeaderService service;

    @Autowired
    private LeaderOnlyAspect aspect;

    @Test
    void theJobRunsOnlyWhileThisInstanceLeads() throws Exception {
        try (PolylockClient other = Polylock.connect(RedisProbe.URL);
                DistributedLeaderLatch rival = other.getLeaderLatch(LeaderService.ELECTION, "rival-instance")) {
            // Another instance of the service leads first: this one's job is skipped.
            rival.start();
            assertTrue(rival.await(10, TimeUnit.SECONDS));
            for (int i = 0; i < 5; i++) {
                assertNull(service.job(), "skipped while another instance leads");
                Thread.sleep(50);
            }
            assertEquals(0, service.runs());
            DistributedLeaderLatch ours = aspect.latch(LeaderService.ELECTION, "");
            assertEquals("rival-instance", ours.getLeader().getId());
            // The rival leaves: this instance leads, and its job runs.
            rival.close();
            assertTrue(ours.await(10, TimeUnit.SECONDS), "this instance was elected");
            assertEquals(1, service.job());
            assertEquals(2, service.job());
            assertEquals(aspect.getId(), ours.getLeader().getId());
            assertTrue(aspect.getId().startsWith("application@"), aspect.getId());
        }
    }
}
