//! The SQL backends: MySQL/MariaDB named locks (`GET_LOCK`), PostgreSQL advisory locks, and a
//! lease table in ShedLock's layout on either (`?mode=table`). See `shared/PROTOCOL.md`.
//!
//! Connections: one connection for queries (status, `KILL QUERY`, the lease table), opened at
//! connect, and one connection per held session lock, taken from an idle pool (or opened) when
//! an acquire starts and given back when the lock is released: a session lock lives exactly as
//! long as its connection. A waiting acquire keeps its connection busy too. `max_connections` in
//! the URL caps them all (the listener of the lease table's waiters on PostgreSQL included);
//! an acquire that would need one more fails at once with `InvalidState`.
//!
//! Losses: the server says nothing when a session lock's connection is killed or drops. A
//! keep-alive pings every held connection once per watchdog period (a third of the watchdog
//! timeout) and reports a failed one through the hold's `gone` future; on PostgreSQL the
//! driver's connection task also ends at once when the server closes the socket.
//!
//! Waits use the server's own wait (`GET_LOCK` with a timeout, `pg_advisory_lock`). A wait that
//! times out on the client or whose future is dropped is cancelled on the server before the
//! connection is used again (`KILL QUERY` from the query connection, PostgreSQL's cancel
//! request); a grant that raced the cancel is given back.
//!
//! Fencing tokens are drawn in the same statement that takes the lock, so a token is only ever
//! drawn while its lock is held and tokens grow with each holder. Where the server has sequences
//! (PostgreSQL, MariaDB 10.3+) they come from one sequence, `polylock_fencing_seq`, shared by
//! every lock of the database (`fencing=sequence`, the default there): drawing from it commits
//! nothing, and the server keeps it monotonic across restarts (PostgreSQL logs it 32 values
//! ahead and flushes that log before the value is used, MariaDB writes the end of its cache).
//! The statement that locks and draws the token cost 1.03-1.3x a bare `GET_LOCK` on MariaDB
//! and 1.06-1.25x a bare `pg_advisory_lock` on PostgreSQL in this project's runs of `cargo bench
//! --bench sql` (the VM's speed moves it). Otherwise (MySQL, or `fencing=table`) each lock has
//! a counter row in `polylock_fencing`, incremented in the lock statement: 1, 2, 3 per lock, at
//! the price of a durable commit per acquire. All clients of one database use the same source.
//! With `fencing=none` no token is drawn at all: every hold's token is 0, a session lock costs
//! its bare `GET_LOCK` / `pg_advisory_lock` statement, a lease-table lock its row alone, and
//! no fencing table or sequence is created. For services that never hand a token to a resource.

#[cfg(feature = "mysql")]
mod mysql;
mod names;
#[cfg(feature = "postgres")]
mod postgres;
mod session;
mod table;
#[cfg(feature = "postgres")]
mod tls;

use std::time::Duration;

use crate::backend::Backend;
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::options::ClientOptions;
use crate::model::secret::{scrub, Secret};

/// Connections a client opens at most unless the URL says otherwise (`max_connections=N`).
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// Open a connection with `connect` on polylock's runtime, so that its socket outlives an async
/// caller's own runtime (see [`crate::runtime::in_polylock`]), within `limit`.
///
/// The connect is boxed at once, before anything is awaited: a driver's connect is kilobytes of
/// state that would otherwise be part of every future that may open a connection (each acquire),
/// copied with it on every call.
pub(crate) fn open_on_runtime<C, F>(
    server: &'static str,
    limit: Duration,
    connect: F,
) -> impl std::future::Future<Output = Result<C>>
where
    F: std::future::Future<Output = Result<C>> + Send + 'static,
    C: Send + 'static,
{
    // Not an `async fn`: one would keep `connect` in its state until first polled.
    let boxed = Box::pin(async move {
        match tokio::time::timeout(limit, connect).await {
            Ok(r) => r,
            Err(_) => Err(Error::new(
                ErrorKind::Connection,
                format!(
                    "{server}: no answer within {limit:?}; check that the server is running and \
                     reachable"
                ),
            )),
        }
    });
    crate::runtime::in_polylock(boxed)
}

/// Run `init` (a client's first-use DDL) once per `done`; later calls cost one check. The first
/// call's future is boxed, so that the DDL is not part of every acquire's future.
pub(crate) async fn once<F>(
    done: &tokio::sync::OnceCell<()>,
    init: impl FnOnce() -> F,
) -> Result<()>
where
    F: std::future::Future<Output = Result<()>>,
{
    if done.initialized() {
        return Ok(());
    }
    Box::pin(done.get_or_try_init(init)).await.map(|_| ())
}

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    MySql,
    Postgres,
}

/// Where a session lock's fencing tokens come from (see the module's comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fencing {
    /// `polylock_fencing_seq`, one sequence for every lock.
    Sequence,
    /// A counter row per lock in `polylock_fencing`.
    Table,
    /// No tokens (each is 0): the lock statement alone.
    None,
}

/// The fencing sequence's name, for `concat!` in statements written as constants.
macro_rules! fencing_sequence {
    () => {
        "polylock_fencing_seq"
    };
}
pub(crate) use fencing_sequence;

/// The fencing sequence; it starts above every token the counter table gave out.
pub(crate) const FENCING_SEQUENCE: &str = fencing_sequence!();

/// Session locks (`GET_LOCK`, advisory locks) or the lease table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Session,
    Table,
}

/// PostgreSQL's `sslmode` in libpq's words. Whenever polylock uses TLS it verifies the chain
/// and the host name (libpq's `verify-full`), so `require`, `verify-ca` and `verify-full` are one
/// mode here, and `prefer` and `allow` verify the TLS they try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PgSsl {
    /// Plain only.
    Disable,
    /// Plain first; TLS when the server refuses the plain connection (libpq's `allow`).
    Allow,
    /// TLS when the server offers it, else plain (libpq's `prefer`). A certificate that does not
    /// verify fails the connect: that is no reason to go plain.
    Prefer,
    /// TLS only (`require`, `verify-ca`, `verify-full`).
    Require,
}

/// What an SQL URL says: the driver's own URL (polylock's options taken out) and polylock's
/// options.
#[derive(Clone)]
pub(crate) struct SqlUrl {
    pub(crate) flavor: Flavor,
    pub(crate) mode: Mode,
    /// `max_connections` of the URL, if it has one (it wins over `ClientOptions`).
    pub(crate) max_connections: Option<usize>,
    /// `fencing` of the URL, if it has one (else the server's best).
    pub(crate) fencing: Option<Fencing>,
    /// The lease table (ShedLock's `shedlock` by default).
    pub(crate) table: String,
    /// The URL for the driver, with the driver's own options only.
    pub(crate) driver_url: String,
    /// The URL as given: its secrets are kept out of every message ([`SqlUrl::redact`]).
    pub(crate) given: Secret,
    /// A PEM file of CA certificates to trust besides the built-in roots (`sslrootcert`; on
    /// MySQL it also turns TLS on).
    pub(crate) root_cert: Option<String>,
    /// PostgreSQL's `sslmode`, `None` when the URL does not say (see [`SqlUrl::pg_ssl`]).
    pub(crate) pg_ssl: Option<PgSsl>,
}

impl std::fmt::Debug for SqlUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlUrl")
            .field("flavor", &self.flavor)
            .field("mode", &self.mode)
            .field("max_connections", &self.max_connections)
            .field("fencing", &self.fencing)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// What the connect error says about the URL's form, never its password.
const URL_FORMS: &str = "expected mysql://user:password@host:port/database (MySQL, MariaDB) or \
     postgres://user:password@host:port/database, with ?mode=table for ShedLock's lease table \
     , ?max_connections=N and ?fencing=sequence|table|none";

impl SqlUrl {
    pub(crate) fn parse(url: &str) -> Result<SqlUrl> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| Error::invalid(format!("malformed SQL URL: {URL_FORMS}")))?;
        let flavor = match scheme.to_ascii_lowercase().as_str() {
            "mysql" | "mariadb" => Flavor::MySql,
            "postgres" | "postgresql" => Flavor::Postgres,
            other => {
                return Err(Error::invalid(format!(
                    "unknown SQL URL scheme '{other}': {URL_FORMS}"
                )))
            }
        };
        let (base, query) = match rest.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (rest, None),
        };
        let authority = base.split('/').next().unwrap_or_default();
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let bad = |why: &str| {
            Error::invalid(scrub(
                &format!("malformed SQL URL: {why}; {URL_FORMS}"),
                url,
            ))
        };
        if hostport.is_empty() || hostport.starts_with(':') {
            return Err(bad("no host"));
        }
        if let Some((_, port)) = hostport
            .rsplit_once(':')
            .filter(|_| !hostport.ends_with(']'))
        {
            if port.parse::<u16>().map_or(true, |p| p == 0) {
                return Err(bad(&format!("bad port '{port}'")));
            }
        }
        let database = base[authority.len()..].trim_start_matches('/');
        if database.is_empty() {
            return Err(bad("no database (add /name after the host)"));
        }
        let mut mode = Mode::Session;
        let mut max_connections = None;
        let mut fencing = None;
        let mut table = "shedlock".to_string();
        let mut root_cert = None;
        let mut pg_ssl = None;
        let mut driver_params: Vec<&str> = Vec::new();
        for kv in query
            .unwrap_or_default()
            .split('&')
            .filter(|s| !s.is_empty())
        {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "mode" => {
                    mode = match v {
                        "session" => Mode::Session,
                        "table" => Mode::Table,
                        _ => return Err(bad(&format!("mode must be session or table, not '{v}'"))),
                    }
                }
                "fencing" => {
                    fencing = Some(match v {
                        "sequence" => Fencing::Sequence,
                        "table" => Fencing::Table,
                        "none" => Fencing::None,
                        _ => {
                            return Err(bad(&format!(
                                "fencing must be sequence, table or none, not '{v}'"
                            )))
                        }
                    })
                }
                "max_connections" => {
                    max_connections = v
                        .parse::<usize>()
                        .map(Some)
                        .ok()
                        .filter(|n| n.is_some_and(|n| n >= 2))
                        .ok_or_else(|| bad("max_connections must be a number of at least 2 (the query connection and one lock)"))?;
                }
                "table" => {
                    let ok = !v.is_empty()
                        && v.len() <= 64
                        && v.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
                    if !ok {
                        return Err(bad(
                            "table must be a plain table name ([A-Za-z0-9_.], at most 64)",
                        ));
                    }
                    table = v.to_string();
                }
                "sslrootcert" if !v.is_empty() => root_cert = Some(v.to_string()),
                "sslmode" if flavor == Flavor::Postgres => {
                    pg_ssl = Some(match v {
                        "require" | "verify-ca" | "verify-full" => PgSsl::Require,
                        "prefer" => PgSsl::Prefer,
                        "allow" => PgSsl::Allow,
                        "disable" => PgSsl::Disable,
                        _ => {
                            return Err(bad(&format!(
                                "sslmode must be disable, allow, prefer, require, verify-ca or \
                                 verify-full, not '{v}'"
                            )))
                        }
                    })
                }
                _ => driver_params.push(kv),
            }
        }
        // `prefer` and `allow` go plain in a build without TLS, as in a libpq built without it;
        // a CA file alone asks for TLS (on MySQL too).
        let wants_tls = pg_ssl.map_or(root_cert.is_some(), |m| m == PgSsl::Require)
            || driver_params
                .iter()
                .any(|kv| kv.starts_with("require_ssl=true"));
        if wants_tls && !cfg!(feature = "tls") {
            return Err(crate::model::error::Error::unsupported(
                "this SQL URL asks for TLS, and this build of polylock was compiled without the \
                 `tls` cargo feature",
            ));
        }
        let mut driver_url = format!("{scheme}://{base}");
        if !driver_params.is_empty() {
            driver_url.push('?');
            driver_url.push_str(&driver_params.join("&"));
        }
        Ok(SqlUrl {
            flavor,
            mode,
            max_connections,
            fencing,
            table,
            driver_url,
            given: Secret::new(url),
            root_cert,
            pg_ssl,
        })
    }

    /// The `sslmode` PostgreSQL connections use: the URL's, else TLS when the URL names a CA
    /// file (`sslrootcert`) and plain otherwise (not libpq's default `prefer`: a server whose
    /// certificate does not verify would then fail URLs that work today).
    pub(crate) fn pg_ssl(&self) -> PgSsl {
        self.pg_ssl.unwrap_or(match self.root_cert {
            Some(_) => PgSsl::Require,
            None => PgSsl::Disable,
        })
    }

    /// `msg` without the URL's secrets.
    pub(crate) fn redact(&self, msg: &str) -> String {
        scrub(msg, self.given.expose())
    }
}

/// Connect to a `mysql://` or `postgres://` URL.
pub(crate) async fn connect(
    url: &str,
    options: &ClientOptions,
    client_id: &str,
) -> Result<Box<dyn Backend>> {
    let mut url = SqlUrl::parse(url)?;
    url.max_connections = Some(
        url.max_connections
            .or(options.max_sql_connections)
            .unwrap_or(DEFAULT_MAX_CONNECTIONS),
    );
    match url.flavor {
        #[cfg(feature = "mysql")]
        Flavor::MySql => mysql::connect(url, options, client_id).await,
        #[cfg(feature = "postgres")]
        Flavor::Postgres => postgres::connect(url, options, client_id).await,
        // The client refuses the URL of a backend that is not compiled in before it gets here.
        #[allow(unreachable_patterns)]
        _ => Err(Error::internal("a SQL flavor that is not compiled in")),
    }
}

/// How many connections a client has open, and its cap.
pub(crate) struct Slots {
    open: std::sync::atomic::AtomicUsize,
    cap: usize,
    server: &'static str,
}

/// One open connection's place under the cap; given back when dropped.
pub(crate) struct Slot(std::sync::Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Slots {
    pub(crate) fn new(cap: usize, server: &'static str) -> std::sync::Arc<Slots> {
        std::sync::Arc::new(Slots {
            open: 0.into(),
            cap,
            server,
        })
    }

    /// A place for one more connection, or the typed error of a full client.
    pub(crate) fn take(self: &std::sync::Arc<Self>) -> Result<Slot> {
        use std::sync::atomic::Ordering;
        let mut open = self.open.load(Ordering::Acquire);
        loop {
            if open >= self.cap {
                return Err(Error::new(
                    ErrorKind::InvalidState,
                    format!(
                        "{}: this client has {} connections open, its cap (max_connections={} in \
                         the URL, or ClientOptions::max_sql_connections): each held or waiting \
                         session lock keeps a connection of its own. Release a lock, or raise \
                         the cap",
                        self.server, open, self.cap
                    ),
                ));
            }
            match self.open.compare_exchange_weak(
                open,
                open + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(Slot(self.clone())),
                Err(now) => open = now,
            }
        }
    }
}

/// Seconds as the servers take them (MariaDB takes fractions; polylock also bounds the wait on
/// the client).
pub(crate) fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The host name, for `locked_by` in the lease table.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "polylock".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = SqlUrl::parse("mysql://u:secret@127.0.0.1:3307/db").unwrap();
        assert_eq!(u.flavor, Flavor::MySql);
        assert_eq!(u.mode, Mode::Session);
        assert_eq!(u.max_connections, None);
        assert_eq!(u.fencing, None);
        assert_eq!(u.driver_url, "mysql://u:secret@127.0.0.1:3307/db");
        let u = SqlUrl::parse("mysql://u:secret@127.0.0.1:3307/db?fencing=none").unwrap();
        assert_eq!(u.fencing, Some(Fencing::None));
        assert_eq!(u.driver_url, "mysql://u:secret@127.0.0.1:3307/db");
        let u = SqlUrl::parse(
            "postgresql://u:pw@h:5433/db?mode=table&max_connections=5&sslmode=require&table=jobs&fencing=table",
        )
        .unwrap();
        assert_eq!(u.fencing, Some(Fencing::Table));
        assert_eq!(u.flavor, Flavor::Postgres);
        assert_eq!(u.mode, Mode::Table);
        assert_eq!(u.max_connections, Some(5));
        assert_eq!(u.table, "jobs");
        assert_eq!(u.driver_url, "postgresql://u:pw@h:5433/db");
        assert_eq!(u.pg_ssl(), PgSsl::Require);
        // The CA file is polylock's to read, on both (the MySQL driver takes no such parameter).
        let u =
            SqlUrl::parse("mysql://u:pw@h:3306/db?require_ssl=true&sslrootcert=/x/ca.pem").unwrap();
        assert_eq!(u.root_cert.as_deref(), Some("/x/ca.pem"));
        assert_eq!(u.driver_url, "mysql://u:pw@h:3306/db?require_ssl=true");
        for bad in [
            "mysql://u:pw@:3306/db",
            "mysql://u:pw@h:0/db",
            "mysql://u:pw@h:3306",
            "mysql://u:pw@h:3306/db?mode=x",
            "mysql://u:pw@h:3306/db?fencing=counter",
            "postgres://h:5432/db?max_connections=1",
            "postgres://h:5432/db?table=a;drop",
            "postgres://h:5432/db?sslmode=verify",
            "sqlite://x",
        ] {
            let e = SqlUrl::parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        }
        let e = SqlUrl::parse("mysql://u:hunter22@h:99999/db").unwrap_err();
        assert!(!e.message().contains("hunter22"), "{}", e.message());
    }

    /// libpq's six sslmodes: the verifying ones and `require` are TLS (always verified),
    /// `prefer` and `allow` keep their meaning, and none goes to the driver; without an
    /// sslmode a CA file turns TLS on.
    #[test]
    fn pg_sslmodes() {
        let ssl = |q: &str| {
            let u = SqlUrl::parse(&format!("postgres://u:pw@h:5432/db?{q}")).unwrap();
            assert!(!u.driver_url.contains("ssl"), "{q}: {}", u.driver_url);
            u.pg_ssl()
        };
        assert_eq!(ssl("sslmode=verify-full"), PgSsl::Require);
        assert_eq!(ssl("sslmode=verify-ca"), PgSsl::Require);
        assert_eq!(ssl("sslmode=require"), PgSsl::Require);
        assert_eq!(ssl("sslmode=prefer"), PgSsl::Prefer);
        assert_eq!(ssl("sslmode=prefer&sslrootcert=/x"), PgSsl::Prefer);
        assert_eq!(ssl("sslmode=allow"), PgSsl::Allow);
        assert_eq!(ssl("sslrootcert=/x&sslmode=allow"), PgSsl::Allow);
        assert_eq!(ssl("sslmode=disable&sslrootcert=/x"), PgSsl::Disable);
        assert_eq!(ssl("sslrootcert=/x"), PgSsl::Require);
        assert_eq!(ssl("connect_timeout=3"), PgSsl::Disable);
        let u = SqlUrl::parse("postgres://h:5432/db").unwrap();
        assert_eq!(u.pg_ssl, None);
    }
}
