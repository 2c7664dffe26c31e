//! The Redis backend, in Redisson's RLock storage format (see `shared/PROTOCOL.md`).
//!
//! | key / channel                                | content                                   |
//! |----------------------------------------------|-------------------------------------------|
//! | `<name>`                                     | hash `<clientId>:<ownerId>` → hold count; PTTL = lease |
//! | `redisson_lock__channel:{<name>}`            | pub/sub, `0` after a full release          |
//! | `redisson_lock_token:{<name>}`               | fencing counter, `INCR` per new ownership  |

mod pubsub;
mod sync_conn;

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, RetryMethod, Script, Value};

use crate::client::{ClientOptions, Wait};
use crate::error::{Error, ErrorKind, Result};
use crate::runtime;

pub(crate) use pubsub::Subscriptions;
use sync_conn::SyncConns;

const UNLOCK_MESSAGE: &str = "0";
const PUBLISH: &str = "publish";
/// How many times a command is retried after an error redis-rs classifies as retryable.
const RETRIES: usize = 2;
/// Most keys renewed by one watchdog script call.
pub(crate) const RENEW_BATCH: usize = 100;

struct Scripts {
    acquire: Script,
    release: Script,
    renew: Script,
    force_unlock: Script,
    drop_field: Script,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            acquire: Script::new(include_str!("lua/acquire.lua")),
            release: Script::new(include_str!("lua/release.lua")),
            renew: Script::new(include_str!("lua/renew.lua")),
            force_unlock: Script::new(include_str!("lua/force_unlock.lua")),
            drop_field: Script::new(include_str!("lua/drop.lua")),
        }
    }
}

/// Channel on which releases of `name` are announced.
pub(crate) fn channel_name(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

fn token_key(name: &str) -> String {
    format!("redisson_lock_token:{{{name}}}")
}

/// The outcome of a successful acquire script call.
pub(crate) struct Granted {
    pub(crate) token: u64,
    pub(crate) count: u32,
}

/// Result of one unlock script call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnlockReply {
    /// The owner held nothing.
    NotHeld,
    /// One hold was released; the owner still holds the lock.
    Decremented,
    /// The last hold was released; the lock is free.
    Freed,
}

/// What `HGETALL` and `PTTL` say about a lock (turned into [`LockStatus`](crate::LockStatus)).
pub(crate) struct RawStatus {
    pub(crate) holders: Vec<(String, u32)>,
    pub(crate) pttl: i64,
}

pub(crate) struct RedisBackend {
    conn: ConnectionManager,
    // Boxed: a redis::Client is large, and the Backend enum stays small.
    sync: Box<SyncConns>,
    subs: Arc<Subscriptions>,
    scripts: Arc<Scripts>,
    /// Undos of cancelled acquires still in flight, by lock and owner: the owner's next acquire
    /// waits for its own, so a late undo can never remove a newer hold.
    undos: Arc<Undos>,
}

type Undos = std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Notify>>>;

/// Map a redis-rs error to polylock's table, by redis-rs's own classification.
pub(crate) fn map_err(e: RedisError, doing: &str) -> Error {
    use redis::ErrorKind as K;
    let kind = if e.kind() == K::AuthenticationFailed
        || matches!(e.code(), Some("WRONGPASS" | "NOAUTH" | "NOPERM"))
    {
        ErrorKind::Auth
    } else if e.kind() == K::InvalidClientConfig {
        ErrorKind::InvalidArgument
    } else if e.is_io_error()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || e.is_timeout()
    {
        ErrorKind::Connection
    } else {
        ErrorKind::Backend
    };
    let hint = match kind {
        ErrorKind::Auth => "; check the user name and password in the URL",
        ErrorKind::Connection => {
            "; check that the Redis server is running and reachable (for rediss://, also that its \
             certificate is trusted; #insecure at the end of the URL skips that for a test server)"
        }
        _ => "",
    };
    Error::new(kind, format!("Redis: could not {doing}: {e}{hint}"))
}

fn retryable(e: &RedisError) -> bool {
    matches!(
        e.retry_method(),
        RetryMethod::Reconnect | RetryMethod::RetryImmediately | RetryMethod::WaitAndRetry
    )
}

fn backoff(attempt: usize) -> Duration {
    Duration::from_millis(20 << attempt.min(4))
}

fn ms(d: Duration) -> u64 {
    d.as_millis().clamp(1, u64::MAX as u128) as u64
}

impl RedisBackend {
    pub(crate) async fn connect(url: &str, options: &ClientOptions) -> Result<RedisBackend> {
        let client = redis::Client::open(url).map_err(|e| {
            Error::invalid(format!(
                "malformed Redis URL: {e}; expected redis://[user:password@]host:port[/db] or rediss://..."
            ))
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.connect_timeout))
            .set_response_timeout(Some(options.command_timeout))
            .set_number_of_retries(3)
            .set_max_delay(Duration::from_secs(1));
        let conn = ConnectionManager::new_with_config(client.clone(), config.clone())
            .await
            .map_err(|e| map_err(e, "connect"))?;
        Ok(RedisBackend {
            conn,
            sync: Box::new(SyncConns::new(
                client.clone(),
                options.connect_timeout,
                options.command_timeout,
            )),
            subs: Arc::new(Subscriptions::new(client, config)),
            scripts: Arc::new(Scripts::new()),
            undos: Arc::default(),
        })
    }

    fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// Close the idle connections of blocked callers (the client is being closed).
    pub(crate) fn close_sync(&self) {
        self.sync.clear();
    }

    /// Run a script on the caller's own connection when the caller blocks a thread of its own,
    /// else on the shared multiplexed connection.
    async fn invoke<T: redis::FromRedisValue>(
        &self,
        inv: &redis::ScriptInvocation<'_>,
    ) -> std::result::Result<T, RedisError> {
        if runtime::on_blocking_caller() {
            return self.sync.run(|c| inv.invoke(c));
        }
        inv.invoke_async(&mut self.conn()).await
    }

    /// One acquire script call, retried on retryable errors without counting a re-entry twice.
    async fn attempt(
        &self,
        name: &str,
        field: &str,
        lease: Duration,
        expected: u32,
    ) -> Result<std::result::Result<Granted, Option<Duration>>> {
        let token = token_key(name);
        let mut attempt = 0;
        loop {
            let mut inv = self.scripts.acquire.key(name);
            inv.key(&token)
                .arg(ms(lease))
                .arg(field)
                .arg(expected)
                .arg(if attempt == 0 { "" } else { "1" });
            // If this future is dropped while the script is in flight, the script may still run:
            // the guard then undoes the hold it would have added.
            let guard = UndoOnDrop {
                backend: self,
                name,
                field,
                expected,
                armed: true,
            };
            let reply: std::result::Result<Vec<i64>, RedisError> = self.invoke(&inv).await;
            let mut guard = guard;
            guard.armed = false;
            match reply {
                Ok(v) if v.first() == Some(&1) && v.len() == 3 => {
                    return Ok(Ok(Granted {
                        token: v[1].max(0) as u64,
                        count: v[2].clamp(0, u32::MAX as i64) as u32,
                    }))
                }
                Ok(v) if v.first() == Some(&0) && v.len() == 2 => {
                    let pttl = v[1];
                    return Ok(Err((pttl > 0).then(|| Duration::from_millis(pttl as u64))));
                }
                Ok(v) => {
                    return Err(Error::new(
                        ErrorKind::Backend,
                        format!("Redis: unexpected reply {v:?} from the acquire script; is '{name}' a Redisson lock?"),
                    ))
                }
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, "acquire the lock")),
            }
        }
    }

    /// Acquire `name` for `field`, waiting as `wait` says. `expected` is the owner's hold count
    /// before this call. Returns `Ok(None)` when the wait ran out.
    pub(crate) async fn acquire(
        &self,
        name: &str,
        field: &str,
        lease: Duration,
        expected: u32,
        wait: Wait,
        max_sleep: Duration,
    ) -> Result<Option<Granted>> {
        let deadline = match wait {
            Wait::Forever => None,
            Wait::Never => Some(Instant::now()),
            Wait::For(d) => Some(Instant::now() + d),
        };
        self.wait_for_undo(name, field).await;
        // Fast path: uncontended locks cost exactly one round trip.
        if let Ok(g) = self.attempt(name, field, lease, expected).await? {
            return Ok(Some(g));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        let guard = self.subs.wait_on(&channel_name(name)).await?;
        loop {
            let notified = guard.channel.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let pttl = match self.attempt(name, field, lease, expected).await? {
                Ok(g) => return Ok(Some(g)),
                Err(p) => p,
            };
            let now = Instant::now();
            // Sleep until woken, bounded by the lock's TTL (a lost message only delays us) and
            // by the caller's deadline.
            let mut sleep = pttl.unwrap_or(max_sleep).min(max_sleep);
            if let Some(d) = deadline {
                if now >= d {
                    return Ok(None);
                }
                sleep = sleep.min(d - now);
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    async fn wait_for_undo(&self, name: &str, field: &str) {
        if self
            .undos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            return;
        }
        let key = undo_key(name, field);
        loop {
            let Some(done) = self
                .undos
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .cloned()
            else {
                return;
            };
            let notified = done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self
                .undos
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(&key)
            {
                return;
            }
            notified.await;
        }
    }

    /// One release of a hold the owner counts `expected` of: the unlock script, retried after
    /// a lost reply without releasing twice.
    pub(crate) async fn release(
        &self,
        name: &str,
        field: &str,
        lease: Duration,
        expected: u32,
    ) -> Result<UnlockReply> {
        let mut attempt = 0;
        loop {
            match self
                .release_once(name, field, lease, expected, attempt > 0)
                .await
            {
                Ok(r) => return Ok(r),
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, "release the lock")),
            }
        }
    }

    /// Run the unlock script once; `retry` says an earlier attempt's reply was lost (exposed
    /// for the test of retried releases).
    pub(crate) async fn release_once(
        &self,
        name: &str,
        field: &str,
        lease: Duration,
        expected: u32,
        retry: bool,
    ) -> std::result::Result<UnlockReply, RedisError> {
        let mut inv = self.scripts.release.key(name);
        inv.key(channel_name(name))
            .arg(UNLOCK_MESSAGE)
            .arg(ms(lease))
            .arg(field)
            .arg(PUBLISH)
            .arg(expected)
            .arg(if retry { "1" } else { "" });
        let reply: Option<i64> = self.invoke(&inv).await?;
        Ok(match reply {
            None => UnlockReply::NotHeld,
            Some(0) => UnlockReply::Decremented,
            Some(_) => UnlockReply::Freed,
        })
    }

    /// Remove `field`'s holds (all, or one if the field has exactly `expected` holds).
    pub(crate) async fn drop_field(
        &self,
        name: &str,
        field: &str,
        expected: Option<u32>,
    ) -> Result<bool> {
        let mut inv = self.scripts.drop_field.key(name);
        inv.key(channel_name(name))
            .arg(UNLOCK_MESSAGE)
            .arg(field)
            .arg(PUBLISH);
        match expected {
            Some(n) => inv.arg(n),
            None => inv.arg(""),
        };
        let n: i64 = inv
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| map_err(e, "drop the owner's holds"))?;
        Ok(n == 1)
    }

    /// Renew many locks in one round trip. `Ok(v)`: `v[i]` says whether `locks[i]` is still held.
    pub(crate) async fn renew(
        &self,
        locks: &[(Arc<str>, String)],
        lease: Duration,
    ) -> Result<Vec<bool>> {
        let mut inv = self.scripts.renew.prepare_invoke();
        inv.arg(ms(lease));
        for (name, field) in locks {
            inv.key(&**name).arg(field);
        }
        let v: Vec<i64> = inv
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| map_err(e, "renew leases"))?;
        if v.len() != locks.len() {
            return Err(Error::internal(
                "renewal script returned the wrong number of results",
            ));
        }
        Ok(v.into_iter().map(|x| x == 1).collect())
    }

    pub(crate) async fn force_unlock(&self, name: &str) -> Result<bool> {
        let n: i64 = self
            .scripts
            .force_unlock
            .key(name)
            .key(channel_name(name))
            .arg(UNLOCK_MESSAGE)
            .arg(PUBLISH)
            .invoke_async(&mut self.conn())
            .await
            .map_err(|e| map_err(e, "force-unlock the lock"))?;
        Ok(n == 1)
    }

    async fn query<T: redis::FromRedisValue>(&self, cmd: redis::Cmd, doing: &str) -> Result<T> {
        let mut attempt = 0;
        loop {
            let reply = if runtime::on_blocking_caller() {
                self.sync.run(|c| cmd.query(c))
            } else {
                cmd.query_async(&mut self.conn()).await
            };
            match reply {
                Ok(v) => return Ok(v),
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, doing)),
            }
        }
    }

    pub(crate) async fn is_locked(&self, name: &str) -> Result<bool> {
        let n: i64 = self
            .query(redis::cmd("EXISTS").arg(name).clone(), "check the lock")
            .await?;
        Ok(n == 1)
    }

    pub(crate) async fn hold_count(&self, name: &str, field: &str) -> Result<u32> {
        let n: Option<i64> = self
            .query(
                redis::cmd("HGET").arg(name).arg(field).clone(),
                "read the hold count",
            )
            .await?;
        Ok(n.unwrap_or(0).clamp(0, u32::MAX as i64) as u32)
    }

    pub(crate) async fn pttl(&self, name: &str) -> Result<i64> {
        self.query(redis::cmd("PTTL").arg(name).clone(), "read the lease")
            .await
    }

    pub(crate) async fn status(&self, name: &str) -> Result<RawStatus> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(name).cmd("PTTL").arg(name);
        let (holders, pttl): (Vec<(String, Value)>, i64) = self.query_pipe(pipe).await?;
        let holders = holders
            .into_iter()
            .map(|(owner, v)| {
                let n = match v {
                    Value::BulkString(b) => String::from_utf8_lossy(&b).parse().unwrap_or(0),
                    Value::Int(i) => i.clamp(0, u32::MAX as i64) as u32,
                    _ => 0,
                };
                (owner, n)
            })
            .collect();
        Ok(RawStatus { holders, pttl })
    }

    async fn query_pipe<T: redis::FromRedisValue>(&self, pipe: redis::Pipeline) -> Result<T> {
        pipe.query_async(&mut self.conn())
            .await
            .map_err(|e| map_err(e, "read the lock status"))
    }

    /// Round trip of a PING on the command connection (the benchmark's physical limit).
    pub(crate) async fn ping(&self) -> Result<()> {
        let _: String = self.query(redis::cmd("PING"), "ping").await?;
        Ok(())
    }

    pub(crate) fn subscribed_channels(&self) -> usize {
        self.subs.channel_count()
    }
}

/// Undoes the hold a cancelled acquire may have added (see [`RedisBackend::attempt`]).
struct UndoOnDrop<'a> {
    backend: &'a RedisBackend,
    name: &'a str,
    field: &'a str,
    expected: u32,
    armed: bool,
}

impl Drop for UndoOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // Same connection, queued after the cancelled script: it runs after it, if that ran.
        let scripts = self.backend.scripts.clone();
        let (name, field, expected) =
            (self.name.to_string(), self.field.to_string(), self.expected);
        let mut conn = self.backend.conn();
        let undos = self.backend.undos.clone();
        let key = undo_key(&name, &field);
        let done = Arc::new(tokio::sync::Notify::new());
        undos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), done.clone());
        rt.spawn(async move {
            let _clear = ClearUndo { undos, key, done };
            let _: redis::RedisResult<i64> = scripts
                .drop_field
                .key(&name)
                .key(channel_name(&name))
                .arg(UNLOCK_MESSAGE)
                .arg(&field)
                .arg(PUBLISH)
                .arg(expected + 1)
                .invoke_async(&mut conn)
                .await;
        });
    }
}

fn undo_key(name: &str, field: &str) -> String {
    format!("{field}\n{name}")
}

/// Unregisters a finished undo (also if its task is dropped) and wakes whoever waits for it.
struct ClearUndo {
    undos: Arc<Undos>,
    key: String,
    done: Arc<tokio::sync::Notify>,
}

impl Drop for ClearUndo {
    fn drop(&mut self) {
        let mut map = self.undos.lock().unwrap_or_else(|e| e.into_inner());
        if map
            .get(&self.key)
            .is_some_and(|d| Arc::ptr_eq(d, &self.done))
        {
            map.remove(&self.key);
        }
        drop(map);
        self.done.notify_waiters();
    }
}
