//! Curator's `InterProcessSemaphoreMutex`: a semaphore of one lease. Not reentrant; any owner of
//! the client may release it.
//!
//! | node | role |
//! |------|------|
//! | `<path>/locks/_c_<uuid>-lock-<seq>` | the internal mutex that serialises acquirers |
//! | `<path>/leases/_c_<uuid>-lease-<seq>` | the one lease held (or being waited for) |

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::semaphore::{Leases, Permits};
use super::ZkSession;
use crate::backend::{
    AcquireRequest, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest, UnlockReply,
};
use crate::model::error::Result;
use crate::model::kind::{HoldMode, LockKind};
use crate::model::outcome::{Holder, LockStatus};
use crate::model::owner::OwnerId;

pub(crate) struct ZkSemaphoreMutex {
    session: Arc<ZkSession>,
    /// Curator's semaphore of one lease.
    leases: Leases,
}

impl ZkSemaphoreMutex {
    pub(crate) fn new(session: Arc<ZkSession>) -> ZkSemaphoreMutex {
        ZkSemaphoreMutex {
            leases: Leases::new(session.clone()),
            session,
        }
    }
}

#[async_trait]
impl HoldOps for ZkSemaphoreMutex {
    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        match node {
            Some(node) => self.session.release(name, node, false).await,
            None => Ok(true),
        }
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

    /// Curator's semaphore of one lease: take the internal mutex `<path>/locks`, add a lease
    /// under `<path>/leases`, wait (watching the leases) until ours is the only one, then let the
    /// internal mutex go. `Ok(None)` when the wait ran out.
    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let got = self
            .leases
            .acquire(req.name, 1, req.wait, req.max_sleep, Permits::Fixed(1))
            .await?;
        Ok(got.and_then(|mut g| g.pop()))
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

    async fn is_locked(&self, name: &str) -> Result<bool> {
        Ok(!self.leases.list(name).await?.is_empty())
    }

    async fn remaining_lease(&self, _name: &str) -> Result<Option<Duration>> {
        Ok(None)
    }

    /// Delete every lease; true if the mutex was held.
    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let leases = self.leases.list(name).await?;
        self.session
            .delete_all(&format!("{name}/leases"), &leases)
            .await
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        let mut names = self
            .leases
            .list(name)
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
                    identity: None,
                })
                .into_iter()
                .collect(),
            ttl: None,
            waiters: names.collect(),
            waiter_identities: Vec::new(),
            shared_with: Vec::new(),
        })
    }
}
