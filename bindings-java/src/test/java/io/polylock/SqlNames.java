package io.polylock;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;

/**
 * What the server locks for a lock name, by DistributedLock's rules (PROTOCOL.md, core's
 * {@code sql/names.rs}), written again here so that the SQL suites can lock the same thing through
 * plain JDBC and find polylock's hold on the server. {@link SqlNamesTest} checks the protocol's
 * test vectors.
 */
final class SqlNames {
    private SqlNames() {}

    /** Longest {@code GET_LOCK} name used as it is. */
    static final int MYSQL_MAX_NAME = 64;

    /** The {@code GET_LOCK} name of a lock name. */
    static String mysqlLockName(String name) {
        String base = name.isEmpty() ? "__empty__" : lowerSimple(name);
        if (base.equals(name) && name.length() <= MYSQL_MAX_NAME) {
            return name;
        }
        byte[] hash = digest("SHA-512", name);
        String prefix = base.length() <= 32 ? base : base.substring(0, 32);
        return prefix + base32LsbFirst(hash, 20);
    }

    /** Lower case per character, keeping a character whose lower case is not one character. */
    private static String lowerSimple(String s) {
        StringBuilder out = new StringBuilder(s.length());
        s.codePoints().forEach(cp -> {
            String one = new String(Character.toChars(cp));
            String lower = one.toLowerCase(Locale.ROOT);
            out.append(lower.codePointCount(0, lower.length()) == 1 ? lower : one);
        });
        return out.toString();
    }

    /** DistributedLock's base 32 of the first {@code n} bytes: low bits first, alphabet a-z2-7. */
    private static String base32LsbFirst(byte[] bytes, int n) {
        final String alphabet = "abcdefghijklmnopqrstuvwxyz234567";
        StringBuilder out = new StringBuilder();
        int buffer = 0;
        int bits = 0;
        int next = 0;
        while (true) {
            if (bits < 5) {
                if (next < n) {
                    buffer |= (bytes[next++] & 0xff) << bits;
                    bits += 8;
                } else if (bits == 0) {
                    break;
                } else {
                    bits = 5;
                }
            }
            out.append(alphabet.charAt(buffer & 31));
            buffer >>>= 5;
            bits -= 5;
        }
        return out.toString();
    }

    /** A PostgreSQL advisory lock key: a bigint, or a pair of int4 (the two do not overlap). */
    static final class PgKey {
        final boolean big;
        final long value; // the bigint
        final int key1;
        final int key2;

        private PgKey(boolean big, long value, int key1, int key2) {
            this.big = big;
            this.value = value;
            this.key1 = key1;
            this.key2 = key2;
        }

        static PgKey big(long v) {
            return new PgKey(true, v, (int) (v >>> 32), (int) v);
        }

        static PgKey pair(int a, int b) {
            return new PgKey(false, 0, a, b);
        }

        /** The arguments of pg_advisory_lock and friends, as SQL placeholders. */
        String placeholders() {
            return big ? "?::int8" : "?::int4, ?::int4";
        }

        /** Bind the key at parameter {@code first} (and the next). */
        void bind(java.sql.PreparedStatement st, int first) throws java.sql.SQLException {
            if (big) {
                st.setLong(first, value);
            } else {
                st.setInt(first, key1);
                st.setInt(first + 1, key2);
            }
        }

        /** pg_locks shows the key as classid, objid (unsigned 32-bit halves) and objsubid. */
        long classid() {
            return Integer.toUnsignedLong(key1);
        }

        long objid() {
            return Integer.toUnsignedLong(key2);
        }

        int objsubid() {
            return big ? 1 : 2;
        }

        /** The row of polylock_fencing that counts this key's holders. */
        String fenceRow() {
            return big ? "advisory:" + value : "advisory:" + key1 + "," + key2;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof PgKey)) {
                return false;
            }
            PgKey k = (PgKey) o;
            return big == k.big && value == k.value && key1 == k.key1 && key2 == k.key2;
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(big, value, key1, key2);
        }

        @Override
        public String toString() {
            return big ? "bigint " + value : "pair (" + key1 + ", " + key2 + ")";
        }
    }

    /** The advisory lock key of a lock name (DistributedLock's rule, hashing allowed). */
    static PgKey pgKey(String name) {
        if (name.length() <= 9 && name.chars().allMatch(c -> c <= 0x7f)) {
            long v = 0;
            for (int i = 0; i < name.length(); i++) {
                v = (v << 7) | name.charAt(i);
            }
            v <<= 1;
            for (int i = name.length(); i < 9; i++) {
                v = (v << 7) | 0x7f;
            }
            return PgKey.pair((int) (v >>> 32), (int) v);
        }
        if (name.length() == 16 && isHex(name)) {
            return PgKey.big(Long.parseUnsignedLong(name, 16));
        }
        int comma = name.indexOf(',');
        if (comma == 8 && name.length() == 17 && isHex(name.substring(0, 8)) && isHex(name.substring(9))) {
            return PgKey.pair((int) Long.parseLong(name.substring(0, 8), 16), (int) Long.parseLong(name.substring(9), 16));
        }
        byte[] hash = digest("SHA-1", name);
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (hash[i] & 0xff);
        }
        return PgKey.big(v);
    }

    private static boolean isHex(String s) {
        return s.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
    }

    private static byte[] digest(String algorithm, String text) {
        try {
            return MessageDigest.getInstance(algorithm).digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
