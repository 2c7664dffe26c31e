//! The one lock handle of every lock-like primitive: one lock of some kind on one server, or a
//! multi-lock over several. Bindings serve every kind through it with no lock logic of their own.

use std::sync::Arc;
use std::time::Duration;

use super::multi::Multi;
use super::one::OneLock;
use crate::backend::UnlockReply;
use crate::hold::ClientCore;
use crate::model::error::Result;
use crate::model::kind::LockKind;
use crate::model::lost::{HoldState, LostReason, LostSignal};
use crate::model::options::AcquireOptions;
use crate::model::outcome::{Acquired, LeaseChange, LockStatus, Released, RemainingLease};
use crate::model::owner::OwnerId;

/// A handle on a lock: one named lock of one kind (a reentrant lock, a mutex, a half of a
/// read-write lock, a fair lock), or a multi-lock over several (see [`MultiLock`]). Every
/// operation names its owner explicitly.
///
/// Handles are cheap: two handles with the same name, kind and owner are the same hold.
#[derive(Clone, Debug)]
pub struct Lock(pub(crate) Inner);

#[derive(Clone, Debug)]
pub(crate) enum Inner {
    One(OneLock),
    Many(Arc<Multi>),
}

macro_rules! each {
    ($self:ident, $l:ident => $e:expr) => {
        match &$self.0 {
            Inner::One($l) => $e,
            Inner::Many($l) => $e,
        }
    };
}

impl Lock {
    pub(crate) fn new(core: Arc<ClientCore>, name: &str, kind: LockKind) -> Result<Lock> {
        Ok(Lock(Inner::One(OneLock::new(core, name, kind)?)))
    }

    /// The lock's name (a multi-lock's: its members' names joined by `+`, in its order).
    pub fn name(&self) -> &str {
        each!(self, l => l.name())
    }

    /// The lock's kind (a multi-lock reports `Reentrant`; see [`Lock::members`]).
    pub fn kind(&self) -> LockKind {
        match &self.0 {
            Inner::One(l) => l.kind(),
            Inner::Many(_) => LockKind::Reentrant,
        }
    }

    /// The kind's name as every binding shows it: `reentrant`, `mutex`, `read`, `write`, `fair`,
    /// or `multi` for a multi-lock.
    pub fn kind_name(&self) -> &'static str {
        match &self.0 {
            Inner::One(l) => l.kind().name(),
            Inner::Many(_) => "multi",
        }
    }

    /// The locks of a multi-lock, in the order it takes them (one lock: itself).
    pub fn members(&self) -> Vec<Lock> {
        match &self.0 {
            Inner::One(_) => vec![self.clone()],
            Inner::Many(m) => m
                .members()
                .iter()
                .map(|one| Lock(Inner::One(one.clone())))
                .collect(),
        }
    }

    /// True for a multi-lock.
    pub fn is_multi(&self) -> bool {
        matches!(self.0, Inner::Many(_))
    }

    /// True for a non-reentrant mutex (see [`Client::mutex`](crate::Client::mutex)).
    pub fn is_mutex(&self) -> bool {
        each!(self, l => l.is_mutex())
    }

    /// See [`Client::queues_waiters`](crate::Client::queues_waiters).
    pub fn queues_waiters(&self) -> bool {
        each!(self, l => l.queues_waiters())
    }

    /// Acquire (or re-enter) the lock for `owner`. Fails with `Timeout` when the wait runs out,
    /// with `LockLost` when `owner` still has a hold that was lost (release it first; a hold
    /// whose fixed lease ran out is over instead, and this acquire takes the lock anew), and, for
    /// the write half of a read-write lock, with `UpgradeNotSupported` when `owner` holds the
    /// read half. A multi-lock takes all its members or none within the one wait.
    ///
    /// Cancel-safe: dropping the future leaves no hold behind. Closing the client ends the wait
    /// with `InvalidState`.
    pub async fn acquire(&self, owner: OwnerId, options: AcquireOptions) -> Result<Acquired> {
        each!(self, l => l.acquire(owner, options).await)
    }

    /// Try once without waiting; `Ok(None)` if another owner holds the lock.
    pub async fn try_acquire(
        &self,
        owner: OwnerId,
        lease: Option<Duration>,
    ) -> Result<Option<Acquired>> {
        each!(self, l => l.try_acquire(owner, lease).await)
    }

    #[doc(hidden)]
    /// [`try_acquire`](Lock::try_acquire) as a binding's fast path before a wait: a refusal is
    /// not recorded (no `not_acquired` in the metrics, no debug event), since the wait that
    /// follows records the acquire; a grant or an error is, as any acquire's.
    pub async fn try_acquire_before_wait(
        &self,
        owner: OwnerId,
        lease: Option<Duration>,
    ) -> Result<Option<Acquired>> {
        match &self.0 {
            Inner::One(l) => l.try_acquire_before_wait(owner, lease).await,
            Inner::Many(l) => l.try_acquire(owner, lease).await,
        }
    }

    /// Release one hold of `owner`. The last release frees the lock and wakes a waiter.
    ///
    /// `NotOwner` if `owner` holds nothing; `LockLost` if its hold was lost (the hold is then
    /// forgotten, so a second release says `NotOwner`).
    pub async fn release(&self, owner: OwnerId) -> Result<Released> {
        each!(self, l => l.release(owner).await)
    }

    /// Whether anybody holds the lock (asks the server). For a read or write half: whether the
    /// read-write lock is held in that mode. For a multi-lock: whether every member is held.
    pub async fn is_locked(&self) -> Result<bool> {
        each!(self, l => l.is_locked().await)
    }

    /// Whether `owner` holds the lock (asks the server; a lost hold is not held).
    pub async fn is_held_by(&self, owner: OwnerId) -> Result<bool> {
        Ok(self.hold_count(owner).await? > 0)
    }

    /// How many times `owner` holds the lock (0 if not at all, or if its hold was lost).
    pub async fn hold_count(&self, owner: OwnerId) -> Result<u32> {
        each!(self, l => l.hold_count(owner).await)
    }

    /// Remaining lease of whoever holds the lock: [`RemainingLease::NotHeld`],
    /// [`RemainingLease::NoExpiry`] (ZooKeeper, SQL session locks), or
    /// [`RemainingLease::Expires`] with the time left. A multi-lock is not held unless every
    /// member is, and then ends with its first member.
    pub async fn remaining_lease(&self) -> Result<RemainingLease> {
        each!(self, l => l.remaining_lease().await)
    }

    /// Change the fixed lease of `owner`'s hold (Redis, the SQL lease table: the backends with
    /// leases): add to it, set it, or start it again at its original length
    /// ([`LeaseChange`]). Returns the lease from now. `NotOwner` without a hold, `LockLost` when
    /// it was lost or ran out first, `InvalidState` for a hold that the watchdog or a session
    /// keeps. A multi-lock changes every member's.
    pub async fn extend_lease(&self, owner: OwnerId, change: LeaseChange) -> Result<Duration> {
        each!(self, l => l.extend_lease(owner, change).await)
    }

    /// Delete the lock whoever holds it and wake its waiters; true if it was held. Holds of this
    /// client on it are lost at once.
    pub async fn force_unlock(&self) -> Result<bool> {
        each!(self, l => l.force_unlock().await)
    }

    /// Whether any owner of this client holds the lock (local, no round trip; Curator's
    /// `isAcquiredInThisProcess`).
    pub fn is_held_locally(&self) -> bool {
        each!(self, l => l.is_held_locally())
    }

    /// The fencing token of `owner`'s current hold, if it holds the lock (local, no round trip).
    /// A multi-lock's is the largest of its members'; each member's stays readable through
    /// [`Lock::members`].
    pub fn fencing_token(&self, owner: OwnerId) -> Option<u64> {
        each!(self, l => l.fencing_token(owner))
    }

    /// The lost signal of `owner`'s current hold, if any (local). A multi-lock's fires when any
    /// member's hold is lost.
    pub fn lost_signal(&self, owner: OwnerId) -> Option<LostSignal> {
        each!(self, l => l.lost_signal(owner))
    }

    /// Whether `owner` has a hold of the lock, kept or lost and not yet released (local); for a
    /// multi-lock, a hold of every member.
    pub fn has_hold(&self, owner: OwnerId) -> bool {
        self.members()
            .iter()
            .all(|m| m.lost_signal(owner).is_some())
    }

    /// True if `owner`'s hold was lost and not yet released (local); for a multi-lock, a hold of
    /// every member, one of them lost. Read from the members' own signals: a multi-lock's
    /// [`Lock::lost_signal`] is made afresh per call and says "held" until its task has looked
    /// at them.
    pub fn is_lost(&self, owner: OwnerId) -> bool {
        let signals: Option<Vec<LostSignal>> = self
            .members()
            .iter()
            .map(|m| m.lost_signal(owner))
            .collect();
        signals.is_some_and(|s| s.iter().any(|s| s.is_lost()))
    }

    /// Why `owner`'s hold was lost (a multi-lock: the first member's that was), or `None` while
    /// it is not lost (held, or not held at all). Local; a lost hold stays lost until released.
    pub fn lost_reason(&self, owner: OwnerId) -> Option<LostReason> {
        self.members()
            .iter()
            .find_map(|m| match m.lost_signal(owner).map(|s| s.state()) {
                Some(HoldState::Lost(r)) => Some(r),
                _ => None,
            })
    }

    /// The server's view of the lock: mode, holders with counts, the remaining lease, and the
    /// contenders queued behind (ZooKeeper, fair locks).
    pub async fn status(&self) -> Result<LockStatus> {
        each!(self, l => l.status().await)
    }

    #[doc(hidden)]
    /// Run the release script once for `owner`, who counts `expected` holds, as a first attempt
    /// or as the retry after a lost reply (tests of retried releases on Redis). Returns the raw
    /// reply and leaves the client's own count alone.
    pub async fn release_attempt(
        &self,
        owner: OwnerId,
        expected: u32,
        retry: bool,
    ) -> Result<UnlockReply> {
        match &self.0 {
            Inner::One(l) => l.release_attempt(owner, expected, retry).await,
            Inner::Many(_) => Err(crate::model::error::Error::unsupported(
                "release attempts are a Redis test hook of single locks",
            )),
        }
    }
}

/// A multi-lock over several locks: all of them or none, even on different clients and servers
/// (Redis and ZooKeeper together), with the semantics of Redisson's `RedissonMultiLock` and
/// Curator's `InterProcessMultiLock`. Members are taken in one canonical order (by name, then
/// server, then kind), so two multi-locks over overlapping sets never deadlock.
///
/// `MultiLock::new(vec![a, b])` gives a [`Lock`] that every lock operation accepts. It is
/// reentrant per owner as its members are (a mutex member is not). Losing any member fires its
/// lost signal.
#[derive(Debug)]
pub struct MultiLock;

impl MultiLock {
    /// A multi-lock over `locks` (multi-locks among them are flattened into their members).
    /// `InvalidArgument` when there is none, or the same lock is given twice.
    #[allow(clippy::new_ret_no_self)] // a multi-lock is used as a Lock, like every lock kind
    pub fn new(locks: Vec<Lock>) -> Result<Lock> {
        let mut members: Vec<OneLock> = Vec::new();
        for l in locks {
            match l.0 {
                Inner::One(one) => members.push(one),
                Inner::Many(m) => members.extend(m.members().iter().cloned()),
            }
        }
        Ok(Lock(Inner::Many(Arc::new(Multi::new(members)?))))
    }
}
