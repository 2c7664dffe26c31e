//! The client: connects to a server by its URL and hands out primitives. The one entry point the
//! bindings see.

use std::sync::Arc;

use crate::backend::SessionSink;
use crate::hold::{watchdog, ClientCore, HoldKey};
use crate::model::error::{Error, Result};
use crate::model::kind::LockKind;
use crate::model::lost::{LostEvent, LostReason};
use crate::model::names::validate_name;
use crate::model::options::ClientOptions;
use crate::model::outcome::Reply;
use crate::model::secret::{redact_url, userinfo_end};
use crate::primitives::election::Election;
use crate::primitives::fence::Fence;
use crate::primitives::latch::CountDownLatch;
use crate::primitives::lock::Lock;
use crate::primitives::permit_semaphore::PermitExpirableSemaphore;
use crate::primitives::read_write::ReadWriteLock;
use crate::primitives::semaphore::Semaphore;
use crate::runtime;

/// A connection to one lock server. Cheap to clone; clones share the connection, the watchdog
/// and the client id.
#[derive(Clone)]
pub struct Client {
    core: Arc<ClientCore>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.core.id)
            .field("server", &self.core.backend.server())
            .finish()
    }
}

impl Client {
    /// Connect with default options. URLs: `redis://[user:password@]host:port[/db]`,
    /// `rediss://...`, `zk://[user:password@]host:port[,host:port...][/chroot]`, and
    /// `zks://...?tls_ca_file=PATH` for ZooKeeper over TLS,
    /// `mysql://user:password@host:port/database` (MySQL and MariaDB, `GET_LOCK`; also
    /// `mariadb://`) and `postgres://user:password@host:port/database` (advisory locks; also
    /// `postgresql://`). On both SQL servers `?mode=table` locks rows of ShedLock's lease table
    /// instead (`&table=NAME`, `shedlock` by default), and `?max_connections=N` caps the
    /// connections the client opens (64 by default): one for queries, plus one per held or
    /// waiting session lock; an acquire that would need more fails with `InvalidState`. TLS:
    /// `require_ssl=true` (MySQL), `sslmode=require[&sslrootcert=FILE]` (PostgreSQL), through
    /// rustls. `etcd://[user:password@]host:port[,host:port...][?ttl=SECONDS]` locks in etcd's own
    /// format (`concurrency.Mutex`, `etcdctl lock`); `etcds://...?tls_ca_file=PATH` over TLS.
    /// Sentinel (`redis+sentinel://`) and Cluster (`redis+cluster://`) too: every form with its
    /// options is in the URL table, docs/src/contract.md#urls.
    pub async fn connect(url: &str) -> Result<Client> {
        Client::connect_with(url, ClientOptions::default()).await
    }

    /// Connect with options.
    ///
    /// The connection, the subscriber and the watchdog live on polylock's own runtime
    /// ([`crate::runtime`]), whatever executor awaits this; the other async methods must be
    /// awaited inside a tokio runtime.
    pub async fn connect_with(url: &str, options: ClientOptions) -> Result<Client> {
        options.validate()?;
        let (url, options) = take_client_params(url, options);
        let url = url.as_str();
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        let Some(family) = scheme.as_deref().and_then(Family::of) else {
            // server_key: the URL without its credentials, never a password.
            return Err(Error::invalid(format!(
                "malformed URL '{}': {URL_FORMS}",
                server_key(url)
            )));
        };
        family.check_compiled()?;
        let url = url.to_string();
        let server = server_key(&url);
        Client::launch(server, options, move |id, options| async move {
            family.connect(&url, &options, &id).await
        })
        .await
    }

    /// Connect a RedLock over independent Redis masters (at least 3, at most 16, each a
    /// `redis://` or `rediss://` URL of a different server) with default options. Its
    /// [`lock`](Client::lock) is held while a majority of the masters hold it; see the README's
    /// RedLock section for what that does and does not promise. A master that does not answer
    /// now is tried again every second, as long as a majority answers; a wrong password on any
    /// of them fails the connect.
    pub async fn connect_redlock<S: AsRef<str>>(urls: &[S]) -> Result<Client> {
        Client::connect_redlock_with(urls, ClientOptions::default()).await
    }

    /// [`connect_redlock`](Client::connect_redlock) with options.
    pub async fn connect_redlock_with<S: AsRef<str>>(
        urls: &[S],
        options: ClientOptions,
    ) -> Result<Client> {
        options.validate()?;
        Family::Redis.check_compiled()?;
        #[cfg(feature = "redis")]
        return Client::connect_redlock_checked(urls, options).await;
        #[cfg(not(feature = "redis"))]
        {
            let _ = urls;
            unreachable!("check_compiled refused a RedLock in a build without Redis")
        }
    }

    #[cfg(feature = "redis")]
    async fn connect_redlock_checked<S: AsRef<str>>(
        urls: &[S],
        options: ClientOptions,
    ) -> Result<Client> {
        let (min, max) = (
            crate::redis::REDLOCK_MIN_SERVERS,
            crate::redis::REDLOCK_MAX_SERVERS,
        );
        if urls.len() < min || urls.len() > max {
            return Err(Error::invalid(format!(
                "a RedLock needs {min} to {max} independent Redis masters, got {} URL(s): with \
                 fewer than 3 the majority is every server, and none may fail",
                urls.len()
            )));
        }
        let mut servers: Vec<(String, String)> = Vec::with_capacity(urls.len());
        for url in urls {
            let url = url.as_ref();
            let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            if !matches!(scheme.as_deref(), Some("redis" | "rediss")) {
                return Err(Error::invalid(format!(
                    "malformed RedLock URL '{}': every server must be redis://host:port or \
                     rediss://host:port",
                    redact_url(url)
                )));
            }
            let key = server_key(url);
            if servers.iter().any(|(_, k)| *k == key) {
                return Err(Error::invalid(format!(
                    "{key} is given twice: a RedLock's masters must be independent servers"
                )));
            }
            servers.push((url.to_string(), key));
        }
        let keys: Vec<&str> = servers.iter().map(|(_, k)| k.as_str()).collect();
        let server = format!("redlock:{}", keys.join(","));
        Client::launch(server, options, move |id, options| async move {
            crate::redis::connect_redlock(&servers, &options, &id).await
        })
        .await
    }

    /// Connect on polylock's runtime and start the client's watchdog.
    async fn launch<F, Fut>(server: String, options: ClientOptions, connect: F) -> Result<Client>
    where
        F: FnOnce(String, ClientOptions) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<Box<dyn crate::backend::Backend>>> + Send,
    {
        let task = runtime::handle().spawn(async move {
            let id = uuid::Uuid::new_v4().to_string();
            let backend = connect(id.clone(), options.clone()).await?;
            let core = Arc::new(ClientCore::new(id, server, options, backend));
            watchdog::publish_identity(&core).await;
            tokio::spawn(watchdog::run(Arc::downgrade(&core)));
            let sink: Arc<dyn SessionSink> = core.clone();
            core.backend.watch_session(Arc::downgrade(&sink));
            Ok(Client { core })
        });
        task.await
            .map_err(|_| Error::internal("the connect task panicked"))?
    }

    /// This client's metrics alone (every client of the process: [`crate::metrics::snapshot`]).
    pub fn metrics(&self) -> Vec<crate::metrics::Family> {
        crate::metrics::client_snapshot(&self.core.metrics)
    }

    /// This client's metrics in the Prometheus text format (C's `polylock_client_metrics`).
    pub fn metrics_text(&self) -> String {
        crate::metrics::to_prometheus_text(&self.metrics())
    }

    /// The names stored on the server that match `pattern` (a Redis-style glob: `orders:*`;
    /// on ZooKeeper the children of the pattern's parent path, `/locks/*`), sorted, at most
    /// `limit`; for operators' views. `Unsupported` on SQL session locks, RedLock and Redis
    /// Cluster.
    pub async fn list_names(&self, pattern: &str, limit: usize) -> Result<Vec<String>> {
        self.core.check_usable()?;
        if pattern.is_empty() || pattern.contains('\0') {
            return Err(Error::invalid(
                "a name pattern must be non-empty and without NUL bytes",
            ));
        }
        self.core.backend.list_names(pattern, limit).await
    }

    /// Who this client is, as operators see it next to its holds: one line of JSON with its
    /// service, host, pid, runtime and version.
    pub fn identity(&self) -> &str {
        &self.core.identity
    }

    /// This client's random id (the `<clientId>` part of stored owners).
    pub fn id(&self) -> &str {
        &self.core.id
    }

    /// The options this client was created with.
    pub fn options(&self) -> &ClientOptions {
        &self.core.options
    }

    fn checked_name(&self, name: &str) -> Result<()> {
        self.core.check_usable()?;
        validate_name(name)?;
        self.core.backend.validate_name(name)
    }

    /// A reentrant lock handle for `name` (a znode path on ZooKeeper: Curator's
    /// InterProcessMutex). Handles are cheap; two handles with the same name and the same owner
    /// are the same hold.
    pub fn lock(&self, name: &str) -> Result<Lock> {
        self.checked_name(name)?;
        Lock::new(self.core.clone(), name, LockKind::Reentrant)
    }

    /// Run `f` under the lock `name`: acquire it for a fresh owner (as `options` say), call `f`
    /// with the hold (its fencing token and lost signal), and release it when `f`'s future ends.
    /// If the lock was lost meanwhile, the result is the `LockLost` error once `f` returns (hand
    /// the lost signal to `f` to stop early). A panic in `f`, or this future dropped while `f`
    /// runs, releases the lock in the background.
    ///
    /// ```no_run
    /// # async fn demo(client: polylock::Client) -> polylock::Result<()> {
    /// use polylock::AcquireOptions;
    /// use std::time::Duration;
    /// let paid = client
    ///     .with_lock("order:42", AcquireOptions::wait_for(Duration::from_secs(5)), |hold| async move {
    ///         // hold.fencing_token goes to the resource; hold.lost.wait() resolves on a loss
    ///         hold.fencing_token > 0
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn with_lock<T, F, Fut>(
        &self,
        name: &str,
        options: crate::model::options::AcquireOptions,
        f: F,
    ) -> Result<T>
    where
        F: FnOnce(crate::model::outcome::Acquired) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        /// Releases in the background, a counted clean-up, unless disarmed (a panic in `f`, a
        /// dropped future).
        struct Release {
            lock: Option<Lock>,
            owner: crate::model::owner::OwnerId,
        }
        impl Drop for Release {
            fn drop(&mut self) {
                use crate::backend::cleanup::{clean_up, CleanUp};
                if let Some(lock) = self.lock.take() {
                    let owner = self.owner;
                    let what = format!(
                        "the hold of lock '{}' by a with_lock whose future was dropped",
                        crate::model::shown::escape(lock.name())
                    );
                    clean_up(what, move || {
                        let lock = lock.clone();
                        async move { CleanUp::of(&lock.release(owner).await) }
                    });
                }
            }
        }
        let lock = self.lock(name)?;
        let owner = crate::model::owner::fresh();
        let held = lock.acquire(owner, options).await?;
        let mut guard = Release {
            lock: Some(lock),
            owner,
        };
        let out = f(held).await;
        let lock = guard.lock.take().expect("the lock of with_lock");
        lock.release(owner).await?;
        Ok(out)
    }

    /// A non-reentrant mutex on ZooKeeper (Curator's InterProcessSemaphoreMutex): one holder; a
    /// second acquire, even by the same owner, waits or fails; any owner of this client may
    /// release it. `Unsupported` on Redis.
    pub fn mutex(&self, path: &str) -> Result<Lock> {
        self.checked_name(path)?;
        Lock::new(self.core.clone(), path, LockKind::Mutex)
    }

    /// A fair lock for `name`: granted in the order of asking, across polylock and Redisson
    /// (Redisson's `RFairLock` on Redis, with a short stale-waiter timeout, see
    /// [`ClientOptions::fair_wait_timeout`]). On ZooKeeper every lock is fair: this is the
    /// ordinary lock.
    pub fn fair_lock(&self, name: &str) -> Result<Lock> {
        self.checked_name(name)?;
        Lock::new(self.core.clone(), name, LockKind::Fair)
    }

    /// A read-write lock for `name`: Redisson's `RReadWriteLock` on Redis, Curator's
    /// `InterProcessReadWriteLock` on ZooKeeper. Its [`read_lock`](ReadWriteLock::read_lock)
    /// and [`write_lock`](ReadWriteLock::write_lock) are [`Lock`]s.
    pub fn read_write_lock(&self, name: &str) -> Result<ReadWriteLock> {
        self.checked_name(name)?;
        ReadWriteLock::new(self.core.clone(), name)
    }

    /// A semaphore (Redisson's `RSemaphore` on Redis, Curator's `InterProcessSemaphoreV2` on
    /// ZooKeeper, its permits in a SharedCount at `<path>/count`). See [`Semaphore`] for how
    /// permits differ between the two.
    pub fn semaphore(&self, name: &str) -> Result<Semaphore> {
        self.checked_name(name)?;
        Semaphore::new(self.core.clone(), name)
    }

    /// A semaphore of expiring permits (Redisson's `RPermitExpirableSemaphore`; Redis only,
    /// `Unsupported` on ZooKeeper, whose semaphore's leases already end with their session).
    pub fn permit_expirable_semaphore(&self, name: &str) -> Result<PermitExpirableSemaphore> {
        self.checked_name(name)?;
        PermitExpirableSemaphore::new(self.core.clone(), name)
    }

    /// A count-down latch (Redisson's `RCountDownLatch` on Redis, a Curator `SharedCount` at the
    /// path on ZooKeeper).
    pub fn count_down_latch(&self, name: &str) -> Result<CountDownLatch> {
        self.checked_name(name)?;
        CountDownLatch::new(self.core.clone(), name)
    }

    /// The fence of `name` on the lock server's own store (Redis; `Unsupported` elsewhere, where
    /// [`fence::postgres`](crate::fence) and [`fence::mysql`](crate::fence) guard data in the
    /// application's own database): fenced writes of Redis commands, refused with `StaleToken`
    /// when a larger token of the name was accepted before. See [`Fence::write`].
    pub fn fence(&self, name: &str) -> Result<Fence> {
        self.checked_name(name)?;
        Fence::new(self.core.clone(), name)
    }

    /// Run `commands` through the fence of `name` under the fencing token `token` (the token of
    /// the hold the write is made under): [`Fence::write`] on [`Client::fence`].
    ///
    /// ```no_run
    /// # async fn demo(client: polylock::Client) -> polylock::Result<()> {
    /// use polylock::{owner, AcquireOptions};
    /// let me = owner::fresh();
    /// let held = client.lock("sale")?.acquire(me, AcquireOptions::forever()).await?;
    /// let sold = client
    ///     .fenced_write("sale", held.fencing_token, &[vec![b"DECR".to_vec(), b"{sale}:stock".to_vec()]])
    ///     .await?; // a StaleToken error when a later holder of "sale" already wrote
    /// # Ok(()) }
    /// ```
    pub async fn fenced_write(
        &self,
        name: &str,
        token: u64,
        commands: &[Vec<Vec<u8>>],
    ) -> Result<Vec<Reply>> {
        self.fence(name)?.write(token, commands).await
    }

    /// A lock handle of any kind (the bindings' one entry point for lock-like primitives).
    /// A leader election's lock is refused: use [`Client::election`].
    pub fn lock_of_kind(&self, name: &str, kind: LockKind) -> Result<Lock> {
        self.checked_name(name)?;
        if kind == LockKind::Leader {
            return Err(Error::invalid(
                "a leader election is not a lock handle: use election(name, identity)",
            ));
        }
        Lock::new(self.core.clone(), name, kind)
    }

    /// A candidate in the leader election `name` that campaigns as `identity` (Curator's
    /// `LeaderLatch` on ZooKeeper, etcd's `concurrency.Election`, a Redisson lock plus a leader
    /// record on Redis; `Unsupported` on SQL and RedLock). Any client can read the leader and
    /// follow changes through it, campaigning or not.
    ///
    /// ```no_run
    /// # async fn demo(client: polylock::Client) -> polylock::Result<()> {
    /// use polylock::Wait;
    /// let election = client.election("scheduler", "node-a")?;
    /// if let Some(leading) = election.campaign(Wait::Forever).await? {
    ///     // lead, with leading.term as the fencing token; stop when leading.lost fires
    ///     election.resign().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn election(&self, name: &str, identity: &str) -> Result<Election> {
        self.checked_name(name)?;
        Election::new(self.core.clone(), name, identity)
    }

    #[doc(hidden)]
    /// How often ZooKeeper waiters were woken by their watch (tests: one wake per release).
    pub fn debug_zk_wakeups(&self) -> u64 {
        self.core.backend.wakeups()
    }

    #[doc(hidden)]
    /// Close this client's ZooKeeper session from a second handle, as an expiry (tests).
    pub async fn debug_close_zk_session(&self) -> Result<()> {
        self.core.backend.expire_session().await
    }

    /// Round trip of the cheapest command (PING on Redis): the physical limit benchmarks
    /// compare against.
    pub async fn ping(&self) -> Result<()> {
        self.core.check_usable()?;
        self.core.backend.ping().await
    }

    /// True while the connection to ZooKeeper is down but the session may still be alive: locks
    /// stay held (they are lost only if the session expires), but nothing can be acquired or
    /// released until the connection comes back. Always false on Redis.
    pub fn is_suspended(&self) -> bool {
        self.core.is_suspended()
    }

    /// Every hold of this client that is lost from now on, as it happens: one stream for the
    /// whole client, so bindings need no task per hold. A receiver that falls more than 1,024
    /// events behind gets `RecvError::Lagged`.
    pub fn lost_events(&self) -> tokio::sync::broadcast::Receiver<LostEvent> {
        self.core.holds.lost_events()
    }

    /// True when a waiting acquire takes a place in a queue (ZooKeeper's sequential nodes). A
    /// binding's "one try, then wait" fast path would queue twice there and lose its FIFO place:
    /// on such a client, acquire with the wait directly.
    pub fn queues_waiters(&self) -> bool {
        self.core
            .ops(LockKind::Reentrant)
            .is_ok_and(|ops| ops.queues_waiters())
    }

    /// True once [`close`](Client::close) was called.
    pub fn is_closed(&self) -> bool {
        self.core.is_closed()
    }

    /// Close the client: stop the watchdog, end the waits of its acquires, release every lock its
    /// owners still hold (their lost signals fire with [`LostReason::ClientClosed`]), and wait (up
    /// to the command timeout) for the process's clean-ups of cancelled waits to finish on their
    /// servers. Idempotent. Later calls on the client
    /// or its locks fail with `InvalidState`.
    ///
    /// In a process forked after this client was created, closing it only forgets it there: its
    /// holds and connections are the parent's, and stay the parent's.
    pub async fn close(&self) -> Result<()> {
        if self.core.made_before_fork() {
            // The exit hooks of a forked child close every client they know, the parent's too.
            // Releasing its holds would free the parent's locks on the server (a PostgreSQL
            // session lock was, while the parent went on working under it), closing its
            // connections would close the parent's sockets, and both wait on tasks of the
            // parent's runtime, which has no thread in the child (the child hung at exit).
            self.core.set_closed();
            return Ok(());
        }
        if !self.core.set_closed() {
            return Ok(());
        }
        self.core.stop.cancel();
        let held: Vec<(HoldKey, Option<String>)> = {
            let mut map = self.core.holds.lock();
            let held = map
                .iter_mut()
                .map(|(key, h)| {
                    h.mark_lost(key, LostReason::ClientClosed);
                    (key.clone(), h.node.clone())
                })
                .collect();
            map.clear();
            self.core.holds.forget_ended();
            held
        };
        let mut first_err = None;
        for ((name, kind, owner), node) in held {
            if let Err(e) = self
                .core
                .drop_hold(&name, kind, owner, node.as_deref())
                .await
            {
                first_err.get_or_insert(e);
            }
        }
        // The waits that closing cancelled (and any other clean-up of this process) finish on
        // the server before its connections close: a process that closes its clients as it
        // ends (every binding's exit hook does) leaves no server-side wait behind.
        if !runtime::clean_ups_finished(self.core.options.command_timeout).await {
            tracing::warn!(
                "polylock: clean-ups still running after {:?} while closing a client",
                self.core.options.command_timeout
            );
        }
        self.core.backend.forget_identity(&self.core.id).await;
        self.core.backend.close().await;
        first_err.map_or(Ok(()), Err)
    }

    #[doc(hidden)]
    /// The holds this client keeps, and the ended holds it remembers (tests check that neither
    /// grows with the names it ever held).
    pub fn debug_hold_registry(&self) -> (usize, usize) {
        self.core.holds.sizes()
    }

    #[doc(hidden)]
    /// Channels with a live subscription or waiters (tests check that none leak).
    pub fn subscribed_channels(&self) -> usize {
        self.core.backend.subscribed_channels()
    }
}

/// Every URL form a client connects to, for the error of a malformed URL (the URL table of
/// docs/src/contract.md has them with their options; every binding's docs point there too).
pub(crate) const URL_FORMS: &str = "expected redis://[user:password@]host:port[/db], rediss://..., \
     redis+sentinel://host:port[,host:port...]/<master>[/db], redis+cluster://host:port[,host:port...], \
     zk://host:port[,host:port...][/chroot], zks://...?tls_ca_file=PATH, \
     etcd://host:port[,host:port...], etcds://...?tls_ca_file=PATH, \
     mysql://user:password@host:port/database (also mariadb://) or \
     postgres://user:password@host:port/database (also postgresql://); every form and its options: \
     the URL table in docs/src/contract.md#urls";

/// The backend family of a URL scheme, and the cargo feature that compiles it in. The one place
/// where a backend's presence is decided (`cfg`), so that a build with fewer backends refuses
/// their URLs with a typed error instead of failing to compile or to parse them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Redis,
    ZooKeeper,
    MySql,
    Postgres,
    Etcd,
}

impl Family {
    fn of(scheme: &str) -> Option<Family> {
        Some(match scheme {
            "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster"
            | "rediss+cluster" => Family::Redis,
            "zk" | "zks" => Family::ZooKeeper,
            "mysql" | "mariadb" => Family::MySql,
            "postgres" | "postgresql" => Family::Postgres,
            "etcd" | "etcds" => Family::Etcd,
            _ => return None,
        })
    }

    /// The cargo feature of polylock that compiles this backend in.
    fn feature(self) -> &'static str {
        match self {
            Family::Redis => "redis",
            Family::ZooKeeper => "zookeeper",
            Family::MySql => "mysql",
            Family::Postgres => "postgres",
            Family::Etcd => "etcd",
        }
    }

    fn compiled(self) -> bool {
        match self {
            Family::Redis => cfg!(feature = "redis"),
            Family::ZooKeeper => cfg!(feature = "zookeeper"),
            Family::MySql => cfg!(feature = "mysql"),
            Family::Postgres => cfg!(feature = "postgres"),
            Family::Etcd => cfg!(feature = "etcd"),
        }
    }

    /// `Unsupported`, naming the feature, when this build has no such backend.
    fn check_compiled(self) -> Result<()> {
        if self.compiled() {
            return Ok(());
        }
        Err(Error::unsupported(format!(
            "this build of polylock has no {self:?} backend: it was compiled without the `{}` \
             cargo feature (polylock = {{ features = [\"{}\"] }})",
            self.feature(),
            self.feature()
        )))
    }

    async fn connect(
        self,
        url: &str,
        options: &ClientOptions,
        id: &str,
    ) -> Result<Box<dyn crate::backend::Backend>> {
        let _ = (url, options, id);
        match self {
            #[cfg(feature = "redis")]
            Family::Redis => crate::redis::connect(url, options, id).await,
            #[cfg(feature = "zookeeper")]
            Family::ZooKeeper => crate::zookeeper::connect(url, options).await,
            #[cfg(feature = "sql")]
            Family::MySql | Family::Postgres => crate::sql::connect(url, options, id).await,
            #[cfg(feature = "etcd")]
            Family::Etcd => crate::etcd::connect(url, options).await,
            #[allow(unreachable_patterns)]
            _ => Err(self
                .check_compiled()
                .expect_err("a backend that is compiled in has its arm above")),
        }
    }
}

/// A URL's server part, for ordering: the scheme, the hosts and the database or chroot, without
/// credentials, options or fragment.
fn server_key(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    // The userinfo first (a password may hold '?' or '#'), then the options.
    let rest = userinfo_end(rest).map_or(rest, |at| &rest[at + 1..]);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    format!("{}://{rest}", scheme.to_ascii_lowercase())
}

/// Take the options every backend shares out of a URL's query (`service=NAME`,
/// `metric_names=GLOB,GLOB`) into `options`, and resolve the service name; the URL that is left
/// goes to the backend.
fn take_client_params(url: &str, mut options: ClientOptions) -> (String, ClientOptions) {
    let mut kept = url.to_string();
    if let Some((base, query)) = url.split_once('?') {
        let mut rest = Vec::new();
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("service", v)) if options.service.is_none() => {
                    options.service = Some(v.to_string())
                }
                Some(("service", _)) => {}
                Some(("metric_names", v)) => options
                    .metric_names
                    .extend(v.split(',').filter(|p| !p.is_empty()).map(str::to_string)),
                _ => rest.push(pair),
            }
        }
        kept = if rest.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
    }
    options.service = Some(crate::model::identity::resolve_service(&options));
    (kept, options)
}

#[cfg(test)]
mod tests {
    use super::{server_key, take_client_params, Family};
    use crate::{Client, ClientOptions, ErrorKind};

    /// In a build without some backend (CI checks `--no-default-features --features redis`), its
    /// URLs fail at once with `Unsupported` naming the cargo feature, before any connection.
    #[test]
    fn a_url_of_a_backend_left_out_names_its_feature() {
        let urls = [
            "redis://127.0.0.1:1",
            "zk://127.0.0.1:1",
            "mysql://u:p@127.0.0.1:1/db",
            "postgres://u:p@127.0.0.1:1/db",
            "etcd://127.0.0.1:1",
        ];
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for url in urls {
            let family = Family::of(url.split("://").next().unwrap()).unwrap();
            let feature = format!("`{}` cargo feature", family.feature());
            if family.compiled() {
                assert!(family.check_compiled().is_ok());
                continue;
            }
            let e = rt.block_on(Client::connect(url)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{url}: {e}");
            assert!(e.to_string().contains(&feature), "{url}: {e}");
        }
        if Family::Redis.compiled() && !cfg!(feature = "tls") {
            let e = rt
                .block_on(Client::connect("rediss://127.0.0.1:1"))
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            assert!(e.to_string().contains("`tls` cargo feature"), "{e}");
        }
        if !Family::Redis.compiled() {
            let urls = [
                "redis://127.0.0.1:1",
                "redis://127.0.0.1:2",
                "redis://127.0.0.1:3",
            ];
            let e = rt.block_on(Client::connect_redlock(&urls)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        }
    }

    #[test]
    fn server_keys_leave_out_passwords_that_hold_url_characters() {
        for url in [
            "redis://u:p#w@127.0.0.1:6379",
            "redis://u:p?w=1@127.0.0.1:6379",
            "redis://u:p@w@127.0.0.1:6379",
            "redis://u:p/w@127.0.0.1:6379",
        ] {
            assert_eq!(server_key(url), "redis://127.0.0.1:6379", "{url}");
        }
    }

    #[test]
    fn server_keys_leave_out_credentials_and_options() {
        assert_eq!(
            server_key("redis://u:p@127.0.0.1:6379/2?x=1#insecure"),
            "redis://127.0.0.1:6379/2"
        );
        assert_eq!(
            server_key("ZK://a:1,b:2/app?session_timeout_ms=3"),
            "zk://a:1,b:2/app"
        );
    }

    #[test]
    fn shared_params_leave_the_url_for_the_backend() {
        let (url, o) = take_client_params(
            "redis://h:1/0?service=checkout&metric_names=orders:*,jobs:*&protocol=resp3",
            ClientOptions::default(),
        );
        assert_eq!(url, "redis://h:1/0?protocol=resp3");
        assert_eq!(o.service.as_deref(), Some("checkout"));
        assert_eq!(o.metric_names, vec!["orders:*", "jobs:*"]);
        let (url, o) = take_client_params("zk://h:1?service=x", ClientOptions::default());
        assert_eq!(url, "zk://h:1");
        assert_eq!(o.service.as_deref(), Some("x"));
        let given = ClientOptions {
            service: Some("mine".into()),
            ..ClientOptions::default()
        };
        let (_, o) = take_client_params("zk://h:1?service=x", given);
        assert_eq!(o.service.as_deref(), Some("mine"));
    }
}
