//! The lease table (`?mode=table`): a row per lock in ShedLock's layout (PROTOCOL.md), taken by
//! one conditional statement when its lease has ended, renewed by the watchdog, released by its
//! holder. A ShedLock service (JDBC provider, database time) and polylock on the same table and
//! name exclude each other. It needs no session, so it works through transaction-mode poolers.
//!
//! `locked_by` is `<host>:<client id>:<owner>`, unique to the holder, so that a ShedLock process
//! on the same host cannot extend or release polylock's lease. Waiters wake by `LISTEN/NOTIFY`
//! on PostgreSQL (each of polylock's releases notifies) and retry with a growing pause (up to
//! 1 s) on MySQL, and on PostgreSQL too while the holder is not polylock (ShedLock notifies
//! nobody); every pause is bounded by the holder's remaining lease.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::backend::{
    AcquireRequest, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest, RenewItem,
    UnlockReply,
};
use crate::model::error::{Error, Result};
use crate::model::kind::{HoldMode, LockKind};
use crate::model::outcome::{Holder, LockStatus};
use crate::model::owner::OwnerId;

/// Longest lock name in ShedLock's table (`name VARCHAR(64)`).
pub(crate) const MAX_TABLE_NAME: usize = 64;

/// Check a lock name against the table's column.
pub(crate) fn validate_name(name: &str) -> Result<()> {
    let n = name.chars().count();
    if n > MAX_TABLE_NAME {
        return Err(Error::invalid(format!(
            "lock name is {n} characters long; the lease table's name column (ShedLock's layout) \
             holds at most {MAX_TABLE_NAME}"
        )));
    }
    Ok(())
}

/// A waiter without notification (MySQL; PostgreSQL pooled per transaction, where a `LISTEN`
/// stays on a server connection that goes back to the pool): it backs off, bounded by the
/// holder's lease.
pub(crate) struct Backoff;

#[async_trait]
impl TableWaiter for Backoff {
    async fn wait(&mut self, max: Duration) {
        tokio::time::sleep(max).await;
    }

    fn notified(&self) -> bool {
        false
    }
}

/// Waits for a release of one name.
#[async_trait]
pub(crate) trait TableWaiter: Send {
    /// Wait until a release of the name may have happened, at most `max`.
    async fn wait(&mut self, max: Duration);
    /// Whether releases notify (PostgreSQL): then a waiter need not back off.
    fn notified(&self) -> bool;
}

/// The statements of the lease table on one server.
#[async_trait]
pub(crate) trait TableDb: Send + Sync + 'static {
    /// Take the row of `name` if its lease has ended (or there is none), for `lease`, and draw a
    /// fencing token; `None` when another holder's lease runs.
    async fn take(&self, name: &str, locked_by: &str, lease: Duration) -> Result<Option<u64>>;
    /// Extend leases still held by their `locked_by`; one answer per item.
    async fn extend(&self, items: &[(Arc<str>, String)], lease: Duration) -> Result<Vec<bool>>;
    /// End the lease of `name` if `locked_by` holds it; true if it did.
    async fn give_back(&self, name: &str, locked_by: &str) -> Result<bool>;
    /// The holder of `name` and its remaining lease, if its lease runs.
    async fn holder(&self, name: &str) -> Result<Option<(String, Duration)>>;
    /// End the lease of `name` whoever holds it; true if it ran.
    async fn force(&self, name: &str) -> Result<bool>;
    /// A waiter for releases of `name`, listening before the caller's next try.
    async fn waiter(&self, name: &str) -> Result<Box<dyn TableWaiter>>;
}

/// The lease-table lock of one client.
pub(crate) struct TableLock {
    db: Arc<dyn TableDb>,
    /// `<host>:<client id>`.
    holder_prefix: String,
}

impl TableLock {
    pub(crate) fn new(db: Arc<dyn TableDb>, client_id: &str) -> TableLock {
        TableLock {
            db,
            holder_prefix: format!("{}:{client_id}", super::host_name()),
        }
    }

    fn locked_by(&self, owner: OwnerId) -> String {
        format!("{}:{owner}", self.holder_prefix)
    }
}

/// Whether `locked_by` is a polylock holder's (`<host>:<client uuid>:<owner>`), whose release
/// notifies waiters on PostgreSQL; a ShedLock holder's is its host name.
fn is_polylock_holder(locked_by: &str) -> bool {
    let mut parts = locked_by.rsplitn(3, ':');
    let (Some(owner), Some(client), Some(_host)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    owner.parse::<u64>().is_ok() && uuid::Uuid::parse_str(client).is_ok()
}

/// How finely a lease row's `lock_until` may be kept: ShedLock's tables (and MySQL's
/// `TIMESTAMP(3)`) keep milliseconds, truncated, so a lease may end on the server up to this much
/// before its length is up; the holder counts its lease as that much shorter.
const CLOCK_STEP: Duration = Duration::from_millis(1);

#[async_trait]
impl HoldOps for TableLock {
    async fn renew(&self, holds: &[RenewItem], lease: Duration) -> Result<Vec<bool>> {
        let items: Vec<(Arc<str>, String)> = holds
            .iter()
            .map(|h| (h.name.clone(), self.locked_by(h.owner)))
            .collect();
        self.db.extend(&items, lease).await
    }

    fn lease_margin(&self, _lease: Duration) -> Duration {
        CLOCK_STEP
    }

    async fn drop_hold(&self, name: &str, owner: OwnerId, _node: Option<&str>) -> Result<bool> {
        self.db.give_back(name, &self.locked_by(owner)).await
    }
}

#[async_trait]
impl LockOps for TableLock {
    fn kind(&self) -> LockKind {
        LockKind::Reentrant
    }

    fn reentry(&self) -> Reentry {
        Reentry::Client
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Renewable
    }

    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let locked_by = self.locked_by(req.owner);
        let deadline = req.wait.deadline();
        let mut waiter: Option<Box<dyn TableWaiter>> = None;
        let mut backoff = Duration::from_millis(5);
        loop {
            let sent = Instant::now();
            if let Some(token) = self.db.take(req.name, &locked_by, req.lease).await? {
                return Ok(Some(Granted {
                    token,
                    count: 1,
                    node: None,
                    gone: None,
                    valid_until: Some(sent + req.lease.saturating_sub(CLOCK_STEP)),
                }));
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            if waiter.is_none() {
                // Listen first, then try again: a release between the two is not missed.
                waiter = Some(self.db.waiter(req.name).await?);
                continue;
            }
            let w = waiter.as_mut().expect("waiter");
            let (holder, lease_left) = match self.db.holder(req.name).await? {
                Some(h) => h,
                None => continue, // released meanwhile
            };
            let mut pause = lease_left.min(req.max_sleep);
            if !w.notified() || !is_polylock_holder(&holder) {
                pause = pause.min(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
            if let Some(d) = deadline {
                pause = pause.min(d.saturating_duration_since(now));
            }
            w.wait(pause.max(Duration::from_millis(1))).await;
        }
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        Ok(
            match self
                .db
                .give_back(req.name, &self.locked_by(req.owner))
                .await?
            {
                true => UnlockReply::Freed,
                false => UnlockReply::NotHeld,
            },
        )
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        Ok(self.db.holder(name).await?.is_some())
    }

    async fn remaining_lease(&self, name: &str) -> Result<Option<Duration>> {
        Ok(self.db.holder(name).await?.map(|(_, left)| left))
    }

    async fn force_unlock(&self, name: &str) -> Result<bool> {
        self.db.force(name).await
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        let holder = self.db.holder(name).await?;
        Ok(LockStatus {
            name: name.to_string(),
            locked: holder.is_some(),
            mode: None,
            ttl: holder.as_ref().map(|(_, left)| *left),
            holders: holder
                .into_iter()
                .map(|(by, _)| Holder {
                    owner: by,
                    count: 1,
                    mode: HoldMode::Exclusive,
                    identity: None,
                })
                .collect(),
            waiters: Vec::new(),
            waiter_identities: Vec::new(),
            shared_with: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::is_polylock_holder;

    #[test]
    fn polylock_holders_are_told_from_shedlocks() {
        assert!(is_polylock_holder(
            "web-1:5b0b7c4e-6a59-4f5e-9c43-9b0d6f3a2e11:42"
        ));
        assert!(is_polylock_holder(
            "host:with:colons:5b0b7c4e-6a59-4f5e-9c43-9b0d6f3a2e11:7"
        ));
        assert!(!is_polylock_holder("shedlock-host"));
        assert!(!is_polylock_holder("web-1:not-a-uuid:42"));
        assert!(!is_polylock_holder(
            "web-1:5b0b7c4e-6a59-4f5e-9c43-9b0d6f3a2e11:x"
        ));
    }
}
