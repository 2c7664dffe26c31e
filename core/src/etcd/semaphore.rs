//! polylock's semaphore on etcd (its own format; etcd's `concurrency` has none).
//!
//! | key | value |
//! |-----|-------|
//! | `NAME` | the number of permits, in decimal |
//! | `NAME/<lease hex>_<n hex>` | one per permit held or waited for, attached to the holder's lease |
//!
//! Permits queue by create revision: the N keys created first under `NAME/` hold, where N is the
//! number in `NAME`. An acquire of several permits puts its keys in one transaction, so they
//! share one create revision and are granted together. A waiter watches the whole range (the count and the permit keys) and looks
//! again after any change. Keys live with their client's lease, so a client that dies gives its
//! permits back when its lease expires. A name used for a semaphore must not also be used for a
//! lock (both queue under `NAME/`).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use ec::{Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
use etcd_client as ec;

use super::lock::{delete_guarded, watch_gone, Cleanup};
use super::{prefix_end, watch_for, EtcdSession, Watched};
use crate::backend::{Granted, HoldOps, PermitRequest, SemaphoreOps};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::options::Wait;
use crate::model::outcome::{PermitHolder, SemaphoreStatus};
use crate::model::owner::OwnerId;

/// The value of a permit key.
const PERMIT_VALUE: &str = "polylock:permit";

/// The semaphore of one client.
pub(crate) struct EtcdSemaphore {
    session: Arc<EtcdSession>,
}

fn parse_node(name: &str, node: &str) -> Result<(String, i64)> {
    node.rsplit_once('@')
        .and_then(|(suffix, rev)| Some((format!("{name}/{suffix}"), rev.parse().ok()?)))
        .ok_or_else(|| Error::internal(format!("'{node}' is not an etcd permit")))
}

fn permit_keys(prefix: &str) -> GetOptions {
    GetOptions::new()
        .with_range(prefix_end(prefix))
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_keys_only()
}

/// How many of the permit keys (in create order) hold: whole groups of one create revision (one
/// acquire), first to last, while they fit in the count.
fn holding(count: i64, keys: &[ec::KeyValue]) -> usize {
    let mut held = 0;
    while held < keys.len() {
        let rev = keys[held].create_revision();
        let group = keys[held..]
            .iter()
            .take_while(|kv| kv.create_revision() == rev)
            .count();
        if (held + group) as i64 > count {
            break;
        }
        held += group;
    }
    held
}

fn parse_count(kvs: &[ec::KeyValue]) -> i64 {
    kvs.first()
        .and_then(|kv| std::str::from_utf8(kv.value()).ok()?.trim().parse().ok())
        .unwrap_or(0)
}

impl EtcdSemaphore {
    pub(crate) fn new(session: Arc<EtcdSession>) -> EtcdSemaphore {
        EtcdSemaphore { session }
    }

    /// The number of permits and the permit keys (create order), with the header revision.
    async fn look(&self, name: &str) -> Result<(i64, Vec<ec::KeyValue>, i64)> {
        let prefix = format!("{name}/");
        let txn = Txn::new().and_then([
            TxnOp::get(name, None),
            TxnOp::get(prefix.as_str(), Some(permit_keys(&prefix))),
        ]);
        let mut c = self.session.client()?;
        let r = self.session.call("read the semaphore", c.txn(txn)).await?;
        let at = r.header().map_or(0, |h| h.revision());
        let mut parts = r.op_responses().into_iter().map(|op| match op {
            ec::TxnOpResponse::Get(mut g) => g.take_kvs(),
            _ => Vec::new(),
        });
        let count = parse_count(&parts.next().unwrap_or_default());
        Ok((count, parts.next().unwrap_or_default(), at))
    }

    /// Take `n` permits at once: `n` keys put in one transaction share one create revision, so
    /// they are granted together when the keys created before them number at most the count
    /// minus `n`. (Keys put one at a time let two acquires of every permit hold one each and
    /// wait for each other.)
    async fn acquire_n(
        &self,
        name: &str,
        n: u32,
        deadline: Option<Instant>,
    ) -> Result<Option<Vec<Granted>>> {
        let mut tries = 0;
        let (mut cleanups, rev, suffixes) = loop {
            tries += 1;
            let lease = self.session.any_lease().await?;
            let suffixes: Vec<String> = (0..n)
                .map(|_| format!("{:x}_{:x}", lease.id, self.session.next_permit()))
                .collect();
            let mut cleanups: Vec<Cleanup> = suffixes
                .iter()
                .map(|suffix| Cleanup {
                    session: self.session.clone(),
                    name: None,
                    key: format!("{name}/{suffix}"),
                    lease,
                    rev: None,
                    armed: true,
                })
                .collect();
            let puts: Vec<TxnOp> = cleanups
                .iter()
                .map(|c| {
                    TxnOp::put(
                        c.key.as_str(),
                        PERMIT_VALUE,
                        Some(PutOptions::new().with_lease(lease.id)),
                    )
                })
                .collect();
            let mut c = self.session.client()?;
            match self
                .session
                .call_raw(
                    "take a place in the semaphore",
                    c.txn(Txn::new().and_then(puts)),
                )
                .await
            {
                Ok(r) => {
                    let rev = r.header().map_or(0, |h| h.revision());
                    for c in &mut cleanups {
                        c.rev = Some(rev);
                    }
                    break (cleanups, rev, suffixes);
                }
                Err(Ok(e)) if super::lease_not_found(&e) && tries < 2 => {
                    for c in &mut cleanups {
                        c.armed = false;
                    }
                    self.session.lease_missing(lease);
                }
                Err(Ok(e)) => return Err(super::map_err(e, "take a place in the semaphore")),
                Err(Err(e)) => return Err(e),
            }
        };
        let give_back = |cleanups: &mut Vec<Cleanup>| {
            let mut all = std::mem::take(cleanups);
            async move {
                for c in &mut all {
                    c.delete_now().await;
                }
            }
        };
        loop {
            let (count, keys, at) = self.look(name).await?;
            let ours = keys
                .iter()
                .filter(|kv| {
                    kv.create_revision() == rev
                        && cleanups.iter().any(|c| c.key.as_bytes() == kv.key())
                })
                .count();
            if ours < cleanups.len() {
                give_back(&mut cleanups).await;
                return Err(Error::new(
                    ErrorKind::LockLost,
                    format!(
                        "a permit key of ours under '{name}/' disappeared while waiting (its \
                         lease expired or it was deleted)"
                    ),
                ));
            }
            let before = keys.iter().filter(|kv| kv.create_revision() < rev).count() as i64;
            if before + i64::from(n) <= count {
                return Ok(Some(
                    cleanups
                        .iter_mut()
                        .zip(&suffixes)
                        .map(|(c, suffix)| {
                            c.armed = false;
                            Granted {
                                token: rev as u64,
                                count: 1,
                                gone: Some(watch_gone(&self.session, c.key.clone(), rev)),
                                node: Some(format!("{suffix}@{rev}")),
                                valid_until: None,
                            }
                        })
                        .collect(),
                ));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                give_back(&mut cleanups).await;
                return Ok(None);
            }
            // Any change to the count or to the permit keys: look again.
            let end = prefix_end(&format!("{name}/"));
            match watch_for(&self.session, name, Some(end), at + 1, deadline, |_| true).await? {
                Watched::Event => self.session.woken(),
                Watched::Deadline => {
                    give_back(&mut cleanups).await;
                    return Ok(None);
                }
                Watched::Ended => {}
            }
        }
    }

    /// Set the count with a compare-and-swap on its mod revision (`f` gets the count, if set).
    async fn update(&self, name: &str, f: impl Fn(Option<i64>) -> Result<i64>) -> Result<()> {
        loop {
            let mut c = self.session.client()?;
            let r = self
                .session
                .call("read the permits", c.get(name, None))
                .await?;
            let (cmp, now) = match r.kvs().first() {
                Some(kv) => (
                    Compare::mod_revision(name, CompareOp::Equal, kv.mod_revision()),
                    Some(parse_count(r.kvs())),
                ),
                None => (Compare::create_revision(name, CompareOp::Equal, 0), None),
            };
            let next = f(now)?;
            let txn = Txn::new()
                .when([cmp])
                .and_then([TxnOp::put(name, next.to_string(), None)]);
            if self
                .session
                .call("set the permits", c.txn(txn))
                .await?
                .succeeded()
            {
                return Ok(());
            }
        }
    }
}

#[async_trait]
impl HoldOps for EtcdSemaphore {
    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        match node {
            Some(node) => {
                let (key, rev) = parse_node(name, node)?;
                delete_guarded(&self.session, &key, Some(rev)).await
            }
            None => Ok(false),
        }
    }
}

#[async_trait]
impl SemaphoreOps for EtcdSemaphore {
    fn holds_permits(&self) -> bool {
        true
    }

    async fn try_set_permits(&self, name: &str, permits: u32) -> Result<bool> {
        let mut c = self.session.client()?;
        let txn = Txn::new()
            .when([Compare::create_revision(name, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(name, permits.to_string(), None)]);
        Ok(self
            .session
            .call("set the permits", c.txn(txn))
            .await?
            .succeeded())
    }

    async fn add_permits(&self, name: &str, delta: i64) -> Result<()> {
        self.update(name, |now| {
            now.unwrap_or(0)
                .checked_add(delta)
                .ok_or_else(|| Error::invalid(format!("{delta} permits are out of range")))
        })
        .await
    }

    async fn acquire(&self, req: &PermitRequest<'_>) -> Result<Option<Vec<Granted>>> {
        self.acquire_n(req.name, req.permits, req.wait.deadline())
            .await
    }

    async fn release(&self, name: &str, _permits: u32, nodes: &[String]) -> Result<()> {
        for node in nodes {
            self.drop_hold(name, 0, Some(node)).await?;
        }
        Ok(())
    }

    async fn available(&self, name: &str) -> Result<i64> {
        let (count, keys, _) = self.look(name).await?;
        // What a newcomer could take now: it queues behind the waiters too.
        Ok((count - keys.len() as i64).max(0))
    }

    async fn drain(&self, name: &str) -> Result<(i64, Vec<Granted>)> {
        let mut taken = Vec::new();
        while let Some(g) = self.acquire_n(name, 1, Wait::Never.deadline()).await? {
            taken.extend(g);
        }
        Ok((taken.len() as i64, taken))
    }

    async fn status(&self, name: &str) -> Result<SemaphoreStatus> {
        let (count, keys, _) = self.look(name).await?;
        let prefix = format!("{name}/");
        Ok(SemaphoreStatus {
            name: name.to_string(),
            available: (count - keys.len() as i64).max(0),
            permits: Some(count),
            holders: keys
                .iter()
                .take(holding(count, &keys))
                .map(|kv| {
                    let key = String::from_utf8_lossy(kv.key());
                    PermitHolder {
                        id: format!(
                            "{}@{}",
                            key.strip_prefix(&prefix).unwrap_or(&key),
                            kv.create_revision()
                        ),
                        expires_in: None,
                    }
                })
                .collect(),
        })
    }
}
