//! The ZooKeeper backend: Curator's lock recipes and node formats.
//!
//! This module holds the session every ZooKeeper primitive shares and the recipe steps they have
//! in common: Curator's protected create, the guaranteed delete of a node we no longer want, and
//! watching the session for suspension and expiry. The lock kinds live in [`lock`] (Curator's
//! InterProcessMutex and InterProcessReadWriteLock) and [`semaphore_mutex`]
//! (InterProcessSemaphoreMutex).
//!
//! Locks are held as long as the session lives: when the session expires, every hold of the
//! client is lost (Curator keeps reporting "held"; polylock says so).
//!
//! Fencing token: the holder node's creation zxid (`czxid`). It grows with every new holder like
//! the sequence number does, and unlike the sequence number it never restarts when the server
//! removes the empty container parent and a later contender creates it again.

mod count;
mod election;
mod expire;
mod latch;
mod lock;
mod semaphore;
mod semaphore_mutex;

use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use crate::backend::cleanup::{clean_up, CleanUp};
use crate::backend::{Backend, ElectionOps, HoldOps, LatchOps, LockOps, SemaphoreOps, SessionSink};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldKind, LockKind};
use crate::model::options::ClientOptions;
use crate::model::secret::{redact_url, Secret};

use election::ZkElection;
use latch::ZkLatch;
use lock::{Queue, ZkLock};
use semaphore::ZkSemaphore;
use semaphore_mutex::ZkSemaphoreMutex;

/// Curator's protected-mode prefix.
const PROTECTED_PREFIX: &str = "_c_";

/// What a `zk://` URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZkUrl {
    /// `host:port,host:port[/chroot]`, as zookeeper-client takes it.
    pub(crate) cluster: String,
    pub(crate) auth: Option<(String, Secret)>,
    pub(crate) session_timeout: Option<Duration>,
    /// Nodes this client creates are open to anyone (`world:anyone`, Curator's default) rather
    /// than to the authenticated user only (`auth` = creator). Open unless the URL has
    /// credentials; `?acl=open` or `?acl=creator` says so explicitly.
    pub(crate) open_acl: bool,
    /// TLS (`zks://`): the CA certificates to trust, and a client identity for servers that ask.
    pub(crate) tls: Option<ZkTls>,
}

/// The TLS files of a `zks://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZkTls {
    pub(crate) ca_file: String,
    pub(crate) identity: Option<(String, String)>,
}

impl ZkUrl {
    pub(crate) fn parse(url: &str) -> Result<ZkUrl> {
        let bad = |why: &str| {
            Error::invalid(format!(
                "malformed ZooKeeper URL '{}': {why}; expected zk://[user:password@]host:port[,host:port...][/chroot][?session_timeout_ms=N][&acl=open|creator], or zks://...?tls_ca_file=PATH[&tls_cert_file=PATH&tls_key_file=PATH] for TLS",
                redact_url(url)
            ))
        };
        let (rest, tls) = match (url.strip_prefix("zk://"), url.strip_prefix("zks://")) {
            (Some(r), _) => (r, false),
            (_, Some(r)) => (r, true),
            _ => return Err(bad("it must start with zk:// or zks://")),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((user_pass, hosts)) => {
                let (u, p) = user_pass
                    .split_once(':')
                    .ok_or_else(|| bad("credentials must be user:password"))?;
                if u.is_empty() {
                    return Err(bad("empty user name"));
                }
                (Some((u.to_string(), Secret::new(p))), hosts)
            }
            None => (None, rest),
        };
        let (hosts, chroot) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if hosts.is_empty() {
            return Err(bad("no host"));
        }
        for h in hosts.split(',') {
            let (host, port) = h
                .rsplit_once(':')
                .ok_or_else(|| bad("every host needs a :port"))?;
            if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
                return Err(bad(&format!("bad host:port '{h}'")));
            }
        }
        if !chroot.is_empty() && chroot != "/" {
            validate_path(chroot).map_err(|e| bad(&format!("bad chroot: {}", e.message())))?;
        }
        let mut session_timeout = None;
        let mut open_acl = auth.is_none();
        let (mut ca_file, mut cert_file, mut key_file) = (None, None, None);
        if let Some(q) = query {
            for kv in q.split('&').filter(|s| !s.is_empty()) {
                match kv.split_once('=') {
                    Some(("session_timeout_ms", v)) => {
                        let ms: u64 = v
                            .parse()
                            .map_err(|_| bad("session_timeout_ms must be a number"))?;
                        if ms == 0 {
                            return Err(bad("session_timeout_ms must be positive"));
                        }
                        // The protocol's field is an i32 of ms: a larger one would wrap.
                        if ms > i32::MAX as u64 {
                            return Err(bad(&format!(
                                "session_timeout_ms must be at most {} (a 32-bit count of ms)",
                                i32::MAX
                            )));
                        }
                        session_timeout = Some(Duration::from_millis(ms));
                    }
                    Some(("acl", "open")) => open_acl = true,
                    Some(("acl", "creator")) if auth.is_some() => open_acl = false,
                    Some(("acl", "creator")) => {
                        return Err(bad("acl=creator needs user:password credentials"))
                    }
                    Some(("acl", _)) => return Err(bad("acl must be open or creator")),
                    Some(("tls_ca_file", v)) if tls && !v.is_empty() => ca_file = Some(v),
                    Some(("tls_cert_file", v)) if tls && !v.is_empty() => cert_file = Some(v),
                    Some(("tls_key_file", v)) if tls && !v.is_empty() => key_file = Some(v),
                    Some(("tls_ca_file" | "tls_cert_file" | "tls_key_file", _)) if !tls => {
                        return Err(bad("TLS files go with a zks:// URL"))
                    }
                    _ => return Err(bad(&format!("unknown option '{kv}'"))),
                }
            }
        }
        let tls = match (tls, ca_file, cert_file, key_file) {
            (false, ..) => None,
            (true, None, ..) => {
                return Err(bad(
                    "zks:// needs tls_ca_file=PATH (the PEM file of the CA that signed the servers' certificates)",
                ))
            }
            (true, Some(ca), None, None) => Some(ZkTls {
                ca_file: ca.to_string(),
                identity: None,
            }),
            (true, Some(ca), Some(cert), Some(key)) => Some(ZkTls {
                ca_file: ca.to_string(),
                identity: Some((cert.to_string(), key.to_string())),
            }),
            (true, Some(_), ..) => {
                return Err(bad("tls_cert_file and tls_key_file go together"))
            }
        };
        let chroot = if chroot == "/" { "" } else { chroot };
        Ok(ZkUrl {
            cluster: format!("{hosts}{chroot}"),
            auth,
            session_timeout,
            open_acl,
            tls,
        })
    }
}

/// The process that first connected to ZooKeeper (0: none yet).
static ZK_USED_IN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A process forked after its parent connected to ZooKeeper cannot connect to ZooKeeper: tell it
/// at once, with what to do instead. zookeeper-client does its I/O on async-io's process-wide
/// reactor, which the parent's first connection started: its driver thread waits while holding
/// the reactor's lock, and in the child that thread does not exist while the lock is still held,
/// so no thread of the child can ever drive the reactor again (every connect would time out).
/// Every other backend works in such a child, and a child of a parent that never used ZooKeeper
/// can use it.
fn refuse_after_fork() -> Result<()> {
    use std::sync::atomic::Ordering;
    let pid = crate::model::identity::process_id();
    match ZK_USED_IN.compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(()),
        Err(first) if first == pid => Ok(()),
        Err(_) => Err(Error::unsupported(
            "this process was forked after its parent connected to ZooKeeper, and ZooKeeper \
             cannot be used in it (the ZooKeeper client's I/O reactor is process-wide and does not \
             survive fork()). Connect to ZooKeeper only after forking (gunicorn without --preload, \
             multiprocessing's 'spawn' or 'forkserver' start method), or fork before the first \
             ZooKeeper connection; the other backends work in a forked child",
        )),
    }
}

/// zookeeper-client's TLS options from the files of a `zks://` URL.
#[cfg(feature = "tls")]
fn tls_options(tls: &ZkTls) -> Result<zk::TlsOptions> {
    let read = |what: &str, path: &str| {
        std::fs::read_to_string(path).map_err(|e| {
            Error::invalid(format!(
                "ZooKeeper TLS: cannot read the {what} file '{path}': {e}"
            ))
        })
    };
    let bad = |e: zk::Error| Error::invalid(format!("ZooKeeper TLS: {e}"));
    let mut options = zk::TlsOptions::new()
        .with_pem_ca(&read("CA", &tls.ca_file)?)
        .map_err(bad)?;
    if let Some((cert, key)) = &tls.identity {
        options = options
            .with_pem_identity(&read("certificate", cert)?, &read("key", key)?)
            .map_err(bad)?;
    }
    Ok(options)
}

/// A lock name on ZooKeeper is a znode path: absolute, no empty, `.` or `..` component, no
/// trailing slash, not under `/zookeeper`.
pub fn validate_path(path: &str) -> Result<()> {
    let bad = |why: &str| {
        Error::invalid(format!(
            "'{path}' is not a valid ZooKeeper lock path: {why} (example: /locks/orders)"
        ))
    };
    if !path.starts_with('/') {
        return Err(bad("it must start with '/'"));
    }
    if path == "/" {
        return Err(bad("the root cannot be a lock"));
    }
    if path.ends_with('/') {
        return Err(bad("it must not end with '/'"));
    }
    for part in path[1..].split('/') {
        if part.is_empty() {
            return Err(bad("empty path component"));
        }
        if part == "." || part == ".." {
            return Err(bad("'.' and '..' are not allowed"));
        }
        if part.chars().any(|c| c.is_control()) {
            return Err(bad("control characters are not allowed"));
        }
    }
    if path == "/zookeeper" || path.starts_with("/zookeeper/") {
        return Err(bad("/zookeeper is reserved by the server"));
    }
    Ok(())
}

pub(crate) fn map_err(e: zk::Error, doing: &str) -> Error {
    use zk::Error as Z;
    let kind = match e {
        Z::NoAuth | Z::AuthFailed => ErrorKind::Auth,
        Z::ConnectionLoss | Z::Timeout | Z::NoHosts | Z::SessionExpired | Z::SessionMoved => {
            ErrorKind::Connection
        }
        Z::ClientClosed => ErrorKind::InvalidState,
        Z::BadArguments(_) => ErrorKind::InvalidArgument,
        // zookeeper-client reports socket errors as its custom error (see `maybe_applied`).
        Z::Custom(_) => ErrorKind::Connection,
        _ => ErrorKind::Backend,
    };
    let hint = match kind {
        ErrorKind::Auth => "; check the digest user:password in the URL and the node's ACL",
        ErrorKind::Connection => "; check that the ZooKeeper servers are running and reachable",
        _ => "",
    };
    Error::new(kind, format!("ZooKeeper: could not {doing}: {e}{hint}"))
}

/// An error after which the request may or may not have been applied on the server.
///
/// zookeeper-client wraps socket errors (a reset when a server dies) in its custom error, behind
/// an `Arc` that hides the `io::Error` from `source()`. Its other custom errors come from SASL,
/// which polylock does not use, so a custom error is treated as a lost connection.
pub(crate) fn maybe_applied(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::Custom(_)
    )
}

/// The session of one client, shared by its ZooKeeper primitives.
pub(crate) struct ZkSession {
    /// The session's client; `None` once the backend is closed (the last clone going away is
    /// what makes zookeeper-client end the session).
    client: RwLock<Option<zk::Client>>,
    connector: ZkUrl,
    options: ClientOptions,
    /// How often a waiter was woken by its watch (tests check one wake per release).
    wakeups: std::sync::atomic::AtomicU64,
    /// Cancelled when the client closes: ends the session watch.
    stop: CancellationToken,
}

impl ZkSession {
    async fn open(url: &ZkUrl, options: &ClientOptions) -> Result<zk::Client> {
        let mut c = zk::Client::connector()
            .with_session_timeout(url.session_timeout.unwrap_or(options.session_timeout))
            .with_connection_timeout(options.connect_timeout)
            .with_fail_eagerly();
        if let Some((user, pass)) = &url.auth {
            c = c.with_auth("digest", format!("{user}:{}", pass.expose()).as_bytes());
        }
        let connect: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send + '_>> =
            match &url.tls {
                #[cfg(feature = "tls")]
                Some(tls) => Box::pin(c.with_tls(tls_options(tls)?).secure_connect(&url.cluster)),
                #[cfg(not(feature = "tls"))]
                Some(_) => {
                    return Err(Error::unsupported(
                        "zks:// needs TLS, and this build of polylock was compiled without the \
                         `tls` cargo feature",
                    ))
                }
                None => Box::pin(c.connect(&url.cluster)),
            };
        match tokio::time::timeout(options.connect_timeout * 2, connect).await {
            Ok(r) => r.map_err(|e| map_err(e, "connect")),
            Err(_) => Err(Error::new(
                ErrorKind::Connection,
                format!(
                    "ZooKeeper: no answer from {} within {:?}; check that the servers are running and reachable",
                    url.cluster,
                    options.connect_timeout * 2
                ),
            )),
        }
    }

    /// The current session's client (a new one after an expiry); `InvalidState` once closed.
    pub(crate) fn client(&self) -> Result<zk::Client> {
        self.client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| Error::state("the ZooKeeper session of this client is closed"))
    }

    /// Open a new session after the old one expired (not after a close).
    async fn renew_session(&self) -> Result<()> {
        let fresh = Self::open(&self.connector, &self.options).await?;
        let mut slot = self.client.write().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            *slot = Some(fresh);
        }
        Ok(())
    }

    /// End the session now and wait (up to the command timeout) until the server has ended it:
    /// its ephemeral nodes are gone when this returns, so a process that exits next leaves none
    /// behind for the session timeout. zookeeper-client ends a session when the last handle on it
    /// goes; handles lent to tasks (a guaranteed delete under way) hold it open a moment longer.
    async fn close(&self) {
        self.stop.cancel();
        let Some(client) = self
            .client
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let mut states = client.state_watcher();
        drop(client);
        let ended = async {
            loop {
                if states.state().is_terminated() {
                    return;
                }
                states.changed().await;
            }
        };
        if tokio::time::timeout(self.options.command_timeout, ended)
            .await
            .is_err()
        {
            tracing::warn!(
                "polylock: the ZooKeeper session did not end within {:?}; its nodes go when it times out",
                self.options.command_timeout
            );
        }
    }

    pub(crate) fn woken(&self) {
        self.wakeups
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// End this client's session on the server (see `expire.rs`) and wait until our client
    /// hears that it expired: a session expiry without waiting out the session timeout (tests
    /// of the lost signal). Plain connections only. If our client got back in before the close
    /// was read (it is then connected again), the close is sent again, up to ten times.
    pub(crate) async fn close_session_elsewhere(&self) -> Result<()> {
        let client = self.client()?;
        let info = client.session().clone();
        let mut states = client.state_watcher();
        drop(client);
        if self.connector.tls.is_some() {
            return Err(Error::unsupported(
                "closing a ZooKeeper session from outside is done on plain connections only",
            ));
        }
        let hosts = self.connector.cluster.split('/').next().unwrap_or_default();
        let server = hosts.split(',').next().unwrap_or_default();
        let wait = self.options.session_timeout * 2 + Duration::from_secs(1);
        for _ in 0..10 {
            expire::close_session(server, info.clone(), self.options.session_timeout).await?;
            let outcome = tokio::time::timeout(wait, async {
                loop {
                    match states.changed().await {
                        zk::SessionState::Expired => return true,
                        zk::SessionState::SyncConnected => return false,
                        _ => {}
                    }
                }
            });
            match outcome.await {
                Ok(true) => return Ok(()),
                Ok(false) => continue,
                Err(_) => break,
            }
        }
        Err(Error::new(
            ErrorKind::Backend,
            "ZooKeeper: the session was closed from outside but our client did not hear it expire",
        ))
    }

    /// Curator's protected create: on a connection loss, look for our own node (by uuid) before
    /// creating a second one, and accept it only if this session created it.
    pub(crate) async fn create_protected(
        &self,
        client: &zk::Client,
        path: &str,
        uuid: &str,
        marker: &str,
        data: &[u8],
    ) -> Result<(String, u64)> {
        let prefix = format!("{path}/{PROTECTED_PREFIX}{uuid}{marker}");
        let options = zk::CreateMode::EphemeralSequential.with_acls(self.acls());
        let mut attempts = 0;
        loop {
            attempts += 1;
            match client.create(&prefix, data, &options).await {
                Ok((stat, seq)) => {
                    let node = format!("{PROTECTED_PREFIX}{uuid}{marker}{seq}");
                    return Ok((node, stat.czxid as u64));
                }
                Err(zk::Error::NoNode) if attempts <= 3 => {
                    let parents = zk::CreateMode::Container.with_acls(self.acls());
                    match client.mkdir(path, &parents).await {
                        Ok(()) => {}
                        Err(zk::Error::BadArguments(_)) | Err(zk::Error::Unimplemented) => {
                            // Servers before 3.5 have no containers.
                            let persistent = zk::CreateMode::Persistent.with_acls(self.acls());
                            client
                                .mkdir(path, &persistent)
                                .await
                                .map_err(|e| map_err(e, "create the lock's parents"))?;
                        }
                        Err(e) => return Err(map_err(e, "create the lock's parents")),
                    }
                }
                Err(e) if attempts <= 3 && maybe_applied(&e) => {
                    if let Some(found) = self.find_own(client, path, uuid).await? {
                        return Ok(found);
                    }
                }
                Err(e) => return Err(map_err(e, "create the contender node")),
            }
        }
    }

    pub(crate) async fn find_own(
        &self,
        client: &zk::Client,
        path: &str,
        uuid: &str,
    ) -> Result<Option<(String, u64)>> {
        let (children, _) = match client.get_children(path).await {
            Ok(c) => c,
            Err(zk::Error::NoNode) => return Ok(None),
            Err(e) => return Err(map_err(e, "look for our contender node")),
        };
        for name in children.into_iter().filter(|n| n.contains(uuid)) {
            if let Ok(Some(stat)) = client.check_stat(&format!("{path}/{name}")).await {
                if stat.ephemeral_owner == client.session_id().0 {
                    return Ok(Some((name, stat.czxid as u64)));
                }
            }
        }
        Ok(None)
    }

    /// The ACL of the nodes this client creates: open to anyone, or (with credentials) to the
    /// authenticated user only.
    pub(crate) fn acls(&self) -> zk::Acls<'static> {
        if self.connector.open_acl {
            zk::Acls::anyone_all()
        } else {
            zk::Acls::creator_all()
        }
    }

    /// Delete our holder node. `Ok(false)` if it was already gone.
    ///
    /// `tried`: an earlier attempt may have deleted it without us hearing back. A delete
    /// that times out with the connection is retried here, and a NoNode after such an attempt is
    /// our own delete (as a retried Redis release reads the owner's hold count), unless the
    /// retry runs on a new session: the old one ended meanwhile and took its ephemeral node with
    /// it, and which came first, our delete or the end, cannot be told.
    pub(crate) async fn release(&self, path: &str, node: &str, mut tried: bool) -> Result<bool> {
        let full = format!("{path}/{node}");
        let deadline = Instant::now() + self.options.command_timeout;
        let mut delay = Duration::from_millis(50);
        let mut first_session = None;
        loop {
            let client = self.client()?;
            let session = client.session_id();
            if *first_session.get_or_insert(session) != session {
                tried = false;
            }
            match client.delete(&full, None).await {
                Ok(()) => return Ok(true),
                Err(zk::Error::NoNode) => return Ok(tried),
                Err(e) if Instant::now() < deadline && maybe_applied(&e) => {
                    tried = true;
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_millis(500));
                }
                Err(e) => return Err(map_err(e, "delete the lock node")),
            }
        }
    }

    /// What tells when `node` (a child of `path`) is deleted, by anybody: an exists watch on
    /// it, sent when the future is first polled (the hold layer polls it on the runtime, after the
    /// acquire has returned, so it costs the acquire nothing). It holds the session only while it
    /// sends the request, never while it waits, so that it never keeps a closing session open.
    /// After a connection error or a session event it ends with nothing to tell (`false`): the
    /// session watch reports what follows, and no task stays behind per hold.
    pub(crate) fn watch_gone(self: &Arc<Self>, path: &str, node: &str) -> crate::backend::Gone {
        let session = Arc::downgrade(self);
        let full = format!("{path}/{node}");
        crate::backend::Gone::Watch(Box::pin(async move {
            // After a blip (the watch could not be set, or the connection dropped while it was
            // set), the watch is set again with backoff: a force unlock after the blip is still
            // told. It ends when the session does (the session watch tells that).
            let first = Duration::from_millis(50);
            let mut delay = first;
            let mut blip = false;
            loop {
                if blip {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                blip = true;
                let Some(client) = session.upgrade().and_then(|s| s.client().ok()) else {
                    return false; // closed: nothing to tell
                };
                if matches!(
                    client.state(),
                    zk::SessionState::Expired
                        | zk::SessionState::Closed
                        | zk::SessionState::AuthFailed
                ) {
                    return false; // the session watch reports it
                }
                let watched = client.check_and_watch_stat(&full).await;
                drop(client);
                let watcher = match watched {
                    Ok((Some(_), watcher)) => watcher,
                    Ok((None, _)) => return true, // already gone
                    Err(_) => continue,           // connection trouble: set it again
                };
                delay = first;
                match watcher.changed().await.event_type {
                    // Deleted while our session lives (a force unlock), or deleted because our
                    // session was closed (the event can come before the session's own expiry
                    // does): one more look tells them apart, and an expiry is the session
                    // watch's to report.
                    zk::EventType::NodeDeleted => {
                        let Some(client) = session.upgrade().and_then(|s| s.client().ok()) else {
                            return false;
                        };
                        match client.check_stat(&full).await {
                            Ok(None) => return true,
                            Ok(Some(_)) => blip = false,
                            Err(_) => {}
                        }
                    }
                    // Its data changed (nobody's business here): watch again.
                    zk::EventType::NodeDataChanged => blip = false,
                    // A session event (the connection dropped): watch again once it is back;
                    // an expiry is the session watch's to report.
                    _ => {}
                }
            }
        }))
    }

    /// Delete every node of `nodes` under `path`; true if there was any.
    pub(crate) async fn delete_all(&self, path: &str, nodes: &[String]) -> Result<bool> {
        let client = self.client()?;
        for n in nodes {
            match client.delete(&format!("{path}/{n}"), None).await {
                Ok(()) | Err(zk::Error::NoNode) => {}
                Err(e) => return Err(map_err(e, "delete a lock node")),
            }
        }
        Ok(!nodes.is_empty())
    }

    /// Children of `path` (none if it does not exist).
    pub(crate) async fn children(&self, path: &str, doing: &str) -> Result<Vec<String>> {
        match self.client()?.get_children(path).await {
            Ok((children, _)) => Ok(children),
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(e) => Err(map_err(e, doing)),
        }
    }
}

/// A client's ZooKeeper backend: its session and the lock kinds ZooKeeper has.
pub(crate) struct ZkBackend {
    session: Arc<ZkSession>,
    mutex: Arc<ZkLock>,
    read: Arc<ZkLock>,
    write: Arc<ZkLock>,
    leader: Arc<ZkLock>,
    election: Arc<ZkElection>,
    semaphore_mutex: Arc<ZkSemaphoreMutex>,
    semaphore: Arc<ZkSemaphore>,
    latch: Arc<ZkLatch>,
}

/// Connect to a `zk://` URL.
pub(crate) async fn connect(url: &str, options: &ClientOptions) -> Result<Box<dyn Backend>> {
    let parsed = ZkUrl::parse(url)?;
    refuse_after_fork()?;
    let client = ZkSession::open(&parsed, options).await?;
    let session = Arc::new(ZkSession {
        client: RwLock::new(Some(client)),
        connector: parsed,
        options: options.clone(),
        wakeups: 0.into(),
        stop: CancellationToken::new(),
    });
    Ok(Box::new(ZkBackend {
        mutex: Arc::new(ZkLock::new(session.clone(), Queue::Mutex)),
        read: Arc::new(ZkLock::new(session.clone(), Queue::Read)),
        write: Arc::new(ZkLock::new(session.clone(), Queue::Write)),
        leader: Arc::new(ZkLock::new(session.clone(), Queue::Latch)),
        election: Arc::new(ZkElection::new(session.clone())),
        semaphore_mutex: Arc::new(ZkSemaphoreMutex::new(session.clone())),
        semaphore: Arc::new(ZkSemaphore::new(session.clone())),
        latch: Arc::new(ZkLatch::new(session.clone())),
        session,
    }))
}

#[async_trait]
impl Backend for ZkBackend {
    fn server(&self) -> &'static str {
        "ZooKeeper"
    }

    fn validate_name(&self, name: &str) -> Result<()> {
        validate_path(name)
    }

    fn lock_ops(&self, kind: LockKind) -> Result<Arc<dyn LockOps>> {
        match kind {
            // Every ZooKeeper lock queues in order: the fair lock is the ordinary one.
            LockKind::Reentrant | LockKind::Fair => Ok(self.mutex.clone()),
            LockKind::Mutex => Ok(self.semaphore_mutex.clone()),
            LockKind::Read => Ok(self.read.clone()),
            LockKind::Write => Ok(self.write.clone()),
            LockKind::Leader => Ok(self.leader.clone()),
        }
    }

    fn hold_ops(&self, kind: HoldKind) -> Result<Arc<dyn HoldOps>> {
        match kind {
            HoldKind::Lock(LockKind::Reentrant | LockKind::Fair) => Ok(self.mutex.clone()),
            HoldKind::Lock(LockKind::Mutex) => Ok(self.semaphore_mutex.clone()),
            HoldKind::Lock(LockKind::Read) => Ok(self.read.clone()),
            HoldKind::Lock(LockKind::Write) => Ok(self.write.clone()),
            HoldKind::Lock(LockKind::Leader) => Ok(self.leader.clone()),
            HoldKind::Permit => Ok(self.semaphore.clone()),
        }
    }

    fn semaphore_ops(&self) -> Result<Arc<dyn SemaphoreOps>> {
        Ok(self.semaphore.clone())
    }

    fn latch_ops(&self) -> Result<Arc<dyn LatchOps>> {
        Ok(self.latch.clone())
    }

    fn election_ops(&self) -> Result<Arc<dyn ElectionOps>> {
        Ok(self.election.clone())
    }

    fn watch_session(&self, sink: Weak<dyn SessionSink>) {
        tokio::spawn(watch_session(Arc::downgrade(&self.session), sink));
    }

    async fn ping(&self) -> Result<()> {
        self.session
            .client()?
            .check_stat("/")
            .await
            .map(|_| ())
            .map_err(|e| map_err(e, "ping"))
    }

    /// The children of the pattern's parent (`/locks/*` lists `/locks`) that match it.
    async fn list_names(&self, pattern: &str, limit: usize) -> Result<Vec<String>> {
        let wild = pattern.find(['*', '?']).unwrap_or(pattern.len());
        let parent = match pattern[..wild].rfind('/') {
            Some(0) | None => "/",
            Some(i) => &pattern[..i],
        };
        let client = self.session.client()?;
        let children = match client.get_children(parent).await {
            Ok((c, _)) => c,
            Err(zk::Error::NoNode) => Vec::new(),
            Err(e) => return Err(map_err(e, "list the names that match")),
        };
        let mut names: Vec<String> = children
            .into_iter()
            .map(|c| match parent {
                "/" => format!("/{c}"),
                p => format!("{p}/{c}"),
            })
            .filter(|n| crate::model::names::glob_match(pattern, n) && n != "/zookeeper")
            .collect();
        names.sort();
        names.truncate(limit);
        Ok(names)
    }

    /// Owners are contender nodes: their data (a polylock client's identity; Curator's default
    /// is the client's IP address).
    async fn identities(&self, name: &str, owners: &[String]) -> Vec<Option<String>> {
        let Ok(client) = self.session.client() else {
            return vec![None; owners.len()];
        };
        let mut out = Vec::with_capacity(owners.len());
        for node in owners {
            let data = match client.get_data(&format!("{name}/{node}")).await {
                Ok((data, _)) if !data.is_empty() => {
                    Some(String::from_utf8_lossy(&data).into_owned())
                }
                _ => None,
            };
            out.push(data);
        }
        out
    }

    async fn close(&self) {
        self.session.close().await;
    }

    fn wakeups(&self) -> u64 {
        self.session
            .wakeups
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn expire_session(&self) -> Result<()> {
        self.session.close_session_elsewhere().await
    }
}

/// Follows a client's session: a suspended connection is reported, an expired session makes
/// every hold of the client lost and opens a new session for later calls. Holds the session only
/// weakly between events, so that a client dropped without `close()` still closes its session.
async fn watch_session(session: Weak<ZkSession>, sink: Weak<dyn SessionSink>) {
    use zookeeper_client::SessionState as S;
    let Some(stop) = session.upgrade().map(|s| s.stop.clone()) else {
        return;
    };
    let report = |f: &dyn Fn(&dyn SessionSink)| match sink.upgrade() {
        Some(s) => {
            f(&*s);
            true
        }
        None => false,
    };
    loop {
        let Some(mut states) = session
            .upgrade()
            .and_then(|s| s.client().ok())
            .map(|c| c.state_watcher())
        else {
            return;
        };
        let expired = loop {
            let state = tokio::select! {
                _ = stop.cancelled() => return,
                s = states.changed() => s,
            };
            match state {
                S::Disconnected => {
                    if !report(&|s| s.suspended(true)) {
                        return;
                    }
                    tracing::warn!("polylock: ZooKeeper connection suspended; locks stay held while the session lives")
                }
                S::SyncConnected | S::ConnectedReadOnly => {
                    if !report(&|s| s.suspended(false)) {
                        return;
                    }
                    tracing::info!("polylock: ZooKeeper connection restored")
                }
                S::Expired | S::AuthFailed => break true,
                S::Closed => break false,
            }
        };
        if !report(&|s| s.suspended(false)) || !expired || stop.is_cancelled() {
            return;
        }
        report(&|s| s.session_lost());
        let mut delay = Duration::from_millis(100);
        loop {
            let Some(live) = session.upgrade() else {
                return;
            };
            match live.renew_session().await {
                Ok(()) => break,
                Err(e) => tracing::warn!("polylock: cannot open a new ZooKeeper session: {e}"),
            }
            drop(live);
            if stop.is_cancelled() {
                return;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}

/// Wait for a watch to fire; false if the deadline came first.
pub(crate) async fn wait_until(watcher: zk::OneshotWatcher, deadline: Option<Instant>) -> bool {
    match deadline {
        None => {
            watcher.changed().await;
            true
        }
        Some(d) => tokio::time::timeout_at(d.into(), watcher.changed())
            .await
            .is_ok(),
    }
}

/// Deletes our contender node if an acquire ends without the lock (timeout, error, cancel),
/// retrying in the background while the session lives (Curator's guaranteed delete).
pub(crate) struct Cleanup {
    pub(crate) client: zk::Client,
    pub(crate) path: String,
    pub(crate) uuid: String,
    pub(crate) node: Option<String>,
    pub(crate) armed: bool,
}

impl Cleanup {
    /// Delete our node now and disarm (a timed-out wait returns only once its node is gone, so
    /// the next waiter does not queue behind it). If the delete fails, the guard stays armed and
    /// retries in the background when dropped.
    pub(crate) async fn delete_now(&mut self) {
        let Some(node) = self.node.clone() else {
            return;
        };
        match self
            .client
            .delete(&format!("{}/{node}", self.path), None)
            .await
        {
            Ok(()) | Err(zk::Error::NoNode) => self.armed = false,
            Err(e) => tracing::warn!(
                "polylock: deleting our ZooKeeper node failed ({e}); retrying in the background"
            ),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let client = self.client.clone();
        let path = std::mem::take(&mut self.path);
        let uuid = std::mem::take(&mut self.uuid);
        let node = self.node.take();
        let what = format!(
            "the ZooKeeper contender node {path}/{}",
            node.as_deref().unwrap_or(&format!("*{uuid}*"))
        );
        clean_up(what, move || {
            let (client, path, uuid, node) =
                (client.clone(), path.clone(), uuid.clone(), node.clone());
            async move {
                if matches!(
                    client.state(),
                    zk::SessionState::Expired
                        | zk::SessionState::Closed
                        | zk::SessionState::AuthFailed
                ) {
                    return CleanUp::Moot; // ephemeral nodes die with the session
                }
                // The node name may be unknown if the create was cancelled in flight: find it
                // by our uuid (the whole point of Curator's protected mode).
                let names = match &node {
                    Some(n) => Ok(vec![n.clone()]),
                    None if uuid.is_empty() => Ok(Vec::new()),
                    None => client
                        .get_children(&path)
                        .await
                        .map(|(c, _)| c.into_iter().filter(|n| n.contains(&uuid)).collect()),
                };
                let names = match names {
                    Ok(names) => names,
                    Err(zk::Error::NoNode) => return CleanUp::Done,
                    Err(e) => return CleanUp::Retry(e.to_string()),
                };
                for n in names {
                    match client.delete(&format!("{path}/{n}"), None).await {
                        Ok(()) | Err(zk::Error::NoNode) => {}
                        Err(e) => return CleanUp::Retry(e.to_string()),
                    }
                }
                CleanUp::Done
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = ZkUrl::parse("zk://127.0.0.1:2181").unwrap();
        assert_eq!(u.cluster, "127.0.0.1:2181");
        let u = ZkUrl::parse("zk://bob:pw@a:1,b:2/app?session_timeout_ms=3000").unwrap();
        assert_eq!(u.cluster, "a:1,b:2/app");
        assert_eq!(u.auth, Some(("bob".into(), Secret::new("pw"))));
        assert!(!format!("{u:?}").contains("pw"), "{u:?}");
        assert_eq!(u.session_timeout, Some(Duration::from_secs(3)));
        assert!(!u.open_acl, "credentials: nodes for their user only");
        assert!(ZkUrl::parse("zk://h:1").unwrap().open_acl);
        assert!(ZkUrl::parse("zk://u:p@h:1?acl=open").unwrap().open_acl);
        let t = ZkUrl::parse("zks://h:1/app?tls_ca_file=/ca.pem").unwrap();
        assert_eq!(t.cluster, "h:1/app");
        assert_eq!(
            t.tls,
            Some(ZkTls {
                ca_file: "/ca.pem".into(),
                identity: None
            })
        );
        for bad in [
            "zk://",
            "zk://host",
            "zk://h:0",
            "zk://h:99999",
            "zk://h:1/a//b",
            "zk://h:1?x=1",
            "zk://:p@h:1",
            "zk://h:1?session_timeout_ms=0",
            "zk://h:1?session_timeout_ms=2147483648",
            "zk://h:1?session_timeout_ms=18446744073709551615",
            "zk://h:1?acl=creator",
            "zk://u:p@h:1?acl=closed",
            "zk://h:1?tls_ca_file=/ca.pem",
            "zks://h:1",
            "zks://h:1?tls_ca_file=/ca.pem&tls_cert_file=/c.pem",
        ] {
            let e = ZkUrl::parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn error_classification() {
        assert!(maybe_applied(&zk::Error::ConnectionLoss));
        assert!(!maybe_applied(&zk::Error::NoNode));
        assert_eq!(
            map_err(zk::Error::ConnectionLoss, "x").kind(),
            ErrorKind::Connection
        );
        assert_eq!(map_err(zk::Error::NoAuth, "x").kind(), ErrorKind::Auth);
        assert_eq!(
            map_err(zk::Error::UnexpectedErrorCode(-999), "x").kind(),
            ErrorKind::Backend
        );
    }

    #[test]
    fn paths() {
        validate_path("/test/mutex").unwrap();
        for bad in [
            "",
            "test",
            "/",
            "/a/",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/zookeeper",
            "/zookeeper/x",
            "/a\u{1}b",
        ] {
            assert_eq!(
                validate_path(bad).unwrap_err().kind(),
                ErrorKind::InvalidArgument,
                "{bad:?}"
            );
        }
    }
}
