package io.polylock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Fencing at the resource from Java: a write under an older token than one already accepted is
 * refused by Redis ({@link PolylockClient#fencedWrite}) and by PostgreSQL and MariaDB ({@link
 * JdbcFence#guard} in the caller's own JDBC transaction), against the servers of
 * scripts/servers.sh.
 */
class FenceIT {
    @Test
    void aLateWriteUnderAnOlderTokenIsRefusedAndNothingRuns() throws Exception {
        String name = Servers.unique("fence");
        String stock = "{" + name + "}:stock";
        try (PolylockClient a = Polylock.connect(Servers.redisUrl());
                PolylockClient b = Polylock.connect(Servers.redisUrl())) {
            DistributedLock lock = a.getLock(name);
            lock.lock();
            long t1 = lock.getFencingToken();
            List<Object> replies = a.fencedWrite(name, t1, List.of(
                    List.of("SET", stock, 10),
                    List.of("DECR", stock),
                    Arrays.asList("GET", "{" + name + "}:none"),
                    List.of("RPUSH", "{" + name + "}:orders", "a-1".getBytes()),
                    List.of("LRANGE", "{" + name + "}:orders", 0, -1),
                    List.of("SET", "{" + name + "}:bin", new byte[] {(byte) 0xff, 0}),
                    List.of("GET", "{" + name + "}:bin")));
            assertEquals(Arrays.asList("OK", 9L, null, 1L, List.of("a-1"), "OK"), replies.subList(0, 6));
            assertArrayEquals(new byte[] {(byte) 0xff, 0}, (byte[]) replies.get(6));
            DistributedFence fence = a.getFence(name);
            assertEquals(OptionalLong.of(t1), fence.accepted());

            // The holder pauses past its lease: here it is force-unlocked, and B takes the lock.
            assertTrue(lock.forceUnlock());
            DistributedLock lockB = b.getLock(name);
            lockB.lock(); // another client: another owner, on this thread too
            long t2 = lockB.getFencingToken();
            assertTrue(t2 > t1);
            b.fencedWrite(name, t2, List.of(List.of("DECR", stock)));
            b.fencedWrite(name, t2, List.of(List.of("DECR", stock)));
            StaleTokenException e = assertThrows(StaleTokenException.class,
                    () -> a.fencedWrite(name, t1, List.of(List.of("DECR", stock))));
            assertEquals(PolylockException.Code.STALE_TOKEN, e.getCode());
            assertTrue(e.getMessage().contains("already accepted token " + t2), e.getMessage());
            assertEquals(List.of("7"), b.fencedWrite(name, t2, List.of(List.of("GET", stock))),
                    "nothing of the late write ran");
            assertEquals(OptionalLong.of(t2), fence.accepted());
            lockB.unlock();
            b.fencedWrite(name, t2, List.of(List.of("DEL", stock, "{" + name + "}:orders", "{" + name + "}:bin",
                    "polylock_fence:{" + name + "}")));
        }
    }

    @Test
    void badWritesAreTypedErrors() {
        try (PolylockClient c = Polylock.connect(Servers.redisUrl())) {
            DistributedFence fence = c.getFence(Servers.unique("fence-bad"));
            for (long token : new long[] {0, -1}) {
                assertThrows(InvalidArgumentException.class, () -> fence.write(token, List.of(List.of("PING"))));
            }
            assertThrows(InvalidArgumentException.class, () -> fence.write(1, List.of()));
            assertThrows(InvalidArgumentException.class, () -> fence.write(1, List.of(List.of())));
            assertThrows(InvalidArgumentException.class, () -> fence.write(1, List.of(List.of("SET", "k", new Object()))));
            assertThrows(NullPointerException.class, () -> fence.write(1, null));
            assertThrows(InvalidArgumentException.class, () -> c.getFence(""));
            assertEquals(OptionalLong.empty(), fence.accepted(), "nothing reached the server");
            PolylockException e = assertThrows(PolylockException.class,
                    () -> fence.write(3, List.of(List.of("NOSUCHCOMMAND"))));
            assertEquals(PolylockException.Code.BACKEND, e.getCode());
            c.fencedWrite(fence.getName(), 3, List.of(List.of("DEL", "polylock_fence:{" + fence.getName() + "}")));
            c.close();
            assertThrows(PolylockException.class, () -> fence.write(4, List.of(List.of("PING"))));
        }
        try (PolylockClient zk = Polylock.connect(Servers.zkUrl())) {
            assertThrows(UnsupportedException.class, () -> zk.getFence("/java-fence"));
        }
    }

    private static long left(Connection c, String name) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("SELECT left_ FROM fence_java_stock WHERE item = ?")) {
            s.setString(1, name);
            try (ResultSet r = s.executeQuery()) {
                assertTrue(r.next());
                return r.getLong(1);
            }
        }
    }

    private static void update(Connection c, String sql, String name) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(sql)) {
            s.setString(1, name);
            s.executeUpdate();
        }
    }

    /** A sale in its own transaction, guarded: true if it committed, false if refused. */
    private static boolean sell(Connection c, String name, long token) throws SQLException {
        c.setAutoCommit(false);
        try {
            JdbcFence.guard(c, name, token);
            update(c, "UPDATE fence_java_stock SET left_ = left_ - 1 WHERE item = ?", name);
            c.commit();
            return true;
        } catch (StaleTokenException e) {
            c.rollback();
            return false;
        } finally {
            c.setAutoCommit(true);
        }
    }

    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void theGuardRefusesAStaleWriterInItsOwnTransaction(SqlDb db) throws Exception {
        try (SqlDb.Session sa = db.session(); SqlDb.Session sb = db.session(); SqlDb.Session look = db.session()) {
            Connection a = sa.c;
            Connection b = sb.c;
            JdbcFence.setup(a);
            try (Statement s = a.createStatement()) {
                s.execute("CREATE TABLE IF NOT EXISTS fence_java_stock (item VARCHAR(64) PRIMARY KEY, left_ BIGINT NOT NULL)");
            }
            String name = SqlDb.unique("fence");
            update(a, "INSERT INTO fence_java_stock VALUES (?, 10)", name);

            assertTrue(sell(b, name, 5));
            assertFalse(sell(a, name, 4), "an older token is refused");
            assertEquals(9, left(look.c, name));
            assertTrue(sell(a, name, 5), "the same token writes again");
            // A newer token whose transaction rolls back is not remembered.
            a.setAutoCommit(false);
            JdbcFence.guard(a, name, 9);
            a.rollback();
            a.setAutoCommit(true);
            assertTrue(sell(a, name, 6));
            assertEquals(7, left(look.c, name));

            // B (token 7) holds the guard row in an open transaction; A (token 6) waits, then is refused.
            b.setAutoCommit(false);
            JdbcFence.guard(b, name, 7);
            update(b, "UPDATE fence_java_stock SET left_ = left_ - 1 WHERE item = ?", name);
            CompletableFuture<Boolean> late = CompletableFuture.supplyAsync(() -> {
                try {
                    return sell(a, name, 6);
                } catch (SQLException e) {
                    throw new RuntimeException(e);
                }
            });
            assertThrows(TimeoutException.class, () -> late.get(300, TimeUnit.MILLISECONDS),
                    "the stale writer waits for the guard row while B's transaction is open");
            b.commit();
            b.setAutoCommit(true);
            assertFalse(late.get(60, TimeUnit.SECONDS));
            assertEquals(6, left(look.c, name), "only the newer holder's sale committed");

            assertThrows(InvalidArgumentException.class, () -> JdbcFence.guard(a, "x".repeat(256), 1));
            assertThrows(InvalidArgumentException.class, () -> JdbcFence.guard(a, name, 0));
            update(a, "DELETE FROM polylock_fence WHERE name = ?", name);
            update(a, "DELETE FROM fence_java_stock WHERE item = ?", name);
            assertInstanceOf(String.class, JdbcFence.statements().get("postgres_guard"));
        }
    }
}
