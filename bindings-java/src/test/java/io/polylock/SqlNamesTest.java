package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.junit.jupiter.api.Test;

/**
 * The SQL suites' copy of DistributedLock's name rules gives the protocol's test vectors
 * (PROTOCOL.md); the suites then show on the servers that polylock locks exactly these.
 */
class SqlNamesTest {
    @Test
    void mysqlNamesFollowDistributedLock() {
        assertEquals("abc", SqlNames.mysqlLockName("abc"));
        assertEquals("abczj4qr6tvn4a3kmgq4bukhowqyfrlxsb3", SqlNames.mysqlLockName("ABC"));
        assertEquals("__empty__p6ad62yppho33ytkibum5wbqhqvbcsxa", SqlNames.mysqlLockName(""));
        String n64 = "a".repeat(64);
        assertEquals(n64, SqlNames.mysqlLockName(n64));
        String hashed = SqlNames.mysqlLockName("a".repeat(65));
        assertEquals(64, hashed.length());
        assertEquals("a".repeat(32), hashed.substring(0, 32));
        assertNotEquals(hashed, SqlNames.mysqlLockName("a".repeat(66)));
        // Lower-case non-ASCII names are used as they are.
        assertEquals("商品库存", SqlNames.mysqlLockName("商品库存"));
    }

    @Test
    void postgresKeysFollowDistributedLock() {
        assertEquals(SqlNames.PgKey.pair(-507549795, -1678644353), SqlNames.pgKey("polylock"));
        assertEquals(SqlNames.PgKey.pair(2147483647, -1), SqlNames.pgKey(""));
        assertEquals(SqlNames.PgKey.big(-5707277204051710361L), SqlNames.pgKey("漢".repeat(18)));
        assertEquals(SqlNames.PgKey.big(42), SqlNames.pgKey("000000000000002a"));
        assertEquals(SqlNames.PgKey.big(-1), SqlNames.pgKey("ffffffffffffffff"));
        assertEquals(SqlNames.PgKey.pair(0x7fffffff, -2), SqlNames.pgKey("7fffffff,fffffffe"));
        assertEquals("advisory:-507549795,-1678644353", SqlNames.pgKey("polylock").fenceRow());
        assertEquals("advisory:42", SqlNames.pgKey("000000000000002a").fenceRow());
    }
}
