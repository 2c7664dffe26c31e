package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** DistributedLeaderLatch (Curator's LeaderLatch vocabulary) on Redis, ZooKeeper and etcd. */
class LeaderLatchIT {
    private static String url(String server) {
        switch (server) {
            case "zookeeper":
                return Servers.zkUrl();
            case "etcd":
                return Servers.etcdUrl();
            default:
                return Servers.redisUrl();
        }
    }

    private static String path(String server, String prefix) {
        return server.equals("zookeeper") ? Servers.zkPath(prefix) : Servers.unique(prefix);
    }

    @ParameterizedTest
    @ValueSource(strings = {"redis", "zookeeper", "etcd"})
    void oneLeaderThenTheNextWithListenersAndRisingTerms(String server) throws Exception {
        try (PolylockClient ca = Polylock.connect(url(server)); PolylockClient cb = Polylock.connect(url(server))) {
            String path = path(server, "latch");
            DistributedLeaderLatch a = ca.getLeaderLatch(path, "java-a");
            DistributedLeaderLatch b = cb.getLeaderLatch(path, "java-b");
            AtomicInteger became = new AtomicInteger();
            AtomicInteger stopped = new AtomicInteger();
            a.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    became.incrementAndGet();
                }

                @Override
                public void notLeader() {
                    stopped.incrementAndGet();
                }
            });
            assertFalse(a.hasLeadership());
            assertEquals(-1, a.getTerm());
            a.start();
            assertThrows(IllegalStateException.class, a::start);
            assertTrue(a.await(10, TimeUnit.SECONDS));
            long first = a.getTerm();
            assertTrue(first > 0);
            b.start();
            assertFalse(b.await(300, TimeUnit.MILLISECONDS), "one leader at a time");
            assertEquals("java-a", b.getLeader().getId());
            assertTrue(b.getLeader().isLeader());
            List<String> ids = a.getParticipants().stream().map(Participant::getId).collect(Collectors.toList());
            assertEquals(server.equals("redis") ? List.of("java-a") : List.of("java-a", "java-b"), ids);
            a.close();
            a.close();
            assertFalse(a.hasLeadership());
            assertEquals(1, became.get());
            assertEquals(1, stopped.get());
            assertThrows(IllegalStateException.class, a::getLeader);
            assertTrue(b.await(10, TimeUnit.SECONDS), "leadership passed on close");
            assertTrue(b.getTerm() > first, b.getTerm() + " after " + first);
            assertEquals("java-b", b.getLeader().getId());
            b.close();
            try (DistributedLeaderLatch observer = ca.getLeaderLatch(path, "observer")) {
                assertEquals("", observer.getLeader().getId(), "nobody leads");
            }
        }
    }

    @Test
    void badInputAndUnsupportedServersAreTypedErrors() throws Exception {
        try (PolylockClient c = Polylock.connect(Servers.redisUrl())) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> c.getLeaderLatch("x", ""));
            assertEquals(PolylockException.Code.INVALID_ARGUMENT, e.getCode());
            assertThrows(NullPointerException.class, () -> c.getLeaderLatch("x", null));
        }
    }
}
