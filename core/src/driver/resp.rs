//! RESP2 framing with no socket: where the first complete reply in a buffer ends, and the
//! `redis::Value` of the replies polylock's commands get (integers, strings, nil and arrays of
//! these), exactly as redis-rs's parser gives them. Other replies (server errors) are parsed by
//! redis-rs's parser, so a reply read on a host loop becomes the `redis::Value` (or server error)
//! the tokio path would give.

/// Why bytes are not RESP2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadFrame(pub(crate) String);

/// The length of the first complete reply at the start of `buf`: `Ok(None)` while it is
/// incomplete (read more), an error when the bytes cannot be RESP2 (the connection is then out
/// of step and must be closed).
pub(crate) fn frame_len(buf: &[u8]) -> Result<Option<usize>, BadFrame> {
    frame_end(buf, 0, 0)
}

/// Deepest nesting accepted (polylock's scripts answer at most an array of arrays).
const MAX_DEPTH: usize = 32;

fn frame_end(buf: &[u8], at: usize, depth: usize) -> Result<Option<usize>, BadFrame> {
    if depth > MAX_DEPTH {
        return Err(BadFrame("replies nested too deep".into()));
    }
    let Some(&kind) = buf.get(at) else {
        return Ok(None);
    };
    let Some(line_end) = line_end(buf, at + 1) else {
        return Ok(None);
    };
    let line = &buf[at + 1..line_end];
    let after_line = line_end + 2;
    match kind {
        b'+' | b'-' | b':' => Ok(Some(after_line)),
        b'$' => {
            let n = number(line)?;
            if n < 0 {
                return Ok(Some(after_line));
            }
            let end = after_line + n as usize + 2;
            if buf.len() < end {
                return Ok(None);
            }
            if &buf[end - 2..end] != b"\r\n" {
                return Err(BadFrame("a bulk string does not end with CRLF".into()));
            }
            Ok(Some(end))
        }
        b'*' => {
            let n = number(line)?;
            let mut end = after_line;
            for _ in 0..n.max(0) {
                match frame_end(buf, end, depth + 1)? {
                    Some(e) => end = e,
                    None => return Ok(None),
                }
            }
            Ok(Some(end))
        }
        other => Err(BadFrame(format!(
            "unexpected reply type byte {other:#04x} (polylock speaks RESP2 on this connection)"
        ))),
    }
}

/// Where the CRLF of the line starting at `from` begins.
fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let rest = buf.get(from..)?;
    rest.windows(2).position(|w| w == b"\r\n").map(|i| from + i)
}

fn number(line: &[u8]) -> Result<i64, BadFrame> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|n| *n >= -1 && *n <= 512 * 1024 * 1024)
        .ok_or_else(|| BadFrame(format!("bad length {:?}", String::from_utf8_lossy(line))))
}

/// The value of a complete frame (as [`frame_len`] found it), as redis-rs's parser gives it, for
/// integers, simple and bulk strings, nil and arrays of these; `None` for anything else (an error
/// reply, say), which redis-rs's parser then takes. A hand-written walk: redis-rs's parser took
/// about a microsecond per reply, a good share of a loop driver's call.
pub(crate) fn parse(frame: &[u8]) -> Option<redis::Value> {
    let (v, end) = value(frame, 0, 0)?;
    (end == frame.len()).then_some(v)
}

/// The first reply in `input`, if it has all arrived: the reply and where it ends. An
/// `InvalidData` error when the bytes cannot be RESP2 (the connection is out of step).
pub(crate) fn next_reply(
    input: &[u8],
    errors: &mut redis::Parser,
) -> std::io::Result<Option<(redis::RedisResult<redis::Value>, usize)>> {
    match frame_len(input) {
        Ok(Some(n)) => Ok(Some((reply(&input[..n], errors), n))),
        Ok(None) => Ok(None),
        Err(bad) => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, bad.0)),
    }
}

/// The reply of a complete frame: [`parse`]'s walk, or `errors` (redis-rs's parser, kept by
/// the connection) for what the walk leaves to it.
pub(crate) fn reply(frame: &[u8], errors: &mut redis::Parser) -> redis::RedisResult<redis::Value> {
    match parse(frame) {
        Some(v) => Ok(v),
        None => errors.parse_value(frame),
    }
}

fn value(buf: &[u8], at: usize, depth: usize) -> Option<(redis::Value, usize)> {
    use redis::Value;
    if depth > MAX_DEPTH {
        return None;
    }
    let kind = *buf.get(at)?;
    let line_end = line_end(buf, at + 1)?;
    let line = std::str::from_utf8(&buf[at + 1..line_end]).ok()?;
    let after = line_end + 2;
    match kind {
        b'+' if line == "OK" => Some((Value::Okay, after)),
        b'+' => Some((Value::SimpleString(line.to_owned()), after)),
        b':' => Some((Value::Int(line.trim().parse().ok()?), after)),
        b'$' => {
            let n: i64 = line.trim().parse().ok()?;
            let Ok(n) = usize::try_from(n) else {
                return Some((Value::Nil, after));
            };
            let end = after.checked_add(n)?;
            let bytes = buf.get(after..end)?;
            (buf.get(end..end + 2)? == b"\r\n")
                .then(|| (Value::BulkString(bytes.to_vec()), end + 2))
        }
        b'*' => {
            let n: i64 = line.trim().parse().ok()?;
            let Ok(n) = usize::try_from(n) else {
                return Some((Value::Nil, after));
            };
            let mut items = Vec::with_capacity(n.min(64));
            let mut at = after;
            for _ in 0..n {
                let (v, end) = value(buf, at, depth + 1)?;
                items.push(v);
                at = end;
            }
            Some((Value::Array(items), at))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLIES: &[&[u8]] = &[
        b"+OK\r\n",
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n",
        b":42\r\n",
        b"$-1\r\n",
        b"$0\r\n\r\n",
        b"$5\r\nhe\r\no\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"*3\r\n:1\r\n$3\r\nabc\r\n*2\r\n:-7\r\n$-1\r\n",
    ];

    #[test]
    fn every_prefix_is_incomplete_and_the_whole_is_one_frame() {
        for r in REPLIES {
            for cut in 0..r.len() {
                assert_eq!(frame_len(&r[..cut]), Ok(None), "{:?} cut at {cut}", r);
            }
            assert_eq!(frame_len(r), Ok(Some(r.len())));
            // A frame followed by the start of the next ends where it ends.
            let mut two = r.to_vec();
            two.extend_from_slice(b"*2\r\n:1");
            assert_eq!(frame_len(&two), Ok(Some(r.len())));
        }
    }

    #[test]
    fn frames_split_at_every_byte_come_out_whole_and_in_order() {
        let stream: Vec<u8> = REPLIES.concat();
        for chunk in 1..=7 {
            let mut buf = Vec::new();
            let mut out = Vec::new();
            for piece in stream.chunks(chunk) {
                buf.extend_from_slice(piece);
                while let Some(n) = frame_len(&buf).unwrap() {
                    out.push(buf.drain(..n).collect::<Vec<u8>>());
                }
            }
            assert!(buf.is_empty());
            assert_eq!(out, REPLIES.iter().map(|r| r.to_vec()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn replies_parse_as_redis_rs_parses_them_and_errors_are_left_to_it() {
        let more: &[&[u8]] = &[
            b"+PONG\r\n",
            b":-9223372036854775808\r\n",
            b"*2\r\n*2\r\n:1\r\n:2\r\n$-1\r\n",
            b"$4\r\n\xff\x00\r\n\r\n",
        ];
        for r in REPLIES.iter().chain(more) {
            let ours = parse(r);
            if r.starts_with(b"-") {
                assert_eq!(ours, None, "{r:?}: an error reply is redis-rs's to parse");
                continue;
            }
            assert_eq!(ours, Some(redis::parse_redis_value(r).unwrap()), "{r:?}");
        }
        // An error inside an array, or bytes that are not a whole frame: redis-rs's.
        assert_eq!(parse(b"*2\r\n:1\r\n-ERR no\r\n"), None);
        assert_eq!(parse(b":1\r\n:2\r\n"), None);
        assert_eq!(parse(b"$5\r\nab\r\n"), None);
        assert_eq!(parse(b":x\r\n"), None);
    }

    #[test]
    fn garbage_is_an_error_not_a_wait() {
        assert!(frame_len(b"?what\r\n").is_err());
        assert!(frame_len(b"$x\r\n").is_err());
        assert!(frame_len(b"$3\r\nabcde\r\n").is_err());
        assert!(frame_len(b"*-5\r\n").is_err());
        let deep = "*1\r\n".repeat(40);
        assert!(frame_len(deep.as_bytes()).is_err());
    }
}
