//! polylock's semaphore on etcd (its own format; etcd's `concurrency` has none).
//!
//! | key | value |
//! |-----|-------|
//! | `NAME` | the number of permits, in decimal |
//! | `NAME/<lease hex>_<n hex>` | one per permit held or waited for, attached to the holder's lease |
//!
//! Permits queue by create revision: the N keys created first under `NAME/` hold, where N is the
//! number in `NAME`. A waiter watches the whole range (the count and the permit keys) and looks
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

    async fn acquire_one(&self, name: &str, deadline: Option<Instant>) -> Result<Option<Granted>> {
        let mut tries = 0;
        let (mut cleanup, rev, suffix) = loop {
            tries += 1;
            let lease = self.session.any_lease().await?;
            let suffix = format!("{:x}_{:x}", lease.id, self.session.next_permit());
            let key = format!("{name}/{suffix}");
            let mut cleanup = Cleanup {
                session: self.session.clone(),
                name: None,
                key: key.clone(),
                lease,
                rev: None,
                armed: true,
            };
            let mut c = self.session.client()?;
            let put = TxnOp::put(
                key.as_str(),
                PERMIT_VALUE,
                Some(PutOptions::new().with_lease(lease.id)),
            );
            match self
                .session
                .call_raw(
                    "take a place in the semaphore",
                    c.txn(Txn::new().and_then([put])),
                )
                .await
            {
                Ok(r) => {
                    let rev = r.header().map_or(0, |h| h.revision());
                    cleanup.rev = Some(rev);
                    break (cleanup, rev, suffix);
                }
                Err(Ok(e)) if super::lease_not_found(&e) && tries < 2 => {
                    cleanup.armed = false;
                    self.session.lease_missing(lease);
                }
                Err(Ok(e)) => return Err(super::map_err(e, "take a place in the semaphore")),
                Err(Err(e)) => return Err(e),
            }
        };
        let key = cleanup.key.clone();
        loop {
            let (count, keys, at) = self.look(name).await?;
            let Some(rank) = keys.iter().position(|kv| kv.key() == key.as_bytes()) else {
                cleanup.armed = false;
                return Err(Error::new(
                    ErrorKind::LockLost,
                    format!("our permit key {key} disappeared while waiting (its lease expired or it was deleted)"),
                ));
            };
            if (rank as i64) < count {
                cleanup.armed = false;
                return Ok(Some(Granted {
                    token: rev as u64,
                    count: 1,
                    gone: Some(watch_gone(&self.session, key, rev)),
                    node: Some(format!("{suffix}@{rev}")),
                    valid_until: None,
                }));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                cleanup.delete_now().await;
                return Ok(None);
            }
            // Any change to the count or to the permit keys: look again.
            let end = prefix_end(&format!("{name}/"));
            match watch_for(&self.session, name, Some(end), at + 1, deadline, |_| true).await? {
                Watched::Event => self.session.woken(),
                Watched::Deadline => {
                    cleanup.delete_now().await;
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
        let deadline = req.wait.deadline();
        let mut taken: Vec<Granted> = Vec::new();
        for _ in 0..req.permits {
            match self.acquire_one(req.name, deadline).await {
                Ok(Some(g)) => taken.push(g),
                other => {
                    let nodes: Vec<String> = taken.drain(..).filter_map(|g| g.node).collect();
                    for node in &nodes {
                        if let Err(e) = self.drop_hold(req.name, 0, Some(node)).await {
                            tracing::warn!(
                                semaphore = req.name,
                                "polylock: giving back permit key {node} of '{}' after a failed \
                                 acquire failed ({e}); it ends with its lease",
                                req.name
                            );
                        }
                    }
                    return other.map(|_| None);
                }
            }
        }
        Ok(Some(taken))
    }

    async fn release(&self, name: &str, _permits: u32, nodes: &[String]) -> Result<()> {
        for node in nodes {
            self.drop_hold(name, 0, Some(node)).await?;
        }
        Ok(())
    }

    async fn available(&self, name: &str) -> Result<i64> {
        let (count, keys, _) = self.look(name).await?;
        Ok((count - keys.len() as i64).max(0))
    }

    async fn drain(&self, name: &str) -> Result<(i64, Vec<Granted>)> {
        let mut taken = Vec::new();
        while let Some(g) = self.acquire_one(name, Wait::Never.deadline()).await? {
            taken.push(g);
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
                .take(count.max(0) as usize)
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
