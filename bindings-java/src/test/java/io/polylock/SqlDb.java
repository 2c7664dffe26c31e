package io.polylock;

import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.UUID;
import java.util.function.BooleanSupplier;

/**
 * The SQL servers of scripts/servers.sh (POLYLOCK_MYSQL_URL, POLYLOCK_PG_URL), as polylock URLs
 * and as plain JDBC sessions that lock what polylock locks and look at the server's state. A
 * server that cannot be reached fails the test; nothing is skipped.
 */
enum SqlDb {
    MARIADB("POLYLOCK_MYSQL_URL", "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock", "jdbc:mariadb://"),
    POSTGRES("POLYLOCK_PG_URL", "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock", "jdbc:postgresql://");

    private final String env;
    private final String fallback;
    private final String jdbcPrefix;

    SqlDb(String env, String fallback, String jdbcPrefix) {
        this.env = env;
        this.fallback = fallback;
        this.jdbcPrefix = jdbcPrefix;
    }

    /** polylock's URL of this server (session locks). */
    String url() {
        String u = System.getenv(env);
        return u == null || u.isEmpty() ? fallback : u;
    }

    /** polylock's URL with a query option added, e.g. {@code mode=table}. */
    String url(String option) {
        String u = url();
        return u + (u.contains("?") ? "&" : "?") + option;
    }

    /** JDBC URL, user and password of the same server and database. */
    String jdbcUrl() {
        URI u = URI.create(url());
        return jdbcPrefix + u.getHost() + ":" + u.getPort() + u.getPath();
    }

    String user() {
        return URI.create(url()).getUserInfo().split(":", 2)[0];
    }

    String password() {
        String[] parts = URI.create(url()).getUserInfo().split(":", 2);
        return parts.length > 1 ? parts[1] : "";
    }

    /** A plain JDBC session on the server (autocommit). */
    Session session() throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", user());
        p.setProperty("password", password());
        return new Session(DriverManager.getConnection(jdbcUrl(), p));
    }

    /** The row of polylock_fencing that counts the holders of a session lock of {@code name}. */
    String fenceRow(String name) {
        return this == MARIADB ? "get_lock:" + SqlNames.mysqlLockName(name) : SqlNames.pgKey(name).fenceRow();
    }

    /** A lock name no other test (or earlier run) uses, lower case, at most 64 characters. */
    static String unique(String prefix) {
        return "t-java-" + prefix + "-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    /** Poll {@code condition} every 20 ms for up to {@code ms}; true if it held. */
    static boolean eventually(long ms, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + ms * 1_000_000L;
        while (true) {
            if (condition.getAsBoolean()) {
                return true;
            }
            if (System.nanoTime() > end) {
                return false;
            }
            Thread.sleep(20);
        }
    }

    /** A plain JDBC session: locks the name's server-side lock itself, and looks at the server. */
    final class Session implements AutoCloseable {
        final Connection c;

        Session(Connection c) {
            this.c = c;
        }

        SqlDb db() {
            return SqlDb.this;
        }

        /** This session's id on the server (CONNECTION_ID(), pg_backend_pid()). */
        long id() throws SQLException {
            return queryLong(SqlDb.this == MARIADB ? "SELECT CONNECTION_ID()" : "SELECT pg_backend_pid()");
        }

        /** One try at the server-side lock polylock takes for {@code name}. */
        boolean tryLock(String name) throws SQLException {
            if (SqlDb.this == MARIADB) {
                return queryLong("SELECT GET_LOCK(?, 0)", SqlNames.mysqlLockName(name)) == 1;
            }
            SqlNames.PgKey k = SqlNames.pgKey(name);
            try (PreparedStatement st = c.prepareStatement("SELECT pg_try_advisory_lock(" + k.placeholders() + ")")) {
                k.bind(st, 1);
                return single(st) == 1;
            }
        }

        /** Wait up to {@code seconds} for the server-side lock of {@code name}; true if taken. */
        boolean lock(String name, int seconds) throws SQLException {
            if (SqlDb.this == MARIADB) {
                return queryLong("SELECT GET_LOCK(?, " + seconds + ")", SqlNames.mysqlLockName(name)) == 1;
            }
            SqlNames.PgKey k = SqlNames.pgKey(name);
            try (Statement st = c.createStatement()) {
                st.execute("SET lock_timeout = '" + seconds + "s'");
            }
            try (PreparedStatement st = c.prepareStatement("SELECT pg_advisory_lock(" + k.placeholders() + ")")) {
                k.bind(st, 1);
                st.executeQuery().close();
                return true;
            } catch (SQLException e) {
                if ("55P03".equals(e.getSQLState())) {
                    return false;
                }
                throw e;
            } finally {
                try (Statement st = c.createStatement()) {
                    st.execute("RESET lock_timeout");
                }
            }
        }

        /** Release this session's hold of the server-side lock of {@code name}; true if it held it. */
        boolean unlock(String name) throws SQLException {
            if (SqlDb.this == MARIADB) {
                return queryLong("SELECT COALESCE(RELEASE_LOCK(?), -1)", SqlNames.mysqlLockName(name)) == 1;
            }
            SqlNames.PgKey k = SqlNames.pgKey(name);
            try (PreparedStatement st = c.prepareStatement("SELECT pg_advisory_unlock(" + k.placeholders() + ")")) {
                k.bind(st, 1);
                return single(st) == 1;
            }
        }

        /**
         * The session holding the server-side lock of {@code name}, found by the server's state
         * (IS_USED_LOCK on MariaDB, the granted row of pg_locks on PostgreSQL); -1 if none.
         */
        long holder(String name) throws SQLException {
            if (SqlDb.this == MARIADB) {
                return queryLong("SELECT COALESCE(IS_USED_LOCK(?), -1)", SqlNames.mysqlLockName(name));
            }
            return pgLocks(name, true, "COALESCE(MIN(pid), -1)");
        }

        /** How many sessions hold the server-side lock of {@code name} (0 or 1 on MariaDB). */
        long holders(String name) throws SQLException {
            if (SqlDb.this == MARIADB) {
                return holder(name) < 0 ? 0 : 1;
            }
            return pgLocks(name, true, "COUNT(*)");
        }

        /**
         * Sessions waiting for the server-side lock of {@code name}. PostgreSQL shows the key in
         * pg_locks; MariaDB's processlist shows no name (the statement is prepared): there it is
         * every other session waiting in GET_LOCK (state "User lock").
         */
        long waiters(String name) throws SQLException {
            if (SqlDb.this == MARIADB) {
                return allWaiters();
            }
            return pgLocks(name, false, "COUNT(*)");
        }

        /** Every other session waiting for a named or advisory lock of this database. */
        long allWaiters() throws SQLException {
            if (SqlDb.this == MARIADB) {
                return queryLong("SELECT COUNT(*) FROM information_schema.processlist WHERE ID <> CONNECTION_ID() "
                        + "AND STATE = 'User lock'");
            }
            return queryLong("SELECT COUNT(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE "
                    + "d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted");
        }

        /** Client sessions of this database other than this one. */
        long otherSessions() throws SQLException {
            if (SqlDb.this == MARIADB) {
                return queryLong("SELECT COUNT(*) FROM information_schema.processlist WHERE ID <> CONNECTION_ID() "
                        + "AND DB = DATABASE() AND USER = SUBSTRING_INDEX(CURRENT_USER(), '@', 1)");
            }
            return queryLong("SELECT COUNT(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND "
                    + "datname = current_database() AND backend_type = 'client backend'");
        }

        /**
         * This process's polylock sessions: on PostgreSQL those whose application name is
         * polylock's {@code service@host/pid} with this process's pid; -1 on MariaDB (no names).
         */
        long polylockSessions() throws SQLException {
            if (SqlDb.this == MARIADB) {
                return -1;
            }
            return queryLong("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name LIKE '%@%/"
                    + ProcessHandle.current().pid() + "' AND datname = current_database()");
        }

        /** Whether the session {@code id} is open. */
        boolean alive(long id) throws SQLException {
            if (SqlDb.this == MARIADB) {
                return queryLong("SELECT COUNT(*) FROM information_schema.processlist WHERE ID = ?", id) > 0;
            }
            return queryLong("SELECT COUNT(*) FROM pg_stat_activity WHERE pid = ?", (int) id) > 0;
        }

        /** Who the session {@code id} is: user, command and state; on PostgreSQL with its application_name. */
        String describe(long id) throws SQLException {
            String sql = SqlDb.this == MARIADB
                    ? "SELECT CONCAT_WS(' ', USER, COMMAND, IFNULL(STATE, '')) FROM information_schema.processlist WHERE ID = ?"
                    : "SELECT concat_ws(' ', usename, application_name, state) FROM pg_stat_activity WHERE pid = ?";
            try (PreparedStatement st = c.prepareStatement(sql)) {
                if (SqlDb.this == MARIADB) {
                    st.setLong(1, id);
                } else {
                    st.setInt(1, (int) id);
                }
                try (ResultSet rs = st.executeQuery()) {
                    return rs.next() ? rs.getString(1) : null;
                }
            }
        }

        /** End the session {@code id} from outside: KILL on MariaDB, pg_terminate_backend on PostgreSQL. */
        void kill(long id) throws SQLException {
            if (SqlDb.this == MARIADB) {
                try (Statement st = c.createStatement()) {
                    st.execute("KILL " + id);
                }
            } else if (queryLong("SELECT CASE WHEN pg_terminate_backend(?) THEN 1 ELSE 0 END", (int) id) != 1) {
                throw new AssertionError("pg_terminate_backend(" + id + ") found no backend");
            }
        }

        /** The fencing counter of {@code row} in polylock_fencing; -1 if there is none. */
        long fence(String row) throws SQLException {
            return queryLong("SELECT COALESCE(MAX(token), -1) FROM polylock_fencing WHERE name = ?", row);
        }

        /** A query with one numeric (or boolean) answer. */
        long queryLong(String sql, Object... args) throws SQLException {
            try (PreparedStatement st = c.prepareStatement(sql)) {
                for (int i = 0; i < args.length; i++) {
                    st.setObject(i + 1, args[i]);
                }
                return single(st);
            }
        }

        private long pgLocks(String name, boolean granted, String what) throws SQLException {
            SqlNames.PgKey k = SqlNames.pgKey(name);
            return queryLong("SELECT " + what + " FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE "
                    + "d.datname = current_database() AND l.locktype = 'advisory' AND l.granted = ? AND "
                    + "l.classid::int8 = ? AND l.objid::int8 = ? AND l.objsubid = ?",
                    granted, k.classid(), k.objid(), k.objsubid());
        }

        private long single(PreparedStatement st) throws SQLException {
            try (ResultSet rs = st.executeQuery()) {
                if (!rs.next()) {
                    throw new AssertionError("no row");
                }
                Object v = rs.getObject(1);
                if (v == null) {
                    throw new AssertionError("NULL answer");
                }
                if (v instanceof Boolean) {
                    return ((Boolean) v) ? 1 : 0;
                }
                return ((Number) v).longValue();
            }
        }

        @Override
        public void close() throws SQLException {
            c.close();
        }
    }
}
