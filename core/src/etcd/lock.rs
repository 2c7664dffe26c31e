//! etcd's lock recipe (`concurrency.Mutex`), and polylock's read-write lock in the same queue.
//!
//! A contender of lock `NAME` puts the key `NAME/<lease id in lowercase hex>`, attached to its
//! lease, in one transaction with the look at the queue:
//! `If(CreateRevision(key) = 0) Then(Put(key, identity, lease), Get(NAME/, first by create revision))
//! Else(Get(key), Get(NAME/, first by create revision))`. It holds the lock when its key is the
//! first under `NAME/` by create revision; otherwise it watches the last key created before its
//! own until that key is deleted, and looks again (etcd's `waitDeletes`). When no key is left
//! before its own, it checks that its own key still exists (etcd #11456: a waiter whose lease
//! expired meanwhile must not report success). A release deletes the key in a transaction
//! guarded by the key's create revision, so that a retried release never deletes a newer key of
//! the same lease (etcd #22082). A timed-out or cancelled wait deletes its key the same way.
//!
//! The read-write lock is polylock's own format in that queue: a writer's key is exactly a
//! `Mutex` key (its value the holder's identity, which etcd's Go client leaves empty and nobody reads) and holds when it is first; a reader's key has the value
//! `polylock:read` and holds when no key with another value comes before it. A Go `Mutex` or
//! `etcdctl lock` on the same name is a writer to polylock's readers, and sees every key, reader
//! or writer, as a contender before it: they exclude each other. (etcd's `recipes` RWMutex is
//! not copied: it can grant a writer while a reader holds, etcd #16221.) A writer that takes the
//! read lock (a downgrade) shares its key; when it releases the write lock while still reading,
//! the key's value becomes `polylock:read` in place, keeping the key's place in the queue.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use ec::{Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
use etcd_client as ec;

use super::{watch_for, EtcdSession, LeaseRef, Watched};
use crate::backend::cleanup::{clean_up, CleanUp};
use crate::backend::{
    AcquireRequest, Gone, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest,
    UnlockReply,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldMode, LockKind};
use crate::model::outcome::{Holder, LockStatus};
use crate::model::owner::OwnerId;

/// The value of a reader's key.
pub(crate) const READ_VALUE: &str = "polylock:read";

/// Which lock of a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// etcd's `concurrency.Mutex` (polylock's lock and fair lock).
    Exclusive,
    /// A reader of the read-write lock.
    Read,
    /// The writer of the read-write lock (a `Mutex` key).
    Write,
    /// A candidate of `concurrency.Election`: a `Mutex` key whose value is its proposal (the
    /// candidate's identity); the first leads.
    Leader,
}

/// The key of a contender on `name` with `lease`: etcd's `NAME/<lease hex>`.
pub(crate) fn key_of(name: &str, lease: i64) -> String {
    format!("{name}/{lease:x}")
}

/// A hold's node: its lease and its key's create revision.
fn node_of(lease: i64, rev: i64) -> String {
    format!("{lease:x}@{rev}")
}

/// The key of a hold that `status` describes as `<lease hex>@<rev> ...`.
pub(crate) fn key_of_described(name: &str, described: &str) -> Option<String> {
    let node = described.split(' ').next()?;
    let (lease, _) = parse_node(node).ok()?;
    Some(key_of(name, lease))
}

fn parse_node(node: &str) -> Result<(i64, i64)> {
    let parsed = node
        .split_once('@')
        .and_then(|(l, r)| Some((i64::from_str_radix(l, 16).ok()?, r.parse::<i64>().ok()?)));
    parsed.ok_or_else(|| Error::internal(format!("'{node}' is not an etcd hold")))
}

/// The first key under a prefix by create revision (clientv3's `WithFirstCreate`).
fn first_create(prefix: &str) -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(1)
        .with_keys_only()
        .with_range(super::prefix_end(prefix))
}

/// Every key under a prefix, in create order.
fn all_by_create(prefix: &str) -> GetOptions {
    GetOptions::new()
        .with_range(super::prefix_end(prefix))
        .with_sort(SortTarget::Create, SortOrder::Ascend)
}

/// A contender, from its key.
#[derive(Debug, Clone)]
pub(crate) struct Contender {
    pub(crate) key: String,
    pub(crate) lease: i64,
    pub(crate) rev: i64,
    pub(crate) reader: bool,
}

fn contenders(kvs: &[ec::KeyValue]) -> Vec<Contender> {
    let mut v: Vec<Contender> = kvs
        .iter()
        .map(|kv| Contender {
            key: String::from_utf8_lossy(kv.key()).into_owned(),
            lease: kv.lease(),
            rev: kv.create_revision(),
            reader: kv.value() == READ_VALUE.as_bytes(),
        })
        .collect();
    v.sort_by_key(|c| c.rev);
    v
}

/// How many of the contenders (in create order) hold: the first writer alone, or the readers
/// before any writer.
fn holding(list: &[Contender]) -> usize {
    match list.first() {
        None => 0,
        Some(c) if !c.reader => 1,
        Some(_) => list.iter().take_while(|c| c.reader).count(),
    }
}

fn get_kvs(resp: &ec::TxnResponse, at: usize) -> Vec<ec::KeyValue> {
    match resp.op_responses().into_iter().nth(at) {
        Some(ec::TxnOpResponse::Get(mut g)) => g.take_kvs(),
        _ => Vec::new(),
    }
}

fn header_rev(resp: &ec::TxnResponse) -> i64 {
    resp.header().map_or(0, |h| h.revision())
}

/// Deletes our key if an acquire ends without the lock (timeout, error, cancel): now, or in the
/// background while the session lives. Gives the lease back for the name once the key is gone.
pub(crate) struct Cleanup {
    pub(crate) session: Arc<EtcdSession>,
    /// The lock's name, if the lease was taken for it.
    pub(crate) name: Option<String>,
    pub(crate) key: String,
    pub(crate) lease: LeaseRef,
    /// The key's create revision, once known (until then the key is ours by its name alone).
    pub(crate) rev: Option<i64>,
    pub(crate) armed: bool,
}

/// Delete `key` if its create revision is `rev` (any, if unknown); true if it is gone.
pub(crate) async fn delete_guarded(
    session: &EtcdSession,
    key: &str,
    rev: Option<i64>,
) -> Result<bool> {
    let mut c = session.client()?;
    let txn = match rev {
        Some(rev) => Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, rev)])
            .and_then([TxnOp::delete(key, None)]),
        None => Txn::new().and_then([TxnOp::delete(key, None)]),
    };
    let r = session.call("delete a lock key", c.txn(txn)).await?;
    Ok(r.succeeded())
}

impl Cleanup {
    /// Delete our key now and disarm; if that fails, the guard stays armed and retries in the
    /// background when dropped.
    pub(crate) async fn delete_now(&mut self) {
        match delete_guarded(&self.session, &self.key, self.rev).await {
            Ok(_) => {
                self.armed = false;
                if let Some(name) = &self.name {
                    self.session.checkin(self.lease.id, name);
                }
            }
            Err(e) => tracing::warn!(
                "polylock: deleting our etcd key failed ({e}); retrying in the background"
            ),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let session = self.session.clone();
        let (name, key, lease, rev) = (
            self.name.take(),
            std::mem::take(&mut self.key),
            self.lease,
            self.rev,
        );
        let what = format!("the etcd contender key {key}");
        clean_up(what, move || {
            let (session, name, key) = (session.clone(), name.clone(), key.clone());
            async move {
                let outcome = if session.stop.is_cancelled() || session.epoch() != lease.epoch {
                    CleanUp::Moot // gone with its lease
                } else {
                    match delete_guarded(&session, &key, rev).await {
                        Ok(_) => CleanUp::Done,
                        Err(e) => return CleanUp::Retry(e.to_string()),
                    }
                };
                if let Some(name) = name {
                    session.checkin(lease.id, &name);
                }
                outcome
            }
        });
    }
}

/// What tells that a held key is gone: a watch for its deletion. A deletion while the session
/// lives (a force unlock, `etcdctl del`, a revoked lease) is a loss; a deletion because the
/// session's lease expired is the session's to report. Holds the session only weakly between
/// watches.
pub(crate) fn watch_gone(session: &Arc<EtcdSession>, key: String, rev: i64) -> Gone {
    let weak: Weak<EtcdSession> = Arc::downgrade(session);
    let epoch = session.epoch();
    Gone::Watch(Box::pin(async move {
        let mut from = rev + 1;
        let mut delay = Duration::from_millis(50);
        loop {
            let Some(s) = weak.upgrade() else {
                return false;
            };
            if s.stop.is_cancelled() || s.epoch() != epoch {
                return false;
            }
            let watched = watch_for(&s, &key, None, from, None, |ev| {
                ev.event_type() == ec::EventType::Delete
            })
            .await;
            match watched {
                Ok(Watched::Event) => {}
                Ok(_) => return false,
                Err(_) => {
                    drop(s);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                    continue;
                }
            }
            // One more look: the key may be back under our revision (a compacted watch), or the
            // session may have ended (its deletion is the session's to report).
            let Ok(mut c) = s.client() else {
                return false;
            };
            match s
                .call("look at a held key", c.get(key.as_str(), None))
                .await
            {
                Ok(r) => match r.kvs().first() {
                    Some(kv) if kv.create_revision() == rev => {
                        from = r.header().map_or(from, |h| h.revision() + 1);
                    }
                    _ => return s.epoch() == epoch && !s.stop.is_cancelled(),
                },
                Err(_) => {
                    drop(s);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }))
}

/// The operations of one lock kind for one client.
pub(crate) struct EtcdLock {
    session: Arc<EtcdSession>,
    mode: Mode,
}

impl EtcdLock {
    pub(crate) fn new(session: Arc<EtcdSession>, mode: Mode) -> EtcdLock {
        EtcdLock { session, mode }
    }

    fn value<'a>(&self, req: &AcquireRequest<'a>) -> &'a str {
        match self.mode {
            Mode::Read => READ_VALUE,
            // A candidate's id; a holder's identity (etcdctl reads neither).
            Mode::Leader | Mode::Exclusive | Mode::Write => req.data.unwrap_or_default(),
        }
    }

    /// Whether a contender with create revision `rev` holds, given the keys before it (or the
    /// first key, for a writer).
    fn holds(&self, before_or_first: &[Contender], rev: i64) -> bool {
        match self.mode {
            Mode::Exclusive | Mode::Leader | Mode::Write => {
                before_or_first.first().is_none_or(|c| c.rev == rev)
            }
            Mode::Read => !before_or_first.iter().any(|c| c.rev < rev && !c.reader),
        }
    }

    fn granted(&self, key: String, lease: i64, rev: i64) -> Granted {
        Granted {
            token: rev as u64,
            count: 1,
            gone: Some(watch_gone(&self.session, key, rev)),
            node: Some(node_of(lease, rev)),
            valid_until: None,
        }
    }

    /// Put our key in the queue and look at its head, in one transaction (etcd's `tryAcquire`).
    /// Returns our key's create revision, the header revision and the head of the queue.
    async fn enqueue(
        &self,
        name: &str,
        key: &str,
        lease: i64,
        value: &str,
    ) -> std::result::Result<(i64, i64, Vec<Contender>), Enqueue> {
        let prefix = format!("{name}/");
        let head = match self.mode {
            Mode::Read => all_by_create(&prefix),
            Mode::Exclusive | Mode::Leader | Mode::Write => first_create(&prefix),
        };
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([
                TxnOp::put(key, value, Some(PutOptions::new().with_lease(lease))),
                TxnOp::get(prefix.as_str(), Some(head.clone())),
            ])
            .or_else([
                TxnOp::get(key, None),
                TxnOp::get(prefix.as_str(), Some(head)),
            ]);
        let mut c = self.session.client().map_err(Enqueue::Failed)?;
        let resp = self
            .session
            .call_raw("queue for the lock", c.txn(txn))
            .await
            .map_err(|e| match e {
                Ok(e) if super::lease_not_found(&e) => Enqueue::LeaseMissing,
                Ok(e) => Enqueue::Failed(super::map_err(e, "queue for the lock")),
                Err(e) => Enqueue::Failed(e),
            })?;
        let at = header_rev(&resp);
        let rev = if resp.succeeded() {
            at
        } else {
            get_kvs(&resp, 0)
                .first()
                .map_or(at, |kv| kv.create_revision())
        };
        Ok((rev, at, contenders(&get_kvs(&resp, 1))))
    }

    /// A writer takes the read lock of its own read-write lock: it shares the writer's key.
    fn downgrade(&self, name: &str, write_node: &str) -> Result<Granted> {
        let (lease, rev) = parse_node(write_node)?;
        let key = key_of(name, lease);
        self.session.share(&key);
        Ok(self.granted(key, lease, rev))
    }

    /// Let go of the key of a hold: delete it (guarded by its create revision), or, where the
    /// other half of a downgrade still holds it, leave it (turned into a reader's key if the
    /// writer goes). True if the hold was still ours.
    async fn let_go(&self, name: &str, lease: i64, rev: i64, retry: bool) -> Result<bool> {
        let key = key_of(name, lease);
        if matches!(self.mode, Mode::Read | Mode::Write) {
            if let Some(reader_stays) = self.session.unshare(&key, self.mode == Mode::Write) {
                if self.mode == Mode::Write && reader_stays {
                    let mut c = self.session.client()?;
                    let txn = Txn::new()
                        .when([Compare::create_revision(
                            key.as_str(),
                            CompareOp::Equal,
                            rev,
                        )])
                        .and_then([TxnOp::put(
                            key.as_str(),
                            READ_VALUE,
                            Some(PutOptions::new().with_lease(lease)),
                        )]);
                    let r = self
                        .session
                        .call("turn the writer's key into a reader's", c.txn(txn))
                        .await?;
                    return Ok(r.succeeded() || retry);
                }
                return Ok(true);
            }
        }
        let deleted = delete_guarded(&self.session, &key, Some(rev)).await?;
        self.session.checkin(lease, name);
        Ok(deleted || retry)
    }

    async fn list(&self, name: &str) -> Result<Vec<Contender>> {
        let prefix = format!("{name}/");
        let mut c = self.session.client()?;
        let r = self
            .session
            .call(
                "list the lock's contenders",
                c.get(prefix.as_str(), Some(all_by_create(&prefix))),
            )
            .await?;
        Ok(contenders(r.kvs()))
    }

    async fn ttl_of(&self, lease: i64) -> Option<Duration> {
        if lease == 0 {
            return None;
        }
        let mut c = self.session.client().ok()?;
        let r = self
            .session
            .call("read a lease's TTL", c.lease_time_to_live(lease, None))
            .await
            .ok()?;
        (r.ttl() >= 0).then(|| Duration::from_secs(r.ttl() as u64))
    }
}

/// Why an enqueue failed.
enum Enqueue {
    /// The server no longer has the lease (it expired before the keep-alive task noticed).
    LeaseMissing,
    Failed(Error),
}

#[async_trait]
impl HoldOps for EtcdLock {
    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        match node {
            Some(node) => {
                let (lease, rev) = parse_node(node)?;
                self.let_go(name, lease, rev, false).await
            }
            None => Ok(false),
        }
    }
}

#[async_trait]
impl LockOps for EtcdLock {
    fn kind(&self) -> LockKind {
        match self.mode {
            Mode::Exclusive => LockKind::Reentrant,
            Mode::Leader => LockKind::Leader,
            Mode::Read => LockKind::Read,
            Mode::Write => LockKind::Write,
        }
    }

    fn reentry(&self) -> Reentry {
        Reentry::Client
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Session
    }

    fn queues_waiters(&self) -> bool {
        true
    }

    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let name = req.name;
        if let (Mode::Read, Some(w)) = (self.mode, req.write_node) {
            return self.downgrade(name, w).map(Some);
        }
        let deadline = req.wait.deadline();
        let mut tries = 0;
        let (mut cleanup, rev, mut at, head) = loop {
            tries += 1;
            let lease = self.session.checkout(name).await?;
            let key = key_of(name, lease.id);
            let mut cleanup = Cleanup {
                session: self.session.clone(),
                name: Some(name.to_string()),
                key: key.clone(),
                lease,
                rev: None,
                armed: true,
            };
            match self.enqueue(name, &key, lease.id, self.value(req)).await {
                Ok((rev, at, head)) => {
                    cleanup.rev = Some(rev);
                    break (cleanup, rev, at, head);
                }
                // The lease ran out before the keep-alive task noticed: a new session, once.
                Err(Enqueue::LeaseMissing) if tries < 2 => {
                    cleanup.armed = false;
                    self.session.checkin(lease.id, name);
                    self.session.lease_missing(lease);
                }
                Err(Enqueue::LeaseMissing) => {
                    return Err(Error::new(
                        ErrorKind::LockLost,
                        "etcd: the client's new lease was gone at once; check the members' clocks and load",
                    ))
                }
                Err(Enqueue::Failed(e)) => return Err(e),
            }
        };
        let key = cleanup.key.clone();
        let lease = cleanup.lease;
        if self.holds(&head, rev) {
            cleanup.armed = false;
            return Ok(Some(self.granted(key, lease.id, rev)));
        }
        let prefix = format!("{name}/");
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                cleanup.delete_now().await;
                return Ok(None);
            }
            // The keys created before ours (the last one for a writer, all for a reader), and
            // our own key, in one round trip.
            let mut below = GetOptions::new()
                .with_range(super::prefix_end(&prefix))
                .with_max_create_revision(rev - 1)
                .with_sort(SortTarget::Create, SortOrder::Descend);
            if self.mode != Mode::Read {
                below = below.with_limit(1).with_keys_only();
            }
            let txn = Txn::new().and_then([
                TxnOp::get(prefix.as_str(), Some(below)),
                TxnOp::get(key.as_str(), Some(GetOptions::new().with_keys_only())),
            ]);
            let mut c = self.session.client()?;
            let resp = self
                .session
                .call("look at the lock's queue", c.txn(txn))
                .await?;
            at = header_rev(&resp).max(at);
            if get_kvs(&resp, 1).is_empty() {
                // etcd #11456: our key is gone (our lease expired, or someone deleted it).
                cleanup.armed = false;
                self.session.checkin(lease.id, name);
                return Err(Error::new(
                    ErrorKind::LockLost,
                    format!(
                        "our key {key} disappeared while waiting for lock '{name}' (its lease expired or it was deleted)"
                    ),
                ));
            }
            let before = contenders(&get_kvs(&resp, 0));
            // The last key before ours that blocks us: any key for a writer, a writer's for a
            // reader.
            let blocker = before
                .iter()
                .rev()
                .find(|c| self.mode != Mode::Read || !c.reader)
                .cloned();
            let Some(blocker) = blocker else {
                cleanup.armed = false;
                return Ok(Some(self.granted(key, lease.id, rev)));
            };
            let reader = self.mode == Mode::Read;
            let watched = watch_for(&self.session, &blocker.key, None, at + 1, deadline, |ev| {
                ev.event_type() == ec::EventType::Delete
                    || (reader
                        && ev
                            .kv()
                            .is_some_and(|kv| kv.value() == READ_VALUE.as_bytes()))
            })
            .await?;
            match watched {
                Watched::Event => self.session.woken(),
                Watched::Deadline => {
                    cleanup.delete_now().await;
                    return Ok(None);
                }
                Watched::Ended => {} // the next look finds our key gone
            }
        }
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let (lease, rev) = parse_node(req.node.unwrap_or_default())?;
        Ok(match self.let_go(req.name, lease, rev, req.retry).await? {
            true => UnlockReply::Freed,
            false => UnlockReply::NotHeld,
        })
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        let list = self.list(name).await?;
        Ok(match self.mode {
            Mode::Exclusive | Mode::Leader => !list.is_empty(),
            Mode::Write => list.first().is_some_and(|c| !c.reader),
            Mode::Read => list.first().is_some_and(|c| c.reader),
        })
    }

    async fn remaining_lease(&self, name: &str) -> Result<Option<Duration>> {
        let list = self.list(name).await?;
        match list.first() {
            Some(c) => Ok(self.ttl_of(c.lease).await),
            None => Ok(None),
        }
    }

    /// Delete the keys that hold this kind of lock (each guarded by its create revision); true
    /// if there were any. Their waiters wake.
    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let list = self.list(name).await?;
        let n = holding(&list);
        let holders: Vec<&Contender> = match self.mode {
            Mode::Exclusive => list.iter().take(n).collect(),
            Mode::Leader => list.iter().take(1).collect(),
            Mode::Write => list.iter().take(n).filter(|c| !c.reader).collect(),
            Mode::Read => list.iter().take(n).filter(|c| c.reader).collect(),
        };
        for c in &holders {
            delete_guarded(&self.session, &c.key, Some(c.rev)).await?;
        }
        Ok(!holders.is_empty())
    }

    /// The contenders in create order, each as `<lease id hex>@<create revision> ttl=<s>s`.
    async fn status(&self, name: &str) -> Result<LockStatus> {
        let list = self.list(name).await?;
        let n = holding(&list);
        let rw = matches!(self.mode, Mode::Read | Mode::Write) || list.iter().any(|c| c.reader);
        let mut described = Vec::with_capacity(list.len());
        let mut first_ttl = None;
        for (i, c) in list.iter().enumerate() {
            let ttl = self.ttl_of(c.lease).await;
            if i == 0 {
                first_ttl = ttl;
            }
            let ttl = ttl.map_or("-".to_string(), |t| format!("{}s", t.as_secs()));
            described.push(format!("{} ttl={ttl}", node_of(c.lease, c.rev)));
        }
        let mode_of = |c: &Contender| match (rw, c.reader) {
            (false, _) => HoldMode::Exclusive,
            (true, true) => HoldMode::Read,
            (true, false) => HoldMode::Write,
        };
        let holders = list[..n]
            .iter()
            .zip(&described)
            .map(|(c, d)| Holder {
                owner: d.clone(),
                count: 1,
                mode: mode_of(c),
                identity: None,
            })
            .collect();
        // Keys of a lock named `name/...` lie under this lock's prefix too (etcd's Mutex reads
        // the whole prefix): their owners queue here.
        let prefix = format!("{name}/");
        let mut shared_with: Vec<String> = list
            .iter()
            .filter_map(|c| {
                let rest = c.key.strip_prefix(&prefix)?;
                let (deeper, _lease) = rest.rsplit_once('/')?;
                Some(format!("{prefix}{deeper}"))
            })
            .collect();
        shared_with.sort();
        shared_with.dedup();
        Ok(LockStatus {
            shared_with,
            name: name.to_string(),
            locked: n > 0,
            mode: if rw { list.first().map(mode_of) } else { None },
            holders,
            ttl: if n > 0 { first_ttl } else { None },
            waiters: described[n..].to_vec(),
            waiter_identities: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rev: i64, reader: bool) -> Contender {
        Contender {
            key: format!("k/{rev}"),
            lease: rev,
            rev,
            reader,
        }
    }

    #[test]
    fn nodes_round_trip_and_keys_are_etcds() {
        assert_eq!(
            key_of("jobs", 0x694d_7a1b_2c3d_4e5f),
            "jobs/694d7a1b2c3d4e5f"
        );
        assert_eq!(parse_node(&node_of(0x694d, 42)).unwrap(), (0x694d, 42));
        assert!(parse_node("zz@1").is_err());
    }

    #[test]
    fn readers_hold_until_the_first_writer() {
        let list = [c(1, true), c(2, true), c(3, false), c(4, true)];
        assert_eq!(holding(&list), 2);
        assert_eq!(holding(&[c(5, false), c(6, true)]), 1);
        assert_eq!(holding(&[]), 0);
    }
}
