//! Lease renewal and the lost signal.
//!
//! Each client keeps a registry of the holds its owners have. One watchdog task per client renews
//! every watchdog-kept hold in batched script calls every third of the lease. A hold is *lost* when
//! a renewal finds the owner's field gone, when renewals keep failing until the lease has run out,
//! or when a fixed lease ends before the owner released it. Then its [`LostSignal`] fires, queries
//! say "not held", and the next release returns `LockLost`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::client::{Backend, ClientInner};
use crate::owner::OwnerId;

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
    /// The `LockLost` error of lock `name` lost for this reason: what a release of the lost hold
    /// reports, and what bindings hand to their lost listeners.
    pub fn error(self, name: &str) -> crate::Error {
        crate::Error::new(
            crate::ErrorKind::LockLost,
            format!(
                "lock '{name}' was lost: {}; the protected work may have overlapped with another holder",
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

/// Fires when a hold is lost. Cheap to clone; every clone sees the same hold.
#[derive(Debug, Clone)]
pub struct LostSignal {
    rx: watch::Receiver<HoldState>,
}

impl LostSignal {
    /// The hold's current state.
    pub fn state(&self) -> HoldState {
        *self.rx.borrow()
    }

    /// True once the hold is lost.
    pub fn is_lost(&self) -> bool {
        matches!(self.state(), HoldState::Lost(_))
    }

    /// Wait until the hold ends: `Some(reason)` if it was lost, `None` if it was released
    /// normally (or the client that tracked it is gone).
    pub async fn wait(&self) -> Option<LostReason> {
        let mut rx = self.rx.clone();
        let end = rx.wait_for(|s| *s != HoldState::Held).await.map(|s| *s);
        match end {
            Ok(HoldState::Lost(r)) => Some(r),
            _ => None,
        }
    }
}

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
    /// A release that may free the lock is in flight: a renewal that finds the field gone is
    /// then not a loss.
    pub(crate) releasing: bool,
    /// The holder's node (ZooKeeper).
    pub(crate) node: Option<String>,
    state: watch::Sender<HoldState>,
    events: broadcast::Sender<LostEvent>,
}

impl Hold {
    pub(crate) fn new(
        holds: &Holds,
        token: u64,
        count: u32,
        lease: LeaseMode,
        deadline: Instant,
    ) -> Hold {
        Hold {
            token,
            count,
            lease,
            deadline,
            lost: None,
            releasing: false,
            node: None,
            state: watch::Sender::new(HoldState::Held),
            events: holds.events.clone(),
        }
    }

    pub(crate) fn with_node(mut self, node: String) -> Hold {
        self.node = Some(node);
        self
    }

    pub(crate) fn signal(&self) -> LostSignal {
        LostSignal {
            rx: self.state.subscribe(),
        }
    }

    pub(crate) fn mark_lost(&mut self, name: &str, owner: OwnerId, reason: LostReason) {
        if self.lost.is_some() {
            return;
        }
        tracing::warn!(
            lock = name,
            owner,
            "polylock: lock lost: {}",
            reason.describe()
        );
        self.lost = Some(reason);
        self.state.send_replace(HoldState::Lost(reason));
        // Nobody listening is fine: bindings subscribe only when they have callbacks.
        let _ = self.events.send(LostEvent {
            name: Arc::from(name),
            owner,
            reason,
        });
    }

    pub(crate) fn mark_released(&self) {
        self.state.send_replace(HoldState::Released);
    }
}

pub(crate) type HoldKey = (Arc<str>, OwnerId);

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
    fn expire(&self, now: Instant) -> Option<Instant> {
        let mut map = self.lock();
        let mut earliest: Option<Instant> = None;
        for ((name, owner), hold) in map.iter_mut() {
            if hold.lost.is_some() || hold.lease == LeaseMode::Session {
                continue;
            }
            if hold.deadline <= now {
                let reason = match hold.lease {
                    LeaseMode::Fixed(_) => LostReason::Expired,
                    _ => LostReason::RenewalFailed,
                };
                hold.mark_lost(name, *owner, reason);
            } else {
                earliest = Some(earliest.map_or(hold.deadline, |e| e.min(hold.deadline)));
            }
        }
        earliest
    }
}

/// Wakes and stops the watchdog task of one client.
pub(crate) struct WatchdogHandle {
    pub(crate) wake: Notify,
    pub(crate) stop: CancellationToken,
}

impl WatchdogHandle {
    pub(crate) fn new() -> WatchdogHandle {
        WatchdogHandle {
            wake: Notify::new(),
            stop: CancellationToken::new(),
        }
    }
}

/// The watchdog loop of one client. Holds only a weak reference between rounds, so a dropped
/// client ends it.
pub(crate) async fn run(client: Weak<ClientInner>) {
    let Some(first) = client.upgrade() else {
        return;
    };
    let lease = first.options.watchdog_timeout;
    let interval = lease / 3;
    let retry = (lease / 10).max(Duration::from_millis(50)).min(interval);
    let handle = first.watchdog.clone();
    drop(first);
    let mut next_round = Instant::now() + interval;
    loop {
        let Some(inner) = client.upgrade() else {
            return;
        };
        if handle.stop.is_cancelled() {
            return;
        }
        let now = Instant::now();
        inner.holds.expire(now);
        if now >= next_round {
            let ok = renew_round(&inner, lease, interval).await;
            next_round = Instant::now() + if ok { interval } else { retry };
        }
        let wake_at = inner
            .holds
            .expire(Instant::now())
            .map_or(next_round, |d| d.min(next_round));
        let wake = handle.wake.notified();
        tokio::pin!(wake);
        wake.as_mut().enable();
        drop(inner);
        tokio::select! {
            _ = handle.stop.cancelled() => return,
            _ = tokio::time::sleep_until(wake_at.into()) => {}
            _ = wake => {}
        }
    }
}

/// Renew every live watchdog hold; false if any batch failed (the next round comes sooner).
async fn renew_round(inner: &Arc<ClientInner>, lease: Duration, interval: Duration) -> bool {
    // Each entry remembers the hold's fencing token: a reply that comes back after the hold was
    // released and the same owner took the lock again (a new hold under the same key) must not
    // judge the new hold. Blocked callers release on connections of their own, so a renewal may
    // run on the server between such a release and the next acquire.
    let batch: Vec<(HoldKey, String, u64)> = {
        let map = inner.holds.lock();
        map.iter()
            .filter(|(_, h)| h.lost.is_none() && h.lease == LeaseMode::Watchdog)
            .map(|(k, h)| (k.clone(), crate::owner::field(&inner.id, k.1), h.token))
            .collect()
    };
    let mut ok = true;
    for chunk in batch.chunks(crate::redis::RENEW_BATCH) {
        let sent_at = Instant::now();
        let locks: Vec<(Arc<str>, String)> = chunk
            .iter()
            .map(|((n, _), f, _)| (n.clone(), f.clone()))
            .collect();
        let limit = inner.options.command_timeout.min(interval);
        let result = match &inner.backend {
            Backend::Redis(r) => tokio::time::timeout(limit, r.renew(&locks, lease)).await,
            Backend::Zk(_) => return true, // sessions keep ZooKeeper locks; nothing to renew
        };
        match result {
            Ok(Ok(held)) => {
                let mut map = inner.holds.lock();
                for ((key, _, token), still) in chunk.iter().zip(held) {
                    let Some(hold) = map.get_mut(key) else {
                        continue;
                    };
                    if hold.token != *token
                        || hold.lost.is_some()
                        || hold.lease != LeaseMode::Watchdog
                    {
                        continue;
                    }
                    if still {
                        hold.deadline = hold.deadline.max(sent_at + lease);
                    } else if !hold.releasing {
                        hold.mark_lost(&key.0, key.1, LostReason::Deleted);
                    }
                }
            }
            Ok(Err(e)) => {
                tracing::warn!("polylock watchdog: renewal failed: {e}");
                ok = false;
            }
            Err(_) => {
                tracing::warn!("polylock watchdog: renewal got no answer within {limit:?}");
                ok = false;
            }
        }
    }
    ok
}
