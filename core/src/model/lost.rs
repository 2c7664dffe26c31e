//! The lost signal: how a holder learns that its hold ended without its release.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::error::{Error, ErrorKind};
use super::kind::HoldKind;
use super::owner::OwnerId;

/// Why a hold was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LostReason {
    /// A fixed lease ran out before the owner released the lock.
    Expired,
    /// The owner's entry disappeared from the server (deleted, force-unlocked, expired elsewhere).
    Deleted,
    /// Renewals failed (server unreachable) until the lease had run out.
    RenewalFailed,
    /// The backend session that owned the lock ended (ZooKeeper).
    SessionExpired,
    /// The client was closed while the lock was held.
    ClientClosed,
}

impl LostReason {
    /// Every reason.
    pub const ALL: [LostReason; 5] = [
        LostReason::Expired,
        LostReason::Deleted,
        LostReason::RenewalFailed,
        LostReason::SessionExpired,
        LostReason::ClientClosed,
    ];

    /// The stable upper-case name (`DELETED`): the contract's word for the reason, which the
    /// bindings carry (Python's `LostEvent.reason`, Java's `LostReason`, C's `POLYLOCK_LOST_*`)
    /// and the CLI prints when a hold is lost.
    pub fn name(self) -> &'static str {
        match self {
            LostReason::Expired => "EXPIRED",
            LostReason::Deleted => "DELETED",
            LostReason::RenewalFailed => "RENEWAL_FAILED",
            LostReason::SessionExpired => "SESSION_EXPIRED",
            LostReason::ClientClosed => "CLIENT_CLOSED",
        }
    }

    /// The stable number of the reason (1 to 5, in [`LostReason::ALL`]'s order; 0 is "not
    /// lost" in the C ABI).
    pub fn number(self) -> u32 {
        match self {
            LostReason::Expired => 1,
            LostReason::Deleted => 2,
            LostReason::RenewalFailed => 3,
            LostReason::SessionExpired => 4,
            LostReason::ClientClosed => 5,
        }
    }

    /// The `LockLost` error of lock `name` lost for this reason: what a release of the lost hold
    /// reports, and what bindings hand to their lost listeners.
    pub fn error(self, name: &str) -> Error {
        self.error_for(HoldKind::Lock(super::kind::LockKind::Reentrant), name)
    }

    /// The `LockLost` error of a hold of `kind` on `name` lost for this reason.
    pub fn error_for(self, kind: HoldKind, name: &str) -> Error {
        let what = match kind {
            HoldKind::Permit => format!("a permit of semaphore '{name}'"),
            HoldKind::Lock(_) => format!("lock '{name}'"),
        };
        Error::new(
            ErrorKind::LockLost,
            format!(
                "{what} was lost: {}; the protected work may have overlapped with another holder",
                self.describe()
            ),
        )
    }

    /// A sentence for logs and error messages.
    pub fn describe(self) -> &'static str {
        match self {
            LostReason::Expired => "its lease expired before it was released",
            LostReason::Deleted => {
                "its entry was removed from the server (deleted, force-unlocked or expired)"
            }
            LostReason::RenewalFailed => {
                "the server could not be reached to renew it before the lease ran out"
            }
            LostReason::SessionExpired => "the session that held it expired",
            LostReason::ClientClosed => "the client was closed while it was held",
        }
    }
}

/// One lost hold, as announced on [`Client::lost_events`](crate::Client::lost_events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostEvent {
    /// The lock's name.
    pub name: Arc<str>,
    /// What was held: a lock of some kind (a read and a write hold of one name are two holds), or a
    /// semaphore's permit.
    pub kind: HoldKind,
    /// The owner whose hold was lost.
    pub owner: OwnerId,
    /// Why.
    pub reason: LostReason,
}

/// The state of one hold, as seen through its [`LostSignal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldState {
    /// Still held.
    Held,
    /// Released by its owner.
    Released,
    /// Lost, for this reason.
    Lost(LostReason),
}

/// What a hold's [`LostSignal`]s follow: its state, and when a fixed lease ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tracked {
    pub(crate) state: HoldState,
    /// The end of a fixed lease, as far as the holder knows (measured from before the request
    /// that set it, so never later than the server's): nobody renews it, so the hold is lost
    /// from then on whether or not the client's timer has marked it yet.
    pub(crate) ends_at: Option<Instant>,
}

impl Tracked {
    pub(crate) fn ended(state: HoldState) -> Tracked {
        Tracked {
            state,
            ends_at: None,
        }
    }
}

/// Fires when a hold is lost. Cheap to clone; every clone sees the same hold.
#[derive(Debug, Clone)]
pub struct LostSignal {
    rx: watch::Receiver<Tracked>,
}

impl LostSignal {
    /// The hold's current state. A fixed lease reads as lost (`Expired`) from its end on, even
    /// in the moment before the client's timer marks it.
    pub fn state(&self) -> HoldState {
        let t = *self.rx.borrow();
        match t.ends_at {
            Some(end) if t.state == HoldState::Held && Instant::now() >= end => {
                HoldState::Lost(LostReason::Expired)
            }
            _ => t.state,
        }
    }

    /// True once the hold is lost.
    pub fn is_lost(&self) -> bool {
        matches!(self.state(), HoldState::Lost(_))
    }

    /// Wait until the hold ends: `Some(reason)` if it was lost, `None` if it was released
    /// normally (or the client that tracked it is gone). A fixed lease's end wakes it when the
    /// client's timer marks the hold lost, a moment after [`state`](Self::state) says so.
    pub async fn wait(&self) -> Option<LostReason> {
        let mut rx = self.rx.clone();
        let end = rx
            .wait_for(|t| t.state != HoldState::Held)
            .await
            .map(|t| t.state);
        match end {
            Ok(HoldState::Lost(r)) => Some(r),
            _ => None,
        }
    }
}

impl LostSignal {
    /// A signal that follows `rx`.
    pub(crate) fn new(rx: watch::Receiver<Tracked>) -> LostSignal {
        LostSignal { rx }
    }

    /// The signal of a hold that ended, lost for `reason`, and is no longer followed.
    pub(crate) fn ended(reason: LostReason) -> LostSignal {
        // The sender goes at once: a closed channel still reads its last value, and a wait
        // returns on it (the state is already not `Held`).
        LostSignal::new(watch::channel(Tracked::ended(HoldState::Lost(reason))).1)
    }

    /// When the hold's fixed lease ends, if it has one and is still held.
    pub(crate) fn ends_at(&self) -> Option<Instant> {
        let t = *self.rx.borrow();
        t.ends_at.filter(|_| t.state == HoldState::Held)
    }
}
