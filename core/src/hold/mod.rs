//! Holds, reentrancy counts, the watchdog and the lost signal: written once, shared by every
//! primitive that holds something on a server.
//!
//! Each client keeps a registry of the holds its owners have, keyed by lock name, kind and owner.
//! One watchdog task per client renews every watchdog-kept hold in batches every third of the
//! lease. A hold is *lost* when a renewal finds it gone, when renewals keep failing until the
//! lease has run out, when a fixed lease ends before the owner released it, or when the session
//! that held it ends. Then its [`LostSignal`] fires, queries say "not held", and the next release
//! returns `LockLost`.

mod client_core;
pub(crate) mod gate;
pub(crate) mod watchdog;

// foldhash: seeded at random per process (colliding lock names cannot be prepared in advance)
// and several times faster than SipHash on the short keys of every acquire and release.
use foldhash::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, watch};

use crate::model::lost::HoldState as State;

use crate::metrics::HoldTrack;
use crate::model::kind::HoldKind;
use crate::model::lost::{HoldState, LostEvent, LostReason, LostSignal, Tracked};
use crate::model::owner::OwnerId;

pub(crate) use client_core::ClientCore;

/// How a hold's lease is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseMode {
    /// Renewed by the watchdog with the client's watchdog timeout.
    Watchdog,
    /// A fixed lease of this length; nobody renews it.
    Fixed(Duration),
    /// Held while the backend session lives (ZooKeeper); lost when it expires.
    Session,
}

pub(crate) struct Hold {
    pub(crate) token: u64,
    pub(crate) count: u32,
    pub(crate) lease: LeaseMode,
    /// When the lease ends as far as this client knows (conservative: measured from before the
    /// request that set it).
    pub(crate) deadline: Instant,
    pub(crate) lost: Option<LostReason>,
    /// A release that may free the lock is in flight (a renewal that finds the hold gone is then
    /// not a loss), or, where the client counts re-entries, an earlier release may have been
    /// applied without its answer reaching us.
    pub(crate) releasing: bool,
    /// The holder's node (ZooKeeper).
    pub(crate) node: Option<String>,
    state: watch::Sender<Tracked>,
    events: broadcast::Sender<LostEvent>,
    /// Its metrics: the holds gauge, and the hold time when it is dropped.
    track: HoldTrack,
}

impl Hold {
    pub(crate) fn new(
        holds: &Holds,
        token: u64,
        count: u32,
        lease: LeaseMode,
        deadline: Instant,
        node: Option<String>,
        track: HoldTrack,
    ) -> Hold {
        Hold {
            token,
            count,
            lease,
            deadline,
            lost: None,
            releasing: false,
            node,
            state: watch::Sender::new(Tracked {
                state: HoldState::Held,
                ends_at: fixed_end(lease, deadline),
            }),
            events: holds.events.clone(),
            track,
        }
    }

    pub(crate) fn signal(&self) -> LostSignal {
        LostSignal::new(self.state.subscribe())
    }

    pub(crate) fn mark_lost(&mut self, key: &HoldKey, reason: LostReason) {
        if self.lost.is_some() {
            return;
        }
        let (name, kind, owner) = key;
        tracing::warn!(
            lock = &**name,
            kind = kind.word(),
            owner,
            "polylock: lock lost: {}",
            reason.describe()
        );
        self.lost = Some(reason);
        self.track.lost(reason);
        // The event goes out before the signal wakes its waiters, so whoever the signal wakes
        // finds the event already sent. Nobody listening is fine: bindings subscribe only when
        // they have callbacks.
        let _ = self.events.send(LostEvent {
            name: name.clone(),
            kind: *kind,
            owner: *owner,
            reason,
        });
        self.state
            .send_replace(Tracked::ended(HoldState::Lost(reason)));
    }

    pub(crate) fn mark_released(&self) {
        // Nobody holds a signal of it: nobody to tell (the released hold is forgotten, so none
        // can subscribe later), and telling nobody still takes the channel's locks.
        if self.state.receiver_count() > 0 {
            self.state.send_replace(Tracked::ended(HoldState::Released));
        }
    }

    /// A new lease: `deadline` is when it ends, by `lease` (a fixed lease's end is also what
    /// its lost signals read).
    pub(crate) fn set_lease(&mut self, lease: LeaseMode, deadline: Instant) {
        self.lease = lease;
        self.deadline = deadline;
        let end = fixed_end(lease, deadline);
        self.state.send_if_modified(|t| {
            let changed = t.state == HoldState::Held && t.ends_at != end;
            if changed {
                t.ends_at = end;
            }
            changed
        });
    }
}

/// The end of a lease that nobody renews.
fn fixed_end(lease: LeaseMode, deadline: Instant) -> Option<Instant> {
    matches!(lease, LeaseMode::Fixed(_)).then_some(deadline)
}

/// A hold is one owner's hold of one kind of lock (or one permit) on one name.
pub(crate) type HoldKey = (Arc<str>, HoldKind, OwnerId);

/// Whether `key` is a hold of the primitive `name` of `kind` (any owner).
pub(crate) fn is_hold_of(key: &HoldKey, name: &str, kind: HoldKind) -> bool {
    *key.0 == *name && key.1 == kind
}

/// The holds of one client.
pub(crate) struct Holds {
    map: Mutex<HashMap<HoldKey, Hold>>,
    events: broadcast::Sender<LostEvent>,
}

impl Default for Holds {
    fn default() -> Holds {
        Holds {
            map: Mutex::default(),
            events: broadcast::Sender::new(1024),
        }
    }
}

impl Holds {
    pub(crate) fn lost_events(&self) -> broadcast::Receiver<LostEvent> {
        self.events.subscribe()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<HoldKey, Hold>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Mark as lost every hold whose lease has ended; returns the earliest deadline left.
    pub(crate) fn expire(&self, now: Instant) -> Option<Instant> {
        let mut map = self.lock();
        let mut earliest: Option<Instant> = None;
        for (key, hold) in map.iter_mut() {
            if hold.lost.is_some() || hold.lease == LeaseMode::Session {
                continue;
            }
            if hold.deadline <= now {
                let reason = match hold.lease {
                    LeaseMode::Fixed(_) => LostReason::Expired,
                    _ => LostReason::RenewalFailed,
                };
                hold.mark_lost(key, reason);
            } else {
                earliest = Some(earliest.map_or(hold.deadline, |e| e.min(hold.deadline)));
            }
        }
        earliest
    }

    /// Mark every hold kept by a session as lost (the session ended).
    pub(crate) fn session_lost(&self) {
        let mut map = self.lock();
        for (key, hold) in map.iter_mut() {
            if hold.lease == LeaseMode::Session {
                hold.mark_lost(key, LostReason::SessionExpired);
            }
        }
    }
}

/// Declare the hold `key` lost when `gone` (the backend's watch on it) tells so, unless its owner
/// released it (or is releasing it) meanwhile, or it is another hold by then (another token).
pub(crate) fn watch_gone(
    core: &Arc<ClientCore>,
    key: HoldKey,
    token: u64,
    gone: crate::backend::Gone,
) {
    let core = Arc::downgrade(core);
    let declare = move || {
        let Some(core) = core.upgrade() else {
            return;
        };
        let mut map = core.holds.lock();
        if let Some(h) = map.get_mut(&key) {
            if h.token == token && h.lost.is_none() && !h.releasing {
                h.mark_lost(&key, LostReason::Deleted);
            }
        }
    };
    match gone {
        crate::backend::Gone::Watch(watch) => {
            crate::runtime::handle().spawn(async move {
                if watch.await {
                    declare();
                }
            });
        }
        crate::backend::Gone::Notice(notice) => notice.on_gone(Box::new(declare)),
    }
}

/// A lost signal that fires when any of `signals` fires (the hold of a multi-lock ends with the
/// first of its members to be lost), and reports "released" once all of them were released. It
/// starts in the members' present state (a member already lost makes it lost at once), and the
/// task that follows the members ends when they end or when nobody listens any more.
pub(crate) fn any_lost(signals: Vec<LostSignal>) -> LostSignal {
    let now = signals
        .iter()
        .map(|s| s.state())
        .fold(State::Released, |acc, s| match (acc, s) {
            (State::Lost(r), _) | (_, State::Lost(r)) => State::Lost(r),
            (State::Held, _) | (_, State::Held) => State::Held,
            _ => State::Released,
        });
    // The first fixed lease to end ends the multi-lock's hold.
    let ends_at = signals.iter().filter_map(LostSignal::ends_at).min();
    let (tx, rx) = watch::channel(Tracked {
        state: now,
        ends_at: ends_at.filter(|_| now == State::Held),
    });
    if now != State::Held {
        return LostSignal::new(rx);
    }
    crate::runtime::handle().spawn(async move {
        let mut pending: Vec<_> = signals
            .into_iter()
            .map(|s| Box::pin(async move { s.wait().await }))
            .collect();
        while !pending.is_empty() {
            let (reason, _, rest) = tokio::select! {
                first = futures_select_all(pending) => first,
                _ = tx.closed() => return,
            };
            if let Some(reason) = reason {
                tx.send_replace(Tracked::ended(State::Lost(reason)));
                return;
            }
            pending = rest;
        }
        tx.send_replace(Tracked::ended(State::Released));
    });
    LostSignal::new(rx)
}

/// The first of several futures to finish, with its index and the others (a tiny `select_all`).
async fn futures_select_all<F: std::future::Future + Unpin>(
    mut futures: Vec<F>,
) -> (F::Output, usize, Vec<F>) {
    let (out, i) = std::future::poll_fn(|cx| {
        for (i, f) in futures.iter_mut().enumerate() {
            if let std::task::Poll::Ready(out) = std::pin::Pin::new(f).poll(cx) {
                return std::task::Poll::Ready((out, i));
            }
        }
        std::task::Poll::Pending
    })
    .await;
    drop(futures.remove(i));
    (out, i, futures)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(holds: &Holds, lease: LeaseMode, deadline: Instant) -> Hold {
        let metrics = crate::metrics::Metrics::register("hold-test", Vec::new());
        let track = metrics.track(crate::metrics::Prim::Lock, &Arc::from("h"));
        Hold::new(holds, 1, 1, lease, deadline, None, track.hold(1))
    }

    #[test]
    fn a_fixed_lease_reads_lost_from_its_end_without_a_timer() {
        let holds = Holds::default();
        let past = Instant::now() - Duration::from_millis(1);
        let fixed = hold(&holds, LeaseMode::Fixed(Duration::from_secs(1)), past);
        assert_eq!(fixed.signal().state(), State::Lost(LostReason::Expired));
        // Only fixed leases: a watchdog-kept hold past its deadline waits for the watchdog.
        let kept = hold(&holds, LeaseMode::Watchdog, past);
        assert_eq!(kept.signal().state(), State::Held);
        // A new fixed lease moves the end; a release ends it for good.
        let mut renewed = hold(&holds, LeaseMode::Fixed(Duration::from_secs(1)), past);
        let signal = renewed.signal();
        let later = Instant::now() + Duration::from_secs(60);
        renewed.set_lease(LeaseMode::Fixed(Duration::from_secs(60)), later);
        assert_eq!(signal.state(), State::Held);
        renewed.mark_released();
        assert_eq!(signal.state(), State::Released);
        // A multi-lock's signal ends with its first member's fixed lease.
        let soon = hold(&holds, LeaseMode::Fixed(Duration::from_secs(1)), past);
        let _rt = crate::runtime::handle().enter();
        let any = any_lost(vec![kept.signal(), soon.signal()]);
        assert_eq!(any.state(), State::Lost(LostReason::Expired));
    }
}
