//! Names of locks and other primitives, checked the same way for every backend.

use super::error::{Error, Result};

/// Longest accepted lock name, in bytes.
pub const MAX_NAME_LEN: usize = 64 * 1024;

/// Validate a lock name (shared by every backend; a backend may add rules of its own, such as
/// ZooKeeper's path syntax).
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("lock name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "lock name is {} bytes long; the limit is {MAX_NAME_LEN}",
            name.len()
        )));
    }
    if name.contains('\0') {
        return Err(Error::invalid("lock name must not contain NUL bytes"));
    }
    Ok(())
}

/// A string argument as a runtime with UTF-16 strings hands it over (JavaScript, Java), decoded
/// strictly: a lone surrogate is `InvalidArgument` naming `what`. A lossy decoding would turn
/// every lone surrogate into U+FFFD, so that two different names met on one lock.
pub fn text_from_utf16(units: &[u16], what: &str) -> Result<String> {
    String::from_utf16(units).map_err(|_| {
        Error::invalid(format!(
            "{what} holds a lone UTF-16 surrogate (half of a pair): it has no UTF-8 form, and \
             replacing it would make different names the same"
        ))
    })
}

/// A string argument in Java's modified UTF-8 (JNI's `GetStringUTFChars`: `C0 80` for U+0000,
/// each UTF-16 surrogate as three bytes of its own), decoded strictly as [`text_from_utf16`].
pub fn text_from_java_utf8(bytes: &[u8], what: &str) -> Result<String> {
    let bad = || Error::invalid(format!("{what} is not valid modified UTF-8"));
    let mut units = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let cont = |j: usize| -> Result<u16> {
            match bytes.get(j) {
                Some(&c) if c & 0xC0 == 0x80 => Ok(u16::from(c & 0x3F)),
                _ => Err(bad()),
            }
        };
        let (unit, len) = match b {
            0x01..=0x7F => (u16::from(b), 1),
            0xC0..=0xDF => ((u16::from(b & 0x1F) << 6) | cont(i + 1)?, 2),
            0xE0..=0xEF => (
                (u16::from(b & 0x0F) << 12) | (cont(i + 1)? << 6) | cont(i + 2)?,
                3,
            ),
            _ => return Err(bad()),
        };
        units.push(unit);
        i += len;
    }
    text_from_utf16(&units, what)
}

/// A Redis-style glob: `*` any run of characters, `?` one character, everything else itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::error::ErrorKind;

    #[test]
    fn lone_surrogates_are_refused_and_pairs_kept() {
        // "a\u{1F512}" as UTF-16: a pair.
        let pair: Vec<u16> = "a\u{1F512}".encode_utf16().collect();
        assert_eq!(text_from_utf16(&pair, "name").unwrap(), "a\u{1F512}");
        for lone in [vec![0x61, 0xD800], vec![0xDC00, 0x61], vec![0xDBFF]] {
            let e = text_from_utf16(&lone, "name").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains("name holds a lone"), "{e}");
        }
        // Two lone surrogates that a lossy decoding makes one name.
        assert_eq!(
            String::from_utf16_lossy(&[0xD800]),
            String::from_utf16_lossy(&[0xD801])
        );
    }

    #[test]
    fn java_modified_utf8_is_decoded_strictly() {
        // U+0000 as C0 80, 'é', and U+1F512 as two three-byte surrogates.
        let bytes = [0xC0, 0x80, 0xC3, 0xA9, 0xED, 0xA0, 0xBD, 0xED, 0xB4, 0x92];
        assert_eq!(text_from_java_utf8(&bytes, "name").unwrap(), "\0é\u{1F512}");
        // A lone high surrogate (ED A0 80 = U+D800).
        let e = text_from_java_utf8(&[0x61, 0xED, 0xA0, 0x80], "name").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        // Truncated and stray bytes.
        for bad in [
            &[0xC3][..],
            &[0xE0, 0x80][..],
            &[0x80][..],
            &[0xF0, 0x9F, 0x94, 0x92][..],
            &[0x00][..],
        ] {
            assert!(text_from_java_utf8(bad, "name").is_err(), "{bad:?}");
        }
    }
}
