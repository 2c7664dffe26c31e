//! MySQL and MariaDB: named locks (`GET_LOCK`) held on a connection of their own, and the lease
//! table in ShedLock's layout (`?mode=table`).
//!
//! One statement takes the lock and draws the fencing token while it is held, so a lock costs
//! one round trip, like a bare `GET_LOCK`: on MariaDB `SELECT NEXTVAL(polylock_fencing_seq) FROM
//! DUAL WHERE GET_LOCK(name, timeout) = 1` (the sequence's cache is the server's, shared by all
//! sessions, so its values grow in the order they are drawn); on MySQL, which has no sequences,
//! or with `fencing=table`, `INSERT INTO polylock_fencing ... SELECT ... WHERE GET_LOCK(name,
//! timeout) = 1 ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1)`, whose token comes
//! back in the OK packet (and whose commit is durable: an fsync per acquire); with `fencing=none`,
//! the bare `SELECT GET_LOCK(name, timeout)`. MariaDB takes no negative ("forever")
//! timeout (it returns NULL, checked on 10.11), so a wait without end waits a year at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::BoxFuture;
use mysql_async::prelude::Queryable;

use super::names::mysql_lock_name;
use super::session::{answer_by, InFlight, Pool, SessionConn};
use super::table::{self, TableDb, TableLock, TableWaiter};
use super::{
    fencing_sequence, Fencing, Mode, Slot, Slots, SqlUrl, DEFAULT_MAX_CONNECTIONS, FENCING_SEQUENCE,
};
use crate::backend::{
    AcquireRequest, Backend, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest,
    UnlockReply,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldKind, HoldMode, LockKind};
use crate::model::options::{ClientOptions, Wait};
use crate::model::outcome::{Holder, LockStatus};
use crate::model::owner::OwnerId;

const SERVER: &str = "MySQL";
/// A wait without end, a year at a time.
const FOREVER_SECS: f64 = 365.0 * 24.0 * 3600.0;
/// How long past its deadline a wait may run on the server before it is killed (the server's
/// own timeout ends it first).
const GRACE: Duration = Duration::from_millis(250);
/// `ER_QUERY_INTERRUPTED`: a wait killed by `KILL QUERY`.
const ER_QUERY_INTERRUPTED: u16 = 1317;

const ACQUIRE_SEQ: &str = concat!(
    "SELECT NEXTVAL(",
    fencing_sequence!(),
    ") FROM DUAL WHERE GET_LOCK(?, ?) = 1"
);
const ACQUIRE: &str = "INSERT INTO polylock_fencing (name, token) SELECT ?, LAST_INSERT_ID(1) \
     FROM DUAL WHERE GET_LOCK(?, ?) = 1 ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1)";
const ACQUIRE_NONE: &str = "SELECT GET_LOCK(?, ?)";
const CREATE_FENCING: &str = "CREATE TABLE IF NOT EXISTS polylock_fencing (name VARCHAR(255) \
     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, token BIGINT NOT NULL)";

/// A MySQL connection.
pub(crate) struct MyConn {
    conn: mysql_async::Conn,
    id: u64,
}

#[async_trait]
impl SessionConn for MyConn {
    fn id(&self) -> u64 {
        self.id
    }

    async fn ping(&mut self) -> bool {
        self.conn.ping().await.is_ok()
    }

    fn is_closed(&self) -> bool {
        false // found out by the next statement
    }

    async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.conn.disconnect()).await;
    }
}

/// Map a driver error to polylock's table, without the password.
fn map_err(url: &SqlUrl, e: mysql_async::Error, doing: &str) -> Error {
    use mysql_async::Error as E;
    let kind = match &e {
        // Access denied (1045), to the database (1044), plugin refused (1698).
        E::Server(s) if matches!(s.code, 1044 | 1045 | 1698) => ErrorKind::Auth,
        E::Server(_) => ErrorKind::Backend,
        E::Io(_) => ErrorKind::Connection,
        E::Driver(_) => ErrorKind::Connection,
        E::Url(_) => ErrorKind::InvalidArgument,
        E::Other(_) => ErrorKind::Backend,
    };
    let hint = match kind {
        ErrorKind::Auth => "; check the user name and password in the URL",
        ErrorKind::Connection => "; check that the MySQL/MariaDB server is running and reachable",
        _ => "",
    };
    Error::new(
        kind,
        url.redact(&format!("{SERVER}: could not {doing}: {e}{hint}")),
    )
}

fn server_code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(s) => Some(s.code),
        _ => None,
    }
}

/// The connections of one MySQL client.
pub(crate) struct MySql {
    url: SqlUrl,
    opts: mysql_async::Opts,
    options: ClientOptions,
    pool: Arc<Pool<MyConn>>,
    /// The query connection: status, `KILL QUERY`, the lease table.
    query: tokio::sync::Mutex<Option<(MyConn, Slot)>>,
    ready: tokio::sync::OnceCell<()>,
    fencing: Fencing,
    /// Lock and release statements being awaited (see [`crate::runtime::await_alone`]).
    in_flight: std::sync::atomic::AtomicUsize,
}

impl MySql {
    /// A new connection, opened on polylock's runtime (its socket outlives the caller's).
    async fn open(&self) -> Result<MyConn> {
        let (opts, url) = (self.opts.clone(), self.url.clone());
        super::open_on_runtime(SERVER, self.options.connect_timeout, async move {
            let conn = mysql_async::Conn::new(opts)
                .await
                .map_err(|e| map_err(&url, e, "connect"))?;
            Ok(MyConn {
                id: conn.id() as u64,
                conn,
            })
        })
        .await
    }

    /// Run `f` on the query connection (opened again if it broke).
    async fn with_query<T: Send>(
        &self,
        doing: &str,
        f: impl for<'c> FnOnce(&'c mut mysql_async::Conn) -> BoxFuture<'c, mysql_async::Result<T>>
            + Send,
    ) -> Result<T> {
        let mut slot = self.query.lock().await;
        if slot.is_none() {
            let place = self.pool.slots.take()?;
            *slot = Some((self.open().await?, place));
        }
        let (conn, _) = slot.as_mut().expect("query connection");
        match tokio::time::timeout(self.options.command_timeout, f(&mut conn.conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                if !matches!(e, mysql_async::Error::Server(_)) {
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
            let table = self.url.table.clone();
            let (mode, fencing) = (self.url.mode, self.fencing);
            self.with_query("create the fencing table", move |c| {
                Box::pin(async move {
                    if fencing != Fencing::None {
                        c.query_drop(CREATE_FENCING).await?;
                    }
                    if mode == Mode::Session && fencing == Fencing::Sequence {
                        let start: Option<u64> = c
                            .query_first("SELECT COALESCE(MAX(token), 0) + 1 FROM polylock_fencing")
                            .await?;
                        c.query_drop(format!(
                            "CREATE SEQUENCE IF NOT EXISTS {FENCING_SEQUENCE} START WITH {} \
                                 CACHE 1000",
                            start.unwrap_or(1)
                        ))
                        .await?;
                    }
                    if mode == Mode::Table {
                        c.query_drop(format!(
                            "CREATE TABLE IF NOT EXISTS {table} (name VARCHAR(64) NOT NULL, \
                                 lock_until TIMESTAMP(3) NOT NULL, locked_at TIMESTAMP(3) NOT NULL \
                                 DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, \
                                 PRIMARY KEY (name))"
                        ))
                        .await?;
                    }
                    Ok(())
                })
            })
            .await
        })
        .await
    }

    async fn kill_query(&self, id: u64) {
        let r = self
            .with_query("cancel a wait", move |c| {
                Box::pin(async move { c.query_drop(format!("KILL QUERY {id}")).await })
            })
            .await;
        if let Err(e) = r {
            tracing::warn!("polylock: {e}");
        }
    }

    /// A connection for a lock: idle, or new under the cap. True if it came from the pool.
    async fn lock_conn(&self) -> Result<(MyConn, Slot, bool)> {
        if let Some((c, s)) = self.pool.take_idle()? {
            return Ok((c, s, true));
        }
        let slot = self.pool.new_slot()?;
        Ok((self.open().await?, slot, false))
    }
}

/// The outcome of one `GET_LOCK` statement.
enum Attempt {
    Granted(MyConn, Slot, u64),
    Busy(MyConn, Slot),
    Failed(mysql_async::Error, MyConn, Slot),
}

/// The statement that takes `key` and draws the token; the token if it granted the lock.
async fn lock_statement(
    conn: &mut mysql_async::Conn,
    fencing: Fencing,
    key: &str,
    secs: f64,
) -> mysql_async::Result<Option<u64>> {
    match fencing {
        Fencing::Sequence => conn.exec_first(ACQUIRE_SEQ, (key, secs)).await,
        // 1 granted, 0 timed out, NULL an error (a killed wait).
        Fencing::None => Ok(conn
            .exec_first::<Option<i64>, _, _>(ACQUIRE_NONE, (key, secs))
            .await?
            .flatten()
            .filter(|&got| got == 1)
            .map(|_| 0)),
        Fencing::Table => {
            let fence = format!("get_lock:{key}");
            conn.exec_drop(ACQUIRE, (fence, key, secs)).await?;
            Ok(match conn.affected_rows() {
                0 => None,
                _ => Some(conn.last_insert_id().unwrap_or(0)),
            })
        }
    }
}

/// After a wait that ended without a grant the caller keeps: give back whatever the statement
/// may have taken, then return the connection (or close it if it broke).
async fn settle(db: &MySql, mut conn: MyConn, slot: Slot, key: &str, healthy: bool) {
    let released = conn
        .conn
        .exec_drop("DO RELEASE_LOCK(?)", (key,))
        .await
        .is_ok();
    if healthy && released {
        db.pool.put_back(conn, slot);
    } else {
        conn.close().await;
    }
}

/// MySQL's named lock.
pub(crate) struct MySqlLock {
    db: Arc<MySql>,
}

impl MySqlLock {
    async fn attempt(
        &self,
        conn: MyConn,
        slot: Slot,
        key: &str,
        secs: f64,
        deadline: Option<Instant>,
    ) -> Result<Attempt> {
        let id = conn.id;
        // Cut short, the connection is unusable (the driver marks a connection whose exchange
        // was cut short as broken): kill the statement, then close the connection, which gives
        // back a grant that raced the kill.
        let db = &self.db;
        let mut flight =
            InFlight::new(conn, slot, |conn: MyConn, slot| -> BoxFuture<'static, ()> {
                let db = db.clone();
                Box::pin(async move {
                    db.kill_query(conn.id).await;
                    drop((conn, slot));
                })
            });
        let out = {
            let statement = std::pin::pin!(crate::runtime::await_alone(
                &self.db.in_flight,
                lock_statement(&mut flight.conn().conn, self.db.fencing, key, secs),
            ));
            // A try (no time to wait) is answered by the server at once: only a server that
            // does not answer within the command timeout has it killed. A slow server (a busy
            // machine) must not turn a free lock into "not acquired".
            let grace = if secs > 0.0 {
                GRACE
            } else {
                self.db.options.command_timeout
            };
            answer_by(statement, deadline.map(|d| d + grace), || {
                Box::pin(self.db.kill_query(id))
            })
            .await
        };
        let (conn, slot) = flight.finish();
        Ok(match out {
            Ok(Some(token)) => Attempt::Granted(conn, slot, token),
            Ok(None) => Attempt::Busy(conn, slot),
            Err(e) => Attempt::Failed(e, conn, slot),
        })
    }
}

impl MySqlLock {
    /// Unlock the hold of `name` on the held connection `node` and give the connection back
    /// (to the idle pool, or closed if the unlock failed); whether the server had it locked.
    /// Both a release and a dropped hold end here, without a second boxed future.
    async fn unlock(&self, name: &str, node: &str) -> bool {
        let released = match self.db.pool.held(node) {
            Some(held) => {
                let key = mysql_lock_name(name);
                let mut g = held.conn().await;
                match g.as_mut() {
                    Some(c) => matches!(
                        crate::runtime::await_alone(
                            &self.db.in_flight,
                            c.conn.exec_first::<Option<i64>, _, _>(
                                "SELECT RELEASE_LOCK(?)",
                                (&*key,)
                            ),
                        )
                        .await,
                        Ok(Some(Some(1)))
                    ),
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
impl HoldOps for MySqlLock {
    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        Ok(match node {
            Some(node) => self.unlock(name, node).await,
            None => false,
        })
    }
}

#[async_trait]
impl LockOps for MySqlLock {
    fn kind(&self) -> LockKind {
        LockKind::Reentrant
    }

    fn reentry(&self) -> Reentry {
        Reentry::Client
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Session
    }

    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        self.db.ready().await?;
        let key = mysql_lock_name(req.name);
        let deadline = req.wait.deadline();
        let (mut conn, mut slot, mut pooled) = self.db.lock_conn().await?;
        loop {
            let secs = match (req.wait, deadline) {
                (Wait::Forever, _) => FOREVER_SECS,
                (_, Some(d)) => super::seconds(d.saturating_duration_since(Instant::now())),
                (_, None) => 0.0,
            };
            match self.attempt(conn, slot, &key, secs, deadline).await? {
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
                    if req.wait == Wait::Forever {
                        (conn, slot) = (c, s); // a year went by: wait again
                        continue;
                    }
                    self.db.pool.put_back(c, s);
                    return Ok(None);
                }
                Attempt::Failed(e, c, s) => {
                    let interrupted = server_code(&e) == Some(ER_QUERY_INTERRUPTED);
                    let broken = !matches!(e, mysql_async::Error::Server(_));
                    if broken {
                        drop(c);
                        drop(s);
                        if pooled {
                            // An idle connection the server had closed: try a fresh one.
                            pooled = false;
                            slot = self.db.pool.new_slot()?;
                            conn = self.db.open().await?;
                            continue;
                        }
                        return Err(map_err(&self.db.url, e, "acquire a named lock"));
                    }
                    Box::pin(settle(&self.db, c, s, &key, true)).await;
                    if interrupted {
                        // Our own kill after the deadline (or an operator's KILL QUERY).
                        return Ok(None);
                    }
                    return Err(map_err(&self.db.url, e, "acquire a named lock"));
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
        Ok(self.holder(name).await?.is_some())
    }

    async fn remaining_lease(&self, _name: &str) -> Result<Option<Duration>> {
        Ok(None) // held while its connection lives
    }

    /// Kill the holder's connection (the only way to take a named lock from its session).
    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let Some(id) = self.holder(name).await? else {
            return Ok(false);
        };
        self.db
            .with_query("kill the holder's connection", move |c| {
                Box::pin(async move { c.query_drop(format!("KILL CONNECTION {id}")).await })
            })
            .await?;
        Ok(true)
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        let holder = self.holder(name).await?;
        Ok(LockStatus {
            name: name.to_string(),
            locked: holder.is_some(),
            mode: None,
            holders: holder
                .into_iter()
                .map(|id| Holder {
                    owner: id.to_string(),
                    count: 1,
                    mode: HoldMode::Exclusive,
                    identity: None,
                })
                .collect(),
            ttl: None,
            waiters: Vec::new(),
            waiter_identities: Vec::new(),
            shared_with: Vec::new(),
        })
    }
}

impl MySqlLock {
    /// The connection id holding `name`, if any.
    async fn holder(&self, name: &str) -> Result<Option<u64>> {
        let key = mysql_lock_name(name).into_owned();
        let id: Option<Option<u64>> = self
            .db
            .with_query("look at a named lock", move |c| {
                Box::pin(async move { c.exec_first("SELECT IS_USED_LOCK(?)", (key,)).await })
            })
            .await?;
        Ok(id.flatten())
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

#[async_trait]
impl TableDb for MySql {
    async fn take(&self, name: &str, locked_by: &str, lease: Duration) -> Result<Option<u64>> {
        self.ready().await?;
        let t = self.url.table.clone();
        let (name, by, fence) = (
            name.to_string(),
            locked_by.to_string(),
            format!("{}:{name}", self.url.table),
        );
        let us = micros(lease);
        let fencing = self.fencing;
        self.with_query("take the lease row", move |c| {
            Box::pin(async move {
                // Assignments run left to right: lock_until last, so the others still see the
                // old lease. Affected rows: 1 inserted, 2 taken over, 0 busy.
                c.exec_drop(
                    format!(
                        "INSERT INTO {t} (name, lock_until, locked_at, locked_by) VALUES (?, \
                         DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND), UTC_TIMESTAMP(3), ?) \
                         ON DUPLICATE KEY UPDATE \
                         locked_by = IF(lock_until <= UTC_TIMESTAMP(3), VALUES(locked_by), locked_by), \
                         locked_at = IF(lock_until <= UTC_TIMESTAMP(3), VALUES(locked_at), locked_at), \
                         lock_until = IF(lock_until <= UTC_TIMESTAMP(3), VALUES(lock_until), lock_until)"
                    ),
                    (name, us, by),
                )
                .await?;
                if c.affected_rows() == 0 {
                    return Ok(None);
                }
                if fencing == Fencing::None {
                    return Ok(Some(0));
                }
                c.exec_drop(
                    "INSERT INTO polylock_fencing (name, token) VALUES (?, LAST_INSERT_ID(1)) \
                     ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1)",
                    (fence,),
                )
                .await?;
                Ok(Some(c.last_insert_id().unwrap_or(0)))
            })
        })
        .await
    }

    async fn extend(&self, items: &[(Arc<str>, String)], lease: Duration) -> Result<Vec<bool>> {
        let t = self.url.table.clone();
        let items: Vec<(String, String)> = items
            .iter()
            .map(|(n, b)| (n.to_string(), b.clone()))
            .collect();
        let us = micros(lease);
        self.with_query("extend leases", move |c| {
            Box::pin(async move {
                let mut out = Vec::with_capacity(items.len());
                for (name, by) in items {
                    c.exec_drop(
                        format!(
                            "UPDATE {t} SET lock_until = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? \
                             MICROSECOND) WHERE name = ? AND locked_by = ? AND lock_until > \
                             UTC_TIMESTAMP(3)"
                        ),
                        (us, name, by),
                    )
                    .await?;
                    out.push(c.affected_rows() > 0);
                }
                Ok(out)
            })
        })
        .await
    }

    async fn give_back(&self, name: &str, locked_by: &str) -> Result<bool> {
        let t = self.url.table.clone();
        let (name, by) = (name.to_string(), locked_by.to_string());
        self.with_query("release the lease row", move |c| {
            Box::pin(async move {
                c.exec_drop(
                    format!(
                        "UPDATE {t} SET lock_until = UTC_TIMESTAMP(3) WHERE name = ? AND \
                         locked_by = ? AND lock_until > UTC_TIMESTAMP(3)"
                    ),
                    (name, by),
                )
                .await?;
                Ok(c.affected_rows() > 0)
            })
        })
        .await
    }

    async fn holder(&self, name: &str) -> Result<Option<(String, Duration)>> {
        self.ready().await?;
        let t = self.url.table.clone();
        let name = name.to_string();
        let row: Option<(String, i64)> = self
            .with_query("read the lease row", move |c| {
                Box::pin(async move {
                    c.exec_first(
                        format!(
                            "SELECT locked_by, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), \
                             lock_until) FROM {t} WHERE name = ? AND lock_until > \
                             UTC_TIMESTAMP(3)"
                        ),
                        (name,),
                    )
                    .await
                })
            })
            .await?;
        Ok(row.map(|(by, us)| (by, Duration::from_micros(us.max(0) as u64))))
    }

    async fn force(&self, name: &str) -> Result<bool> {
        let t = self.url.table.clone();
        let name = name.to_string();
        self.with_query("end a lease", move |c| {
            Box::pin(async move {
                c.exec_drop(
                    format!(
                        "UPDATE {t} SET lock_until = UTC_TIMESTAMP(3) WHERE name = ? AND \
                         lock_until > UTC_TIMESTAMP(3)"
                    ),
                    (name,),
                )
                .await?;
                Ok(c.affected_rows() > 0)
            })
        })
        .await
    }

    async fn waiter(&self, _name: &str) -> Result<Box<dyn TableWaiter>> {
        Ok(Box::new(table::Backoff))
    }
}

/// A MySQL client's backend.
pub(crate) struct MySqlBackend {
    db: Arc<MySql>,
    lock: Option<Arc<MySqlLock>>,
    table: Option<Arc<TableLock>>,
}

/// Connect to a `mysql://` URL.
pub(crate) async fn connect(
    url: SqlUrl,
    options: &ClientOptions,
    client_id: &str,
) -> Result<Box<dyn Backend>> {
    let opts = mysql_async::Opts::from_url(&url.driver_url)
        .map_err(|e| Error::invalid(url.redact(&format!("malformed MySQL URL: {e}"))))?;
    let ssl = match &url.root_cert {
        // A CA of the URL's own: TLS, verified against it (and the built-in roots).
        Some(path) => {
            std::fs::metadata(path)
                .map_err(|e| Error::invalid(format!("sslrootcert '{path}': {e}")))?;
            let ssl = opts.ssl_opts().cloned().unwrap_or_default();
            Some(ssl.with_root_certs(vec![std::path::PathBuf::from(path).into()]))
        }
        None => opts.ssl_opts().cloned(),
    };
    let opts: mysql_async::Opts = mysql_async::OptsBuilder::from_opts(opts)
        .client_found_rows(false)
        .ssl_opts(ssl)
        .into();
    let slots = Slots::new(
        url.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
        SERVER,
    );
    let pool = Pool::new(slots.clone(), options.command_timeout);
    let mode = url.mode;
    let mut db = MySql {
        url,
        opts,
        options: options.clone(),
        pool: pool.clone(),
        query: tokio::sync::Mutex::new(None),
        ready: tokio::sync::OnceCell::new(),
        fencing: Fencing::Table,
        in_flight: Default::default(),
    };
    // The query connection, now: a wrong password or a server down fails the connect.
    let mut first = db.open().await?;
    // Only a sequence needs to know the server (the lease table draws no session tokens).
    db.fencing = match (db.url.fencing, mode) {
        (Some(Fencing::None), _) => Fencing::None,
        (Some(Fencing::Table), _) | (None, Mode::Table) => Fencing::Table,
        (wanted, _) => {
            let version: Option<String> = first
                .conn
                .query_first("SELECT VERSION()")
                .await
                .map_err(|e| map_err(&db.url, e, "ask the server's version"))?;
            match (wanted, version.is_some_and(|v| v.contains("MariaDB"))) {
                (_, true) => Fencing::Sequence,
                (None, false) => Fencing::Table,
                (Some(_), false) => {
                    first.close().await;
                    return Err(Error::invalid(
                        "fencing=sequence needs MariaDB 10.3 or later: MySQL has no sequences \
                         (leave fencing out, or say fencing=table)",
                    ));
                }
            }
        }
    };
    let db = Arc::new(db);
    *db.query.lock().await = Some((first, slots.take()?));
    pool.start_keepalive(options.watchdog_timeout / 3);
    let (lock, table) = match mode {
        Mode::Session => (Some(Arc::new(MySqlLock { db: db.clone() })), None),
        Mode::Table => {
            let t: Arc<dyn TableDb> = db.clone();
            (None, Some(Arc::new(TableLock::new(t, client_id))))
        }
    };
    Ok(Box::new(MySqlBackend { db, lock, table }))
}

#[async_trait]
impl Backend for MySqlBackend {
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
        match (kind, &self.lock, &self.table) {
            (LockKind::Reentrant, Some(l), _) => Ok(l.clone()),
            (LockKind::Reentrant, _, Some(t)) => Ok(t.clone()),
            (LockKind::Read | LockKind::Write, _, _) => Err(Error::unsupported(
                "MySQL and MariaDB have no shared named locks: read-write locks need PostgreSQL \
                 (pg_advisory_lock_shared), Redis or ZooKeeper",
            )),
            (k, _, _) => Err(Error::unsupported(format!(
                "MySQL has no {} in polylock; use lock()",
                k.word()
            ))),
        }
    }

    fn hold_ops(&self, kind: HoldKind) -> Result<Arc<dyn HoldOps>> {
        match (kind, &self.lock, &self.table) {
            (HoldKind::Lock(LockKind::Reentrant), Some(l), _) => Ok(l.clone()),
            (HoldKind::Lock(LockKind::Reentrant), _, Some(t)) => Ok(t.clone()),
            _ => Err(Error::internal(format!(
                "no {} holds on MySQL",
                kind.word()
            ))),
        }
    }

    async fn ping(&self) -> Result<()> {
        self.db
            .with_query("ping", |c| Box::pin(async move { c.ping().await }))
            .await
    }

    async fn close(&self) {
        self.db.pool.close().await;
        if let Some((c, _slot)) = self.db.query.lock().await.take() {
            c.close().await;
        }
    }
}
