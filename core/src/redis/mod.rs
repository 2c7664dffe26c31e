//! The Redis backend, in Redisson's storage formats (see `shared/PROTOCOL.md`).
//!
//! This module holds the connections every Redis primitive shares: one multiplexed connection
//! for tasks on the runtime, a pool of connections of callers that block a thread of their own
//! ([`sync_conn`]), and one subscriber connection for waiters ([`pubsub`]). The lock kinds live
//! in [`lock`], their Lua scripts in `lua/`.

mod fair;
mod latch;
mod lock;
mod pubsub;
mod redlock;
mod semaphore;
mod sync_conn;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, RetryMethod};

use crate::backend::{Backend, ExpirableOps, HoldOps, LatchOps, LockOps, SemaphoreOps};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldKind, LockKind};
use crate::model::options::ClientOptions;
use crate::runtime;

use fair::RedisFairLock;
use latch::RedisLatch;
use lock::{Flavor, RedisLock};
use pubsub::Subscriptions;
use semaphore::RedisSemaphore;
use sync_conn::SyncConns;

/// How many times a command is retried after an error redis-rs classifies as retryable.
const RETRIES: usize = 2;

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

/// A name's hash tag: `{<name>}`, or the name itself when it already has braces (Redisson's
/// `suffixName`), so that a primitive's auxiliary keys land in its slot.
fn tagged(name: &str) -> String {
    if name.contains('{') {
        name.to_string()
    } else {
        format!("{{{name}}}")
    }
}

/// A duration as whole milliseconds, at least 1.
fn ms(d: Duration) -> u64 {
    d.as_millis().clamp(1, u64::MAX as u128) as u64
}

/// Milliseconds since the epoch by this process's clock (Redisson's scores and deadlines).
fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn backoff(attempt: usize) -> Duration {
    Duration::from_millis(20 << attempt.min(4))
}

/// Await `fut`, a script call that takes something (permits) and owns what it needs. If the
/// caller is dropped after the call was sent, the call still runs on the server: its reply is then
/// awaited in a task of its own and handed to `orphaned`, which gives back what was taken. A
/// cancelled acquire therefore never keeps anything.
pub(crate) async fn hand_over_on_drop<T, F, O, OF>(fut: F, orphaned: O) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
    O: FnOnce(T) -> OF + Send + 'static,
    OF: std::future::Future<Output = ()> + Send + 'static,
{
    struct Guard<T, F, O, OF>
    where
        T: Send + 'static,
        F: std::future::Future<Output = T> + Send + 'static,
        O: FnOnce(T) -> OF + Send + 'static,
        OF: std::future::Future<Output = ()> + Send + 'static,
    {
        fut: Option<std::pin::Pin<Box<F>>>,
        orphaned: Option<O>,
        sent: bool,
    }
    impl<T, F, O, OF> Drop for Guard<T, F, O, OF>
    where
        T: Send + 'static,
        F: std::future::Future<Output = T> + Send + 'static,
        O: FnOnce(T) -> OF + Send + 'static,
        OF: std::future::Future<Output = ()> + Send + 'static,
    {
        fn drop(&mut self) {
            let (Some(fut), Some(orphaned)) = (self.fut.take(), self.orphaned.take()) else {
                return;
            };
            if !self.sent {
                return; // never polled: never sent
            }
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move { orphaned(fut.await).await });
            }
        }
    }
    let mut guard = Guard {
        fut: Some(Box::pin(fut)),
        orphaned: Some(orphaned),
        sent: false,
    };
    let out = std::future::poll_fn(|cx| {
        guard.sent = true;
        match guard.fut.as_mut() {
            Some(f) => f.as_mut().poll(cx),
            None => std::task::Poll::Pending,
        }
    })
    .await;
    guard.fut = None;
    out
}

/// The connections of one client, shared by its Redis primitives.
pub(crate) struct RedisConn {
    conn: ConnectionManager,
    sync: SyncConns,
    subs: Arc<Subscriptions>,
    /// The `<clientId>` part of stored owners.
    client_id: String,
}

impl RedisConn {
    fn conn(&self) -> ConnectionManager {
        self.conn.clone()
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

    /// Run a command, on the caller's own connection when it blocks a thread, retried on
    /// retryable errors.
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

    async fn query_pipe<T: redis::FromRedisValue>(
        &self,
        pipe: redis::Pipeline,
        doing: &str,
    ) -> Result<T> {
        pipe.query_async(&mut self.conn())
            .await
            .map_err(|e| map_err(e, doing))
    }
}

/// A client's Redis backend: its connections and the lock kinds Redis has.
pub(crate) struct RedisBackend {
    conn: Arc<RedisConn>,
    plain: Arc<RedisLock>,
    read: Arc<RedisLock>,
    write: Arc<RedisLock>,
    fair: Arc<RedisFairLock>,
    semaphore: Arc<RedisSemaphore>,
    permits: Arc<RedisSemaphore>,
    latch: Arc<RedisLatch>,
}

pub(crate) use redlock::{
    connect_redlock, MAX_SERVERS as REDLOCK_MAX_SERVERS, MIN_SERVERS as REDLOCK_MIN_SERVERS,
};

/// Connect to a `redis://` or `rediss://` URL for the client `client_id`.
pub(crate) async fn connect(
    url: &str,
    options: &ClientOptions,
    client_id: &str,
) -> Result<Box<dyn Backend>> {
    Ok(Box::new(connect_backend(url, options, client_id).await?))
}

async fn connect_backend(
    url: &str,
    options: &ClientOptions,
    client_id: &str,
) -> Result<RedisBackend> {
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
    let conn = Arc::new(RedisConn {
        conn,
        sync: SyncConns::new(
            client.clone(),
            options.connect_timeout,
            options.command_timeout,
        ),
        subs: Arc::new(Subscriptions::new(client, config)),
        client_id: client_id.to_string(),
    });
    Ok(RedisBackend {
        plain: Arc::new(RedisLock::new(conn.clone(), Flavor::Plain)),
        read: Arc::new(RedisLock::new(conn.clone(), Flavor::Read)),
        write: Arc::new(RedisLock::new(conn.clone(), Flavor::Write)),
        fair: Arc::new(RedisFairLock::new(conn.clone(), options.fair_wait_timeout)),
        semaphore: Arc::new(RedisSemaphore::new(conn.clone(), false)),
        permits: Arc::new(RedisSemaphore::new(conn.clone(), true)),
        latch: Arc::new(RedisLatch::new(conn.clone())),
        conn,
    })
}

#[async_trait]
impl Backend for RedisBackend {
    fn server(&self) -> &'static str {
        "Redis"
    }

    fn lock_ops(&self, kind: LockKind) -> Result<Arc<dyn LockOps>> {
        match kind {
            LockKind::Reentrant => Ok(self.plain.clone()),
            LockKind::Read => Ok(self.read.clone()),
            LockKind::Write => Ok(self.write.clone()),
            LockKind::Fair => Ok(self.fair.clone()),
            LockKind::Mutex => Err(Error::unsupported(
                "the non-reentrant semaphore mutex is a ZooKeeper lock; use lock() on Redis",
            )),
        }
    }

    fn hold_ops(&self, kind: HoldKind) -> Result<Arc<dyn HoldOps>> {
        match kind {
            HoldKind::Lock(LockKind::Reentrant) => Ok(self.plain.clone()),
            HoldKind::Lock(LockKind::Read) => Ok(self.read.clone()),
            HoldKind::Lock(LockKind::Write) => Ok(self.write.clone()),
            HoldKind::Lock(LockKind::Fair) => Ok(self.fair.clone()),
            HoldKind::Permit => Ok(self.permits.clone()),
            _ => Err(Error::internal(format!(
                "no {} holds on Redis",
                kind.word()
            ))),
        }
    }

    fn semaphore_ops(&self) -> Result<Arc<dyn SemaphoreOps>> {
        Ok(self.semaphore.clone())
    }

    fn permit_semaphore_ops(&self) -> Result<Arc<dyn ExpirableOps>> {
        Ok(self.permits.clone())
    }

    fn latch_ops(&self) -> Result<Arc<dyn LatchOps>> {
        Ok(self.latch.clone())
    }

    async fn ping(&self) -> Result<()> {
        let _: String = self.conn.query(redis::cmd("PING"), "ping").await?;
        Ok(())
    }

    async fn close(&self) {
        // Close the idle connections of blocked callers; the multiplexed and subscriber
        // connections close when the last handle on the client goes.
        self.conn.sync.clear();
    }

    fn subscribed_channels(&self) -> usize {
        self.conn.subs.channel_count()
    }
}
