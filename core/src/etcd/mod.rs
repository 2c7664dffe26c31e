//! The etcd backend: etcd's own lock recipe (`go.etcd.io/etcd/client/v3/concurrency.Mutex`,
//! `etcdctl lock`), so that polylock, `etcdctl lock NAME` and Go services on `concurrency.Mutex`
//! exclude each other on the same name.
//!
//! This module holds what every etcd primitive shares: the URL, the connection, the leases that
//! are this client's sessions, and the watches. The lock kinds live in [`lock`], the semaphore in
//! [`semaphore`].
//!
//! # Sessions and leases
//!
//! etcd's recipe names a contender's key after its session's lease: `NAME/<lease id in hex>`. One
//! session holds at most one key per name, and a second `Mutex` of the same session re-uses that
//! key (and so "holds" the lock together with the first). polylock's owners of one client must
//! exclude each other, so a client keeps a small pool of leases, all kept alive together by one
//! task every third of their TTL: a contender takes the first lease of the pool that no other
//! contender of this client uses on the same name, and a new lease is granted only when two
//! owners of one client contend for one name at once. Keys stay exactly in etcd's format, and the
//! usual case (one contender per name per client) costs one lease per client, kept alive by one
//! request per round.
//!
//! The leases are the client's session: when one is found expired (the server says so, or no
//! keep-alive got through for a whole TTL by this client's clock), every hold of the client is
//! lost, the other leases are revoked, and later acquires get new ones.
//!
//! Fencing token: the holder key's create revision. Keys queue by it, so it rises with every new
//! holder (it is not `etcdctl lock`'s `ETCD_LOCK_REV`, which is the revision at which etcdctl saw
//! itself first: a header revision, never below its key's create revision).

mod election;
mod lock;
mod semaphore;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use etcd_client as ec;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, ElectionOps, HoldOps, LockOps, SemaphoreOps, SessionSink};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldKind, LockKind};
use crate::model::options::ClientOptions;
use crate::model::secret::{redact_url, Secret};

use election::EtcdElection;
use lock::{EtcdLock, Mode};
use semaphore::EtcdSemaphore;

/// What an `etcd://` URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EtcdUrl {
    /// `http://host:port` (or `https://`) per member.
    pub(crate) endpoints: Vec<String>,
    pub(crate) auth: Option<(String, Secret)>,
    /// The TTL of the client's leases, in seconds (`?ttl=`).
    pub(crate) ttl: Option<i64>,
    pub(crate) tls: Option<EtcdTls>,
}

/// The TLS files of an `etcds://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EtcdTls {
    pub(crate) ca_file: String,
    pub(crate) identity: Option<(String, String)>,
}

impl EtcdUrl {
    pub(crate) fn parse(url: &str) -> Result<EtcdUrl> {
        let bad = |why: &str| {
            let shown = redact_url(url);
            Error::invalid(format!(
                "malformed etcd URL '{shown}': {why}; expected etcd://[user:password@]host:port[,host:port...][?ttl=SECONDS], or etcds://...[?tls_ca_file=PATH][&tls_cert_file=PATH&tls_key_file=PATH] for TLS"
            ))
        };
        let (rest, tls) = match (url.strip_prefix("etcd://"), url.strip_prefix("etcds://")) {
            (Some(r), _) => (r, false),
            (_, Some(r)) => (r, true),
            _ => return Err(bad("it must start with etcd:// or etcds://")),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (auth, hosts) = match rest.rsplit_once('@') {
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
        let hosts = hosts.strip_suffix('/').unwrap_or(hosts);
        if hosts.is_empty() {
            return Err(bad("no host"));
        }
        let scheme = if tls { "https" } else { "http" };
        let mut endpoints = Vec::new();
        for h in hosts.split(',') {
            let (host, port) = h
                .rsplit_once(':')
                .ok_or_else(|| bad("every host needs a :port"))?;
            if host.is_empty() || host.contains('/') || port.parse::<u16>().map_or(true, |p| p == 0)
            {
                return Err(bad(&format!("bad host:port '{h}'")));
            }
            endpoints.push(format!("{scheme}://{h}"));
        }
        let mut ttl = None;
        let (mut ca_file, mut cert_file, mut key_file) = (None, None, None);
        for kv in query
            .unwrap_or_default()
            .split('&')
            .filter(|s| !s.is_empty())
        {
            match kv.split_once('=') {
                Some(("ttl", v)) => {
                    let s: i64 = v
                        .parse()
                        .map_err(|_| bad("ttl must be a whole number of seconds"))?;
                    if !(1..=MAX_TTL_SECS).contains(&s) {
                        return Err(bad(&format!("ttl must be 1 to {MAX_TTL_SECS} seconds")));
                    }
                    ttl = Some(s);
                }
                Some(("tls_ca_file", v)) if tls && !v.is_empty() => ca_file = Some(v.to_string()),
                Some(("tls_cert_file", v)) if tls && !v.is_empty() => {
                    cert_file = Some(v.to_string())
                }
                Some(("tls_key_file", v)) if tls && !v.is_empty() => key_file = Some(v.to_string()),
                Some(("tls_ca_file" | "tls_cert_file" | "tls_key_file", _)) if !tls => {
                    return Err(bad("TLS files go with an etcds:// URL"))
                }
                _ => return Err(bad(&format!("unknown option '{kv}'"))),
            }
        }
        let tls = match (tls, ca_file, cert_file, key_file) {
            (false, ..) => None,
            (true, None, ..) => {
                return Err(bad(
                    "etcds:// needs tls_ca_file=PATH (the PEM file of the CA that signed the members' certificates)",
                ))
            }
            (true, Some(ca_file), None, None) => Some(EtcdTls {
                ca_file,
                identity: None,
            }),
            (true, Some(ca_file), Some(c), Some(k)) => Some(EtcdTls {
                ca_file,
                identity: Some((c, k)),
            }),
            (true, ..) => return Err(bad("tls_cert_file and tls_key_file go together")),
        };
        Ok(EtcdUrl {
            endpoints,
            auth,
            ttl,
            tls,
        })
    }
}

/// The longest lease TTL a URL may ask for (etcd's own limit is 9,000,000,000 s).
const MAX_TTL_SECS: i64 = 24 * 3600;

/// Map an etcd client error. etcd reports authentication failures with fixed messages under
/// other gRPC codes (`rpctypes`: "authentication failed" is InvalidArgument).
pub(crate) fn map_err(e: ec::Error, doing: &str) -> Error {
    let kind = match &e {
        ec::Error::GRpcStatus(s) => {
            let msg = s.message();
            match s.code() as i32 {
                7 | 16 => ErrorKind::Auth, // PermissionDenied, Unauthenticated
                _ if msg.contains("authentication failed")
                    || msg.contains("invalid auth token")
                    || msg.contains("user name is empty")
                    || msg.contains("authentication is not enabled")
                    || msg.contains("permission denied") =>
                {
                    ErrorKind::Auth
                }
                // Cancelled, Unknown (a reset stream), DeadlineExceeded, Unavailable.
                1 | 2 | 4 | 14 => ErrorKind::Connection,
                _ if msg.contains("no leader") || msg.contains("leader changed") => {
                    ErrorKind::Connection
                }
                3 => ErrorKind::InvalidArgument,
                _ => ErrorKind::Backend,
            }
        }
        ec::Error::TransportError(_)
        | ec::Error::IoError(_)
        | ec::Error::WatchError(_)
        | ec::Error::LeaseKeepAliveError(_) => ErrorKind::Connection,
        ec::Error::InvalidArgs(_) | ec::Error::InvalidUri(_) => ErrorKind::InvalidArgument,
        _ => ErrorKind::Backend,
    };
    let hint = match kind {
        ErrorKind::Auth => "; check the user:password in the URL and the user's roles",
        ErrorKind::Connection => "; check that the etcd members are running and reachable",
        _ => "",
    };
    Error::new(kind, format!("etcd: could not {doing}: {e}{hint}"))
}

/// True for etcd's "requested lease not found": the lease expired or was revoked.
fn lease_not_found(e: &ec::Error) -> bool {
    matches!(e, ec::Error::GRpcStatus(s) if s.message().contains("requested lease not found"))
}

/// `key` followed by every key that starts with it: the end of etcd's prefix range.
pub(crate) fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// One lease of the pool and the names on which a contender of this client uses it.
struct Slot {
    id: i64,
    names: HashSet<String>,
}

struct Pool {
    /// The session's generation: it changes when the leases are found expired.
    epoch: u64,
    slots: Vec<Slot>,
    /// When the leases end by this client's clock: the send time of the last keep-alive round
    /// that reached every lease, plus the TTL the server granted.
    valid_until: Instant,
}

/// A lease taken for one contender on one name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseRef {
    pub(crate) id: i64,
    pub(crate) epoch: u64,
}

/// The connection and the leases of one client, shared by its etcd primitives.
pub(crate) struct EtcdSession {
    client: ec::Client,
    ttl: i64,
    options: ClientOptions,
    pool: Mutex<Pool>,
    /// The current epoch, for waiters that must notice a lost session.
    epoch: watch::Sender<u64>,
    /// How often a waiter was woken by its watch.
    wakeups: AtomicU64,
    /// Permit keys need a suffix unique within the client.
    next_permit: AtomicU64,
    /// Cancelled when the client closes: ends the keep-alive task and every watch.
    stop: CancellationToken,
    /// Write holds whose owner also took the read lock (a downgrade): key → the halves held.
    shared: Mutex<HashMap<String, (bool, bool)>>,
    /// Where a lost session is told (the client, once it has started the keep-alive task).
    sink: Mutex<Weak<dyn SessionSink>>,
}

impl EtcdSession {
    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn client(&self) -> Result<ec::Client> {
        if self.stop.is_cancelled() {
            return Err(Error::state("the etcd connection of this client is closed"));
        }
        Ok(self.client.clone())
    }

    /// Run one unary request within the command timeout.
    pub(crate) async fn call<T>(
        &self,
        doing: &str,
        fut: impl std::future::Future<Output = std::result::Result<T, ec::Error>>,
    ) -> Result<T> {
        match tokio::time::timeout(self.options.command_timeout, fut).await {
            Ok(r) => r.map_err(|e| map_err(e, doing)),
            Err(_) => Err(Error::new(
                ErrorKind::Connection,
                format!(
                    "etcd: could not {doing}: no answer within {:?}; check that the etcd members are running and reachable",
                    self.options.command_timeout
                ),
            )),
        }
    }

    /// [`call`](Self::call), keeping etcd's own error: `Err(Ok(e))` from etcd, `Err(Err(e))`
    /// when no answer came in time.
    pub(crate) async fn call_raw<T>(
        &self,
        doing: &str,
        fut: impl std::future::Future<Output = std::result::Result<T, ec::Error>>,
    ) -> std::result::Result<T, std::result::Result<ec::Error, Error>> {
        match tokio::time::timeout(self.options.command_timeout, fut).await {
            Ok(r) => r.map_err(Ok),
            Err(_) => Err(Err(Error::new(
                ErrorKind::Connection,
                format!(
                    "etcd: could not {doing}: no answer within {:?}; check that the etcd members are running and reachable",
                    self.options.command_timeout
                ),
            ))),
        }
    }

    async fn grant(&self) -> Result<(i64, i64)> {
        let mut c = self.client()?;
        let r = self
            .call("grant a lease", c.lease_grant(self.ttl, None))
            .await?;
        Ok((r.id(), r.ttl()))
    }

    /// Take a lease for a contender on `name`: the first of the pool that no other contender of
    /// this client uses on `name`, or a new one.
    pub(crate) async fn checkout(&self, name: &str) -> Result<LeaseRef> {
        {
            let mut pool = self.pool();
            let epoch = pool.epoch;
            if let Some(slot) = pool.slots.iter_mut().find(|s| !s.names.contains(name)) {
                slot.names.insert(name.to_string());
                return Ok(LeaseRef { id: slot.id, epoch });
            }
        }
        let sent = Instant::now();
        let (id, ttl) = self.grant().await?;
        let mut pool = self.pool();
        if pool.slots.is_empty() {
            pool.valid_until = sent + Duration::from_secs(ttl.max(1) as u64);
        }
        let epoch = pool.epoch;
        pool.slots.push(Slot {
            id,
            names: HashSet::from([name.to_string()]),
        });
        Ok(LeaseRef { id, epoch })
    }

    /// Give back a lease taken for `name` (its key is gone).
    pub(crate) fn checkin(&self, lease: i64, name: &str) {
        if let Some(slot) = self.pool().slots.iter_mut().find(|s| s.id == lease) {
            slot.names.remove(name);
        }
    }

    /// Any live lease of the pool (semaphore permits, whose keys are unique per acquire anyway).
    pub(crate) async fn any_lease(&self) -> Result<LeaseRef> {
        {
            let pool = self.pool();
            if let Some(slot) = pool.slots.first() {
                return Ok(LeaseRef {
                    id: slot.id,
                    epoch: pool.epoch,
                });
            }
        }
        let lease = self.checkout("").await?;
        self.checkin(lease.id, "");
        Ok(lease)
    }

    /// A receiver that changes when the session is lost.
    pub(crate) fn epochs(&self) -> watch::Receiver<u64> {
        self.epoch.subscribe()
    }

    pub(crate) fn epoch(&self) -> u64 {
        self.pool().epoch
    }

    pub(crate) fn woken(&self) {
        self.wakeups.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn next_permit(&self) -> u64 {
        self.next_permit.fetch_add(1, Ordering::Relaxed)
    }

    /// The leases of `epoch` are gone (found expired, or a request named one the server no
    /// longer has): start a new epoch, revoke the old leases that may live on, and tell the
    /// client. False if that epoch had already ended.
    fn end_epoch(&self, epoch: u64, sink: Option<&dyn SessionSink>) -> bool {
        let old = {
            let mut pool = self.pool();
            if pool.epoch != epoch {
                return false;
            }
            pool.epoch += 1;
            self.epoch.send_replace(pool.epoch);
            std::mem::take(&mut pool.slots)
        };
        tracing::warn!(
            "polylock: the etcd session's lease expired; every hold of this client is lost"
        );
        if let Some(sink) = sink {
            sink.session_lost();
        }
        if let Ok(client) = self.client() {
            let timeout = self.options.command_timeout;
            tokio::spawn(async move {
                for slot in old {
                    let mut c = client.clone();
                    let _ = tokio::time::timeout(timeout, c.lease_revoke(slot.id)).await;
                }
            });
        }
        true
    }

    /// Note that a request found `lease` missing on the server.
    pub(crate) fn lease_missing(&self, lease: LeaseRef) {
        let sink = self
            .sink
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .upgrade();
        self.end_epoch(lease.epoch, sink.as_deref());
    }

    /// Record the downgrade of the write hold on `key`: it is now held by both halves.
    pub(crate) fn share(&self, key: &str) {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.to_string(), (true, true));
    }

    /// One half of a shared key lets go: true if the other half still holds it (then nothing is
    /// deleted), with whether that other half is the read half.
    pub(crate) fn unshare(&self, key: &str, write: bool) -> Option<bool> {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let (w, r) = shared.get_mut(key)?;
        if write {
            *w = false;
        } else {
            *r = false;
        }
        let other_read = *r;
        let left = *w || *r;
        if !left {
            shared.remove(key);
            return None;
        }
        Some(other_read)
    }

    async fn close(&self) {
        self.stop.cancel();
        let slots = std::mem::take(&mut self.pool().slots);
        for slot in slots {
            let mut c = self.client.clone();
            let _ =
                tokio::time::timeout(self.options.command_timeout, c.lease_revoke(slot.id)).await;
        }
    }
}

/// A client's etcd backend.
pub(crate) struct EtcdBackend {
    session: Arc<EtcdSession>,
    exclusive: Arc<EtcdLock>,
    read: Arc<EtcdLock>,
    write: Arc<EtcdLock>,
    leader: Arc<EtcdLock>,
    election: Arc<EtcdElection>,
    semaphore: Arc<EtcdSemaphore>,
}

impl Drop for EtcdBackend {
    fn drop(&mut self) {
        // Ends the keep-alive task and the watches of a client dropped without close().
        self.session.stop.cancel();
    }
}

/// Connect to an `etcd://` or `etcds://` URL: the connection, and the client's first lease.
pub(crate) async fn connect(url: &str, options: &ClientOptions) -> Result<Box<dyn Backend>> {
    let parsed = EtcdUrl::parse(url)?;
    let mut connect = ec::ConnectOptions::new()
        .with_connect_timeout(options.connect_timeout)
        // etcd refuses pings more often than every 5 s (--grpc-keepalive-min-time).
        .with_keep_alive(Duration::from_secs(5), options.command_timeout)
        .with_auto_token_refresh(true);
    if let Some((user, password)) = &parsed.auth {
        connect = connect.with_user(user.clone(), password.expose().to_string());
    }
    #[cfg(not(feature = "tls"))]
    if parsed.tls.is_some() {
        return Err(Error::unsupported(
            "etcds:// needs TLS, and this build of polylock was compiled without the `tls` cargo \
             feature",
        ));
    }
    #[cfg(feature = "tls")]
    if let Some(tls) = &parsed.tls {
        connect = connect.with_tls(tls_options(tls)?);
    }
    let ttl = parsed.ttl.unwrap_or_else(|| {
        let ms = options.session_timeout.as_millis() as i64;
        ((ms + 999) / 1000).clamp(1, MAX_TTL_SECS)
    });
    let endpoints = parsed.endpoints.clone();
    let limit = options.connect_timeout * 2;
    let client = match tokio::time::timeout(limit, ec::Client::connect(endpoints, Some(connect)))
        .await
    {
        Ok(r) => r.map_err(|e| map_err(e, "connect"))?,
        Err(_) => {
            return Err(Error::new(
                ErrorKind::Connection,
                format!(
                    "etcd: no answer from {} within {limit:?}; check that the members are running and reachable",
                    parsed.endpoints.join(",")
                ),
            ))
        }
    };
    let session = Arc::new(EtcdSession {
        client,
        ttl,
        options: options.clone(),
        pool: Mutex::new(Pool {
            epoch: 0,
            slots: Vec::new(),
            valid_until: Instant::now(),
        }),
        epoch: watch::Sender::new(0),
        wakeups: AtomicU64::new(0),
        next_permit: AtomicU64::new(0),
        stop: CancellationToken::new(),
        shared: Mutex::default(),
        sink: Mutex::new(Weak::<NoSink>::new()),
    });
    // The first lease: it also proves that the members answer and take the credentials.
    let first = session.checkout("").await?;
    session.checkin(first.id, "");
    Ok(Box::new(EtcdBackend {
        exclusive: Arc::new(EtcdLock::new(session.clone(), Mode::Exclusive)),
        read: Arc::new(EtcdLock::new(session.clone(), Mode::Read)),
        write: Arc::new(EtcdLock::new(session.clone(), Mode::Write)),
        leader: Arc::new(EtcdLock::new(session.clone(), Mode::Leader)),
        election: Arc::new(EtcdElection::new(session.clone())),
        semaphore: Arc::new(EtcdSemaphore::new(session.clone())),
        session,
    }))
}

/// A sink that tells nobody (before the client's own is known).
struct NoSink;
impl SessionSink for NoSink {
    fn suspended(&self, _: bool) {}
    fn session_lost(&self) {}
}

#[cfg(feature = "tls")]
fn tls_options(tls: &EtcdTls) -> Result<ec::TlsOptions> {
    let read = |what: &str, path: &str| {
        std::fs::read(path).map_err(|e| {
            Error::invalid(format!(
                "etcd TLS: cannot read the {what} file '{path}': {e}"
            ))
        })
    };
    let mut options =
        ec::TlsOptions::new().ca_certificate(ec::Certificate::from_pem(read("CA", &tls.ca_file)?));
    if let Some((cert, key)) = &tls.identity {
        options = options.identity(ec::Identity::from_pem(
            read("certificate", cert)?,
            read("key", key)?,
        ));
    }
    Ok(options)
}

#[async_trait]
impl Backend for EtcdBackend {
    /// Owners are described holds (`<lease hex>@<rev> ttl=..`): their keys' values (a
    /// polylock holder's identity; etcdctl's and readers' keys carry none).
    async fn identities(&self, name: &str, owners: &[String]) -> Vec<Option<String>> {
        let Ok(mut c) = self.session.client() else {
            return vec![None; owners.len()];
        };
        let mut out = Vec::with_capacity(owners.len());
        for owner in owners {
            let Some(key) = lock::key_of_described(name, owner) else {
                out.push(None);
                continue;
            };
            let value = match self
                .session
                .call("read a holder's identity", c.get(key.as_str(), None))
                .await
            {
                Ok(r) => r
                    .kvs()
                    .first()
                    .map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
                    .filter(|v| !v.is_empty() && v != lock::READ_VALUE),
                Err(_) => None,
            };
            out.push(value);
        }
        out
    }

    /// The keys under the pattern's literal prefix, each lock, semaphore or election named by
    /// its key without the last segment (`NAME/<lease>`).
    async fn list_names(&self, pattern: &str, limit: usize) -> Result<Vec<String>> {
        let wild = pattern.find(['*', '?']).unwrap_or(pattern.len());
        let prefix = &pattern[..wild];
        let mut c = self.session.client()?;
        let options = ec::GetOptions::new()
            .with_keys_only()
            .with_range(prefix_end(prefix));
        let r = self
            .session
            .call("list the names that match", c.get(prefix, Some(options)))
            .await?;
        let mut names = std::collections::BTreeSet::new();
        for kv in r.kvs() {
            let key = String::from_utf8_lossy(kv.key());
            if let Some((name, _)) = key.rsplit_once('/') {
                if crate::model::names::glob_match(pattern, name) {
                    names.insert(name.to_string());
                }
            }
        }
        Ok(names.into_iter().take(limit).collect())
    }

    fn server(&self) -> &'static str {
        "etcd"
    }

    fn lock_ops(&self, kind: LockKind) -> Result<Arc<dyn LockOps>> {
        match kind {
            // Every etcd lock queues by create revision: the fair lock is the ordinary one.
            LockKind::Reentrant | LockKind::Fair => Ok(self.exclusive.clone()),
            LockKind::Read => Ok(self.read.clone()),
            LockKind::Write => Ok(self.write.clone()),
            LockKind::Leader => Ok(self.leader.clone()),
            LockKind::Mutex => Err(Error::unsupported(
                "etcd has no non-reentrant mutex in polylock (Curator's semaphore mutex is a \
                 ZooKeeper recipe); use lock(), which is etcd's own concurrency.Mutex",
            )),
            #[allow(unreachable_patterns)]
            _ => Err(Error::unsupported(format!(
                "etcd has no {} in polylock",
                kind.word()
            ))),
        }
    }

    fn hold_ops(&self, kind: HoldKind) -> Result<Arc<dyn HoldOps>> {
        match kind {
            HoldKind::Lock(LockKind::Reentrant | LockKind::Fair) => Ok(self.exclusive.clone()),
            HoldKind::Lock(LockKind::Read) => Ok(self.read.clone()),
            HoldKind::Lock(LockKind::Write) => Ok(self.write.clone()),
            HoldKind::Lock(LockKind::Leader) => Ok(self.leader.clone()),
            HoldKind::Permit => Ok(self.semaphore.clone()),
            _ => Err(Error::unsupported("etcd has no such hold")),
        }
    }

    fn election_ops(&self) -> Result<Arc<dyn ElectionOps>> {
        Ok(self.election.clone())
    }

    fn semaphore_ops(&self) -> Result<Arc<dyn SemaphoreOps>> {
        Ok(self.semaphore.clone())
    }

    fn permit_semaphore_ops(&self) -> Result<Arc<dyn crate::backend::ExpirableOps>> {
        Err(Error::unsupported(
            "etcd has no semaphore of expiring permits: its semaphore's permits last while the \
             client's lease lives (use semaphore())",
        ))
    }

    fn watch_session(&self, sink: Weak<dyn SessionSink>) {
        *self.session.sink.lock().unwrap_or_else(|e| e.into_inner()) = sink.clone();
        tokio::spawn(keep_alive(Arc::downgrade(&self.session), sink));
    }

    async fn ping(&self) -> Result<()> {
        let mut c = self.session.client()?;
        self.session
            .call(
                "ping",
                c.get(
                    "polylock-ping",
                    Some(ec::GetOptions::new().with_count_only()),
                ),
            )
            .await
            .map(|_| ())
    }

    async fn close(&self) {
        self.session.close().await;
    }

    fn wakeups(&self) -> u64 {
        self.session.wakeups.load(Ordering::Relaxed)
    }
}

/// Keeps the client's leases alive: every third of their TTL, one keep-alive per lease. A
/// connection that fails is reported as suspended; a lease the server no longer has, or no
/// answer for a whole TTL, ends the session (every hold is lost). Holds the session only weakly
/// between rounds, so that a client dropped without `close()` ends it.
async fn keep_alive(session: Weak<EtcdSession>, sink: Weak<dyn SessionSink>) {
    let Some((stop, ttl)) = session.upgrade().map(|s| (s.stop.clone(), s.ttl)) else {
        return;
    };
    let interval = Duration::from_millis((ttl as u64 * 1000 / 3).max(100));
    let mut streams: HashMap<i64, (ec::LeaseKeeper, ec::LeaseKeepAliveStream)> = HashMap::new();
    let mut suspended = false;
    loop {
        let Some(live) = session.upgrade() else {
            return;
        };
        let (epoch, ids, valid_until) = {
            let pool = live.pool();
            (
                pool.epoch,
                pool.slots.iter().map(|s| s.id).collect::<Vec<_>>(),
                pool.valid_until,
            )
        };
        streams.retain(|id, _| ids.contains(id));
        let sent = Instant::now();
        let mut granted: Option<i64> = None;
        let mut expired = false;
        let mut failed = false;
        for id in &ids {
            let round = async {
                if !streams.contains_key(id) {
                    let mut c = live.client.clone();
                    match c.lease_keep_alive(*id).await {
                        Ok(pair) => {
                            streams.insert(*id, pair);
                        }
                        Err(ec::Error::LeaseKeepAliveError(_)) => return Ok(0), // not found
                        Err(e) => return Err(e),
                    }
                }
                let (keeper, stream) = streams.get_mut(id).expect("opened above");
                keeper.keep_alive().await?;
                match stream.message().await? {
                    Some(r) => Ok(r.ttl()),
                    None => Err(ec::Error::LeaseKeepAliveError("stream ended".into())),
                }
            };
            match tokio::time::timeout(live.options.command_timeout.min(interval), round).await {
                Ok(Ok(t)) if t > 0 => granted = Some(granted.map_or(t, |g| g.min(t))),
                Ok(Ok(_)) => expired = true,
                Ok(Err(_)) | Err(_) => {
                    streams.remove(id);
                    failed = true;
                }
            }
        }
        let report = |f: &dyn Fn(&dyn SessionSink)| {
            if let Some(s) = sink.upgrade() {
                f(&*s);
            }
        };
        let now = Instant::now();
        if expired || (failed && now >= valid_until && !ids.is_empty()) {
            let s = sink.upgrade();
            live.end_epoch(epoch, s.as_deref());
            streams.clear();
        } else if failed {
            if !suspended {
                suspended = true;
                report(&|s| s.suspended(true));
                tracing::warn!(
                    "polylock: etcd keep-alive failed; locks stay held while the leases live"
                );
            }
        } else {
            if let Some(t) = granted {
                let mut pool = live.pool();
                if pool.epoch == epoch {
                    pool.valid_until = sent + Duration::from_secs(t as u64);
                }
            }
            if suspended {
                suspended = false;
                report(&|s| s.suspended(false));
            }
        }
        let valid_until = live.pool().valid_until;
        drop(live);
        // Wake for the next round, sooner after a failure, and at the leases' end.
        let next = if failed {
            Instant::now() + (interval / 3).max(Duration::from_millis(100))
        } else {
            sent + interval
        };
        let wake = if failed {
            next.min(valid_until.max(Instant::now()))
        } else {
            next
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
    }
}

/// How a watch on one key ended.
pub(crate) enum Watched {
    /// An event of these kinds happened (with the revision of the response).
    Event,
    /// The deadline came first.
    Deadline,
    /// The session was lost, or the client closed.
    Ended,
}

/// Watch `key` (or the range `key`..`range_end`) from revision `from` until an event for which
/// `wanted` is true, the deadline, or the end of the session. A broken watch stream is opened
/// again from the last revision seen.
pub(crate) async fn watch_for(
    session: &EtcdSession,
    key: &str,
    range_end: Option<Vec<u8>>,
    mut from: i64,
    deadline: Option<Instant>,
    wanted: impl Fn(&ec::Event) -> bool,
) -> Result<Watched> {
    let mut epochs = session.epochs();
    let epoch = *epochs.borrow_and_update();
    if session.epoch() != epoch {
        return Ok(Watched::Ended);
    }
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep);
    let mut failures = 0u32;
    loop {
        let mut options = ec::WatchOptions::new().with_start_revision(from);
        if let Some(end) = &range_end {
            options = options.with_range(end.clone());
        }
        let mut c = session.client()?;
        let opened = tokio::select! {
            r = c.watch(key, Some(options)) => r,
            _ = &mut sleep => return Ok(Watched::Deadline),
            _ = epochs.changed() => return Ok(Watched::Ended),
            _ = session.stop.cancelled() => return Ok(Watched::Ended),
        };
        let mut stream = match opened {
            Ok(s) => s,
            Err(e) => {
                failures += 1;
                if failures > 3 {
                    return Err(map_err(e, "watch a key"));
                }
                tokio::time::sleep(Duration::from_millis(50 << failures)).await;
                continue;
            }
        };
        loop {
            let msg = tokio::select! {
                m = stream.message() => m,
                _ = &mut sleep => return Ok(Watched::Deadline),
                _ = epochs.changed() => return Ok(Watched::Ended),
                _ = session.stop.cancelled() => return Ok(Watched::Ended),
            };
            match msg {
                Ok(Some(r)) => {
                    failures = 0;
                    if r.compact_revision() > 0 {
                        // The revisions we wanted are compacted: let the caller look again.
                        return Ok(Watched::Event);
                    }
                    if r.canceled() {
                        return Ok(Watched::Event);
                    }
                    for ev in r.events() {
                        if let Some(kv) = ev.kv() {
                            from = from.max(kv.mod_revision() + 1);
                        }
                        if wanted(ev) {
                            return Ok(Watched::Event);
                        }
                    }
                }
                Ok(None) | Err(_) => {
                    failures += 1;
                    if failures > 3 {
                        return Ok(Watched::Event); // the caller looks again
                    }
                    tokio::time::sleep(Duration::from_millis(50 << failures)).await;
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = EtcdUrl::parse("etcd://127.0.0.1:2379").unwrap();
        assert_eq!(u.endpoints, ["http://127.0.0.1:2379"]);
        assert_eq!((u.auth, u.ttl, u.tls), (None, None, None));
        let u = EtcdUrl::parse("etcd://bob:pw@a:1,b:2?ttl=5").unwrap();
        assert_eq!(u.endpoints, ["http://a:1", "http://b:2"]);
        assert_eq!(u.auth, Some(("bob".into(), Secret::new("pw"))));
        assert!(!format!("{u:?}").contains("pw"), "{u:?}");
        assert_eq!(u.ttl, Some(5));
        let t = EtcdUrl::parse("etcds://h:1?tls_ca_file=/ca.pem").unwrap();
        assert_eq!(t.endpoints, ["https://h:1"]);
        assert_eq!(
            t.tls,
            Some(EtcdTls {
                ca_file: "/ca.pem".into(),
                identity: None
            })
        );
        for bad in [
            "etcd://",
            "etcd://host",
            "etcd://h:0",
            "etcd://h:99999",
            "etcd://h:1/x",
            "etcd://h:1?x=1",
            "etcd://:p@h:1",
            "etcd://h:1?ttl=0",
            "etcd://h:1?ttl=abc",
            "etcd://h:1?tls_ca_file=/ca.pem",
            "etcds://h:1",
            "etcds://h:1?tls_ca_file=/ca.pem&tls_cert_file=/c.pem",
            "http://h:1",
        ] {
            let e = EtcdUrl::parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        }
        let e = EtcdUrl::parse("etcd://u:secret@h").unwrap_err();
        assert!(!e.message().contains("secret"), "{}", e.message());
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end("a/"), b"a0");
        assert_eq!(prefix_end("a\u{7f}"), b"a\x80");
        assert_eq!(prefix_end(""), vec![0]);
    }
}
