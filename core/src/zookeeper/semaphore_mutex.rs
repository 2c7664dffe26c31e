//! Curator's `InterProcessSemaphoreMutex`: a semaphore of one lease. Not reentrant; any owner of
//! the client may release it.
//!
//! | node | role |
//! |------|------|
//! | `<path>/locks/_c_<uuid>-lock-<seq>` | the internal mutex that serialises acquirers |
//! | `<path>/leases/_c_<uuid>-lease-<seq>` | the one lease held (or being waited for) |

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::lock::{Queue, ZkLock};
use super::{map_err, wait_until, Cleanup, ZkSession};
use crate::backend::{
    AcquireRequest, Granted, LeaseSupport, LockOps, Reentry, ReleaseRequest, UnlockReply,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldMode, LockKind};
use crate::model::outcome::{Holder, LockStatus};
use crate::model::owner::OwnerId;

/// Marker of Curator's semaphore leases.
const LEASE_MARKER: &str = "-lease-";

pub(crate) struct ZkSemaphoreMutex {
    session: Arc<ZkSession>,
    /// The internal mutex at `<path>/locks`.
    internal: ZkLock,
}

impl ZkSemaphoreMutex {
    pub(crate) fn new(session: Arc<ZkSession>) -> ZkSemaphoreMutex {
        ZkSemaphoreMutex {
            internal: ZkLock::new(session.clone(), Queue::Mutex),
            session,
        }
    }

    /// Lease holders of the mutex at `path`.
    async fn leases(&self, path: &str) -> Result<Vec<String>> {
        let mut children = self
            .session
            .children(&format!("{path}/leases"), "list the semaphore's leases")
            .await?;
        children.retain(|c| c.contains(LEASE_MARKER));
        Ok(children)
    }
}

#[async_trait]
impl LockOps for ZkSemaphoreMutex {
    fn kind(&self) -> LockKind {
        LockKind::Mutex
    }

    fn reentry(&self) -> Reentry {
        Reentry::None
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Session
    }

    fn queues_waiters(&self) -> bool {
        true
    }

    /// Take the internal mutex `<path>/locks`, add a lease under `<path>/leases`, wait (watching
    /// the leases) until ours is the only one, then let the internal mutex go. `Ok(None)` when
    /// the wait ran out.
    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let path = req.name;
        let deadline = req.wait.deadline();
        let lock_path = format!("{path}/locks");
        let internal_req = AcquireRequest {
            name: &lock_path,
            write_node: None,
            ..*req
        };
        let Some(internal) = self.internal.acquire(&internal_req).await? else {
            return Ok(None);
        };
        // Let the internal mutex go however this ends (also when cancelled): in the background
        // once the lease is ours, before returning when the wait ran out.
        let mut internal = Cleanup {
            client: self.session.client()?,
            path: lock_path,
            uuid: String::new(),
            node: internal.node,
            armed: true,
        };
        let leases = format!("{path}/leases");
        let client = self.session.client()?;
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut cleanup = Cleanup {
            client: client.clone(),
            path: leases.clone(),
            uuid: uuid.clone(),
            node: None,
            armed: true,
        };
        let (node, token) = self
            .session
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
                return Ok(Some(Granted {
                    token,
                    count: 1,
                    gone: Some(self.session.watch_gone(&leases, &node)),
                    node: Some(format!("leases/{node}")),
                }));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) || !wait_until(watcher, deadline).await
            {
                cleanup.delete_now().await;
                internal.delete_now().await;
                return Ok(None);
            }
        }
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let node = req.node.unwrap_or_default();
        Ok(
            match self.session.release(req.name, node, req.retry).await? {
                true => UnlockReply::Freed,
                false => UnlockReply::NotHeld,
            },
        )
    }

    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        match node {
            Some(node) => self.session.release(name, node, false).await,
            None => Ok(true),
        }
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        Ok(!self.leases(name).await?.is_empty())
    }

    async fn remaining_lease(&self, _name: &str) -> Result<Option<Duration>> {
        Ok(None)
    }

    /// Delete every lease; true if the mutex was held.
    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let leases = self.leases(name).await?;
        self.session
            .delete_all(&format!("{name}/leases"), &leases)
            .await
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        let mut names = self
            .leases(name)
            .await?
            .into_iter()
            .map(|n| format!("leases/{n}"));
        let holder = names.next();
        Ok(LockStatus {
            name: name.to_string(),
            locked: holder.is_some(),
            mode: None,
            holders: holder
                .map(|owner| Holder {
                    owner,
                    count: 1,
                    mode: HoldMode::Exclusive,
                })
                .into_iter()
                .collect(),
            ttl: None,
            waiters: names.collect(),
        })
    }
}
