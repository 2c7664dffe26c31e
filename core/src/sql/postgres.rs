//! PostgreSQL: session advisory locks held on a connection of their own (exclusive for the lock
//! and the write half, `_shared` for the read half, on the key of DistributedLock's name rule),
//! and the lease table in ShedLock's layout (`?mode=table`) whose waiters wake by
//! `LISTEN/NOTIFY`.
//!
//! One statement takes the lock and draws the fencing token while it is held (a `CASE` whose
//! condition is the lock function runs it before `nextval`; with `fencing=table` a `MATERIALIZED`
//! CTE, PostgreSQL 12+, runs it before the counter's upsert). `nextval` commits nothing: the
//! sequence is logged 32 values ahead, and a statement that logs it flushes that log before it
//! answers, so after a crash the sequence resumes above every value handed out. A wait is the
//! server's own `pg_advisory_lock`; its deadline is kept by the client, which then sends the
//! driver's cancel request and looks at what the statement did: a grant that raced the cancel
//! is kept (timeout) or given back (a dropped acquire), and a lock taken by a statement
//! cancelled after the grant is unlocked before the connection is used again.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio_postgres::config::SslMode;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{
    error::SqlState, AsyncMessage, Client as PgClient, SimpleQueryMessage, Statement,
};

use super::names::{pg_key, PgKey};
use super::session::{answer_by, InFlight, Pool, SessionConn};
use super::table::{self, TableDb, TableLock, TableWaiter};
use super::tls::{copy_tls, make_tls, MakeTls};
use super::{Fencing, Mode, PgSsl, Slot, Slots, SqlUrl, DEFAULT_MAX_CONNECTIONS, FENCING_SEQUENCE};
use crate::backend::{
    AcquireRequest, Backend, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest,
    UnlockReply,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldKind, HoldMode, LockKind};
use crate::model::options::{ClientOptions, Wait};
use crate::model::outcome::{Holder, LockStatus};
use crate::model::owner::OwnerId;

const SERVER: &str = "PostgreSQL";
const CREATE_FENCING: &str = "CREATE TABLE IF NOT EXISTS polylock_fencing (name VARCHAR(255) \
     NOT NULL PRIMARY KEY, token BIGINT NOT NULL)";
const UTC_NOW: &str = "timezone('utc', CURRENT_TIMESTAMP)";

/// The driver's connection half: the socket, written and read as it is polled.
type PgConnection = tokio_postgres::Connection<
    tokio_postgres::Socket,
    <MakeTls as tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>>::Stream,
>;

/// A PostgreSQL connection: the client half, the connection half, and the backend's pid.
///
/// The connection half has no task of its own: whoever awaits a statement on this connection
/// polls it ([`PgSession::drive`]), so the statement is written and its answer read by the awaiting
/// task itself, not handed to a connection task on another thread and back (two wake-ups between
/// threads per statement). Between statements nothing reads the socket; a connection the server
/// closed meanwhile is found by [`PgConn::is_closed`] before it is used, and a held one by the
/// pool's keep-alive, as on MySQL.
///
/// Boxed: a connection moves from the pool through an acquire into its hold and back, and the
/// driver's two halves are over a kilobyte and a half.
pub(crate) struct PgConn(Box<PgSession>);

/// What a [`PgConn`] holds.
pub(crate) struct PgSession {
    client: PgClient,
    connection: Mutex<Option<PgConnection>>,
    pid: u64,
    /// How to cancel this connection's statement (made once: it copies the connect settings).
    cancel: Arc<tokio_postgres::CancelToken>,
    prepared: foldhash::HashMap<String, Statement>,
    /// The server connection behind this one may change between statements (PgBouncer's
    /// transaction or statement pooling): statements go unnamed, never prepared and kept.
    per_transaction: bool,
    /// Statements awaited on this client's connections (see [`crate::runtime::await_alone`]).
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::ops::Deref for PgConn {
    type Target = PgSession;
    fn deref(&self) -> &PgSession {
        &self.0
    }
}

impl std::ops::DerefMut for PgConn {
    fn deref_mut(&mut self) -> &mut PgSession {
        &mut self.0
    }
}

impl PgSession {
    /// Await `statement` (made by this connection's client) while polling the connection half.
    fn drive<S: Future>(&self, statement: S) -> crate::runtime::AwaitAlone<'_, Exchange<'_, S>> {
        crate::runtime::await_alone(
            &self.in_flight,
            Exchange {
                session: self,
                statement,
            },
        )
    }

    /// Poll the connection half once; true if it has ended (and is dropped).
    fn poll_connection(&self, cx: &mut Context<'_>) -> bool {
        let mut slot = self.connection.lock().unwrap_or_else(|e| e.into_inner());
        let Some(connection) = slot.as_mut() else {
            return true;
        };
        match Pin::new(connection).poll(cx) {
            Poll::Ready(_) => {
                *slot = None;
                true
            }
            Poll::Pending => false,
        }
    }

    async fn prepared(
        &mut self,
        sql: &str,
    ) -> std::result::Result<Statement, tokio_postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        // Boxed: a prepare is a first use only, and large.
        let s = Box::pin(self.drive(self.client.prepare(sql))).await?;
        self.prepared.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Run a prepared `sql` with `params`; its rows.
    async fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> std::result::Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
        if self.per_transaction {
            // Parse, bind and execute in one exchange: a named statement prepared on one server
            // connection would be executed on another.
            let typed: Vec<(&(dyn ToSql + Sync), Type)> =
                params.iter().map(|&p| (p, param_type(p))).collect();
            return self.drive(self.client.query_typed(sql, &typed)).await;
        }
        let stmt = self.prepared(sql).await?;
        self.drive(self.client.query(&stmt, params)).await
    }

    /// The first column of the one row of a simple-protocol `sql` (no statement is prepared).
    async fn simple_value(&self, sql: &str) -> std::result::Result<String, tokio_postgres::Error> {
        let messages = self.drive(self.client.simple_query(sql)).await?;
        Ok(messages
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .unwrap_or_default())
    }
}

/// The PostgreSQL type a parameter binds as in an unnamed statement: the first of the types
/// polylock's statements use that the parameter's Rust type converts to.
fn param_type(p: &(dyn ToSql + Sync)) -> Type {
    let mut buf = bytes::BytesMut::new();
    for t in [Type::TEXT, Type::FLOAT8, Type::INT8, Type::INT4, Type::BOOL] {
        buf.clear();
        if p.to_sql_checked(&t, &mut buf).is_ok() {
            return t;
        }
    }
    Type::UNKNOWN
}

/// Connect with `config` as the URL's `sslmode` says. `allow` is libpq's: plain first, and TLS
/// when the server refuses the plain connection (its pg_hba.conf, say); `tls_learned` is set
/// then, and later connections of the client go straight to TLS. Whenever TLS is used, the
/// certificate is verified, and a failed verification fails the connect.
async fn connect_as(
    mut config: tokio_postgres::Config,
    tls: MakeTls,
    url: &SqlUrl,
    tls_learned: &std::sync::atomic::AtomicBool,
    doing: &str,
) -> Result<(PgClient, PgConnection)> {
    use std::sync::atomic::Ordering;
    let first = match url.pg_ssl() {
        PgSsl::Disable => SslMode::Disable,
        PgSsl::Allow if tls_learned.load(Ordering::Relaxed) => SslMode::Require,
        PgSsl::Allow => SslMode::Disable,
        PgSsl::Prefer => SslMode::Prefer,
        PgSsl::Require => SslMode::Require,
    };
    config.ssl_mode(first);
    let refused = match config.connect(copy_tls(&tls)).await {
        Ok(pair) => return Ok(pair),
        // The server's own refusal (an error code), not a socket that failed.
        Err(e)
            if url.pg_ssl() == PgSsl::Allow && first == SslMode::Disable && e.code().is_some() =>
        {
            map_err(url, e, doing)
        }
        Err(e) => return Err(map_err(url, e, doing)),
    };
    config.ssl_mode(SslMode::Require);
    match config.connect(tls).await {
        Ok(pair) => {
            tls_learned.store(true, Ordering::Relaxed);
            Ok(pair)
        }
        Err(e) => {
            let e = map_err(url, e, doing);
            Err(Error::new(
                e.kind(),
                format!(
                    "{} (sslmode=allow: over TLS, after the server refused the plain \
                     connection: {})",
                    e.message(),
                    refused.message()
                ),
            ))
        }
    }
}

#[async_trait]
impl SessionConn for PgConn {
    fn id(&self) -> u64 {
        self.pid
    }

    async fn ping(&mut self) -> bool {
        self.drive(self.client.simple_query("")).await.is_ok()
    }

    fn is_closed(&self) -> bool {
        // One look at the socket without waiting: an end the server sent meanwhile is read now.
        self.client.is_closed() || self.poll_connection(&mut Context::from_waker(Waker::noop()))
    }

    async fn close(self) {
        // Without its client, the connection half sends Terminate and ends.
        let PgSession {
            client, connection, ..
        } = *self.0;
        drop(client);
        let connection = connection.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(connection) = connection {
            let _ = tokio::time::timeout(Duration::from_secs(2), connection).await;
        }
    }
}

pin_project_lite::pin_project! {
    /// A statement awaited with its connection half polled meanwhile ([`PgSession::drive`]).
    pub(crate) struct Exchange<'a, S> {
        session: &'a PgSession,
        #[pin]
        statement: S,
    }
}

impl<S: Future> Future for Exchange<'_, S> {
    type Output = S::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<S::Output> {
        let mut this = self.project();
        if let Poll::Ready(out) = this.statement.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        // The statement is queued to the connection half: write it, read what came. If the
        // connection ended, its answer senders went with it and the statement ends now too.
        this.session.poll_connection(cx);
        this.statement.poll(cx)
    }
}

/// Map a driver error to polylock's table, without the password.
fn map_err(url: &SqlUrl, e: tokio_postgres::Error, doing: &str) -> Error {
    let kind = match e.code() {
        Some(c)
            if *c == SqlState::INVALID_PASSWORD
                || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            ErrorKind::Auth
        }
        Some(_) => ErrorKind::Backend,
        None => ErrorKind::Connection,
    };
    let detail = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            // The driver's words, then their causes (rustls says why a certificate failed).
            let mut detail = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                detail = format!("{detail}: {c}");
                cause = c.source();
            }
            detail
        }
    };
    let hint = match kind {
        ErrorKind::Auth => "; check the user name and password in the URL",
        ErrorKind::Connection if detail.contains("TLS") => {
            "; the server's certificate must chain to a public root or to a CA in the \
             sslrootcert=FILE of the URL"
        }
        ErrorKind::Connection => "; check that the PostgreSQL server is running and reachable",
        _ => "",
    };
    Error::new(
        kind,
        url.redact(&format!("{SERVER}: could not {doing}: {detail}{hint}")),
    )
}

/// The values of a key as statement parameters.
#[derive(Clone, Copy)]
struct KeyVals {
    key: PgKey,
    big: i64,
    k1: i32,
    k2: i32,
}

impl KeyVals {
    fn of(key: PgKey) -> KeyVals {
        match key {
            PgKey::Big(b) => KeyVals {
                key,
                big: b,
                k1: 0,
                k2: 0,
            },
            PgKey::Pair(a, b) => KeyVals {
                key,
                big: 0,
                k1: a,
                k2: b,
            },
        }
    }

    /// The key's placeholders from `$first` on.
    fn sql(&self, first: usize) -> String {
        match self.key {
            PgKey::Big(_) => format!("${first}::int8"),
            PgKey::Pair(..) => format!("${first}::int4, ${}::int4", first + 1),
        }
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        match self.key {
            PgKey::Big(_) => vec![&self.big],
            PgKey::Pair(..) => vec![&self.k1, &self.k2],
        }
    }

    /// `classid`, `objid` and `objsubid` of the key in `pg_locks`.
    fn pg_locks(&self) -> (i64, i64, i64) {
        match self.key {
            PgKey::Big(b) => ((b as u64 >> 32) as i64, (b as u64 & 0xffff_ffff) as i64, 1),
            PgKey::Pair(a, b) => (a as u32 as i64, b as u32 as i64, 2),
        }
    }
}

/// The connections of one PostgreSQL client.
pub(crate) struct Pg {
    url: SqlUrl,
    config: tokio_postgres::Config,
    tls: MakeTls,
    options: ClientOptions,
    pool: Arc<Pool<PgConn>>,
    query: tokio::sync::Mutex<Option<(PgConn, Slot)>>,
    ready: tokio::sync::OnceCell<()>,
    listener: tokio::sync::Mutex<Option<Listener>>,
    fencing: Fencing,
    /// Statements being awaited on this client's connections.
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
    /// `sslmode=allow` met a server that refused a plain connection: TLS from now on.
    tls_learned: Arc<std::sync::atomic::AtomicBool>,
    /// The URL leads to a pool that changes server connections between transactions (see
    /// [`Pg::pooled_per_transaction`]).
    per_transaction: std::sync::atomic::AtomicBool,
}

impl Pg {
    /// The fencing token in a granted lock statement's row (its first column; 0 without tokens,
    /// where a wait's row is the lock function's void answer).
    fn token(&self, row: &tokio_postgres::Row) -> u64 {
        match self.fencing {
            Fencing::None => 0,
            _ => row.get::<_, i64>(0).max(0) as u64,
        }
    }

    /// A new connection, opened on polylock's runtime (its socket outlives the caller's).
    async fn open(&self) -> Result<PgConn> {
        let (config, tls, url) = (self.config.clone(), copy_tls(&self.tls), self.url.clone());
        let (in_flight, learned) = (self.in_flight.clone(), self.tls_learned.clone());
        let per_transaction = self
            .per_transaction
            .load(std::sync::atomic::Ordering::Relaxed);
        super::open_on_runtime(SERVER, self.options.connect_timeout, async move {
            let (client, connection) = connect_as(config, tls, &url, &learned, "connect").await?;
            let cancel = Arc::new(client.cancel_token());
            let mut conn = PgConn(Box::new(PgSession {
                client,
                connection: Mutex::new(Some(connection)),
                pid: 0,
                cancel,
                prepared: Default::default(),
                per_transaction,
                in_flight,
            }));
            conn.pid = conn
                .simple_value("SELECT pg_backend_pid()")
                .await
                .map_err(|e| map_err(&url, e, "read the backend pid"))?
                .parse()
                .map_err(|_| Error::new(ErrorKind::Backend, "pg_backend_pid() is no number"))?;
            Ok(conn)
        })
        .await
    }

    /// Run `sql` on the query connection (opened again if it broke); its rows.
    async fn query(
        &self,
        doing: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        let mut slot = self.query.lock().await;
        if slot.as_ref().is_some_and(|(c, _)| c.is_closed()) {
            *slot = None;
        }
        if slot.is_none() {
            let place = self.pool.slots.take()?;
            *slot = Some((self.open().await?, place));
        }
        let (conn, _) = slot.as_mut().expect("query connection");
        match tokio::time::timeout(self.options.command_timeout, conn.query(sql, params)).await {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => {
                if e.code().is_none() {
                    *slot = None;
                }
                Err(map_err(&self.url, e, doing))
            }
            Err(_) => {
                *slot = None;
                Err(Error::new(
                    ErrorKind::Connection,
                    format!(
                        "{SERVER}: could not {doing}: no answer within {:?}",
                        self.options.command_timeout
                    ),
                ))
            }
        }
    }

    /// Create the fencing table and sequence (and in table mode the lease table) if missing,
    /// once. A new sequence starts above every token the table gave out.
    async fn ready(&self) -> Result<()> {
        super::once(&self.ready, || async {
            let mut ddl = Vec::new();
            if self.fencing != Fencing::None {
                ddl.push(CREATE_FENCING.to_string());
            }
            if self.url.mode == Mode::Session && self.fencing == Fencing::Sequence {
                // CACHE 1: a session's cache would hand out values out of order.
                ddl.push(format!(
                    "DO $$ BEGIN EXECUTE format('CREATE SEQUENCE IF NOT EXISTS \
                         {FENCING_SEQUENCE} START WITH %s CACHE 1', (SELECT COALESCE(MAX(token), \
                         0) + 1 FROM polylock_fencing)); END $$"
                ));
            }
            if self.url.mode == Mode::Table {
                ddl.push(format!(
                    "CREATE TABLE IF NOT EXISTS {} (name VARCHAR(64) NOT NULL, lock_until \
                         TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) \
                         NOT NULL, PRIMARY KEY (name))",
                    self.url.table
                ));
            }
            for sql in ddl {
                // Two clients creating the same table at once: one of them gets a unique
                // violation on the catalog; the table is there all the same.
                for attempt in 0..3 {
                    match self.query("create the fencing table", &sql, &[]).await {
                        Ok(_) => break,
                        Err(e) if attempt < 2 && e.kind() == ErrorKind::Backend => {
                            tokio::time::sleep(Duration::from_millis(20)).await
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            Ok::<(), Error>(())
        })
        .await
    }

    /// A connection for a lock: idle, or new under the cap. True if it came from the pool.
    async fn lock_conn(&self) -> Result<(PgConn, Slot, bool)> {
        if let Some((c, s)) = self.pool.take_idle()? {
            return Ok((c, s, true));
        }
        let slot = self.pool.new_slot()?;
        Ok((self.open().await?, slot, false))
    }

    fn channel(&self) -> String {
        format!("polylock:{}", self.url.table)
    }
}

/// The statement that takes a key and draws the token (`try`: no waiting), and its fencing row
/// (the statement's `$1`) when the token comes from the counter table. Each of the 24 texts is
/// written once per process.
fn lock_sql(
    kv: &KeyVals,
    shared: bool,
    try_: bool,
    fencing: Fencing,
) -> (&'static str, Option<String>) {
    static TEXTS: [OnceLock<String>; 24] = [const { OnceLock::new() }; 24];
    let pair = matches!(kv.key, PgKey::Pair(..));
    let i = usize::from(try_)
        | usize::from(shared) << 1
        | usize::from(pair) << 2
        | (fencing as usize) << 3;
    let sql = TEXTS[i].get_or_init(|| lock_text(kv, shared, try_, fencing));
    (sql, (fencing == Fencing::Table).then(|| kv.key.describe()))
}

fn lock_text(kv: &KeyVals, shared: bool, try_: bool, fencing: Fencing) -> String {
    let f = match (try_, shared) {
        (false, false) => "pg_advisory_lock",
        (false, true) => "pg_advisory_lock_shared",
        (true, false) => "pg_try_advisory_lock",
        (true, true) => "pg_try_advisory_lock_shared",
    };
    match fencing {
        Fencing::Sequence => {
            let next = format!("nextval('{FENCING_SEQUENCE}')");
            match try_ {
                true => format!("SELECT {next} WHERE {f}({})", kv.sql(1)),
                // A CASE evaluates its condition first, so the token is drawn once the lock is
                // granted; both branches draw it (the lock function's void answer is not NULL,
                // but the token must not hang on that). The server runs this faster than a
                // materialized CTE around the lock: 1-7 us less per pair, measured bare.
                false => format!(
                    "SELECT CASE WHEN {f}({}) IS NULL THEN {next} ELSE {next} END",
                    kv.sql(1)
                ),
            }
        }
        // No token: a try's row comes only when the lock is granted; a wait's is the lock
        // function's own (void) answer, the same statement a bare caller sends.
        Fencing::None => match try_ {
            true => format!("SELECT 0::bigint WHERE {f}({})", kv.sql(1)),
            false => format!("SELECT {f}({})", kv.sql(1)),
        },
        Fencing::Table => {
            let upsert = "ON CONFLICT (name) DO UPDATE SET token = polylock_fencing.token + 1 \
                 RETURNING token";
            match try_ {
                true => format!(
                    "INSERT INTO polylock_fencing (name, token) SELECT $1, 1 WHERE {f}({}) {upsert}",
                    kv.sql(2)
                ),
                false => format!(
                    "WITH l AS MATERIALIZED (SELECT {f}({})) INSERT INTO polylock_fencing (name, \
                     token) SELECT $1, 1 FROM l {upsert}",
                    kv.sql(2)
                ),
            }
        }
    }
}

/// The parameters of a lock statement of [`lock_sql`].
fn lock_params<'a>(fence: &'a Option<String>, kv: &'a KeyVals) -> Vec<&'a (dyn ToSql + Sync)> {
    let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(3);
    if let Some(fence) = fence {
        params.push(fence);
    }
    params.extend(kv.params());
    params
}

fn unlock_sql(kv: &KeyVals, shared: bool) -> &'static str {
    static TEXTS: [OnceLock<String>; 4] = [const { OnceLock::new() }; 4];
    let i = usize::from(shared) | usize::from(matches!(kv.key, PgKey::Pair(..))) << 1;
    TEXTS[i].get_or_init(|| {
        let f = if shared {
            "pg_advisory_unlock_shared"
        } else {
            "pg_advisory_unlock"
        };
        format!("SELECT {f}({})", kv.sql(1))
    })
}

/// The outcome of one lock statement.
enum Attempt {
    Granted(PgConn, Slot, u64),
    Busy(PgConn, Slot),
    Failed(tokio_postgres::Error, PgConn, Slot),
}

/// Run a lock statement of [`lock_sql`] on `conn`: its row if it granted the lock.
async fn lock_statement(
    conn: &mut PgConn,
    sql: &str,
    fence: &Option<String>,
    kv: &KeyVals,
) -> std::result::Result<Option<tokio_postgres::Row>, tokio_postgres::Error> {
    let stmt = conn.prepared(sql).await?;
    conn.drive(conn.client.query_opt(&stmt, &lock_params(fence, kv)))
        .await
}

/// After a statement that ended without a grant the caller keeps: unlock whatever it may have
/// taken (the connection holds nothing else), then return the connection or close it.
async fn settle(db: &Pg, conn: PgConn, slot: Slot) {
    match conn
        .drive(conn.client.simple_query("SELECT pg_advisory_unlock_all()"))
        .await
    {
        Ok(_) => db.pool.put_back(conn, slot),
        Err(_) => conn.close().await,
    }
}

/// PostgreSQL's advisory lock of one kind.
pub(crate) struct PgLock {
    db: Arc<Pg>,
    kind: LockKind,
    /// The last name's key: a name that is not a key's own text is hashed (SHA-1) to its key,
    /// and an acquire and its release ask for the same name.
    last_key: Mutex<Option<(Box<str>, PgKey)>>,
}

impl PgLock {
    fn new(db: Arc<Pg>, kind: LockKind) -> PgLock {
        PgLock {
            db,
            kind,
            last_key: Mutex::new(None),
        }
    }

    /// The key of `name` (see [`pg_key`]), from the last name's if it is the same. Never waits:
    /// a caller that finds the last key in use computes its own.
    fn key(&self, name: &str) -> KeyVals {
        if let Ok(last) = self.last_key.try_lock() {
            if let Some((_, key)) = last.as_ref().filter(|(n, _)| **n == *name) {
                return KeyVals::of(*key);
            }
        }
        let key = pg_key(name);
        if let Ok(mut last) = self.last_key.try_lock() {
            *last = Some((name.into(), key));
        }
        KeyVals::of(key)
    }

    fn shared(&self) -> bool {
        self.kind == LockKind::Read
    }

    async fn attempt(
        &self,
        conn: PgConn,
        slot: Slot,
        kv: KeyVals,
        try_: bool,
        deadline: Option<Instant>,
    ) -> Result<Attempt> {
        let (sql, fence) = lock_sql(&kv, self.shared(), try_, self.db.fencing);
        let cancel = conn.cancel.clone();
        // Cut short, the statement goes on without a listener (the driver drops its answer):
        // cancel it, then unlock whatever it took before the connection is used again.
        let db = &self.db;
        let mut flight =
            InFlight::new(conn, slot, |conn: PgConn, slot| -> BoxFuture<'static, ()> {
                let db = db.clone();
                Box::pin(async move {
                    let _ = conn.cancel.cancel_query(copy_tls(&db.tls)).await;
                    settle(&db, conn, slot).await;
                })
            });
        let out = {
            let statement = std::pin::pin!(lock_statement(flight.conn(), sql, &fence, &kv));
            answer_by(statement, deadline.filter(|_| !try_), || {
                let cancel = cancel.clone();
                Box::pin(async move {
                    let _ = cancel.cancel_query(copy_tls(&self.db.tls)).await;
                })
            })
            .await
        };
        let (conn, slot) = flight.finish();
        Ok(match out {
            Ok(Some(row)) => Attempt::Granted(conn, slot, self.db.token(&row)),
            Ok(None) => Attempt::Busy(conn, slot),
            Err(e) => Attempt::Failed(e, conn, slot),
        })
    }

    /// A writer takes the read lock on its own connection: granted at once (a session that
    /// holds a key gets it again at either level).
    async fn downgrade(&self, node: &str, kv: KeyVals) -> Result<Granted> {
        let held = self
            .db
            .pool
            .held(node)
            .ok_or_else(|| super::session::unknown_node(node))?;
        let mut g = held.conn().await;
        let conn = g.as_mut().ok_or_else(|| {
            Error::new(
                ErrorKind::LockLost,
                "the write lock's connection is gone: the write lock was lost",
            )
        })?;
        let (sql, fence) = lock_sql(&kv, true, true, self.db.fencing);
        let out = lock_statement(conn, sql, &fence, &kv)
            .await
            .map_err(|e| map_err(&self.db.url, e, "take the read lock of a downgrade"))?;
        drop(g);
        let Some(row) = out else {
            return Err(Error::internal("a downgrade was refused by the server"));
        };
        self.db.pool.add_ref(&held);
        Ok(Granted {
            token: self.db.token(&row),
            count: 1,
            node: Some(node.to_string()),
            gone: Some(held.gone()),
            valid_until: None,
        })
    }

    /// Holders (granted) and waiters of this kind's mode on `name`, by backend pid.
    async fn lockers(&self, name: &str) -> Result<(Vec<(u64, bool)>, Vec<u64>)> {
        let (classid, objid, objsubid) = KeyVals::of(pg_key(name)).pg_locks();
        let rows = self
            .db
            .query(
                "look at an advisory lock",
                "SELECT pid, granted, mode = 'ShareLock' FROM pg_locks WHERE locktype = \
                 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = \
                 current_database()) AND classid::int8 = $1 AND objid::int8 = $2 AND \
                 objsubid::int8 = $3 ORDER BY granted DESC, pid",
                &[&classid, &objid, &objsubid],
            )
            .await?;
        let mut holders = Vec::new();
        let mut waiters = Vec::new();
        for r in rows {
            let pid: i32 = r.get(0);
            let granted: bool = r.get(1);
            let shared: bool = r.get(2);
            if granted {
                holders.push((pid as u64, shared));
            } else {
                waiters.push(pid as u64);
            }
        }
        Ok((holders, waiters))
    }

    /// Whether a holder in `shared` mode counts as this kind's.
    fn counts(&self, shared: bool) -> bool {
        match self.kind {
            LockKind::Read => shared,
            _ => !shared,
        }
    }
}

impl PgLock {
    /// Unlock the hold of `name` on the held connection `node` and give the connection back
    /// (to the idle pool, or closed if the unlock failed); whether the server had it locked.
    /// Both a release and a dropped hold end here, without a second boxed future.
    async fn unlock(&self, name: &str, node: &str) -> bool {
        let kv = self.key(name);
        let released = match self.db.pool.held(node) {
            Some(held) => {
                let mut g = held.conn().await;
                match g.as_mut() {
                    Some(c) => {
                        let sql = unlock_sql(&kv, self.shared());
                        let out = async {
                            let stmt = c.prepared(sql).await?;
                            c.drive(c.client.query_one(&stmt, &kv.params())).await
                        }
                        .await;
                        matches!(out.map(|r| r.get::<_, bool>(0)), Ok(true))
                    }
                    None => false,
                }
            }
            None => false,
        };
        self.db.pool.unref(node, released).await;
        released
    }
}

#[async_trait]
impl HoldOps for PgLock {
    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        Ok(match node {
            Some(node) => self.unlock(name, node).await,
            None => false,
        })
    }
}

#[async_trait]
impl LockOps for PgLock {
    fn kind(&self) -> LockKind {
        self.kind
    }

    fn reentry(&self) -> Reentry {
        Reentry::Client
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Session
    }

    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        self.db.ready().await?;
        let kv = self.key(req.name);
        if let (LockKind::Read, Some(node)) = (self.kind, req.write_node) {
            return Box::pin(self.downgrade(node, kv)).await.map(Some);
        }
        let deadline = req.wait.deadline();
        let try_ = req.wait == Wait::Never;
        let (mut conn, mut slot, mut pooled) = self.db.lock_conn().await?;
        loop {
            match self.attempt(conn, slot, kv, try_, deadline).await? {
                Attempt::Granted(c, s, token) => {
                    let (node, gone) = self.db.pool.hold(c, s);
                    return Ok(Some(Granted {
                        token,
                        count: 1,
                        node: Some(node),
                        gone: Some(gone),
                        valid_until: None,
                    }));
                }
                Attempt::Busy(c, s) => {
                    self.db.pool.put_back(c, s);
                    return Ok(None);
                }
                Attempt::Failed(e, c, s) => {
                    if e.code().is_none() || c.is_closed() {
                        drop(c);
                        drop(s);
                        if pooled {
                            // An idle connection the server had closed: try a fresh one.
                            pooled = false;
                            slot = self.db.pool.new_slot()?;
                            conn = self.db.open().await?;
                            continue;
                        }
                        return Err(map_err(&self.db.url, e, "acquire an advisory lock"));
                    }
                    Box::pin(settle(&self.db, c, s)).await;
                    if e.code() == Some(&SqlState::QUERY_CANCELED) {
                        return Ok(None); // our cancel at the deadline
                    }
                    return Err(map_err(&self.db.url, e, "acquire an advisory lock"));
                }
            }
        }
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let Some(node) = req.node else {
            return Ok(UnlockReply::NotHeld);
        };
        Ok(match self.unlock(req.name, node).await {
            true => UnlockReply::Freed,
            false => UnlockReply::NotHeld,
        })
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        let (holders, _) = self.lockers(name).await?;
        Ok(holders.iter().any(|(_, shared)| self.counts(*shared)))
    }

    async fn remaining_lease(&self, _name: &str) -> Result<Option<Duration>> {
        Ok(None) // held while its connection lives
    }

    /// Terminate the holders' connections (the only way to take a session lock away).
    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let (holders, _) = self.lockers(name).await?;
        let mut any = false;
        for (pid, shared) in holders {
            if self.counts(shared) {
                let pid = pid as i32;
                self.db
                    .query(
                        "terminate a holder",
                        "SELECT pg_terminate_backend($1)",
                        &[&pid],
                    )
                    .await?;
                any = true;
            }
        }
        Ok(any)
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        let (holders, waiters) = self.lockers(name).await?;
        let mode = match (self.kind, holders.first()) {
            (LockKind::Read | LockKind::Write, Some((_, true))) => Some(HoldMode::Read),
            (LockKind::Read | LockKind::Write, Some((_, false))) => Some(HoldMode::Write),
            _ => None,
        };
        Ok(LockStatus {
            name: name.to_string(),
            locked: !holders.is_empty(),
            mode,
            holders: holders
                .iter()
                .map(|(pid, shared)| Holder {
                    owner: pid.to_string(),
                    count: 1,
                    mode: match (self.kind, shared) {
                        (LockKind::Reentrant, _) => HoldMode::Exclusive,
                        (_, true) => HoldMode::Read,
                        (_, false) => HoldMode::Write,
                    },
                    identity: None,
                })
                .collect(),
            ttl: None,
            waiters: waiters.iter().map(|p| p.to_string()).collect(),
            waiter_identities: Vec::new(),
            shared_with: Vec::new(),
        })
    }
}

/// Waiters by lock name: a release counter each, and how many wait.
type Waiters = Arc<Mutex<HashMap<String, (watch::Sender<u64>, usize)>>>;

/// The connection that listens for releases of lease-table locks, and the waiters by name.
struct Listener {
    waiters: Waiters,
    _client: PgClient,
    closed: watch::Receiver<bool>,
    _slot: Slot,
}

/// A waiter for releases of one name.
struct PgWaiter {
    name: String,
    rx: watch::Receiver<u64>,
    waiters: Waiters,
}

#[async_trait]
impl TableWaiter for PgWaiter {
    async fn wait(&mut self, max: Duration) {
        let _ = tokio::time::timeout(max, self.rx.changed()).await;
    }

    fn notified(&self) -> bool {
        true
    }
}

impl Drop for PgWaiter {
    fn drop(&mut self) {
        let mut map = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, n)) = map.get_mut(&self.name) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.name);
            }
        }
    }
}

impl Pg {
    /// Whether the server connection behind one of this URL's connections changes between
    /// transactions, as behind PgBouncer in transaction or statement pooling: a second connection
    /// `b` opens a transaction (which keeps its server connection for the time), and `a` asks
    /// for its server's pid again. Directly, or pooled per session, `a` keeps its server
    /// connection and `b` has another; pooled per transaction, `b` gets `a`'s last one (the pool
    /// hands out the one used last) or `a` gets a new one.
    async fn pooled_per_transaction(&self, a: &PgConn) -> Result<bool> {
        let b = self.open().await?;
        let pid = |v: String| v.parse::<u64>().unwrap_or(0);
        let probe = async {
            b.simple_value("BEGIN").await?;
            let in_tx = pid(b.simple_value("SELECT pg_backend_pid()").await?);
            let again = pid(a.simple_value("SELECT pg_backend_pid()").await?);
            b.simple_value("ROLLBACK").await?;
            Ok::<_, tokio_postgres::Error>(in_tx == a.pid || again != a.pid)
        };
        match tokio::time::timeout(self.options.command_timeout, probe).await {
            Ok(r) => r.map_err(|e| map_err(&self.url, e, "look for a transaction pool")),
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                "no answer in the command timeout while looking for a transaction pool",
            )),
        }
    }

    async fn open_listener(&self) -> Result<Listener> {
        let slot = self.pool.slots.take()?;
        let (config, tls, url) = (self.config.clone(), copy_tls(&self.tls), self.url.clone());
        let learned = self.tls_learned.clone();
        let (client, mut connection) = crate::runtime::in_polylock(async move {
            connect_as(config, tls, &url, &learned, "connect the listener").await
        })
        .await?;
        let waiters: Waiters = Arc::default();
        let (tx, closed) = watch::channel(false);
        let map = waiters.clone();
        let channel = self.channel();
        crate::runtime::handle().spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(msg)) = messages.next().await {
                if let AsyncMessage::Notification(n) = msg {
                    if n.channel() != channel {
                        continue;
                    }
                    let map = map.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some((tx, _)) = map.get(n.payload()) {
                        tx.send_modify(|v| *v += 1);
                    }
                }
            }
            tx.send_replace(true);
            // Wake everybody: they fall back to pauses bounded by the lease.
            for (tx, _) in map.lock().unwrap_or_else(|e| e.into_inner()).values() {
                tx.send_modify(|v| *v += 1);
            }
        });
        client
            .batch_execute(&format!("LISTEN \"{}\"", self.channel()))
            .await
            .map_err(|e| map_err(&self.url, e, "listen for releases"))?;
        Ok(Listener {
            waiters,
            _client: client,
            closed,
            _slot: slot,
        })
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[async_trait]
impl TableDb for Pg {
    async fn take(&self, name: &str, locked_by: &str, lease: Duration) -> Result<Option<u64>> {
        self.ready().await?;
        let t = &self.url.table;
        let lease = ms(lease);
        let take = format!(
            "INSERT INTO {t} (name, lock_until, locked_at, locked_by) VALUES ($1, \
             {UTC_NOW} + $2::float8 * interval '1 millisecond', {UTC_NOW}, $3) ON CONFLICT (name) \
             DO UPDATE SET lock_until = EXCLUDED.lock_until, locked_at = EXCLUDED.locked_at, \
             locked_by = EXCLUDED.locked_by WHERE {t}.lock_until <= {UTC_NOW}"
        );
        let rows = match self.fencing {
            Fencing::None => {
                let sql = format!("{take} RETURNING 0::bigint");
                let params: [&(dyn ToSql + Sync); 3] = [&name, &lease, &locked_by];
                self.query("take the lease row", &sql, &params).await?
            }
            _ => {
                let sql = format!(
                    "WITH a AS ({take} RETURNING 1) INSERT INTO polylock_fencing (name, token) \
                     SELECT $4, 1 FROM a ON CONFLICT (name) DO UPDATE SET token = \
                     polylock_fencing.token + 1 RETURNING token"
                );
                let fence = format!("{t}:{name}");
                let params: [&(dyn ToSql + Sync); 4] = [&name, &lease, &locked_by, &fence];
                self.query("take the lease row", &sql, &params).await?
            }
        };
        Ok(rows.first().map(|r| r.get::<_, i64>(0).max(0) as u64))
    }

    async fn extend(&self, items: &[(Arc<str>, String)], lease: Duration) -> Result<Vec<bool>> {
        let t = &self.url.table;
        let lease = ms(lease);
        let sql = format!(
            "UPDATE {t} SET lock_until = {UTC_NOW} + $3::float8 * interval '1 millisecond' WHERE \
             name = $1 AND locked_by = $2 AND lock_until > {UTC_NOW} RETURNING 1"
        );
        let mut out = Vec::with_capacity(items.len());
        for (name, by) in items {
            let name: &str = name;
            let rows = self
                .query("extend a lease", &sql, &[&name, by, &lease])
                .await?;
            out.push(!rows.is_empty());
        }
        Ok(out)
    }

    async fn give_back(&self, name: &str, locked_by: &str) -> Result<bool> {
        let t = &self.url.table;
        let channel = self.channel();
        let sql = format!(
            "WITH r AS (UPDATE {t} SET lock_until = {UTC_NOW} WHERE name = $1 AND locked_by = $2 \
             AND lock_until > {UTC_NOW} RETURNING name) SELECT pg_notify($3, name) FROM r"
        );
        let rows = self
            .query(
                "release the lease row",
                &sql,
                &[&name, &locked_by, &channel],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn holder(&self, name: &str) -> Result<Option<(String, Duration)>> {
        self.ready().await?;
        let t = &self.url.table;
        let sql = format!(
            "SELECT locked_by, (EXTRACT(EPOCH FROM (lock_until - {UTC_NOW})) * 1000)::float8 \
             FROM {t} WHERE name = $1 AND lock_until > {UTC_NOW}"
        );
        let rows = self.query("read the lease row", &sql, &[&name]).await?;
        Ok(rows.first().map(|r| {
            let left: f64 = r.get(1);
            (
                r.get::<_, String>(0),
                Duration::from_secs_f64((left / 1000.0).max(0.0)),
            )
        }))
    }

    async fn force(&self, name: &str) -> Result<bool> {
        let t = &self.url.table;
        let channel = self.channel();
        let sql = format!(
            "WITH r AS (UPDATE {t} SET lock_until = {UTC_NOW} WHERE name = $1 AND lock_until > \
             {UTC_NOW} RETURNING name) SELECT pg_notify($2, name) FROM r"
        );
        let rows = self.query("end a lease", &sql, &[&name, &channel]).await?;
        Ok(!rows.is_empty())
    }

    async fn waiter(&self, name: &str) -> Result<Box<dyn TableWaiter>> {
        if self
            .per_transaction
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Ok(Box::new(table::Backoff));
        }
        let mut slot = self.listener.lock().await;
        if slot.as_ref().is_some_and(|l| *l.closed.borrow()) {
            *slot = None;
        }
        if slot.is_none() {
            *slot = Some(self.open_listener().await?);
        }
        let l = slot.as_ref().expect("listener");
        let mut map = l.waiters.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map
            .entry(name.to_string())
            .or_insert_with(|| (watch::Sender::new(0), 0));
        entry.1 += 1;
        let rx = entry.0.subscribe();
        Ok(Box::new(PgWaiter {
            name: name.to_string(),
            rx,
            waiters: l.waiters.clone(),
        }))
    }
}

/// A PostgreSQL client's backend.
pub(crate) struct PgBackend {
    db: Arc<Pg>,
    exclusive: Option<Arc<PgLock>>,
    read: Option<Arc<PgLock>>,
    write: Option<Arc<PgLock>>,
    table: Option<Arc<TableLock>>,
}

/// Connect to a `postgres://` URL.
pub(crate) async fn connect(
    url: SqlUrl,
    options: &ClientOptions,
    client_id: &str,
) -> Result<Box<dyn Backend>> {
    let mut config = tokio_postgres::Config::from_str(&url.driver_url)
        .map_err(|e| Error::invalid(url.redact(&format!("malformed PostgreSQL URL: {e}"))))?;
    // TLS as the URL's sslmode says (connect_as), and whenever used, verified.
    config.connect_timeout(options.connect_timeout);
    // Who holds what, in the server's own views (pg_stat_activity next to pg_locks).
    config.application_name(crate::model::identity::short_identity(options, 63));
    let tls = make_tls(url.root_cert.as_deref())?;
    let slots = Slots::new(
        url.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
        SERVER,
    );
    let pool = Pool::new(slots.clone(), options.command_timeout);
    let mode = url.mode;
    let url_fencing = url.fencing.unwrap_or(Fencing::Sequence);
    let db = Arc::new(Pg {
        url,
        config,
        tls,
        options: options.clone(),
        pool: pool.clone(),
        query: tokio::sync::Mutex::new(None),
        ready: tokio::sync::OnceCell::new(),
        listener: tokio::sync::Mutex::new(None),
        fencing: url_fencing,
        in_flight: Arc::default(),
        tls_learned: Arc::default(),
        per_transaction: Default::default(),
    });
    // The query connection, now: a wrong password or a server down fails the connect.
    let mut first = db.open().await?;
    if db.pooled_per_transaction(&first).await? {
        if mode == Mode::Session {
            return Err(Error::unsupported(
                "this PostgreSQL URL leads to a pool that changes server connections between \
                 transactions (PgBouncer's pool_mode=transaction or statement): a session \
                 advisory lock would be taken on one server connection and released on another. \
                 Use a session-pooled port or a direct connection, or the lease table (?mode=table)",
            ));
        }
        db.per_transaction
            .store(true, std::sync::atomic::Ordering::Relaxed);
        first.per_transaction = true;
        tracing::debug!(
            server = SERVER,
            "pooled per transaction: the lease table's statements go unnamed, and waiters back off \
             (a LISTEN would stay on a pooled server connection)"
        );
    }
    *db.query.lock().await = Some((first, slots.take()?));
    pool.start_keepalive(options.watchdog_timeout / 3);
    let lock = |kind| Some(Arc::new(PgLock::new(db.clone(), kind)));
    Ok(Box::new(match mode {
        Mode::Session => PgBackend {
            exclusive: lock(LockKind::Reentrant),
            read: lock(LockKind::Read),
            write: lock(LockKind::Write),
            table: None,
            db,
        },
        Mode::Table => {
            let t: Arc<dyn TableDb> = db.clone();
            PgBackend {
                exclusive: None,
                read: None,
                write: None,
                table: Some(Arc::new(TableLock::new(t, client_id))),
                db,
            }
        }
    }))
}

impl PgBackend {
    fn ops(&self, kind: LockKind) -> Result<Arc<PgLock>> {
        let found = match kind {
            LockKind::Reentrant => self.exclusive.clone(),
            LockKind::Read => self.read.clone(),
            LockKind::Write => self.write.clone(),
            _ => None,
        };
        found.ok_or_else(|| match (kind, &self.table) {
            (LockKind::Read | LockKind::Write, Some(_)) => Error::unsupported(
                "the lease table has no read-write lock (ShedLock's rows are exclusive); use \
                 session advisory locks (no mode=table) for pg_advisory_lock_shared",
            ),
            _ => Error::unsupported(format!(
                "PostgreSQL has no {} in polylock; use lock() or read_write_lock()",
                kind.word()
            )),
        })
    }
}

#[async_trait]
impl Backend for PgBackend {
    fn server(&self) -> &'static str {
        SERVER
    }

    fn validate_name(&self, name: &str) -> Result<()> {
        match self.table {
            Some(_) => table::validate_name(name),
            None => Ok(()),
        }
    }

    fn lock_ops(&self, kind: LockKind) -> Result<Arc<dyn LockOps>> {
        if let (LockKind::Reentrant, Some(t)) = (kind, &self.table) {
            return Ok(t.clone());
        }
        Ok(self.ops(kind)?)
    }

    fn hold_ops(&self, kind: HoldKind) -> Result<Arc<dyn HoldOps>> {
        match kind {
            HoldKind::Lock(LockKind::Reentrant) if self.table.is_some() => {
                Ok(self.table.clone().expect("table"))
            }
            HoldKind::Lock(k) => Ok(self.ops(k)?),
            HoldKind::Permit => Err(Error::internal("no permits on PostgreSQL")),
        }
    }

    async fn ping(&self) -> Result<()> {
        self.db.query("ping", "SELECT 1", &[]).await.map(|_| ())
    }

    /// Owners are backend pids: their connections' `application_name` (a polylock client's
    /// `service@host/pid`; whatever another program set).
    async fn identities(&self, _name: &str, owners: &[String]) -> Vec<Option<String>> {
        let pids: Vec<i32> = owners.iter().filter_map(|o| o.parse().ok()).collect();
        let rows = match self
            .db
            .query(
                "read the holders' application names",
                "SELECT pid, application_name FROM pg_stat_activity WHERE pid = ANY($1)",
                &[&pids],
            )
            .await
        {
            Ok(rows) => rows,
            Err(_) => return vec![None; owners.len()],
        };
        owners
            .iter()
            .map(|o| {
                let pid: i32 = o.parse().ok()?;
                rows.iter()
                    .find(|r| r.get::<_, i32>(0) == pid)
                    .map(|r| r.get::<_, String>(1))
                    .filter(|a| !a.is_empty())
            })
            .collect()
    }

    async fn close(&self) {
        self.db.pool.close().await;
        *self.db.listener.lock().await = None;
        if let Some((c, _slot)) = self.db.query.lock().await.take() {
            c.close().await;
        }
    }
}
