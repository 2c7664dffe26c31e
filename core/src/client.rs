//! The backend-agnostic lock model: [`Client`], [`Lock`] and their options.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};
use crate::owner::{self, OwnerId};
use crate::redis::{RedisBackend, UnlockReply};
use crate::runtime;
use crate::watchdog::{self, Hold, Holds, LeaseMode, LostReason, LostSignal, WatchdogHandle};
use crate::zookeeper::ZkBackend;

/// The hold of a semaphore mutex belongs to the whole client (Curator's
/// InterProcessSemaphoreMutex: any thread may release it), so it is kept under this owner.
const MUTEX_OWNER: OwnerId = u64::MAX;

/// Longest accepted lock name, in bytes.
pub const MAX_NAME_LEN: usize = 64 * 1024;
/// Longest accepted duration (lease, wait, watchdog timeout): ten years.
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Shortest accepted watchdog timeout.
pub const MIN_WATCHDOG_TIMEOUT: Duration = Duration::from_millis(30);

/// Options of a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Lease of locks acquired without an explicit lease; the watchdog renews it every third of
    /// it while the holder lives (Redisson's `lockWatchdogTimeout`). Default 30 s.
    pub watchdog_timeout: Duration,
    /// Limit of one connection attempt. Default 5 s.
    pub connect_timeout: Duration,
    /// Limit of one command's answer. Default 5 s.
    pub command_timeout: Duration,
    /// ZooKeeper session timeout (a `session_timeout_ms` in the URL wins). Locks held through a
    /// session are lost when it expires. Default 10 s.
    pub session_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            watchdog_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            command_timeout: Duration::from_secs(5),
            session_timeout: Duration::from_secs(10),
        }
    }
}

impl ClientOptions {
    fn validate(&self) -> Result<()> {
        check_duration("watchdog timeout", self.watchdog_timeout)?;
        if self.watchdog_timeout < MIN_WATCHDOG_TIMEOUT {
            return Err(Error::invalid(format!(
                "watchdog timeout {:?} is too short; use at least {MIN_WATCHDOG_TIMEOUT:?}",
                self.watchdog_timeout
            )));
        }
        check_duration("connect timeout", self.connect_timeout)?;
        check_duration("command timeout", self.command_timeout)?;
        check_duration("session timeout", self.session_timeout)?;
        Ok(())
    }
}

fn check_duration(what: &str, d: Duration) -> Result<Duration> {
    if d.is_zero() {
        return Err(Error::invalid(format!("{what} must be positive, got 0")));
    }
    if d > MAX_DURATION {
        return Err(Error::invalid(format!(
            "{what} {d:?} is too long; the limit is {MAX_DURATION:?}"
        )));
    }
    if d.as_millis() == 0 {
        return Err(Error::invalid(format!(
            "{what} {d:?} is shorter than the 1 ms resolution of leases"
        )));
    }
    Ok(d)
}

/// Validate a lock name (shared by every backend).
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("lock name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "lock name is {} bytes long; the limit is {MAX_NAME_LEN}",
            name.len()
        )));
    }
    if name.contains('\0') {
        return Err(Error::invalid("lock name must not contain NUL bytes"));
    }
    Ok(())
}

/// How long an acquire may wait for another owner to release the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Wait until acquired (Redisson `lock()`).
    Forever,
    /// One attempt, no waiting (Redisson `tryLock()`).
    Never,
    /// Wait up to this long (Redisson `tryLock(waitTime, ...)`). Zero is the same as `Never`.
    For(Duration),
}

/// Options of one acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireOptions {
    /// How long to wait for the lock.
    pub wait: Wait,
    /// `None`: the watchdog keeps the lock while the client lives. `Some(d)`: the lock expires
    /// after `d` unless released first, and no watchdog renews it.
    pub lease: Option<Duration>,
}

impl Default for AcquireOptions {
    fn default() -> Self {
        AcquireOptions {
            wait: Wait::Forever,
            lease: None,
        }
    }
}

impl AcquireOptions {
    /// Wait forever, watchdog lease.
    pub fn forever() -> Self {
        Self::default()
    }

    /// One attempt, watchdog lease.
    pub fn try_once() -> Self {
        AcquireOptions {
            wait: Wait::Never,
            lease: None,
        }
    }

    /// Wait up to `d`, watchdog lease.
    pub fn wait_for(d: Duration) -> Self {
        AcquireOptions {
            wait: Wait::For(d),
            lease: None,
        }
    }

    /// The same options with a fixed lease.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }
}

/// A successful acquire.
#[derive(Debug, Clone)]
pub struct Acquired {
    /// Fencing token of this ownership: strictly greater than any token given to an earlier
    /// owner of the same lock. A re-entry returns the token the owner already has.
    pub fencing_token: u64,
    /// The owner's hold count after this acquire (1 for a first acquire).
    pub hold_count: u32,
    /// Fires if the lock is lost while held.
    pub lost: LostSignal,
}

/// The outcome of a successful release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// A re-entrant hold was released; the owner still holds the lock this many times.
    StillHeld(u32),
    /// The last hold was released; the lock is free.
    Freed,
}

/// One holder in a [`LockStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The stored owner (`<client uuid>:<owner id>` on Redis).
    pub owner: String,
    /// Its hold count.
    pub count: u32,
}

/// What the server says about a lock, for operators (`polylock status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockStatus {
    /// The lock's name.
    pub name: String,
    /// Whether anybody holds it.
    pub locked: bool,
    /// The holders with their counts (one for a mutex).
    pub holders: Vec<Holder>,
    /// Remaining lease, if the lock is held with one (Redis).
    pub ttl: Option<Duration>,
    /// Contenders queued behind the holder, in the order they will get the lock (ZooKeeper).
    pub waiters: Vec<String>,
}

pub(crate) enum Backend {
    Redis(RedisBackend),
    // Boxed: one per client, and it keeps the enum small.
    Zk(Box<ZkBackend>),
}

pub(crate) struct ClientInner {
    pub(crate) id: String,
    pub(crate) options: ClientOptions,
    pub(crate) backend: Backend,
    pub(crate) holds: Holds,
    pub(crate) watchdog: Arc<WatchdogHandle>,
    pid: u32,
    closed: AtomicBool,
    /// The connection is down but the session may still be alive (ZooKeeper).
    suspended: AtomicBool,
}

impl ClientInner {
    /// Remove a hold of `owner` from the server whatever its count (it was lost, or its client
    /// closed): the owner's hash field on Redis, its contender or lease node on ZooKeeper.
    async fn drop_hold(&self, name: &str, owner: OwnerId, node: Option<String>) -> Result<bool> {
        match (&self.backend, node) {
            (Backend::Redis(r), _) => {
                r.drop_field(name, &owner::field(&self.id, owner), None)
                    .await
            }
            (Backend::Zk(z), Some(node)) => z.release(name, &node, false).await,
            (Backend::Zk(_), None) => Ok(true),
        }
    }

    fn check_usable(&self) -> Result<()> {
        if self.pid != std::process::id() {
            return Err(Error::state(
                "this polylock client was created before fork(); it cannot be used in the child \
                 process. Create a new client in the child",
            ));
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::state("the polylock client is closed"));
        }
        Ok(())
    }
}

/// A connection to one lock server. Cheap to clone; clones share the connection, the watchdog
/// and the client id.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.inner.id)
            .finish()
    }
}

impl Client {
    /// Connect with default options. URLs: `redis://[user:password@]host:port[/db]`, `rediss://`.
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
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        let url = url.to_string();
        let zk = match scheme.as_deref() {
            Some("redis" | "rediss") => false,
            Some("zk") => true,
            _ => {
                return Err(Error::invalid(format!(
                    "malformed URL '{url}': expected redis://[user:password@]host:port[/db], rediss://... or zk://host:port[,host:port...][/chroot]"
                )))
            }
        };
        let task = runtime::handle().spawn(async move {
            let backend = if zk {
                Backend::Zk(Box::new(ZkBackend::connect(&url, &options).await?))
            } else {
                Backend::Redis(RedisBackend::connect(&url, &options).await?)
            };
            let inner = Arc::new(ClientInner {
                id: uuid::Uuid::new_v4().to_string(),
                options,
                backend,
                holds: Holds::default(),
                watchdog: Arc::new(WatchdogHandle::new()),
                pid: std::process::id(),
                closed: AtomicBool::new(false),
                suspended: AtomicBool::new(false),
            });
            match &inner.backend {
                Backend::Redis(_) => tokio::spawn(watchdog::run(Arc::downgrade(&inner))),
                Backend::Zk(_) => tokio::spawn(watch_session(Arc::downgrade(&inner))),
            };
            Ok(Client { inner })
        });
        task.await
            .map_err(|_| Error::internal("the connect task panicked"))?
    }

    /// This client's random id (the `<clientId>` part of stored owners).
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The options this client was created with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// A reentrant lock handle for `name`. Handles are cheap; two handles with the same name
    /// and the same owner are the same hold.
    pub fn lock(&self, name: &str) -> Result<Lock> {
        self.inner.check_usable()?;
        validate_name(name)?;
        if let Backend::Zk(_) = self.inner.backend {
            crate::zookeeper::validate_path(name)?;
        }
        Ok(Lock {
            client: self.inner.clone(),
            name: Arc::from(name),
            mutex: false,
        })
    }

    /// A non-reentrant mutex on ZooKeeper (Curator's InterProcessSemaphoreMutex): one holder; a
    /// second acquire, even by the same owner, waits or fails; any owner of this client may
    /// release it. `Unsupported` on Redis.
    pub fn mutex(&self, path: &str) -> Result<Lock> {
        let mut lock = self.lock(path)?;
        if let Backend::Redis(_) = self.inner.backend {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "the non-reentrant semaphore mutex is a ZooKeeper lock; use lock() on Redis",
            ));
        }
        lock.mutex = true;
        Ok(lock)
    }

    #[doc(hidden)]
    /// How often ZooKeeper waiters were woken by their watch (tests: one wake per release).
    pub fn debug_zk_wakeups(&self) -> u64 {
        match &self.inner.backend {
            Backend::Zk(z) => z.wakeups(),
            Backend::Redis(_) => 0,
        }
    }

    #[doc(hidden)]
    /// Close this client's ZooKeeper session from a second handle, as an expiry (tests).
    pub async fn debug_close_zk_session(&self) -> Result<()> {
        match &self.inner.backend {
            Backend::Zk(z) => z.close_session_elsewhere().await,
            Backend::Redis(_) => Err(Error::new(ErrorKind::Unsupported, "not a ZooKeeper client")),
        }
    }

    /// Round trip of the cheapest command (PING on Redis): the physical limit benchmarks
    /// compare against.
    pub async fn ping(&self) -> Result<()> {
        self.inner.check_usable()?;
        match &self.inner.backend {
            Backend::Redis(r) => r.ping().await,
            Backend::Zk(z) => z.ping().await,
        }
    }

    /// True while the connection to ZooKeeper is down but the session may still be alive: locks
    /// stay held (they are lost only if the session expires), but nothing can be acquired or
    /// released until the connection comes back. Always false on Redis.
    pub fn is_suspended(&self) -> bool {
        self.inner.suspended.load(Ordering::Acquire)
    }

    /// Every hold of this client that is lost from now on, as it happens: one stream for the
    /// whole client, so bindings need no task per hold. A receiver that falls more than 1,024
    /// events behind gets `RecvError::Lagged`.
    pub fn lost_events(&self) -> tokio::sync::broadcast::Receiver<crate::LostEvent> {
        self.inner.holds.lost_events()
    }

    /// True when a waiting acquire takes a place in a queue (ZooKeeper's sequential nodes). A
    /// binding's "one try, then wait" fast path would queue twice there and lose its FIFO place:
    /// on such a client, acquire with the wait directly.
    pub fn queues_waiters(&self) -> bool {
        matches!(self.inner.backend, Backend::Zk(_))
    }

    /// True once [`close`](Client::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Close the client: stop the watchdog and release every lock its owners still hold (their
    /// lost signals fire with [`LostReason::ClientClosed`]). Idempotent. Later calls on the client
    /// or its locks fail with `InvalidState`.
    pub async fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.watchdog.stop.cancel();
        let held: Vec<(Arc<str>, OwnerId, Option<String>)> = {
            let mut map = self.inner.holds.lock();
            let held = map
                .iter_mut()
                .map(|((name, owner), h)| {
                    h.mark_lost(name, *owner, LostReason::ClientClosed);
                    (name.clone(), *owner, h.node.clone())
                })
                .collect();
            map.clear();
            held
        };
        let mut first_err = None;
        for (name, owner, node) in held {
            if let Err(e) = self.inner.drop_hold(&name, owner, node).await {
                first_err.get_or_insert(e);
            }
        }
        if let Backend::Redis(r) = &self.inner.backend {
            r.close_sync();
        }
        first_err.map_or(Ok(()), Err)
    }

    #[doc(hidden)]
    /// Channels with a live subscription or waiters (tests check that none leak).
    pub fn subscribed_channels(&self) -> usize {
        match &self.inner.backend {
            Backend::Redis(r) => r.subscribed_channels(),
            Backend::Zk(_) => 0,
        }
    }
}

/// A handle on one named lock. Every operation names its owner explicitly.
#[derive(Clone)]
pub struct Lock {
    client: Arc<ClientInner>,
    name: Arc<str>,
    /// A semaphore mutex (ZooKeeper) rather than a reentrant lock.
    mutex: bool,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock").field("name", &self.name).finish()
    }
}

impl Lock {
    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The registry owner of a hold: the caller, or the whole client for a semaphore mutex.
    fn hold_owner(&self, owner: OwnerId) -> OwnerId {
        if self.mutex {
            MUTEX_OWNER
        } else {
            owner
        }
    }

    /// See [`Client::queues_waiters`].
    pub fn queues_waiters(&self) -> bool {
        matches!(self.client.backend, Backend::Zk(_))
    }

    /// True for a non-reentrant semaphore mutex (see [`Client::mutex`]).
    pub fn is_mutex(&self) -> bool {
        self.mutex
    }

    fn field(&self, owner: OwnerId) -> String {
        owner::field(&self.client.id, owner)
    }

    fn lost_error(&self, reason: LostReason) -> Error {
        reason.error(&self.name)
    }

    /// Acquire (or re-enter) the lock for `owner`. Fails with `Timeout` when the wait runs out,
    /// and with `LockLost` when `owner` still has a hold that was lost (release it first).
    ///
    /// Cancel-safe: dropping the future leaves no hold behind. Closing the client ends the wait
    /// with `InvalidState`.
    pub async fn acquire(&self, owner: OwnerId, options: AcquireOptions) -> Result<Acquired> {
        let stop = self.client.watchdog.stop.clone();
        let acquired = tokio::select! {
            biased;
            r = self.acquire_unless_closed(owner, options) => r?,
            // Dropping the wait is cancel-safe: nothing is left behind on the server.
            _ = stop.cancelled() => return Err(closed_while_waiting()),
        };
        if self.client.closed.load(Ordering::Acquire) {
            // Granted while close() drained the holds: give it back, nobody renews it now.
            let owner = self.hold_owner(owner);
            let hold = self.client.holds.lock().remove(&(self.name.clone(), owner));
            if let Some(mut h) = hold {
                h.mark_lost(&self.name, owner, LostReason::ClientClosed);
                let _ = self
                    .client
                    .drop_hold(&self.name, owner, h.node.clone())
                    .await;
            }
            return Err(closed_while_waiting());
        }
        Ok(acquired)
    }

    async fn acquire_unless_closed(
        &self,
        owner: OwnerId,
        options: AcquireOptions,
    ) -> Result<Acquired> {
        self.client.check_usable()?;
        let owner = self.hold_owner(owner);
        let wait = match options.wait {
            Wait::For(d) if d.is_zero() => Wait::Never,
            Wait::For(d) => Wait::For(check_duration("wait", d)?),
            w => w,
        };
        if let Some(lease) = options.lease {
            check_duration("lease", lease)?;
        }
        let key = (self.name.clone(), owner);
        let (expected, mode) = {
            let map = self.client.holds.lock();
            match map.get(&key).filter(|_| !self.mutex) {
                Some(h) => {
                    if let Some(reason) = h.lost {
                        return Err(self.lost_error(reason));
                    }
                    let mode = match (h.lease, options.lease) {
                        (LeaseMode::Fixed(_), Some(l)) => LeaseMode::Fixed(l),
                        (m, _) => m,
                    };
                    (h.count, mode)
                }
                None => (
                    0,
                    options.lease.map_or(LeaseMode::Watchdog, LeaseMode::Fixed),
                ),
            }
        };
        if let Backend::Zk(z) = &self.client.backend {
            return self
                .acquire_zk(z, owner, expected, wait, options.lease)
                .await;
        }
        let lease = match mode {
            LeaseMode::Watchdog => self.client.options.watchdog_timeout,
            LeaseMode::Fixed(d) => d,
            LeaseMode::Session => return Err(Error::internal("session lease on Redis")),
        };
        let field = self.field(owner);
        let sent_at = Instant::now();
        let granted = match &self.client.backend {
            Backend::Zk(_) => unreachable!("handled above"),
            Backend::Redis(r) => {
                r.acquire(
                    &self.name,
                    &field,
                    lease,
                    expected,
                    wait,
                    self.client.options.watchdog_timeout,
                )
                .await?
            }
        };
        let Some(granted) = granted else {
            return Err(self.timeout_error(wait));
        };
        let mut map = self.client.holds.lock();
        let hold = map
            .entry(key)
            .and_modify(|h| {
                h.count = granted.count;
                h.lease = mode;
                if let LeaseMode::Fixed(_) = mode {
                    h.deadline = sent_at + lease;
                }
            })
            .or_insert_with(|| {
                Hold::new(
                    &self.client.holds,
                    granted.token,
                    granted.count,
                    mode,
                    sent_at + lease,
                )
            });
        let acquired = acquired_from(hold);
        drop(map);
        if let LeaseMode::Fixed(_) = mode {
            self.client.watchdog.wake.notify_one();
        }
        Ok(acquired)
    }

    async fn acquire_zk(
        &self,
        z: &ZkBackend,
        owner: OwnerId,
        expected: u32,
        wait: Wait,
        lease: Option<Duration>,
    ) -> Result<Acquired> {
        if lease.is_some() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "ZooKeeper locks have no lease: they are held while the session lives; acquire without a lease",
            ));
        }
        let key = (self.name.clone(), owner);
        if expected > 0 {
            // Re-entry is counted in the client, as Curator does: no round trip. (A semaphore
            // mutex never gets here: it is not reentrant.)
            let mut map = self.client.holds.lock();
            let Some(h) = map.get_mut(&key) else {
                return Err(Error::internal("hold vanished during re-entry"));
            };
            h.count += 1;
            return Ok(acquired_from(h));
        }
        let granted = if self.mutex {
            z.acquire_semaphore(&self.name, wait).await?
        } else {
            z.acquire(&self.name, wait).await?
        };
        let Some(granted) = granted else {
            return Err(self.timeout_error(wait));
        };
        let hold = Hold::new(
            &self.client.holds,
            granted.token,
            1,
            LeaseMode::Session,
            Instant::now() + MAX_DURATION,
        )
        .with_node(granted.node);
        let acquired = acquired_from(&hold);
        self.client.holds.lock().insert(key, hold);
        Ok(acquired)
    }

    fn timeout_error(&self, wait: Wait) -> Error {
        let waited = match wait {
            Wait::For(d) => Some(d),
            _ => None,
        };
        Error::timeout(&self.name, waited)
    }

    async fn release_zk(&self, z: &ZkBackend, owner: OwnerId) -> Result<Released> {
        let key = (self.name.clone(), owner);
        if self.mutex {
            // Forget the hold before deleting the lease: a waiter of this client may get the
            // mutex the moment the lease is gone and register its own hold under the same key.
            let Some(mut h) = self.client.holds.lock().remove(&key) else {
                return Err(Error::new(
                    ErrorKind::NotOwner,
                    format!("mutex '{}' is not held by this client", self.name),
                ));
            };
            let node = h.node.clone().unwrap_or_default();
            if let Some(reason) = h.lost {
                let _ = z.release(&self.name, &node, false).await;
                return Err(self.lost_error(reason));
            }
            return match z.release(&self.name, &node, h.releasing).await {
                Ok(true) => {
                    h.mark_released();
                    Ok(Released::Freed)
                }
                Ok(false) => {
                    h.mark_lost(&self.name, owner, LostReason::Deleted);
                    Err(self.lost_error(LostReason::Deleted))
                }
                Err(e) => {
                    h.releasing = true; // the delete may have been applied
                    self.client.holds.lock().insert(key, h);
                    Err(e)
                }
            };
        }
        let (node, lost) = {
            let mut map = self.client.holds.lock();
            let Some(h) = map.get_mut(&key) else {
                return Err(Error::not_owner(&self.name, owner));
            };
            if h.lost.is_none() && h.count > 1 {
                h.count -= 1;
                return Ok(Released::StillHeld(h.count));
            }
            (h.node.clone().unwrap_or_default(), (h.lost, h.releasing))
        };
        let (lost, tried) = lost;
        if let Some(reason) = lost {
            self.client.holds.lock().remove(&key);
            let _ = z.release(&self.name, &node, false).await;
            return Err(self.lost_error(reason));
        }
        let existed = match z.release(&self.name, &node, tried).await {
            Ok(existed) => existed,
            Err(e) => {
                // The delete may have reached the server: a later NoNode is then our own.
                if let Some(h) = self.client.holds.lock().get_mut(&key) {
                    h.releasing = true;
                }
                return Err(e);
            }
        };
        let mut map = self.client.holds.lock();
        let Some(mut h) = map.remove(&key) else {
            return Err(Error::not_owner(&self.name, owner));
        };
        if existed {
            h.mark_released();
            Ok(Released::Freed)
        } else {
            let reason = h.lost.unwrap_or(LostReason::Deleted);
            h.mark_lost(&self.name, owner, reason);
            Err(self.lost_error(reason))
        }
    }

    /// Try once without waiting; `Ok(None)` if another owner holds the lock.
    pub async fn try_acquire(
        &self,
        owner: OwnerId,
        lease: Option<Duration>,
    ) -> Result<Option<Acquired>> {
        let options = AcquireOptions {
            wait: Wait::Never,
            lease,
        };
        match self.acquire(owner, options).await {
            Ok(a) => Ok(Some(a)),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Release one hold of `owner`. The last release frees the lock and wakes one waiter.
    ///
    /// `NotOwner` if `owner` holds nothing; `LockLost` if its hold was lost (the hold is then
    /// forgotten, so a second release says `NotOwner`).
    pub async fn release(&self, owner: OwnerId) -> Result<Released> {
        self.client.check_usable()?;
        let owner = self.hold_owner(owner);
        if let Backend::Zk(z) = &self.client.backend {
            return self.release_zk(z, owner).await;
        }
        let key = (self.name.clone(), owner);
        let held = {
            let mut map = self.client.holds.lock();
            let Some(h) = map.get_mut(&key) else {
                return Err(Error::not_owner(&self.name, owner));
            };
            match h.lost {
                Some(reason) => {
                    map.remove(&key);
                    Err(reason)
                }
                None => {
                    if h.count <= 1 {
                        h.releasing = true;
                    }
                    let lease = match h.lease {
                        LeaseMode::Fixed(d) => d,
                        _ => self.client.options.watchdog_timeout,
                    };
                    Ok((lease, h.count))
                }
            }
        };
        let (lease, count) = match held {
            Ok(held) => held,
            Err(reason) => {
                // Remove what may be left on the server (the loss may have been declared while
                // it was unreachable) before returning, so that it cannot race a new acquire.
                let _ = self.client.drop_hold(&self.name, owner, None).await;
                return Err(self.lost_error(reason));
            }
        };
        let mut reset = ResetReleasing {
            lock: self,
            owner,
            armed: true,
        };
        let reply = match &self.client.backend {
            Backend::Redis(r) => {
                r.release(&self.name, &self.field(owner), lease, count)
                    .await
            }
            Backend::Zk(_) => unreachable!("handled above"),
        };
        reset.armed = false;
        let mut map = self.client.holds.lock();
        match reply {
            Err(e) => {
                if let Some(h) = map.get_mut(&key) {
                    h.releasing = false;
                }
                Err(e)
            }
            Ok(UnlockReply::Freed) => {
                if let Some(h) = map.remove(&key) {
                    h.mark_released();
                }
                Ok(Released::Freed)
            }
            Ok(UnlockReply::Decremented) => match map.get_mut(&key) {
                Some(h) => {
                    h.count = h.count.saturating_sub(1).max(1);
                    h.releasing = false;
                    Ok(Released::StillHeld(h.count))
                }
                None => Err(Error::internal("hold vanished during release")),
            },
            Ok(UnlockReply::NotHeld) => {
                let reason = match map.remove(&key) {
                    Some(mut h) => {
                        let reason = h.lost.unwrap_or(match h.lease {
                            LeaseMode::Fixed(_) => LostReason::Expired,
                            _ => LostReason::Deleted,
                        });
                        h.mark_lost(&self.name, owner, reason);
                        reason
                    }
                    None => LostReason::Deleted,
                };
                Err(self.lost_error(reason))
            }
        }
    }

    /// Whether anybody holds the lock (asks the server).
    pub async fn is_locked(&self) -> Result<bool> {
        self.client.check_usable()?;
        match &self.client.backend {
            Backend::Redis(r) => r.is_locked(&self.name).await,
            Backend::Zk(z) if self.mutex => Ok(!z.leases(&self.name).await?.is_empty()),
            Backend::Zk(z) => Ok(!z.contenders(&self.name).await?.is_empty()),
        }
    }

    /// Whether `owner` holds the lock (asks the server; a lost hold is not held).
    pub async fn is_held_by(&self, owner: OwnerId) -> Result<bool> {
        Ok(self.hold_count(owner).await? > 0)
    }

    /// How many times `owner` holds the lock (0 if not at all, or if its hold was lost).
    pub async fn hold_count(&self, owner: OwnerId) -> Result<u32> {
        self.client.check_usable()?;
        let owner = self.hold_owner(owner);
        if self.local_lost(owner) {
            return Ok(0);
        }
        match &self.client.backend {
            Backend::Redis(r) => r.hold_count(&self.name, &self.field(owner)).await,
            // Re-entry is client-side on ZooKeeper: the count lives here.
            Backend::Zk(_) => Ok(self
                .client
                .holds
                .lock()
                .get(&(self.name.clone(), owner))
                .map_or(0, |h| h.count)),
        }
    }

    fn local_lost(&self, owner: OwnerId) -> bool {
        self.client
            .holds
            .lock()
            .get(&(self.name.clone(), owner))
            .is_some_and(|h| h.lost.is_some())
    }

    /// Remaining lease of whoever holds the lock; `None` if it is free (or has no expiry).
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        self.client.check_usable()?;
        let pttl = match &self.client.backend {
            Backend::Redis(r) => r.pttl(&self.name).await?,
            Backend::Zk(_) => return Ok(None), // no lease: held while the session lives
        };
        Ok((pttl >= 0).then(|| Duration::from_millis(pttl as u64)))
    }

    /// Delete the lock whoever holds it and wake its waiters; true if it was held. Holds of this
    /// client on it are lost at once.
    pub async fn force_unlock(&self) -> Result<bool> {
        self.client.check_usable()?;
        let was = match &self.client.backend {
            Backend::Redis(r) => r.force_unlock(&self.name).await?,
            Backend::Zk(z) if self.mutex => z.force_unlock_semaphore(&self.name).await?,
            Backend::Zk(z) => z.force_unlock(&self.name).await?,
        };
        let mut map = self.client.holds.lock();
        for ((name, owner), hold) in map.iter_mut() {
            if **name == *self.name {
                hold.mark_lost(name, *owner, LostReason::Deleted);
            }
        }
        Ok(was)
    }

    /// Whether any owner of this client holds the lock (local, no round trip; Curator's
    /// `isAcquiredInThisProcess`).
    pub fn is_held_locally(&self) -> bool {
        let map = self.client.holds.lock();
        map.iter()
            .any(|((name, _), h)| **name == *self.name && h.lost.is_none())
    }

    /// The fencing token of `owner`'s current hold, if it holds the lock (local, no round trip).
    pub fn fencing_token(&self, owner: OwnerId) -> Option<u64> {
        let owner = self.hold_owner(owner);
        let map = self.client.holds.lock();
        map.get(&(self.name.clone(), owner))
            .filter(|h| h.lost.is_none())
            .map(|h| h.token)
    }

    /// The lost signal of `owner`'s current hold, if any (local).
    pub fn lost_signal(&self, owner: OwnerId) -> Option<LostSignal> {
        let owner = self.hold_owner(owner);
        let map = self.client.holds.lock();
        map.get(&(self.name.clone(), owner)).map(|h| h.signal())
    }

    /// The server's view of the lock: holders with counts and the remaining lease.
    pub async fn status(&self) -> Result<LockStatus> {
        self.client.check_usable()?;
        let raw = match &self.client.backend {
            Backend::Redis(r) => r.status(&self.name).await?,
            Backend::Zk(z) => {
                let names: Vec<String> = if self.mutex {
                    z.leases(&self.name)
                        .await?
                        .into_iter()
                        .map(|n| format!("leases/{n}"))
                        .collect()
                } else {
                    z.contenders(&self.name)
                        .await?
                        .into_iter()
                        .map(|c| c.name)
                        .collect()
                };
                let mut names = names.into_iter();
                let holder = names.next();
                let ours = {
                    let map = self.client.holds.lock();
                    map.iter()
                        .find(|((n, _), h)| *n == self.name && h.node == holder)
                        .map(|(_, h)| h.count)
                };
                return Ok(LockStatus {
                    name: self.name.to_string(),
                    locked: holder.is_some(),
                    holders: holder
                        .map(|owner| Holder {
                            owner,
                            count: ours.unwrap_or(1),
                        })
                        .into_iter()
                        .collect(),
                    ttl: None,
                    waiters: names.collect(),
                });
            }
        };
        Ok(LockStatus {
            name: self.name.to_string(),
            locked: !raw.holders.is_empty(),
            holders: raw
                .holders
                .into_iter()
                .map(|(owner, count)| Holder { owner, count })
                .collect(),
            ttl: (raw.pttl >= 0).then(|| Duration::from_millis(raw.pttl as u64)),
            waiters: Vec::new(),
        })
    }

    #[doc(hidden)]
    /// Run Redis's unlock script once for `owner`, who counts `expected` holds, as a first
    /// attempt or as the retry after a lost reply (tests of retried releases). Returns the raw
    /// reply and leaves the client's own count alone.
    pub async fn release_attempt(
        &self,
        owner: OwnerId,
        expected: u32,
        retry: bool,
    ) -> Result<crate::redis::UnlockReply> {
        self.client.check_usable()?;
        let lease = self.client.options.watchdog_timeout;
        match &self.client.backend {
            Backend::Redis(r) => r
                .release_once(&self.name, &self.field(owner), lease, expected, retry)
                .await
                .map_err(|e| crate::redis::map_err(e, "release the lock")),
            Backend::Zk(_) => Err(Error::new(
                ErrorKind::Unsupported,
                "release attempts are a Redis test hook",
            )),
        }
    }
}

fn acquired_from(hold: &Hold) -> Acquired {
    Acquired {
        fencing_token: hold.token,
        hold_count: hold.count,
        lost: hold.signal(),
    }
}

/// Clears `releasing` if a release future is dropped mid-flight, so the watchdog notices a loss.
struct ResetReleasing<'a> {
    lock: &'a Lock,
    owner: OwnerId,
    armed: bool,
}

impl Drop for ResetReleasing<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut map = self.lock.client.holds.lock();
            if let Some(h) = map.get_mut(&(self.lock.name.clone(), self.owner)) {
                h.releasing = false;
            }
        }
    }
}

/// Follows a ZooKeeper client's session: a suspended connection is reported, an expired session
/// makes every hold of the client lost and opens a new session for later calls.
async fn watch_session(client: std::sync::Weak<ClientInner>) {
    use zookeeper_client::SessionState as S;
    loop {
        let Some(inner) = client.upgrade() else {
            return;
        };
        let Backend::Zk(z) = &inner.backend else {
            return;
        };
        let mut states = z.client().state_watcher();
        let stop = inner.watchdog.stop.clone();
        drop(inner);
        let set_suspended = |v: bool| {
            if let Some(inner) = client.upgrade() {
                inner.suspended.store(v, Ordering::Release);
            }
        };
        let expired = loop {
            let state = tokio::select! {
                _ = stop.cancelled() => return,
                s = states.changed() => s,
            };
            match state {
                S::Disconnected => {
                    set_suspended(true);
                    tracing::warn!("polylock: ZooKeeper connection suspended; locks stay held while the session lives")
                }
                S::SyncConnected | S::ConnectedReadOnly => {
                    set_suspended(false);
                    tracing::info!("polylock: ZooKeeper connection restored")
                }
                S::Expired | S::AuthFailed => break true,
                S::Closed => break false,
            }
        };
        set_suspended(false);
        let Some(inner) = client.upgrade() else {
            return;
        };
        if !expired || inner.closed.load(Ordering::Acquire) {
            return;
        }
        {
            let mut map = inner.holds.lock();
            for ((name, owner), hold) in map.iter_mut() {
                hold.mark_lost(name, *owner, LostReason::SessionExpired);
            }
        }
        let Backend::Zk(z) = &inner.backend else {
            return;
        };
        let mut delay = Duration::from_millis(100);
        while let Err(e) = z.renew_session().await {
            tracing::warn!("polylock: cannot open a new ZooKeeper session: {e}");
            if stop.is_cancelled() {
                return;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}

fn closed_while_waiting() -> Error {
    Error::state("the polylock client was closed while this acquire waited")
}
