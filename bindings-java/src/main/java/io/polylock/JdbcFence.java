package io.polylock;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Fencing at the resource for data in PostgreSQL or MySQL/MariaDB, written through the
 * application's own JDBC connection (any driver): {@link #guard} takes the name's guard row in
 * the caller's transaction and throws {@link StaleTokenException} when a larger token of the name
 * was accepted, so the caller rolls back and the stale write never commits. {@link #setup} makes
 * the table ({@code polylock_fence}) once.
 *
 * <pre>{@code
 * lock.lock();
 * try (Connection db = dataSource.getConnection()) {
 *     db.setAutoCommit(false);
 *     JdbcFence.guard(db, "sale", lock.getFencingToken());   // StaleTokenException: roll back
 *     try (PreparedStatement s = db.prepareStatement("UPDATE stock SET left_ = left_ - 1")) {
 *         s.executeUpdate();
 *     }
 *     db.commit();
 * } finally {
 *     lock.unlock();
 * }
 * }</pre>
 *
 * <p>In Spring, call it inside the {@code @Transactional} method with the connection Spring
 * bound to the transaction ({@code DataSourceUtils.getConnection(dataSource)}). The statements
 * are the core's ({@link #statements()}), the same text every runtime sends.
 */
public final class JdbcFence {
    private static final Map<String, String> STATEMENTS;

    static {
        String[] flat = Native.fenceSql();
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < flat.length; i += 2) {
            m.put(flat[i], flat[i + 1]);
        }
        STATEMENTS = Collections.unmodifiableMap(m);
    }

    private JdbcFence() {}

    /** The statements the guards send, by name ({@code postgres_guard}, {@code mysql_read}, ...). */
    public static Map<String, String> statements() {
        return STATEMENTS;
    }

    /**
     * Make the fence table on {@code db}'s database. DDL commits on MySQL: call it once at setup,
     * never inside the transaction that writes. Two sessions making it at once can collide in
     * PostgreSQL's catalog: the one that lost finds the table there and returns too.
     */
    public static void setup(Connection db) throws SQLException {
        String dialect = dialect(db);
        try (Statement s = db.createStatement()) {
            s.execute(STATEMENTS.get(dialect + "_table"));
        } catch (SQLException e) {
            if (!db.getAutoCommit()) {
                db.rollback();
            }
            try (Statement s = db.createStatement()) {
                s.executeQuery("SELECT token FROM polylock_fence WHERE 1 = 0").close();
            } catch (SQLException gone) {
                throw e;
            }
        }
    }

    /**
     * Take the guard row of {@code name} with {@code token} in the transaction {@code db} is in
     * (auto-commit off). The row stays locked until the transaction ends, so a stale writer that
     * comes meanwhile waits, then is refused.
     *
     * @throws StaleTokenException when a larger token was accepted: roll the transaction back
     * @throws InvalidArgumentException for a token below 1 or a name of more than 255 characters
     */
    public static void guard(Connection db, String name, long token) throws SQLException {
        Objects.requireNonNull(db, "db");
        Objects.requireNonNull(name, "name");
        Native.fenceChecked(name, token);
        String dialect = dialect(db);
        try (PreparedStatement s = db.prepareStatement(jdbc(dialect + "_guard"))) {
            s.setString(1, name);
            s.setLong(2, token);
            if (s.executeUpdate() == 1 && dialect.equals("postgres")) {
                return;
            }
        }
        long accepted;
        try (PreparedStatement s = db.prepareStatement(jdbc(dialect + "_read"))) {
            s.setString(1, name);
            try (ResultSet r = s.executeQuery()) {
                if (!r.next()) {
                    throw new PolylockException(
                            PolylockException.Code.INTERNAL, "the fence's row is gone within its transaction");
                }
                accepted = r.getLong(1);
            }
        }
        if (accepted > token) {
            throw new StaleTokenException(
                    "the fence of '" + name + "' already accepted token " + accepted + "; token " + token
                            + " is older: its holder's lease had ended. Roll the transaction back: its"
                            + " writes must not commit");
        }
    }

    private static String dialect(Connection db) throws SQLException {
        String product = db.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
        if (product.contains("postgres")) {
            return "postgres";
        }
        if (product.contains("mysql") || product.contains("mariadb")) {
            return "mysql";
        }
        throw new InvalidArgumentException(
                "JdbcFence: no SQL dialect known for " + product + ": PostgreSQL, MySQL and MariaDB are");
    }

    /** A statement with JDBC's placeholders ({@code ?} for PostgreSQL's {@code $1}). */
    private static String jdbc(String what) {
        return STATEMENTS.get(what).replaceAll("\\$\\d+", "?");
    }
}
