//! Where a Redis client's commands go: one server, the master that Sentinel names (found again
//! after a failover), or a Redis Cluster; and the connection type that covers them.
//!
//! | URL | topology |
//! |-----|----------|
//! | `redis://[user:pass@]host:port[/db]`, `rediss://...` | one server |
//! | `redis+sentinel://[user:pass@]h1:26379,h2:26379/<master name>[/db]`, `rediss+sentinel://` | the master of `<master name>`, asked of the sentinels |
//! | `redis+cluster://[user:pass@]h1:7000,h2:7001`, `rediss+cluster://` | a Redis Cluster; the hosts are seeds |
//!
//! Every URL also takes `?wait_replicas=N&wait_timeout=50ms` (see [`Ack`]); a sentinel URL
//! takes `sentinel_user=` and `sentinel_password=` for the sentinels themselves (the URL's own
//! credentials are the master's). TLS URLs end with `#insecure` to skip certificate checks on a
//! test server.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::model::error::{Error, Result};

/// Acknowledgement by replicas: after an acquire or a renewal, `WAIT replicas timeout`; fewer
/// acknowledgements than asked make the acquire fail (`NotReplicated`) and the renewal count as
/// failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ack {
    pub(crate) replicas: u32,
    pub(crate) timeout: Duration,
}

/// What a Redis URL asks for. Its `Debug` shows every URL redacted and no password.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One server: the URL redis-rs opens (polylock's own query options removed).
    Single(String),
    /// Sentinels (as `redis[s]://host:port` URLs with their credentials), the master's name,
    /// and the master's credentials, database and TLS.
    Sentinel {
        sentinels: Vec<String>,
        master: String,
        user: Option<String>,
        password: Option<String>,
        db: i64,
        tls: bool,
        insecure: bool,
    },
    /// Cluster seed nodes (as `redis[s]://[user:pass@]host:port` URLs).
    Cluster { seeds: Vec<String> },
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |urls: &[String]| urls.iter().map(|u| redact(u)).collect::<Vec<_>>();
        match self {
            Shape::Single(u) => f.debug_tuple("Single").field(&redact(u)).finish(),
            Shape::Sentinel {
                sentinels,
                master,
                user,
                password,
                db,
                tls,
                insecure,
            } => f
                .debug_struct("Sentinel")
                .field("sentinels", &shown(sentinels))
                .field("master", master)
                .field("user", user)
                .field("password", &password.as_ref().map(|_| MASK))
                .field("db", db)
                .field("tls", tls)
                .field("insecure", insecure)
                .finish(),
            Shape::Cluster { seeds } => f
                .debug_struct("Cluster")
                .field("seeds", &shown(seeds))
                .finish(),
        }
    }
}

/// A parsed Redis URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    pub(crate) shape: Shape,
    pub(crate) ack: Option<Ack>,
}

fn bad(url: &str, why: &str) -> Error {
    Error::invalid(format!(
        "malformed Redis URL '{}': {why}; expected redis://[user:password@]host:port[/db], \
         rediss://..., redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/db] \
         or redis+cluster://[user:password@]host:port[,host:port...], each with \
         [?wait_replicas=N&wait_timeout=50ms]",
        redact(url)
    ))
}

pub(crate) use crate::model::secret::redact_url as redact;
use crate::model::secret::MASK;

fn duration(url: &str, v: &str) -> Result<Duration> {
    let (num, unit) = v
        .find(|c: char| !c.is_ascii_digit())
        .map_or((v, "ms"), |i| (&v[..i], &v[i..]));
    let n: u64 = num
        .parse()
        .map_err(|_| bad(url, "wait_timeout must be a number of ms (or 50ms, 1s)"))?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return Err(bad(url, "wait_timeout's unit must be ms or s")),
    };
    if d.is_zero() {
        return Err(bad(url, "wait_timeout must be positive"));
    }
    Ok(d)
}

impl RedisUrl {
    pub(crate) fn parse(url: &str) -> Result<RedisUrl> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad(url, "no scheme"))?;
        let scheme = scheme.to_ascii_lowercase();
        let (rest, fragment) = match rest.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (rest, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        // polylock's own options; the rest stays for redis-rs.
        let (mut replicas, mut timeout) = (None, None);
        let (mut sentinel_user, mut sentinel_password) = (None, None);
        let mut passed = Vec::new();
        for kv in query
            .unwrap_or_default()
            .split('&')
            .filter(|s| !s.is_empty())
        {
            match kv.split_once('=') {
                Some(("wait_replicas", v)) => {
                    let n: u32 = v
                        .parse()
                        .map_err(|_| bad(url, "wait_replicas must be a whole number"))?;
                    if n == 0 {
                        return Err(bad(url, "wait_replicas must be at least 1"));
                    }
                    replicas = Some(n);
                }
                Some(("wait_timeout", v)) => timeout = Some(duration(url, v)?),
                Some(("sentinel_user", v)) => sentinel_user = Some(v.to_string()),
                Some(("sentinel_password", v)) => sentinel_password = Some(v.to_string()),
                _ => passed.push(kv),
            }
        }
        let ack = match (replicas, timeout) {
            (Some(replicas), t) => Some(Ack {
                replicas,
                timeout: t.unwrap_or(Duration::from_millis(50)),
            }),
            (None, Some(_)) => return Err(bad(url, "wait_timeout goes with wait_replicas")),
            (None, None) => None,
        };
        let insecure = fragment == Some("insecure");
        let rebuild = |base: &str| {
            let mut u = base.to_string();
            if !passed.is_empty() {
                u.push('?');
                u.push_str(&passed.join("&"));
            }
            if let Some(f) = fragment {
                u.push('#');
                u.push_str(f);
            }
            u
        };
        let (tls, kind) = match scheme.as_str() {
            "redis" => (false, "single"),
            "rediss" => (true, "single"),
            "redis+sentinel" => (false, "sentinel"),
            "rediss+sentinel" => (true, "sentinel"),
            "redis+cluster" => (false, "cluster"),
            "rediss+cluster" => (true, "cluster"),
            _ => return Err(bad(url, &format!("unknown scheme '{scheme}'"))),
        };
        if tls && !cfg!(feature = "tls") {
            return Err(Error::unsupported(format!(
                "{scheme}:// needs TLS, and this build of polylock was compiled without the `tls` \
                 cargo feature"
            )));
        }
        let plain = if tls { "rediss" } else { "redis" };
        if kind == "single" {
            if sentinel_user.is_some() || sentinel_password.is_some() {
                return Err(bad(
                    url,
                    "sentinel_user/sentinel_password go with redis+sentinel://",
                ));
            }
            return Ok(RedisUrl {
                shape: Shape::Single(rebuild(&format!("{plain}://{rest}"))),
                ack,
            });
        }
        let (cred, hosts_and_path) = match rest.rsplit_once('@') {
            Some((c, h)) => (Some(c), h),
            None => (None, rest),
        };
        let (user, password) = match cred {
            None => (None, None),
            Some(c) => match c.split_once(':') {
                Some((u, p)) => ((!u.is_empty()).then(|| u.to_string()), Some(p.to_string())),
                None => (Some(c.to_string()), None),
            },
        };
        let (hosts, path) = match hosts_and_path.split_once('/') {
            Some((h, p)) => (h, p),
            None => (hosts_and_path, ""),
        };
        let hosts: Vec<&str> = hosts.split(',').filter(|h| !h.is_empty()).collect();
        if hosts.is_empty() {
            return Err(bad(url, "no host"));
        }
        for h in &hosts {
            let port = h.rsplit_once(':').map(|(_, p)| p);
            if port
                .and_then(|p| p.parse::<u16>().ok())
                .is_none_or(|p| p == 0)
            {
                return Err(bad(url, &format!("bad host:port '{h}'")));
            }
        }
        if kind == "sentinel" {
            let mut parts = path.split('/').filter(|s| !s.is_empty());
            let master = parts
                .next()
                .ok_or_else(|| bad(url, "the master's name is missing (…/mymaster)"))?
                .to_string();
            let db = match parts.next() {
                Some(d) => d
                    .parse::<i64>()
                    .map_err(|_| bad(url, "the database must be a number"))?,
                None => 0,
            };
            if parts.next().is_some() {
                return Err(bad(url, "too many path parts after the master's name"));
            }
            let cred = match (&sentinel_user, &sentinel_password) {
                (None, None) => String::new(),
                (u, p) => format!(
                    "{}:{}@",
                    u.as_deref().unwrap_or_default(),
                    p.as_deref().unwrap_or_default()
                ),
            };
            let sentinels = hosts
                .iter()
                .map(|h| {
                    let mut s = format!("{plain}://{cred}{h}");
                    if insecure {
                        s.push_str("/#insecure");
                    }
                    s
                })
                .collect();
            return Ok(RedisUrl {
                shape: Shape::Sentinel {
                    sentinels,
                    master,
                    user,
                    password,
                    db,
                    tls,
                    insecure,
                },
                ack,
            });
        }
        if !path.is_empty() {
            return Err(bad(url, "a cluster has no database or path"));
        }
        let cred = match (&user, &password) {
            (None, None) => String::new(),
            (u, p) => format!(
                "{}:{}@",
                u.as_deref().unwrap_or_default(),
                p.as_deref().unwrap_or_default()
            ),
        };
        let seeds = hosts
            .iter()
            .map(|h| {
                let mut s = format!("{plain}://{cred}{h}");
                if insecure {
                    s.push_str("/#insecure");
                }
                s
            })
            .collect();
        Ok(RedisUrl {
            shape: Shape::Cluster { seeds },
            ack,
        })
    }
}

/// A connection of any topology: a managed connection to one server, or a cluster connection
/// that routes each command to its slot's node and follows redirects.
#[derive(Clone)]
pub(crate) enum AnyConn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for AnyConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            AnyConn::Single(c) => c.req_packed_command(cmd),
            AnyConn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            AnyConn::Single(c) => c.req_packed_commands(cmd, offset, count),
            AnyConn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            AnyConn::Single(c) => c.get_db(),
            AnyConn::Cluster(c) => c.get_db(),
        }
    }
}

/// The cluster slot of `key`: CRC16 (XMODEM) of its hash tag, or of the whole key, modulo 16384,
/// as Redis Cluster computes it. Watchdog renewals are grouped by it, so that no script ever
/// spans two slots.
pub(crate) fn slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = bytes.iter().position(|&b| b == b'{').and_then(|open| {
        let close = bytes[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &bytes[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(bytes)) % 16384
}

fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis_cluster_keyslot() {
        // Values printed by CLUSTER KEYSLOT on Redis 7.
        assert_eq!(slot("foo"), 12182);
        assert_eq!(slot("somekey"), 11058);
        assert_eq!(slot("{user1000}.following"), slot("{user1000}.followers"));
        assert_eq!(slot("{user1000}.following"), slot("user1000"));
        assert_eq!(slot("foo{}{bar}"), slot("foo{}{bar}"));
        assert_eq!(slot("redisson_lock__channel:{goods}"), slot("goods"));
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn urls_of_every_topology() {
        let u = RedisUrl::parse("redis://:pw@h:1/2?wait_replicas=1&wait_timeout=20ms").unwrap();
        assert_eq!(u.shape, Shape::Single("redis://:pw@h:1/2".into()));
        assert_eq!(
            u.ack,
            Some(Ack {
                replicas: 1,
                timeout: Duration::from_millis(20)
            })
        );
        let u = RedisUrl::parse("rediss://h:1/#insecure").unwrap();
        assert_eq!(u.shape, Shape::Single("rediss://h:1/#insecure".into()));
        assert_eq!(u.ack, None);
        let u =
            RedisUrl::parse("redis+sentinel://u:pw@a:26379,b:26380/mymaster/3?sentinel_password=s")
                .unwrap();
        assert_eq!(
            u.shape,
            Shape::Sentinel {
                sentinels: vec!["redis://:s@a:26379".into(), "redis://:s@b:26380".into()],
                master: "mymaster".into(),
                user: Some("u".into()),
                password: Some("pw".into()),
                db: 3,
                tls: false,
                insecure: false,
            }
        );
        let u = RedisUrl::parse("redis+cluster://:pw@a:7000,b:7001?wait_replicas=2").unwrap();
        assert_eq!(
            u.shape,
            Shape::Cluster {
                seeds: vec!["redis://:pw@a:7000".into(), "redis://:pw@b:7001".into()]
            }
        );
        assert_eq!(u.ack.unwrap().timeout, Duration::from_millis(50));
        for bad_url in [
            "redis+sentinel://a:26379",
            "redis+sentinel://a:26379/m/x",
            "redis+cluster://a:7000/0",
            "redis+cluster://a",
            "redis+cluster://",
            "redis://h:1?wait_replicas=0",
            "redis://h:1?wait_timeout=5ms",
            "redis://h:1?wait_replicas=1&wait_timeout=0",
            "redis://h:1?sentinel_password=x",
            "memcached://h:1",
        ] {
            let e = RedisUrl::parse(bad_url).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{bad_url}");
        }
        assert!(!bad("redis+cluster://:s3cret@a", "x")
            .to_string()
            .contains("s3cret"));
    }
}
