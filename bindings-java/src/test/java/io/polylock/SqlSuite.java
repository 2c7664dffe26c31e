package io.polylock;

import static io.polylock.SqlDb.eventually;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * What the SQL suites share: clients closed after each test, and the server checked afterwards by
 * a JDBC session opened before the test: no session left waiting for a lock, and no more client
 * sessions on the database than before the test (polylock's connections, and the test's own, are
 * gone; on PostgreSQL no session named {@code polylock} is left at all).
 */
abstract class SqlSuite {
    private final List<AutoCloseable> open = new ArrayList<>();
    /** The JDBC session looking at the server, and its count of other sessions before the test. */
    SqlDb.Session observer;
    private long sessionsBefore;

    /** Client sessions of the database, other than the observer's, before the test. */
    long sessionsBefore() {
        return sessionsBefore;
    }

    /** Open the observing session of this test (before any client). */
    SqlDb.Session observe(SqlDb db) throws SQLException {
        observer = db.session();
        sessionsBefore = observer.otherSessions();
        return observer;
    }

    /** A client of {@code db}'s session locks, closed after the test. */
    PolylockClient client(SqlDb db) {
        return client(db.url(), new Polylock.Options());
    }

    /** A client of {@code url}, closed after the test. */
    PolylockClient client(String url, Polylock.Options options) {
        PolylockClient c = Polylock.connect(url, options);
        open.add(c);
        return c;
    }

    /** Something else to close after the test, before the server is checked. */
    <T extends AutoCloseable> T closeLater(T c) {
        open.add(c);
        return c;
    }

    @BeforeEach
    void start() {
        open.clear();
    }

    /** Close every client, then check the server: nobody waits, the test's connections are gone. */
    @AfterEach
    void closeAndCheckTheServer() throws Exception {
        Collections.reverse(open);
        for (AutoCloseable c : open) {
            c.close();
        }
        open.clear();
        if (observer == null) {
            return;
        }
        try (SqlDb.Session o = observer) {
            assertTrue(eventually(5_000, () -> count(o::allWaiters) == 0),
                    "a session is still waiting for a lock: " + count(o::allWaiters));
            assertTrue(eventually(5_000, () -> count(o::otherSessions) <= sessionsBefore),
                    "connections left open: " + count(o::otherSessions) + " sessions, " + sessionsBefore + " before the test");
            if (o.db() == SqlDb.POSTGRES) {
                // A closed connection's backend leaves pg_stat_activity as it exits, a moment after
                // the client closed its socket (and the count above may be met first, when another
                // suite's sessions end meanwhile): waited for, as the sessions above are.
                assertTrue(eventually(5_000, () -> count(o::polylockSessions) == 0),
                        "polylock's connections left open: " + count(o::polylockSessions));
            }
        } finally {
            observer = null;
        }
    }

    /** A query of the server that may throw. */
    interface SqlCount {
        long get() throws SQLException;
    }

    /** The answer of {@code q}; an SQLException fails the test. */
    static long count(SqlCount q) {
        try {
            return q.get();
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }
}
