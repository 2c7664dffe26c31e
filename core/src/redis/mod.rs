//! The Redis backend, in Redisson's storage formats (see `shared/PROTOCOL.md`).
//!
//! This module holds the connections every Redis primitive shares: one multiplexed connection
//! for tasks on the runtime, a pool of connections of callers that block a thread of their own
//! ([`sync_conn`]), and one subscriber connection for waiters ([`pubsub`]). The lock kinds live
//! in [`lock`], their Lua scripts in `lua/`.

mod election;
mod fair;
mod fence;
mod latch;
mod lock;
mod pubsub;
mod redlock;
mod semaphore;
mod sentinel;
mod sync_conn;
mod task_conn;
mod topology;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, RetryMethod};
use tokio_util::sync::CancellationToken;

use crate::backend::{
    Backend, ElectionOps, ExpirableOps, FenceOps, HoldOps, LatchOps, LockOps, RenewItem,
    SemaphoreOps,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::identity::REDIS_IDENTITY_PREFIX;
use crate::model::kind::{HoldKind, LockKind};
use crate::model::options::ClientOptions;
use crate::{driver, runtime};

use election::{RedisElection, RedisLeader};
use fair::RedisFairLock;
use fence::RedisFence;
use latch::RedisLatch;
use lock::{Flavor, RedisLock};
use pubsub::{SubSource, Subscriptions};
use semaphore::RedisSemaphore;
use sync_conn::SyncConns;
use topology::{redact, Ack, AnyConn, RedisUrl, Shape};

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
        // The server is not (or no longer) the master, or is not ready: a failover is under way.
        || matches!(e.code(), Some("READONLY" | "MASTERDOWN" | "LOADING" | "CLUSTERDOWN" | "TRYAGAIN"))
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

/// Redisson's `prefixName`: `<prefix>:{<name>}`, or `<prefix>:<name>` when the name has a hash
/// tag of its own, so that auxiliary keys and channels land in the name's slot.
fn prefixed(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
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
            // On polylock's runtime: the caller's may be gone by the time the reply comes.
            crate::runtime::spawn_clean_up(async move { orphaned(fut.await).await });
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

/// The connections to the current server: the multiplexed (or cluster) connection, and the pool
/// of connections of blocked callers (not in a cluster, where every call takes the routed path).
pub(crate) struct Target {
    /// Names this target's connection on host loops ([`crate::driver`]).
    id: u64,
    conn: AnyConn,
    sync: Option<SyncConns>,
    /// The server's address (Sentinel: which master this is).
    addr: String,
}

fn next_target_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A connection that only records the command a redis-rs call packs (a script's `EVALSHA` or
/// `SCRIPT LOAD`), for a host loop's connection to send.
struct Capture(Vec<u8>);

impl redis::ConnectionLike for Capture {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        self.0 = cmd.to_vec();
        Err(std::io::Error::other("captured").into())
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        _offset: usize,
        _count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        self.0 = cmd.to_vec();
        Err(std::io::Error::other("captured").into())
    }

    fn get_db(&self) -> i64 {
        0
    }

    fn check_connection(&mut self) -> bool {
        false
    }

    fn is_open(&self) -> bool {
        true
    }
}

fn captured(f: impl FnOnce(&mut Capture)) -> Vec<u8> {
    let mut c = Capture(Vec::new());
    f(&mut c);
    c.0
}

fn is_noscript(e: &RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// The connections of one client, shared by its Redis primitives.
pub(crate) struct RedisConn {
    /// Swapped when Sentinel names another master.
    target: std::sync::RwLock<Arc<Target>>,
    subs: Arc<Subscriptions>,
    /// The `<clientId>` part of stored owners.
    client_id: String,
    /// `publish`, or `spublish` in a Redis 7 cluster (sharded channels, as Redisson's
    /// `shardedSubscriptionMode`).
    publish: &'static str,
    /// Acknowledgement by replicas after acquires and renewals.
    ack: Option<Ack>,
    /// True in a cluster: every script stays within one slot.
    cluster: bool,
    /// Ends the Sentinel watcher when the client closes.
    stop: CancellationToken,
}

impl RedisConn {
    fn target(&self) -> Arc<Target> {
        self.target
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn conn(&self) -> AnyConn {
        self.target().conn.clone()
    }

    /// Run a script on the caller's own connection when the caller blocks a thread of its own,
    /// on the loop's connection when a host loop drives the call, else on the shared
    /// multiplexed connection.
    async fn invoke<T: redis::FromRedisValue>(
        &self,
        inv: &redis::ScriptInvocation<'_>,
    ) -> std::result::Result<T, RedisError> {
        let target = self.target();
        if runtime::on_blocking_caller() {
            if let Some(sync) = &target.sync {
                return sync.run(|c| inv.invoke(c));
            }
        }
        let evalsha = || {
            captured(|c| {
                let _ = inv.invoke::<redis::Value>(c);
            })
        };
        if let Some(reply) = self.direct(&target, evalsha).await {
            match reply.and_then(|v| v.extract_error()) {
                Err(e) if is_noscript(&e) => {} // loaded below, on the runtime's connection
                v => return Ok(redis::from_redis_value(v?)?),
            }
        }
        inv.invoke_async(&mut target.conn.clone()).await
    }

    /// Send a command (packed by `packed`, only when it is sent this way) on a connection of
    /// the caller's own: the host loop's on a driver's thread, a task connection on a runtime
    /// thread. `None`: the caller takes the multiplexed connection.
    async fn direct(
        &self,
        target: &Arc<Target>,
        packed: impl FnOnce() -> Vec<u8>,
    ) -> Option<std::result::Result<redis::Value, RedisError>> {
        if driver::on_driver() {
            return match self.loop_send(target, &packed()) {
                Some(reply) => Some(reply.get().await),
                None => None,
            };
        }
        target.sync.as_ref()?.tasks()?.request(packed).await
    }

    /// Send a packed command on the host loop's connection to `target`, made now (in the
    /// background) if there is none: `None` until it is there, or off a host loop.
    fn loop_send(&self, target: &Arc<Target>, cmd: &[u8]) -> Option<driver::Reply> {
        driver::send(target.id, cmd, || {
            let sync = target.sync.as_ref()?;
            let connect = sync.stream_connector()?;
            let stop = self.stop.clone();
            let current = Arc::downgrade(target);
            Some(driver::ConnectSpec {
                connect,
                alive: Arc::new(move || !stop.is_cancelled() && current.strong_count() > 0),
                timeout: sync.command_timeout(),
            })
        })
    }

    /// [`RedisConn::invoke`], then, where the client asks replicas to acknowledge and `written`
    /// says the script wrote, `WAIT` on the same connection: `Ok(Err(acked))` when fewer replicas
    /// than asked acknowledged in time.
    async fn invoke_acked<T: redis::FromRedisValue>(
        &self,
        inv: &redis::ScriptInvocation<'_>,
        written: impl Fn(&T) -> bool,
    ) -> std::result::Result<std::result::Result<T, i64>, RedisError> {
        let Some(ack) = self.ack else {
            return self.invoke(inv).await.map(Ok);
        };
        let wait = redis::cmd("WAIT")
            .arg(ack.replicas)
            .arg(ms(ack.timeout))
            .clone();
        let target = self.target();
        if runtime::on_blocking_caller() {
            if let Some(sync) = &target.sync {
                return sync.run(|c| {
                    let v: T = inv.invoke(c)?;
                    if !written(&v) {
                        return Ok(Ok(v));
                    }
                    let acked: i64 = wait.query(c)?;
                    Ok(if acked >= ack.replicas as i64 {
                        Ok(v)
                    } else {
                        Err(acked)
                    })
                });
            }
        }
        let mut conn = target.conn.clone();
        let v: T = inv.invoke_async(&mut conn).await?;
        if !written(&v) {
            return Ok(Ok(v));
        }
        let acked: i64 = wait.query_async(&mut conn).await?;
        Ok(if acked >= ack.replicas as i64 {
            Ok(v)
        } else {
            Err(acked)
        })
    }

    /// The error of an acquire or renewal that too few replicas acknowledged.
    fn not_replicated(&self, acked: i64, doing: &str, given_back: bool) -> Error {
        let ack = self.ack.unwrap_or(Ack {
            replicas: 0,
            timeout: Duration::ZERO,
        });
        Error::new(
            ErrorKind::NotReplicated,
            format!(
                "Redis: {doing}: {acked} of the {} replicas asked for acknowledged the write within {:?} (WAIT){}",
                ack.replicas,
                ack.timeout,
                if given_back { "; the lock was given back" } else { "" }
            ),
        )
    }

    /// `WAIT` on `conn` after a write, where the client asks replicas to acknowledge.
    async fn acknowledged(&self, conn: &mut AnyConn, doing: &str) -> Result<()> {
        let Some(ack) = self.ack else {
            return Ok(());
        };
        let acked: i64 = redis::cmd("WAIT")
            .arg(ack.replicas)
            .arg(ms(ack.timeout))
            .query_async(conn)
            .await
            .map_err(|e| map_err(e, doing))?;
        if acked < ack.replicas as i64 {
            return Err(self.not_replicated(acked, doing, false));
        }
        Ok(())
    }

    /// Run a batched renewal `script` (first argument `first`, then one key and one argument per
    /// hold, as `item` gives them): one call per cluster slot (one in all outside a cluster, so
    /// that no script spans two slots), then `WAIT` where replicas must acknowledge. One answer
    /// per hold: still held or not.
    async fn renew_batch(
        &self,
        script: &redis::Script,
        first: u64,
        holds: &[RenewItem],
        item: impl Fn(&RenewItem) -> Result<(String, Vec<u8>)>,
    ) -> Result<Vec<bool>> {
        let items: Vec<(String, Vec<u8>)> = holds.iter().map(item).collect::<Result<_>>()?;
        let mut groups: std::collections::BTreeMap<u16, Vec<usize>> = Default::default();
        for (i, (key, _)) in items.iter().enumerate() {
            let group = if self.cluster { topology::slot(key) } else { 0 };
            groups.entry(group).or_default().push(i);
        }
        let mut out = vec![false; items.len()];
        let mut conn = self.conn();
        for idxs in groups.values() {
            let mut inv = script.prepare_invoke();
            inv.arg(first);
            for &i in idxs {
                inv.key(&items[i].0).arg(items[i].1.as_slice());
            }
            let v: Vec<i64> = inv
                .invoke_async(&mut conn)
                .await
                .map_err(|e| map_err(e, "renew leases"))?;
            if v.len() != idxs.len() {
                return Err(Error::internal(
                    "renewal script returned the wrong number of results",
                ));
            }
            for (&i, x) in idxs.iter().zip(v) {
                out[i] = x == 1;
            }
        }
        self.acknowledged(&mut conn, "renew leases").await?;
        Ok(out)
    }

    /// Run a command, on the caller's own connection when it blocks a thread, retried on
    /// retryable errors.
    async fn query<T: redis::FromRedisValue>(&self, cmd: redis::Cmd, doing: &str) -> Result<T> {
        let mut attempt = 0;
        loop {
            let target = self.target();
            let reply = match (&target.sync, runtime::on_blocking_caller()) {
                (Some(sync), true) => sync.run(|c| cmd.query(c)),
                _ => match self.direct(&target, || cmd.get_packed_command()).await {
                    Some(reply) => reply
                        .and_then(|v| v.extract_error())
                        .and_then(|v| Ok(redis::from_redis_value(v)?)),
                    None => cmd.query_async(&mut target.conn.clone()).await,
                },
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

    /// Point every connection at another server (Sentinel named a new master).
    async fn retarget(&self, client: redis::Client, options: &ClientOptions) -> Result<()> {
        let addr = client.get_connection_info().addr().to_string();
        let conn = ConnectionManager::new_with_config(client.clone(), manager_config(options))
            .await
            .map_err(|e| map_err(e, "connect to the new master"))?;
        let old = std::mem::replace(
            &mut *self.target.write().unwrap_or_else(|e| e.into_inner()),
            Arc::new(Target {
                id: next_target_id(),
                conn: AnyConn::Single(conn),
                sync: Some(SyncConns::new(
                    client.clone(),
                    options.connect_timeout,
                    options.command_timeout,
                )),
                addr: addr.clone(),
            }),
        );
        if let Some(sync) = &old.sync {
            sync.clear();
        }
        tracing::info!(
            "polylock: Sentinel names a new master, {addr} (was {}); following it",
            old.addr
        );
        self.subs.retarget(client).await;
        Ok(())
    }
}

fn manager_config(options: &ClientOptions) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(options.connect_timeout))
        .set_response_timeout(Some(options.command_timeout))
        .set_number_of_retries(3)
        .set_max_delay(Duration::from_secs(1))
}

/// A client's Redis backend: its connections and the lock kinds Redis has.
pub(crate) struct RedisBackend {
    conn: Arc<RedisConn>,
    plain: Arc<RedisLock>,
    read: Arc<RedisLock>,
    write: Arc<RedisLock>,
    fair: Arc<RedisFairLock>,
    leader: Arc<RedisLeader>,
    election: Arc<RedisElection>,
    semaphore: Arc<RedisSemaphore>,
    permits: Arc<RedisSemaphore>,
    latch: Arc<RedisLatch>,
    fence: Arc<RedisFence>,
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
    let parsed = RedisUrl::parse(url)?;
    let open = |u: &str| {
        redis::Client::open(u).map_err(|e| {
            Error::invalid(format!(
                "malformed Redis URL '{}': {e}; expected redis://[user:password@]host:port[/db] or rediss://...",
                redact(u)
            ))
        })
    };
    let config = manager_config(options);
    let mut sentinel = None;
    let (target, source, cluster, publish) = match &parsed.shape {
        Shape::Single(u) => {
            let client = open(u)?;
            let (target, source) = single_target(client, options).await?;
            (target, source, false, "publish")
        }
        Shape::Sentinel { .. } => {
            let source = sentinel::SentinelSource::new(&parsed.shape, options)?;
            let client = source.master().await?;
            let (target, subs) = single_target(client, options).await?;
            sentinel = Some(source);
            (target, subs, false, "publish")
        }
        Shape::Cluster { seeds } => {
            let timeouts = (options.connect_timeout, options.command_timeout);
            let client = cluster_builder(seeds.clone(), timeouts)
                .build()
                .map_err(|e| {
                    Error::invalid(format!(
                        "malformed Redis Cluster URL '{}': {e}",
                        redact(url)
                    ))
                })?;
            let mut conn = client
                .get_async_connection()
                .await
                .map_err(|e| map_err(e, "connect to the cluster"))?;
            // Sharded channels where every node has them (Redis 7), as Redisson does. INFO goes
            // to every master; each answers its own.
            let infos: std::collections::HashMap<String, String> = redis::cmd("INFO")
                .arg("server")
                .query_async(&mut conn)
                .await
                .map_err(|e| map_err(e, "read the cluster's version"))?;
            let major = infos
                .values()
                .map(|info| {
                    info.lines()
                        .find_map(|l| l.strip_prefix("redis_version:"))
                        .and_then(|v| v.split('.').next())
                        .and_then(|m| m.trim().parse::<u32>().ok())
                        .unwrap_or(0)
                })
                .min()
                .unwrap_or(0);
            let sharded = major >= 7;
            let target = Target {
                id: next_target_id(),
                conn: AnyConn::Cluster(conn),
                sync: None,
                addr: seeds.join(","),
            };
            (
                target,
                SubSource::Cluster {
                    seeds: seeds.clone(),
                    timeouts,
                    sharded,
                },
                true,
                if sharded { "spublish" } else { "publish" },
            )
        }
    };
    let conn = Arc::new(RedisConn {
        target: std::sync::RwLock::new(Arc::new(target)),
        subs: Arc::new(Subscriptions::new(source, config)),
        client_id: client_id.to_string(),
        publish,
        ack: parsed.ack,
        cluster,
        stop: CancellationToken::new(),
    });
    if let Some(source) = sentinel {
        tokio::spawn(sentinel::watch(
            Arc::downgrade(&conn),
            source,
            options.clone(),
        ));
    }
    let leader = Arc::new(RedisLeader::new(
        conn.clone(),
        Arc::new(RedisLock::new(conn.clone(), Flavor::Plain)),
    ));
    Ok(RedisBackend {
        election: Arc::new(RedisElection::new(conn.clone(), &leader)),
        leader,
        plain: Arc::new(RedisLock::new(conn.clone(), Flavor::Plain)),
        read: Arc::new(RedisLock::new(conn.clone(), Flavor::Read)),
        write: Arc::new(RedisLock::new(conn.clone(), Flavor::Write)),
        fair: Arc::new(RedisFairLock::new(conn.clone(), options.fair_wait_timeout)),
        semaphore: Arc::new(RedisSemaphore::new(conn.clone(), false)),
        permits: Arc::new(RedisSemaphore::new(conn.clone(), true)),
        latch: Arc::new(RedisLatch::new(conn.clone())),
        fence: Arc::new(RedisFence::new(conn.clone())),
        conn,
    })
}

/// A cluster client over `seeds` with the client's connect and command timeouts.
fn cluster_builder(
    seeds: Vec<String>,
    (connect, command): (Duration, Duration),
) -> redis::cluster::ClusterClientBuilder {
    redis::cluster::ClusterClientBuilder::new(seeds)
        .connection_timeout(connect)
        .response_timeout(command)
        .retries(3)
}

/// The connections to one server (or the master Sentinel named).
async fn single_target(
    client: redis::Client,
    options: &ClientOptions,
) -> Result<(Target, SubSource)> {
    let conn = ConnectionManager::new_with_config(client.clone(), manager_config(options))
        .await
        .map_err(|e| map_err(e, "connect"))?;
    let target = Target {
        id: next_target_id(),
        conn: AnyConn::Single(conn),
        sync: Some(SyncConns::new(
            client.clone(),
            options.connect_timeout,
            options.command_timeout,
        )),
        addr: client.get_connection_info().addr().to_string(),
    };
    Ok((target, SubSource::Single(client)))
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
            LockKind::Leader => Ok(self.leader.clone()),
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
            HoldKind::Lock(LockKind::Leader) => Ok(self.leader.clone()),
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

    fn fence_ops(&self) -> Result<Arc<dyn FenceOps>> {
        Ok(self.fence.clone())
    }

    fn election_ops(&self) -> Result<Arc<dyn ElectionOps>> {
        Ok(self.election.clone())
    }

    async fn ping(&self) -> Result<()> {
        let _: String = self.conn.query(redis::cmd("PING"), "ping").await?;
        Ok(())
    }

    async fn publish_identity(&self, client_id: &str, identity: &str, ttl: Duration) -> Result<()> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("{REDIS_IDENTITY_PREFIX}{client_id}"))
            .arg(identity)
            .arg("PX")
            .arg(ttl.as_millis() as u64);
        self.conn
            .query::<()>(cmd, "publish the client's identity")
            .await
    }

    async fn forget_identity(&self, client_id: &str) {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(format!("{REDIS_IDENTITY_PREFIX}{client_id}"));
        let _ = self
            .conn
            .query::<i64>(cmd, "remove the client's identity")
            .await;
    }

    /// SCAN for the keys that match (not Redisson's and polylock's own bookkeeping keys: fair
    /// lock queues, timeouts, channels, client identities, leader records).
    async fn list_names(&self, pattern: &str, limit: usize) -> Result<Vec<String>> {
        if self.conn.cluster {
            return Err(Error::unsupported(
                "listing names by pattern scans one server; on Redis Cluster name the locks \
                 to look at",
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        let mut cursor: u64 = 0;
        loop {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000);
            let (next, keys): (u64, Vec<String>) =
                self.conn.query(cmd, "list the names that match").await?;
            for k in keys {
                if !is_bookkeeping_key(&k) {
                    names.insert(k);
                }
            }
            cursor = next;
            if cursor == 0 || names.len() >= limit {
                break;
            }
        }
        Ok(names.into_iter().take(limit).collect())
    }

    /// Owners are `<client id>:<thread id>` (Redisson's and ours): the client's key, if it has
    /// one (a Redisson client has none).
    async fn identities(&self, _name: &str, owners: &[String]) -> Vec<Option<String>> {
        let mut out = Vec::with_capacity(owners.len());
        for owner in owners {
            let Some((client, _)) = owner.split_once(':') else {
                out.push(None);
                continue;
            };
            let mut cmd = redis::cmd("GET");
            cmd.arg(format!("{REDIS_IDENTITY_PREFIX}{client}"));
            out.push(
                self.conn
                    .query::<Option<String>>(cmd, "read a holder's identity")
                    .await
                    .ok()
                    .flatten(),
            );
        }
        out
    }

    async fn close(&self) {
        // Close the idle connections of blocked callers; the multiplexed and subscriber
        // connections close when the last handle on the client goes.
        self.conn.stop.cancel();
        if let Some(sync) = &self.conn.target().sync {
            sync.clear();
        }
    }

    fn subscribed_channels(&self) -> usize {
        self.conn.subs.channel_count()
    }
}

/// Keys that belong to a lock rather than being one: Redisson's fair-lock queues and timeouts,
/// read-write lock timeouts, expiring-permit timeouts and channels, polylock's client
/// identities and leader records.
fn is_bookkeeping_key(key: &str) -> bool {
    key.starts_with("redisson_") || key.starts_with("polylock_") || key.contains(":redisson_")
}
