//! How a lock name becomes what the server locks: DistributedLock's rules (PROTOCOL.md), so that
//! a .NET service on DistributedLock and polylock lock the same thing for the same name.
//!
//! - MySQL/MariaDB `GET_LOCK`: names that are lower case and at most 64 UTF-16 units long are
//!   used unchanged; any other name becomes its first 32 lower-cased characters followed by 32
//!   characters of its SHA-512 (DistributedLock's own base-32 bit order).
//! - PostgreSQL advisory locks: short ASCII names are packed into an `int4` pair, 16 hex digits
//!   are a `bigint` key (the key of a service that already calls `pg_advisory_lock(bigint)`),
//!   `8hex,8hex` an `int4` pair, and anything else is hashed (SHA-1) to a `bigint`.

use sha1::Digest as _;

/// Longest `GET_LOCK` name (MySQL 5.7+; MariaDB 10.11 accepts longer ones, checked on a server).
pub(crate) const MYSQL_MAX_NAME: usize = 64;

/// The `GET_LOCK` name of a lock name (DistributedLock's `MySqlDistributedLock` rule).
pub(crate) fn mysql_lock_name(name: &str) -> std::borrow::Cow<'_, str> {
    // The common case at once: short, ASCII, no capitals (the name is its own key).
    if !name.is_empty()
        && name.len() <= MYSQL_MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
    {
        return name.into();
    }
    let base = if name.is_empty() {
        "__empty__".to_string()
    } else {
        lower_simple(name)
    };
    if base == name && name.encode_utf16().count() <= MYSQL_MAX_NAME {
        return name.into();
    }
    let hash = sha2::Sha512::digest(name.as_bytes());
    let mut out = first_utf16_units(&base, 32);
    out.push_str(&base32_lsb_first(&hash[..20]));
    out.into()
}

/// Lower case one character at a time, keeping a character whose lower case is not exactly one
/// character (the simple mapping of .NET's `ToLowerInvariant`; unverified beyond ASCII).
fn lower_simple(s: &str) -> String {
    s.chars()
        .map(|c| {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => l,
                _ => c,
            }
        })
        .collect()
}

/// The first `n` UTF-16 units of `s`, as .NET's `Substring(0, n)`; a surrogate pair cut in half
/// becomes U+FFFD, which is what a lone surrogate turns into when it is sent as UTF-8.
fn first_utf16_units(s: &str, n: usize) -> String {
    let units: Vec<u16> = s.encode_utf16().take(n).collect();
    String::from_utf16_lossy(&units)
}

/// DistributedLock's base 32: least significant bits first, alphabet `a-z2-7`.
fn base32_lsb_first(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len() * 8 / 5 + 1);
    let (mut buffer, mut bits) = (0u32, 0u32);
    let mut next = bytes.iter();
    loop {
        if bits < 5 {
            match next.next() {
                Some(b) => {
                    buffer |= (*b as u32) << bits;
                    bits += 8;
                }
                None if bits == 0 => break,
                None => bits = 5, // the last, partial character
            }
        }
        out.push(ALPHABET[(buffer & 31) as usize] as char);
        buffer >>= 5;
        bits -= 5;
    }
    out
}

/// A PostgreSQL advisory lock key. The two key spaces do not overlap on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PgKey {
    /// `pg_advisory_lock(bigint)`.
    Big(i64),
    /// `pg_advisory_lock(int4, int4)`.
    Pair(i32, i32),
}

impl PgKey {
    /// The key as text: the row of its fencing counter, and for messages.
    pub(crate) fn describe(self) -> String {
        match self {
            PgKey::Big(k) => format!("advisory:{k}"),
            PgKey::Pair(a, b) => format!("advisory:{a},{b}"),
        }
    }
}

/// The advisory lock key of a lock name (DistributedLock's `PostgresAdvisoryLockKey(name,
/// allowHashing: true)`).
pub(crate) fn pg_key(name: &str) -> PgKey {
    // Up to nine UTF-16 units, each ASCII: up to nine ASCII bytes.
    if name.len() <= 9 && name.is_ascii() {
        let mut v: u64 = 0;
        for b in name.bytes() {
            v = (v << 7) | b as u64;
        }
        v <<= 1;
        for _ in name.len()..9 {
            v = (v << 7) | 0x7f;
        }
        return PgKey::Pair((v >> 32) as u32 as i32, v as u32 as i32);
    }
    if name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
        if let Ok(v) = u64::from_str_radix(name, 16) {
            return PgKey::Big(v as i64);
        }
    }
    // "xxxxxxxx,xxxxxxxx": only a name of 17 bytes is searched for the comma.
    if let Some((a, b)) = (name.len() == 17).then(|| name.split_once(',')).flatten() {
        let hex8 = |s: &str| s.len() == 8 && s.bytes().all(|c| c.is_ascii_hexdigit());
        if hex8(a) && hex8(b) {
            if let (Ok(a), Ok(b)) = (u32::from_str_radix(a, 16), u32::from_str_radix(b, 16)) {
                return PgKey::Pair(a as i32, b as i32);
            }
        }
    }
    let hash = sha1::Sha1::digest(name.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    PgKey::Big(i64::from_le_bytes(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DistributedLock's published examples (PROTOCOL.md).
    #[test]
    fn mysql_names_follow_distributed_lock() {
        assert_eq!(mysql_lock_name("abc"), "abc");
        assert_eq!(
            mysql_lock_name("ABC"),
            "abczj4qr6tvn4a3kmgq4bukhowqyfrlxsb3"
        );
        assert_eq!(
            mysql_lock_name(""),
            "__empty__p6ad62yppho33ytkibum5wbqhqvbcsxa"
        );
        // Lower case and at most 64: unchanged; 65: hashed down to 64.
        let n64 = "a".repeat(64);
        assert_eq!(mysql_lock_name(&n64), n64);
        let n65 = "a".repeat(65);
        let m = mysql_lock_name(&n65);
        assert_eq!(m.chars().count(), 64);
        assert!(m.starts_with(&"a".repeat(32)));
        assert_ne!(mysql_lock_name(&"a".repeat(66)), m);
        // Non-ASCII: lower case is kept as it is, upper case is hashed; never over 64.
        assert_eq!(mysql_lock_name("商品"), "商品");
        let long = "商品".repeat(40);
        assert_eq!(mysql_lock_name(&long).encode_utf16().count(), 64);
        assert!(mysql_lock_name("Ärger").starts_with("ärger"));
    }

    #[test]
    fn base32_is_least_significant_bits_first() {
        // 0xff: the low five bits (31 -> '7'), then the high three (7 -> 'h').
        assert_eq!(base32_lsb_first(&[0xff]), "7h");
        assert_eq!(base32_lsb_first(&[0x01, 0x00]), "baaa");
        assert_eq!(base32_lsb_first(&[0u8; 20]).len(), 32);
    }

    /// DistributedLock's published examples (PROTOCOL.md).
    #[test]
    fn postgres_keys_follow_distributed_lock() {
        assert_eq!(pg_key(&"漢".repeat(18)), PgKey::Big(-5707277204051710361));
        assert_eq!(pg_key("polylock"), PgKey::Pair(-507549795, -1678644353));
        assert_eq!(pg_key(""), PgKey::Pair(2147483647, -1));
        // 16 hex digits: the bigint a pg_advisory_lock(bigint) user already locks.
        assert_eq!(pg_key("000000000000002a"), PgKey::Big(42));
        assert_eq!(pg_key("ffffffffffffffff"), PgKey::Big(-1));
        assert_eq!(pg_key("00000001,00000002"), PgKey::Pair(1, 2));
        // Ten ASCII characters no longer fit the pair: hashed.
        assert!(matches!(pg_key("abcdefghij"), PgKey::Big(_)));
        assert_ne!(pg_key("abcdefghij"), pg_key("abcdefghik"));
    }
}
