package io.polylock;

import static io.polylock.Servers.onOtherThread;
import static io.polylock.SqlDb.eventually;
import static io.polylock.SqlDb.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * polylock beside the other users of the same server-side locks, on MariaDB and PostgreSQL:
 * ShedLock's own JDBC provider (JdbcTemplateLockProvider, database time, the {@code shedlock}
 * table) against a polylock lock in table mode ({@code ?mode=table}), and a plain JDBC session
 * calling GET_LOCK / pg_advisory_lock on the name or key polylock derives for a name (DistributedLock's
 * rules, {@link SqlNames}) against a polylock session lock. Each keeps the other out, both ways.
 */
class SqlInteropIT extends SqlSuite {
    /** ShedLock as a service configures it: its JdbcTemplate provider with database time. */
    private static LockProvider shedLock(SqlDb db) {
        DriverManagerDataSource ds = new DriverManagerDataSource(db.jdbcUrl(), db.user(), db.password());
        return new JdbcTemplateLockProvider(JdbcTemplateLockProvider.Configuration.builder()
                .withJdbcTemplate(new JdbcTemplate(ds))
                .withTableName("shedlock")
                .usingDbTime()
                .build());
    }

    private static LockConfiguration shedConfig(String name, Duration atMost, Duration atLeast) {
        return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
    }

    /** {@code locked_by} of the row of {@code name}, if its lease runs (database time, UTC). */
    private static String leaseHolder(SqlDb.Session o, String name) throws SQLException {
        String now = o.db() == SqlDb.MARIADB ? "UTC_TIMESTAMP(3)" : "timezone('utc', CURRENT_TIMESTAMP)";
        try (PreparedStatement st = o.c.prepareStatement(
                "SELECT locked_by FROM shedlock WHERE name = ? AND lock_until > " + now)) {
            st.setString(1, name);
            try (ResultSet rs = st.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /**
     * A polylock table-mode lock keeps ShedLock's provider out, also past its first lease (its
     * watchdog extends the row); once released ShedLock takes the row, and then polylock is kept
     * out (a try, a bounded wait) until ShedLock unlocks. ShedLock's lockAtLeastFor is honoured:
     * its row keeps polylock out until then even after ShedLock's unlock.
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void shedLockAndATableLockExcludeEachOther(SqlDb db) throws Exception {
        SqlDb.Session o = observe(db);
        String name = unique("shed");
        PolylockClient a = client(db.url("mode=table"), new Polylock.Options().watchdogTimeout(Duration.ofMillis(900)));
        PolylockClient b = client(db.url("mode=table"), new Polylock.Options());
        DistributedLock la = a.getLock(name);
        DistributedLock lb = b.getLock(name);
        LockProvider shed = shedLock(db);

        // polylock holds: ShedLock is refused, and still after twice polylock's 900 ms lease.
        la.lock();
        assertTrue(leaseHolder(o, name).contains(":" + a.getId() + ":"), "row: " + leaseHolder(o, name));
        assertTrue(shed.lock(shedConfig(name, Duration.ofSeconds(30), Duration.ZERO)).isEmpty(), "ShedLock took polylock's lock");
        Thread.sleep(2_000);
        assertFalse(la.isLost());
        assertTrue(shed.lock(shedConfig(name, Duration.ofSeconds(30), Duration.ZERO)).isEmpty(),
                "ShedLock took a lock polylock's watchdog keeps");
        long polylockToken = la.getFencingToken();
        la.unlock();
        assertNull(leaseHolder(o, name), "polylock's release left the lease running");

        // ShedLock holds: polylock is refused, by a try and by a bounded wait.
        SimpleLock s = shed.lock(shedConfig(name, Duration.ofSeconds(30), Duration.ZERO))
                .orElseThrow(() -> new AssertionError("ShedLock could not take a free lock"));
        String shedHolder = leaseHolder(o, name);
        assertTrue(shedHolder != null && !shedHolder.contains(a.getId()) && !shedHolder.contains(b.getId()), "row: " + shedHolder);
        assertFalse(Servers.<Boolean>onOtherThread(lb::tryLock), "polylock took ShedLock's lock");
        long t0 = System.nanoTime();
        assertFalse(onOtherThread(() -> lb.tryLock(300, TimeUnit.MILLISECONDS)), "polylock took ShedLock's lock");
        assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(280));
        assertTrue(lb.isLocked());
        assertTrue(la.remainTimeToLive() > 20_000, "ShedLock's 30 s lease, seen by polylock: " + la.remainTimeToLive());
        s.unlock();

        // Free again: polylock takes it at once, with a larger token, and ShedLock is refused.
        long next = onOtherThread(() -> {
            assertTrue(lb.tryLock(), "polylock could not take the lock ShedLock released");
            try {
                assertTrue(shed.lock(shedConfig(name, Duration.ofSeconds(30), Duration.ZERO)).isEmpty(),
                        "ShedLock took polylock's lock");
                return lb.getFencingToken();
            } finally {
                lb.unlock();
            }
        });
        assertTrue(next > polylockToken, next + " > " + polylockToken);

        // lockAtLeastFor: ShedLock's unlock keeps the row until locked_at + 1.5 s.
        SimpleLock least = shed.lock(shedConfig(name, Duration.ofSeconds(30), Duration.ofMillis(1_500)))
                .orElseThrow(() -> new AssertionError("ShedLock could not take a free lock"));
        long lockedAt = System.nanoTime();
        least.unlock();
        assertFalse(Servers.<Boolean>onOtherThread(lb::tryLock), "polylock ignored ShedLock's lockAtLeastFor");
        onOtherThread(() -> {
            assertTrue(lb.tryLock(5, TimeUnit.SECONDS));
            long waited = (System.nanoTime() - lockedAt) / 1_000_000;
            lb.unlock();
            // At ShedLock's 1.5 s (waiters back off up to 1 s), before the 5 s wait's end.
            assertTrue(waited >= 1_300 && waited < 4_500, "got the lock " + waited + " ms after ShedLock's lock");
            return null;
        });
        // One row per name, ShedLock's and polylock's alike.
        assertEquals(1, o.queryLong("SELECT COUNT(*) FROM shedlock WHERE name = ?", name));
    }

    /**
     * A polylock waiter and ShedLock: ShedLock's unlock (which notifies nobody) or the end of its
     * lease (a ShedLock node that died holding it) lets the waiter in, never before, and no later
     * than the end of ShedLock's lease.
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void aTableLockWaiterGetsInAfterShedLock(SqlDb db) throws Exception {
        observe(db);
        String name = unique("shedwait");
        PolylockClient b = client(db.url("mode=table"), new Polylock.Options());
        DistributedLock lb = b.getLock(name);
        assertFalse(lb.isLocked()); // creates the table if this is the first table-mode use
        LockProvider shed = shedLock(db);

        // ShedLock unlocks after 500 ms of a 2.5 s lease.
        SimpleLock s = shed.lock(shedConfig(name, Duration.ofMillis(2_500), Duration.ZERO))
                .orElseThrow(() -> new AssertionError("ShedLock could not take a free lock"));
        long shedAt = System.nanoTime();
        AtomicLong unlockedAt = new AtomicLong();
        Holder waiter = Holder.start("table-waiter", () -> {
            if (!lb.tryLock(10, TimeUnit.SECONDS)) {
                throw new AssertionError("not granted within 10 s");
            }
        }, lb::unlock);
        Thread.sleep(500);
        assertFalse(waiter.isHeld(), "polylock got in while ShedLock held the lock");
        unlockedAt.set(System.nanoTime());
        s.unlock();
        assertTrue(waiter.awaitHeld(6_000), "the waiter never got in");
        long afterUnlock = (waiter.heldAt() - unlockedAt.get()) / 1_000_000;
        long afterLock = (waiter.heldAt() - shedAt) / 1_000_000;
        System.out.println("SqlInteropIT " + db + ": a table-mode waiter got in " + afterUnlock
                + " ms after ShedLock's unlock (" + afterLock + " ms after its lock, lease 2500 ms)");
        assertTrue(afterUnlock >= 0);
        // No later than the lease's end plus one back-off (1 s), with room for a loaded machine.
        assertTrue(afterLock < 2_500 + 3_000, "got in " + afterLock + " ms after ShedLock's lock");
        waiter.release();

        // A ShedLock node that dies holding the lock: its lease of 1.5 s ends, the waiter gets in.
        Optional<SimpleLock> dead = shed.lock(shedConfig(name, Duration.ofMillis(1_500), Duration.ZERO));
        assertTrue(dead.isPresent(), "ShedLock could not take a free lock");
        long deadAt = System.nanoTime();
        onOtherThread(() -> {
            assertTrue(lb.tryLock(5, TimeUnit.SECONDS), "the dead ShedLock holder's lease did not end");
            long waited = (System.nanoTime() - deadAt) / 1_000_000;
            try {
                assertTrue(waited >= 1_300 && waited < 4_500, "got in " + waited + " ms after ShedLock's lock");
                assertTrue(shed.lock(shedConfig(name, Duration.ofSeconds(30), Duration.ZERO)).isEmpty());
            } finally {
                lb.unlock();
            }
            return null;
        });
    }

    /**
     * Polylock threads on two table-mode clients and a ShedLock worker (trying every few
     * milliseconds, as scheduled tasks on several nodes would) share one name around a
     * read-yield-write counter: never two inside at once, and the counter is exact.
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void shedLockAndPolylockKeepACounterExact(SqlDb db) throws Exception {
        observe(db);
        String name = unique("shedcount");
        PolylockClient a = client(db.url("mode=table"), new Polylock.Options());
        PolylockClient b = client(db.url("mode=table"), new Polylock.Options());
        assertFalse(a.getLock(name).isLocked());
        LockProvider shed = shedLock(db);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicLong counter = new AtomicLong();
        AtomicInteger shedSections = new AtomicInteger();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Runnable section = () -> {
            if (inside.incrementAndGet() != 1) {
                overlaps.incrementAndGet();
            }
            long v = counter.get();
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            counter.set(v + 1);
            inside.decrementAndGet();
        };
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            DistributedLock lock = (i % 2 == 0 ? a : b).getLock(name);
            threads.add(new Thread(() -> {
                try {
                    for (int k = 0; k < 6; k++) {
                        assertTrue(lock.tryLock(20, TimeUnit.SECONDS), "not granted within 20 s");
                        try {
                            section.run();
                        } finally {
                            lock.unlock();
                        }
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            }, "table-worker-" + i));
        }
        Thread shedWorker = new Thread(() -> {
            try {
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (shedSections.get() < 6 && System.nanoTime() < end) {
                    Optional<SimpleLock> l = shed.lock(shedConfig(name, Duration.ofSeconds(30), Duration.ZERO));
                    if (l.isPresent()) {
                        try {
                            section.run();
                            shedSections.incrementAndGet();
                        } finally {
                            l.get().unlock();
                        }
                    }
                    Thread.sleep(3);
                }
            } catch (Throwable e) {
                failed.compareAndSet(null, e);
            }
        }, "shedlock-worker");
        threads.add(shedWorker);
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join(45_000);
            assertFalse(t.isAlive(), t.getName() + " did not finish");
        }
        if (failed.get() != null) {
            throw new AssertionError("a worker failed: " + failed.get(), failed.get());
        }
        assertEquals(0, overlaps.get(), "ShedLock and polylock inside at once");
        assertEquals(6, shedSections.get());
        assertEquals(24 + 6, counter.get());
    }

    /** Names that reach every rule of DistributedLock's: as is, hashed, int4 pairs, a bigint. */
    private static List<String> interopNames() {
        String hex = UUID.randomUUID().toString().replace("-", "");
        List<String> names = new ArrayList<>();
        names.add("t-java-plain-" + hex.substring(0, 12)); // MariaDB: as is; PostgreSQL: SHA-1
        names.add("p" + hex.substring(0, 8)); // PostgreSQL: 9 ASCII characters packed into a pair
        names.add(hex.substring(0, 16)); // PostgreSQL: a bigint
        names.add(hex.substring(0, 8) + "," + hex.substring(8, 16)); // PostgreSQL: an explicit pair
        names.add("Java-Mixed-Case-" + hex.substring(0, 12)); // MariaDB: lower-cased and hashed
        names.add("x".repeat(100) + hex.substring(0, 12)); // MariaDB: too long, hashed
        names.add("商品库存-" + hex.substring(0, 12)); // non-ASCII: MariaDB as is, PostgreSQL SHA-1
        return names;
    }

    /**
     * For names that reach every name rule: a plain JDBC session holding GET_LOCK /
     * pg_advisory_lock on the name polylock derives keeps polylock out (a try, a bounded wait,
     * isLocked) and its release wakes a waiting polylock; then polylock's hold keeps plain
     * sessions out (GET_LOCK(name, 0) = 0, pg_try_advisory_lock false) and its release wakes a
     * plain session waiting in GET_LOCK / pg_advisory_lock.
     */
    @ParameterizedTest
    @EnumSource(SqlDb.class)
    void plainSessionsAndPolylockExcludeEachOther(SqlDb db) throws Exception {
        SqlDb.Session o = observe(db);
        PolylockClient client = client(db);
        List<String> names = interopNames();
        // The names reach the rules this test means them to.
        if (db == SqlDb.MARIADB) {
            assertEquals(names.get(0), SqlNames.mysqlLockName(names.get(0)));
            assertNotEquals(names.get(4), SqlNames.mysqlLockName(names.get(4)));
            assertEquals(64, SqlNames.mysqlLockName(names.get(5)).length());
        } else {
            assertFalse(SqlNames.pgKey(names.get(1)).big);
            assertTrue(SqlNames.pgKey(names.get(2)).big);
            assertFalse(SqlNames.pgKey(names.get(3)).big);
        }
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            for (String name : names) {
                String what = name + " (" + (db == SqlDb.MARIADB ? SqlNames.mysqlLockName(name) : SqlNames.pgKey(name)) + ")";
                DistributedLock lock = client.getLock(name);
                try (SqlDb.Session x = db.session(); SqlDb.Session y = db.session()) {
                    // A plain session holds: polylock is kept out.
                    assertTrue(x.tryLock(name), what);
                    assertEquals(x.id(), o.holder(name), what);
                    assertFalse(Servers.<Boolean>onOtherThread(lock::tryLock), "polylock took a lock a plain session holds: " + what);
                    assertFalse(onOtherThread(() -> lock.tryLock(200, TimeUnit.MILLISECONDS)), what);
                    assertTrue(lock.isLocked(), what);
                    // A waiting polylock is woken by the plain session's release.
                    AtomicLong token = new AtomicLong();
                    Holder holder = Holder.start("sql-interop", () -> {
                        lock.lock();
                        token.set(lock.getFencingToken());
                    }, lock::unlock);
                    assertTrue(eventually(3_000, () -> count(() -> o.waiters(name)) == 1), "polylock does not wait on the server: " + what);
                    assertFalse(holder.isHeld(), what);
                    long released = System.nanoTime();
                    assertTrue(x.unlock(name), what);
                    assertTrue(holder.awaitHeld(5_000), "polylock was not woken: " + what);
                    assertTrue(holder.heldAt() - released < TimeUnit.SECONDS.toNanos(1), what);
                    long polylockSession = o.holder(name);
                    assertTrue(polylockSession > 0 && polylockSession != x.id() && polylockSession != y.id(), what);
                    assertTrue(token.get() > 0, "a fencing token: " + what);
                    // polylock holds: plain sessions are kept out, by a try and by a wait.
                    assertFalse(x.tryLock(name), "a plain session took polylock's lock: " + what);
                    assertFalse(y.tryLock(name), "a plain session took polylock's lock: " + what);
                    Future<Boolean> plainWait = pool.submit(() -> y.lock(name, 10));
                    assertTrue(eventually(3_000, () -> count(() -> o.waiters(name)) == 1), "the plain session does not wait: " + what);
                    assertFalse(plainWait.isDone(), what);
                    released = System.nanoTime();
                    holder.release();
                    assertTrue(plainWait.get(5, TimeUnit.SECONDS), "the plain session was not granted: " + what);
                    assertTrue(System.nanoTime() - released < TimeUnit.SECONDS.toNanos(1), what);
                    assertEquals(y.id(), o.holder(name), what);
                    assertTrue(lock.isLocked(), what);
                    assertTrue(y.unlock(name), what);
                    assertFalse(lock.isLocked(), what);
                }
            }
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        }
    }
}
