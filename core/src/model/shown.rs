//! Text from outside shown safely. A lock name (Redis and etcd names may hold any byte but NUL),
//! a holder's identity or a server's error message is written by someone else: a terminal that
//! is sent it raw obeys what it holds (`ESC ]0;...BEL` sets the window title, other sequences
//! move the cursor, rewrite lines, or answer into the input). Everything polylock prints for a
//! person (the CLI's lines, `top`'s cells, the core's log messages) passes through [`escape`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a terminal may obey `c` instead of showing it: the C0 controls (line breaks too: a
/// name must not forge a line of its own), DEL, the C1 controls (U+0080 to U+009F, which some
/// terminals take as 8-bit escape introducers), and the bidirectional controls that reorder the
/// text shown after them.
pub fn is_obeyed(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every character a terminal would obey written as `\u001b` (four hex digits: each
/// such character is in the Basic Multilingual Plane). The notation is JSON's, so a JSON text
/// stays a JSON text of the same value; other text reads it as plainly. Text without such a
/// character is returned as it is.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_obeyed) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_obeyed(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_written_as_escapes() {
        assert_eq!(escape("orders:42"), "orders:42");
        assert!(matches!(escape("naïve 名前"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}]0;pwned\u{7}b"), "a\\u001b]0;pwned\\u0007b");
        assert_eq!(escape("x\ny\rz\t"), "x\\u000ay\\u000dz\\u0009");
        assert_eq!(escape("\u{7f}\u{9b}2J"), "\\u007f\\u009b2J");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u202efed");
        assert_eq!(escape("\u{2066}x\u{2069}"), "\\u2066x\\u2069");
        assert_eq!(escape("\0"), "\\u0000");
    }

    /// A JSON text escaped is a JSON text of the same value.
    #[test]
    fn json_stays_json() {
        let v = serde_json::json!({"name": "a\u{1b}[2J\u{9b}\u{202e}\u{7f}", "n": 1});
        let text = v.to_string();
        let shown = escape(&text);
        assert!(!shown.chars().any(is_obeyed), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, v);
    }
}
