//! The ZooKeeper backend: Curator's InterProcessMutex recipe and node format.
//!
//! A contender creates `<path>/_c_<uuid>-lock-<seq>` (EPHEMERAL_SEQUENTIAL, Curator's protected
//! mode). The first child by sequence holds the lock; every other contender watches only the child
//! just before it (a data watch), so each release wakes exactly one waiter. Re-entry is counted in
//! the client. The lock is held as long as the session lives: when the session expires, every
//! hold of the client is lost (Curator keeps reporting "held"; polylock says so).
//!
//! Fencing token: the holder node's creation zxid (`czxid`). It grows with every new holder like
//! the sequence number does, and unlike the sequence number it never restarts when the server
//! removes the empty container parent and a later contender creates it again.

use std::sync::RwLock;
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use crate::client::{ClientOptions, Wait};
use crate::error::{Error, ErrorKind, Result};

/// Marker between Curator's protected prefix and the sequence number.
const LOCK_MARKER: &str = "-lock-";
/// Curator's protected-mode prefix.
const PROTECTED_PREFIX: &str = "_c_";
/// Marker of Curator's semaphore leases (InterProcessSemaphoreMutex = semaphore of one lease).
const LEASE_MARKER: &str = "-lease-";

/// What a `zk://` URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZkUrl {
    /// `host:port,host:port[/chroot]`, as zookeeper-client takes it.
    pub(crate) cluster: String,
    pub(crate) auth: Option<(String, String)>,
    pub(crate) session_timeout: Option<Duration>,
}

impl ZkUrl {
    pub(crate) fn parse(url: &str) -> Result<ZkUrl> {
        let bad = |why: &str| {
            Error::invalid(format!(
                "malformed ZooKeeper URL '{url}': {why}; expected zk://[user:password@]host:port[,host:port...][/chroot][?session_timeout_ms=N]"
            ))
        };
        let rest = url
            .strip_prefix("zk://")
            .ok_or_else(|| bad("it must start with zk://"))?;
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
                (Some((u.to_string(), p.to_string())), hosts)
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
                        session_timeout = Some(Duration::from_millis(ms));
                    }
                    _ => return Err(bad(&format!("unknown option '{kv}'"))),
                }
            }
        }
        let chroot = if chroot == "/" { "" } else { chroot };
        Ok(ZkUrl {
            cluster: format!("{hosts}{chroot}"),
            auth,
            session_timeout,
        })
    }
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
fn maybe_applied(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::Custom(_)
    )
}

/// A successful ZooKeeper acquire.
pub(crate) struct ZkGranted {
    pub(crate) node: String,
    pub(crate) token: u64,
}

/// A contender node, parsed.
#[derive(Debug, Clone)]
pub(crate) struct Contender {
    pub(crate) name: String,
    seq: u64,
}

fn contenders(children: Vec<String>) -> Vec<Contender> {
    let mut v: Vec<Contender> = children
        .into_iter()
        .filter_map(|name| {
            let at = name.rfind(LOCK_MARKER)?;
            let seq = name[at + LOCK_MARKER.len()..].parse().ok()?;
            Some(Contender { name, seq })
        })
        .collect();
    v.sort_by_key(|c| c.seq);
    v
}

pub(crate) struct ZkBackend {
    client: RwLock<zk::Client>,
    connector: ZkUrl,
    options: ClientOptions,
    /// How often a waiter was woken by its watch (tests check one wake per release).
    wakeups: std::sync::atomic::AtomicU64,
}

impl ZkBackend {
    pub(crate) async fn connect(url: &str, options: &ClientOptions) -> Result<ZkBackend> {
        let parsed = ZkUrl::parse(url)?;
        let client = Self::open(&parsed, options).await?;
        Ok(ZkBackend {
            client: RwLock::new(client),
            connector: parsed,
            options: options.clone(),
            wakeups: 0.into(),
        })
    }

    async fn open(url: &ZkUrl, options: &ClientOptions) -> Result<zk::Client> {
        let mut c = zk::Client::connector()
            .with_session_timeout(url.session_timeout.unwrap_or(options.session_timeout))
            .with_connection_timeout(options.connect_timeout)
            .with_fail_eagerly();
        if let Some((user, pass)) = &url.auth {
            c = c.with_auth("digest", format!("{user}:{pass}").as_bytes());
        }
        let connect = c.connect(&url.cluster);
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

    /// The current session's client (a new one after an expiry).
    pub(crate) fn client(&self) -> zk::Client {
        self.client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Open a new session after the old one expired.
    pub(crate) async fn renew_session(&self) -> Result<()> {
        let fresh = Self::open(&self.connector, &self.options).await?;
        *self.client.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        Ok(())
    }

    /// Acquire `path`: create our contender node and wait until it is first.
    /// `Ok(None)` when the wait ran out (our node is deleted again).
    pub(crate) async fn acquire(&self, path: &str, wait: Wait) -> Result<Option<ZkGranted>> {
        let deadline = match wait {
            Wait::Forever => None,
            Wait::Never => Some(Instant::now()),
            Wait::For(d) => Some(Instant::now() + d),
        };
        let client = self.client();
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut cleanup = Cleanup {
            client: client.clone(),
            path: path.to_string(),
            uuid: uuid.clone(),
            node: None,
            armed: true,
        };
        // Create and list in one round trip: zookeeper-client sends a request when the method is
        // called, and the server answers a session's requests in order, so a listing sent right
        // after the create already contains our node.
        let prefix = format!("{path}/{PROTECTED_PREFIX}{uuid}{LOCK_MARKER}");
        let options = zk::CreateMode::EphemeralSequential.with_acls(self.acls());
        let create = client.create(&prefix, &[], &options);
        let listing = client.get_children(path);
        let (created, listed) = tokio::join!(create, listing);
        let (node, token) = match created {
            Ok((stat, seq)) => (
                format!("{PROTECTED_PREFIX}{uuid}{LOCK_MARKER}{seq}"),
                stat.czxid as u64,
            ),
            // A create lost with the connection may have made our node: find it by its uuid
            // before making a second one (Curator's protected mode).
            Err(e) if maybe_applied(&e) => match self.find_own(&client, path, &uuid).await? {
                Some(found) => found,
                None => {
                    self.create_protected(&client, path, &uuid, LOCK_MARKER)
                        .await?
                }
            },
            // Missing parents and the like: the careful path creates them.
            Err(_) => {
                self.create_protected(&client, path, &uuid, LOCK_MARKER)
                    .await?
            }
        };
        cleanup.node = Some(node.clone());
        let mut listed = Some(listed);
        loop {
            let children = match listed.take() {
                Some(Ok((children, _))) if children.contains(&node) => children,
                _ => {
                    client
                        .get_children(path)
                        .await
                        .map_err(|e| map_err(e, "list the lock's contenders"))?
                        .0
                }
            };
            let list = contenders(children);
            let Some(idx) = list.iter().position(|c| c.name == node) else {
                return Err(Error::new(
                    ErrorKind::LockLost,
                    format!("our contender node {path}/{node} disappeared while waiting (session expired or node deleted)"),
                ));
            };
            if idx == 0 {
                cleanup.armed = false;
                return Ok(Some(ZkGranted { node, token }));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None); // the guard deletes our node
            }
            let pred = format!("{path}/{}", list[idx - 1].name);
            let watcher = match client.get_and_watch_data(&pred).await {
                Ok((_, _, w)) => w,
                Err(zk::Error::NoNode) => continue, // it went away meanwhile: look again
                Err(e) => return Err(map_err(e, "watch the previous contender")),
            };
            if !wait_until(watcher, deadline).await {
                return Ok(None);
            }
            self.wakeups
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Curator's InterProcessSemaphoreMutex: take the internal mutex `<path>/locks`, add a lease
    /// under `<path>/leases`, wait (watching the leases) until ours is the only one, then let the
    /// internal mutex go. `Ok(None)` when the wait ran out.
    pub(crate) async fn acquire_semaphore(
        &self,
        path: &str,
        wait: Wait,
    ) -> Result<Option<ZkGranted>> {
        let deadline = match wait {
            Wait::Forever => None,
            Wait::Never => Some(Instant::now()),
            Wait::For(d) => Some(Instant::now() + d),
        };
        let lock_path = format!("{path}/locks");
        let Some(internal) = self.acquire(&lock_path, wait).await? else {
            return Ok(None);
        };
        // Let the internal mutex go however this ends (also when cancelled).
        let _internal = Cleanup {
            client: self.client(),
            path: lock_path,
            uuid: String::new(),
            node: Some(internal.node),
            armed: true,
        };
        let leases = format!("{path}/leases");
        let client = self.client();
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut cleanup = Cleanup {
            client: client.clone(),
            path: leases.clone(),
            uuid: uuid.clone(),
            node: None,
            armed: true,
        };
        let (node, token) = self
            .create_protected(&client, &leases, &uuid, LEASE_MARKER)
            .await?;
        cleanup.node = Some(node.clone());
        loop {
            let (children, _, watcher) = client
                .get_and_watch_children(&leases)
                .await
                .map_err(|e| map_err(e, "list the semaphore's leases"))?;
            if !children.contains(&node) {
                return Err(Error::new(
                    ErrorKind::LockLost,
                    format!("our lease {leases}/{node} disappeared while waiting"),
                ));
            }
            if children.len() <= 1 {
                cleanup.armed = false;
                return Ok(Some(ZkGranted {
                    node: format!("leases/{node}"),
                    token,
                }));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) || !wait_until(watcher, deadline).await
            {
                return Ok(None);
            }
        }
    }

    /// Lease holders of a semaphore mutex at `path`.
    pub(crate) async fn leases(&self, path: &str) -> Result<Vec<String>> {
        match self.client().get_children(&format!("{path}/leases")).await {
            Ok((mut children, _)) => {
                children.retain(|c| c.contains(LEASE_MARKER));
                Ok(children)
            }
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(e) => Err(map_err(e, "list the semaphore's leases")),
        }
    }

    pub(crate) fn wakeups(&self) -> u64 {
        self.wakeups.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Close this client's session from a second handle on the same session: what a session
    /// expiry looks like to the first handle (tests of the lost signal).
    pub(crate) async fn close_session_elsewhere(&self) -> Result<()> {
        let client = self.client();
        let info = client.session().clone();
        let mut states = client.state_watcher();
        drop(client);
        let mut tries = 0;
        loop {
            let other = zk::Client::connector()
                .with_session(info.clone())
                .with_session_timeout(self.options.session_timeout)
                .with_connection_timeout(self.options.connect_timeout)
                .connect(&self.connector.cluster)
                .await;
            match other {
                Ok(other) => {
                    // Dropping the second handle closes the session from a background task. If
                    // our own client reconnects first, the session moves back to it and the
                    // close is refused (SessionMoved): then close it again.
                    drop(other);
                    let expired = async {
                        loop {
                            if let zk::SessionState::Expired = states.changed().await {
                                return;
                            }
                        }
                    };
                    let wait = self.options.session_timeout * 2 + Duration::from_secs(1);
                    if tokio::time::timeout(wait, expired).await.is_ok() {
                        return Ok(());
                    }
                    if tries >= 3 {
                        return Err(Error::new(
                            ErrorKind::Backend,
                            "ZooKeeper: the session outlived four closes from a second handle",
                        ));
                    }
                    tries += 1;
                    tracing::warn!("the session survived a close from a second handle; again");
                }
                Err(e) if tries < 3 => {
                    tries += 1;
                    tracing::warn!("second handle on the session: {e}; retrying");
                }
                Err(e) => return Err(map_err(e, "open a second handle on the session")),
            }
        }
    }

    /// Curator's protected create: on a connection loss, look for our own node (by uuid) before
    /// creating a second one, and accept it only if this session created it.
    async fn create_protected(
        &self,
        client: &zk::Client,
        path: &str,
        uuid: &str,
        marker: &str,
    ) -> Result<(String, u64)> {
        let prefix = format!("{path}/{PROTECTED_PREFIX}{uuid}{marker}");
        let options = zk::CreateMode::EphemeralSequential.with_acls(self.acls());
        let mut attempts = 0;
        loop {
            attempts += 1;
            match client.create(&prefix, &[], &options).await {
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

    async fn find_own(
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

    fn acls(&self) -> zk::Acls<'static> {
        zk::Acls::anyone_all()
    }

    /// Delete our holder node. `Ok(false)` if it was already gone.
    ///
    /// `tried`: an earlier attempt may have deleted it without us hearing back. A delete
    /// that times out with the connection is retried here, and a NoNode after such an attempt is
    /// our own delete (as a retried Redis release reads the owner's hold count).
    pub(crate) async fn release(&self, path: &str, node: &str, mut tried: bool) -> Result<bool> {
        let full = format!("{path}/{node}");
        let deadline = Instant::now() + self.options.command_timeout;
        let mut delay = Duration::from_millis(50);
        loop {
            match self.client().delete(&full, None).await {
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

    /// Contenders in lock order (the first holds the lock).
    pub(crate) async fn contenders(&self, path: &str) -> Result<Vec<Contender>> {
        match self.client().get_children(path).await {
            Ok((children, _)) => Ok(contenders(children)),
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(e) => Err(map_err(e, "list the lock's contenders")),
        }
    }

    /// Delete every contender; true if the lock was held.
    pub(crate) async fn force_unlock(&self, path: &str) -> Result<bool> {
        let list = self.contenders(path).await?;
        let held = !list.is_empty();
        let client = self.client();
        for c in list {
            match client.delete(&format!("{path}/{}", c.name), None).await {
                Ok(()) | Err(zk::Error::NoNode) => {}
                Err(e) => return Err(map_err(e, "delete a contender node")),
            }
        }
        Ok(held)
    }

    /// Delete every lease of a semaphore mutex; true if it was held.
    pub(crate) async fn force_unlock_semaphore(&self, path: &str) -> Result<bool> {
        let leases = self.leases(path).await?;
        let client = self.client();
        for l in &leases {
            match client.delete(&format!("{path}/leases/{l}"), None).await {
                Ok(()) | Err(zk::Error::NoNode) => {}
                Err(e) => return Err(map_err(e, "delete a lease")),
            }
        }
        Ok(!leases.is_empty())
    }

    /// Round trip of the cheapest request (`exists /`), the physical limit for benchmarks.
    pub(crate) async fn ping(&self) -> Result<()> {
        self.client()
            .check_stat("/")
            .await
            .map(|_| ())
            .map_err(|e| map_err(e, "ping"))
    }
}

/// Wait for a watch to fire; false if the deadline came first.
async fn wait_until(watcher: zk::OneshotWatcher, deadline: Option<Instant>) -> bool {
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
struct Cleanup {
    client: zk::Client,
    path: String,
    uuid: String,
    node: Option<String>,
    armed: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let path = std::mem::take(&mut self.path);
        let uuid = std::mem::take(&mut self.uuid);
        let node = self.node.take();
        rt.spawn(async move {
            let mut delay = Duration::from_millis(50);
            loop {
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
                let done = match names {
                    Ok(names) => {
                        let mut ok = true;
                        for n in names {
                            match client.delete(&format!("{path}/{n}"), None).await {
                                Ok(()) | Err(zk::Error::NoNode) => {}
                                Err(_) => ok = false,
                            }
                        }
                        ok
                    }
                    Err(zk::Error::NoNode) => true,
                    Err(_) => false,
                };
                if done {
                    return;
                }
                if matches!(
                    client.state(),
                    zk::SessionState::Expired
                        | zk::SessionState::Closed
                        | zk::SessionState::AuthFailed
                ) {
                    return; // ephemeral nodes die with the session
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
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
        assert_eq!(u.auth, Some(("bob".into(), "pw".into())));
        assert_eq!(u.session_timeout, Some(Duration::from_secs(3)));
        for bad in [
            "zk://",
            "zk://host",
            "zk://h:0",
            "zk://h:99999",
            "zk://h:1/a//b",
            "zk://h:1?x=1",
            "zk://:p@h:1",
            "zk://h:1?session_timeout_ms=0",
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

    #[test]
    fn contender_order_is_by_sequence_not_by_uuid() {
        let list = contenders(vec![
            "_c_ffff-lock-0000000003".into(),
            "_c_0000-lock-0000000010".into(),
            "_c_aaaa-lock-0000000001".into(),
            "not-a-lock".into(),
        ]);
        let names: Vec<_> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "_c_aaaa-lock-0000000001",
                "_c_ffff-lock-0000000003",
                "_c_0000-lock-0000000010"
            ]
        );
    }
}
