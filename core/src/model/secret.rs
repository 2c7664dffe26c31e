//! Secrets out of every output: the one function that shows a URL (or a list of them) with its
//! passwords masked, the scrubbing of a message that may quote them, and a `Secret` whose `Debug`
//! never shows its text.
//!
//! What counts as a secret in a URL: the password of its userinfo (`user:password@`; the
//! userinfo ends at the last `@` of the part before the host list, so a password holding `@`, `#`,
//! `/` or `?` is masked whole), and the value of every query parameter whose name contains
//! `password`, `passwd`, `secret` or `token` (`sentinel_password=`, `tls_key_password=`, ...).
//! Masking errs on the side of hiding: a URL that cannot be read masks more, never less.

use std::fmt;

/// What every masked secret becomes.
pub const MASK: &str = "***";

/// Query parameters whose values are secrets: names containing one of these (any case).
const SECRET_PARAMS: [&str; 4] = ["password", "passwd", "secret", "token"];

fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|s| name.contains(s))
}

/// The byte index of the `@` that ends the userinfo of `rest` (a URL after its `scheme://`), if
/// it has one: the last `@` whose following text, up to the next `/`, `?` or `#`, holds no `=`
/// or `&` (so it reads as hosts, not as a query value). A password may hold `@`, `/`, `?` or `#`
/// unescaped: taking the last such `@` keeps all of it inside the userinfo.
pub(crate) fn userinfo_end(rest: &str) -> Option<usize> {
    rest.match_indices('@').map(|(i, _)| i).rev().find(|&i| {
        let after = &rest[i + 1..];
        let hosts = after.split(['/', '?', '#']).next().unwrap_or_default();
        !hosts.contains(['=', '&'])
    })
}

/// `url` with every secret masked (see the module's rules): `redis://app:***@h:6379/0`,
/// `redis+sentinel://h:26379/m?sentinel_password=***`. A comma-separated list of URLs (as some
/// forms take, e.g. `redis://a,redis://b`) has each masked. Text without `://` is returned as is
/// unless it looks like `user:password@host`, whose password is masked too.
pub fn redact_url(url: &str) -> String {
    // A list of whole URLs: mask each (a host list inside one URL has no second "://").
    if url.matches("://").count() > 1 {
        let starts: Vec<usize> = url.match_indices("://").map(|(i, _)| i).collect();
        // Split before each scheme after the first: at the last ',' or whitespace before it.
        let mut cuts = vec![0];
        for &s in &starts[1..] {
            let head = &url[..s];
            if let Some(c) = head.rfind([',', ' ', ';']) {
                if c + 1 > *cuts.last().unwrap_or(&0) {
                    cuts.push(c + 1);
                }
            }
        }
        cuts.push(url.len());
        let mut out = String::with_capacity(url.len());
        for w in cuts.windows(2) {
            out.push_str(&redact_one(&url[w[0]..w[1]]));
        }
        return out;
    }
    redact_one(url)
}

fn redact_one(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let mut out = String::with_capacity(url.len());
    if let Some(s) = scheme {
        out.push_str(s);
        out.push_str("://");
    }
    let after_userinfo = match userinfo_end(rest) {
        Some(at) => {
            let info = &rest[..at];
            match info.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(MASK);
                }
                // A lone token before '@' (a Redis password-only form, `redis://:pw@` has the
                // ':'): without a scheme it may be anything, so mask it.
                None if scheme.is_none() => out.push_str(MASK),
                None => out.push_str(info),
            }
            out.push('@');
            &rest[at + 1..]
        }
        None => rest,
    };
    // The query: mask the values of secret parameters; the fragment is kept.
    let (before_query, query) = match after_userinfo.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (after_userinfo, None),
    };
    out.push_str(before_query);
    if let Some(q) = query {
        out.push('?');
        let (q, fragment) = match q.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (q, None),
        };
        for (i, pair) in q.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            match pair.split_once('=') {
                Some((k, _)) if is_secret_param(k) => {
                    out.push_str(k);
                    out.push('=');
                    out.push_str(MASK);
                }
                _ => out.push_str(pair),
            }
        }
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
    }
    out
}

/// `text` with every URL in it redacted ([`redact_url`]): a URL is a scheme, `://` and what
/// follows up to whitespace or a quote. For text whose URLs nobody named (a log line, a driver's
/// message): the last line of defence, after each message masked what it knew.
pub fn redact_text(text: &str) -> String {
    if !text.contains("://") {
        return text.to_string();
    }
    let ends = |c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '<' | '>');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')))
            .map_or(0, |j| j + 1);
        let end = rest[i + 3..].find(ends).map_or(rest.len(), |j| i + 3 + j);
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Every secret of `url` (or of a comma-separated list of URLs), as written and percent-decoded:
/// what [`scrub`] removes from a message.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut add = |s: &str| {
        if s.is_empty() {
            return;
        }
        for v in [s.to_string(), percent_decode(s)] {
            if !found.contains(&v) {
                found.push(v);
            }
        }
    };
    for part in url.split([',', ' ', ';']) {
        let rest = part.split_once("://").map_or(part, |(_, r)| r);
        let hosts_and_query = match userinfo_end(rest) {
            Some(at) => {
                if let Some((_, pw)) = rest[..at].split_once(':') {
                    add(pw);
                }
                &rest[at + 1..]
            }
            None => rest,
        };
        if let Some((_, q)) = hosts_and_query.split_once('?') {
            let q = q.split('#').next().unwrap_or_default();
            for pair in q.split('&') {
                if let Some((k, v)) = pair.split_once('=') {
                    if is_secret_param(k) {
                        add(v);
                    }
                }
            }
        }
    }
    // The userinfo of a list's later URLs sits after a ',' (split above); a password holding ','
    // is caught whole by the first URL's userinfo rule only when it is the first: mask the raw
    // userinfo of the whole text too.
    if let Some((_, rest)) = url.split_once("://") {
        if let Some(at) = userinfo_end(rest) {
            if let Some((_, pw)) = rest[..at].split_once(':') {
                if !pw.contains("://") {
                    add(pw);
                }
            }
        }
    }
    found
}

/// `msg` with every secret of `url` masked: first each place `url` itself is quoted (raw) is
/// replaced by [`redact_url`], then each secret that still occurs as `:secret@` or `=secret`, and
/// each secret of four characters or more wherever it occurs (a driver's message may quote a
/// password out of its URL). A shorter secret is masked only in those URL contexts: masking every
/// "a" of a message would say nothing and hide nothing.
pub fn scrub(msg: &str, url: &str) -> String {
    let mut out = msg.replace(url, &redact_url(url));
    let mut secrets = url_secrets(url);
    // Longest first, so a secret that contains another is masked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for s in &secrets {
        out = out.replace(&format!(":{s}@"), &format!(":{MASK}@"));
        out = out.replace(&format!("={s}"), &format!("={MASK}"));
        if s.chars().count() >= 4 {
            out = out.replace(s.as_str(), MASK);
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// A secret (a password): its `Debug` and `Display` show `***`, so a struct that holds one may
/// derive `Debug`. [`Secret::expose`] gives the text to the one place that sends it.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Keep `text` as a secret.
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The secret's text, for the call that sends it to the server.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// URLs with secrets, and the one secret text each must never show.
    const SECRET_URLS: &[(&str, &str)] = &[
        ("redis://app:S3cr3t-pw@127.0.0.1:6379/0", "S3cr3t-pw"),
        ("redis://app:p@ss@w0rd@127.0.0.1:6379", "p@ss@w0rd"),
        ("redis://app:pa#ss/wd?x@127.0.0.1:6379", "pa#ss/wd?x"),
        ("redis://:onlypassword@127.0.0.1:6379", "onlypassword"),
        (
            "redis+sentinel://h:26379/m/x?sentinel_password=SentPW9",
            "SentPW9",
        ),
        (
            "redis+sentinel://su:SentPW9@h:26379,h2:26380/m?sentinel_user=su&sentinel_password=Other77",
            "Other77",
        ),
        ("zk://alice:ZkDigest1@127.0.0.1:2181/app", "ZkDigest1"),
        ("etcds://root:EtcdPW!@127.0.0.1:2389?tls_ca_file=/x", "EtcdPW!"),
        ("postgres://u:PgPw%40x@127.0.0.1:5433/db?sslmode=require", "PgPw%40x"),
        ("mysql://u:My$ql_pw@127.0.0.1:3307/db", "My$ql_pw"),
        ("redis://h:1?auth_token=Tok123&x=1", "Tok123"),
    ];

    #[test]
    fn no_secret_survives_redaction() {
        for (url, secret) in SECRET_URLS {
            let shown = redact_url(url);
            assert!(!shown.contains(secret), "{url} -> {shown}");
            assert!(shown.contains(MASK), "{url} -> {shown}");
        }
    }

    #[test]
    fn the_rest_of_the_url_stays_readable() {
        assert_eq!(
            redact_url("redis://app:pw@127.0.0.1:6379/0?wait_replicas=1"),
            "redis://app:***@127.0.0.1:6379/0?wait_replicas=1"
        );
        assert_eq!(
            redact_url("redis+sentinel://h:26379/m/x?sentinel_password=PW"),
            "redis+sentinel://h:26379/m/x?sentinel_password=***"
        );
        assert_eq!(redact_url("redis://app:p@ss@h:1"), "redis://app:***@h:1");
        assert_eq!(redact_url("zk://h:2181/app"), "zk://h:2181/app");
        assert_eq!(
            redact_url("redis://default@h:6379"),
            "redis://default@h:6379"
        );
        // A '@' in a query value cannot be told from a password holding '?': masking errs on
        // the side of hiding.
        assert!(!redact_url("redis://u:p?a@h:1").contains("p?a"));
    }

    #[test]
    fn a_list_of_urls_is_masked_url_by_url() {
        let list = "redis://a:PwOne1@h1:6381,redis://b:PwTwo2@h2:6382,redis://:PwThree3@h3:6383";
        let shown = redact_url(list);
        for s in ["PwOne1", "PwTwo2", "PwThree3"] {
            assert!(!shown.contains(s), "{shown}");
        }
        assert_eq!(
            shown,
            "redis://a:***@h1:6381,redis://b:***@h2:6382,redis://:***@h3:6383"
        );
    }

    #[test]
    fn scrub_masks_secrets_quoted_anywhere_in_a_message() {
        for (url, secret) in SECRET_URLS {
            let msg =
                format!("could not connect to {url}: the driver said password {secret} is wrong");
            let shown = scrub(&msg, url);
            assert!(!shown.contains(secret), "{shown}");
        }
        // A one-character password is masked where the URL shows it, not in every word.
        let url = "redis://u:x@h:1";
        let shown = scrub(&format!("malformed URL '{url}': no db; expected x"), url);
        assert_eq!(
            shown,
            "malformed URL 'redis://u:***@h:1': no db; expected x"
        );
    }

    #[test]
    fn urls_inside_any_text_are_redacted() {
        for (url, secret) in SECRET_URLS {
            let text = format!("polylock: malformed URL '{url}': no such thing\nnext line {url}");
            let shown = redact_text(&text);
            assert!(!shown.contains(secret), "{shown}");
            assert!(shown.starts_with("polylock: malformed URL '"), "{shown}");
        }
        assert_eq!(redact_text("no url here: a:b@c"), "no url here: a:b@c");
    }

    #[test]
    fn a_secret_never_shows_in_debug() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?} {s}"), "*** ***");
        assert_eq!(s.expose(), "hunter2");
    }
}
