//! Holds, reentrancy counts, the watchdog and the lost signal: written once, shared by every
//! primitive that holds something on a server.
//!
//! Each client keeps a registry of the holds its owners have, keyed by lock name, kind and owner.
//! One watchdog task per client renews every watchdog-kept hold in batches every third of the
//! lease. A hold is *lost* when a renewal finds it gone, when renewals keep failing until the
//! lease has run out, when a fixed lease ends before the owner released it, or when the session
//! that held it ends. Then its [`LostSignal`] fires, queries say "not held", and the next release
//! returns `LockLost`.
//!
//! A fixed lease that ran out *ends* its hold (Redisson's `lock(lease)` without an unlock is a
//! normal way to use a lock): the hold is told lost (`Expired`) once and leaves the registry, at
//! the watchdog's next look or at its owner's next acquire of the name, which starts a new hold.
//! What is left of it is a small record among the client's last [`ENDED_KEPT`] ended holds, so
//! that the owner's late release (or query) still hears `LockLost`; a client's memory does not
//! grow with the names it ever held.

mod client_core;
pub(crate) mod gate;
pub(crate) mod watchdog;

// foldhash: seeded at random per process (colliding lock names cannot be prepared in advance)
// and several times faster than SipHash on the short keys of every acquire and release.
use foldhash::HashMap;
use std::collections::VecDeque;
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

    /// A fixed lease that ran out (or was found expired): the hold is over by design, whether
    /// or not its owner released it. Never true of a hold the watchdog or a session keeps.
    pub(crate) fn ended(&self, now: Instant) -> bool {
        matches!(self.lease, LeaseMode::Fixed(_))
            && (self.deadline <= now || self.lost == Some(LostReason::Expired))
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

impl EndedHold {
    fn of(hold: &Hold) -> EndedHold {
        EndedHold {
            reason: hold.lost.unwrap_or(LostReason::Expired),
            node: hold.node.clone(),
        }
    }
}

/// A hold is one owner's hold of one kind of lock (or one permit) on one name.
pub(crate) type HoldKey = (Arc<str>, HoldKind, OwnerId);

/// Whether `key` is a hold of the primitive `name` of `kind` (any owner).
pub(crate) fn is_hold_of(key: &HoldKey, name: &str, kind: HoldKind) -> bool {
    *key.0 == *name && key.1 == kind
}

/// Most ended holds one client remembers (see [`Ended`]). A record is about 200 bytes with its
/// name, so this bounds them near 200 KiB per client; an owner whose release comes after this
/// many later fixed leases of its client ran out hears `NotOwner` instead of `LockLost`.
pub(crate) const ENDED_KEPT: usize = 1024;

/// What a client remembers of a hold that ended without its owner's release (a fixed lease that
/// ran out) once the hold has left the registry.
#[derive(Debug, Clone)]
pub(crate) struct EndedHold {
    pub(crate) reason: LostReason,
    /// The permit's id (a semaphore's permit is released by id).
    pub(crate) node: Option<String>,
}

/// The last [`ENDED_KEPT`] ended holds, newest last. A record goes when its owner releases or
/// acquires that name again, or when newer ones push it out.
#[derive(Default)]
struct Ended {
    /// Each record with its place in `order`.
    by_key: HashMap<HoldKey, (EndedHold, u64)>,
    /// Keys by age; a record taken out of turn leaves its place here until it is passed over.
    order: VecDeque<(HoldKey, u64)>,
    next: u64,
}

impl Ended {
    fn insert(&mut self, key: HoldKey, hold: EndedHold) {
        let place = self.next;
        self.next += 1;
        self.by_key.insert(key.clone(), (hold, place));
        self.order.push_back((key, place));
        while self.by_key.len() > ENDED_KEPT {
            let Some((old, at)) = self.order.pop_front() else {
                break;
            };
            if self.by_key.get(&old).is_some_and(|e| e.1 == at) {
                self.by_key.remove(&old);
            }
        }
        // Places left by records taken out of turn: dropped once they outnumber the records.
        if self.order.len() > 2 * self.by_key.len().max(ENDED_KEPT) {
            let by_key = &self.by_key;
            self.order
                .retain(|(k, at)| by_key.get(k).is_some_and(|e| e.1 == *at));
        }
    }

    fn take(&mut self, key: &HoldKey) -> Option<EndedHold> {
        self.by_key.remove(key).map(|e| e.0)
    }
}

/// The holds of one client.
pub(crate) struct Holds {
    map: Mutex<HashMap<HoldKey, Hold>>,
    /// Taken after `map` when both are (never the other way round).
    ended: Mutex<Ended>,
    events: broadcast::Sender<LostEvent>,
}

impl Default for Holds {
    fn default() -> Holds {
        Holds {
            map: Mutex::default(),
            ended: Mutex::default(),
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

    fn ended_records(&self) -> MutexGuard<'_, Ended> {
        self.ended.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Mark as lost every hold whose lease has ended, and end the holds whose fixed lease ran out
    /// (told lost, then out of the registry, remembered among the ended), except those with an
    /// operation of their owner under way (`busy`: that acquire or release settles them).
    /// Returns the earliest deadline left.
    pub(crate) fn expire(&self, now: Instant, busy: impl Fn(&HoldKey) -> bool) -> Option<Instant> {
        let mut map = self.lock();
        let mut earliest: Option<Instant> = None;
        let mut over = Vec::new();
        for (key, hold) in map.iter_mut() {
            if hold.ended(now) {
                hold.mark_lost(key, LostReason::Expired);
                if !busy(key) {
                    over.push(key.clone());
                }
                continue;
            }
            if hold.lost.is_some() || hold.lease == LeaseMode::Session {
                continue;
            }
            if hold.deadline <= now {
                hold.mark_lost(key, LostReason::RenewalFailed);
            } else {
                earliest = Some(earliest.map_or(hold.deadline, |e| e.min(hold.deadline)));
            }
        }
        if !over.is_empty() {
            let mut ended = self.ended_records();
            for key in over {
                if let Some(h) = map.remove(&key) {
                    ended.insert(key, EndedHold::of(&h));
                }
            }
        }
        earliest
    }

    /// End the hold `key` in `map` if its fixed lease ran out (told lost once, out of the
    /// registry), and forget any ended hold of `key`: its owner is back for a new hold.
    pub(crate) fn end_for_new_hold(
        &self,
        map: &mut HashMap<HoldKey, Hold>,
        key: &HoldKey,
        now: Instant,
    ) {
        match map.get_mut(key) {
            Some(h) if h.ended(now) => {
                h.mark_lost(key, LostReason::Expired);
                map.remove(key);
            }
            Some(_) => return,
            None => {}
        }
        self.ended_records().take(key);
    }

    /// Take the record of the ended hold `key` (its owner's release hears of it, once).
    pub(crate) fn take_ended(&self, key: &HoldKey) -> Option<EndedHold> {
        self.ended_records().take(key)
    }

    /// Remember the ended hold `key` again (a release of it failed before it was told).
    pub(crate) fn keep_ended(&self, key: HoldKey, hold: EndedHold) {
        self.ended_records().insert(key, hold);
    }

    /// Why the ended hold `key` was lost, if it is remembered.
    pub(crate) fn ended_reason(&self, key: &HoldKey) -> Option<LostReason> {
        self.ended_records().by_key.get(key).map(|e| e.0.reason)
    }

    /// Take the record of the ended permit `id` of semaphore `name`.
    pub(crate) fn take_ended_permit(&self, name: &str, id: &str) -> Option<(HoldKey, EndedHold)> {
        let mut ended = self.ended_records();
        let key = ended
            .by_key
            .iter()
            .find(|(k, e)| is_hold_of(k, name, HoldKind::Permit) && e.0.node.as_deref() == Some(id))
            .map(|(k, _)| k.clone())?;
        ended.take(&key).map(|e| (key, e))
    }

    /// Forget every ended hold (the client closed).
    pub(crate) fn forget_ended(&self) {
        *self.ended_records() = Ended::default();
    }

    /// How many ended holds are remembered (tests).
    #[cfg(test)]
    fn ended_count(&self) -> usize {
        self.ended_records().by_key.len()
    }

    /// The holds in the registry, and the ended holds remembered (tests).
    pub(crate) fn sizes(&self) -> (usize, usize) {
        let held = self.lock().len();
        (held, self.ended_records().by_key.len())
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

#[cfg(test)]
mod ended_tests {
    use super::*;
    use crate::model::kind::LockKind;

    fn key(name: &str, owner: OwnerId) -> HoldKey {
        (Arc::from(name), HoldKind::Lock(LockKind::Reentrant), owner)
    }

    fn insert(holds: &Holds, key: &HoldKey, lease: LeaseMode, deadline: Instant) -> LostSignal {
        let metrics = crate::metrics::Metrics::register("ended-test", Vec::new());
        let track = metrics.track(crate::metrics::Prim::Lock, &key.0);
        let h = Hold::new(holds, 1, 1, lease, deadline, None, track.hold(1));
        let signal = h.signal();
        holds.lock().insert(key.clone(), h);
        signal
    }

    fn told(events: &mut broadcast::Receiver<LostEvent>) -> Vec<LostReason> {
        std::iter::from_fn(|| events.try_recv().ok())
            .map(|e| e.reason)
            .collect()
    }

    #[test]
    fn a_fixed_lease_that_ran_out_leaves_the_registry_told_once_and_remembered() {
        let holds = Holds::default();
        let mut events = holds.lost_events();
        let now = Instant::now();
        let fixed = LeaseMode::Fixed(Duration::from_millis(200));
        let over = key("over", 1);
        let busy = key("busy", 1);
        let running = key("running", 1);
        let kept = key("kept", 1);
        let s_over = insert(&holds, &over, fixed, now - Duration::from_millis(1));
        let s_busy = insert(&holds, &busy, fixed, now - Duration::from_millis(1));
        insert(&holds, &running, fixed, now + Duration::from_secs(60));
        insert(
            &holds,
            &kept,
            LeaseMode::Watchdog,
            now - Duration::from_millis(1),
        );
        let next = holds.expire(now, |k| *k == busy);
        assert_eq!(next, Some(now + Duration::from_secs(60)));
        assert_eq!(s_over.state(), State::Lost(LostReason::Expired));
        assert_eq!(s_busy.state(), State::Lost(LostReason::Expired));
        {
            let map = holds.lock();
            assert!(
                !map.contains_key(&over),
                "an ended hold leaves the registry"
            );
            assert!(map.contains_key(&busy), "its owner's operation settles it");
            assert!(map.contains_key(&running) && map.contains_key(&kept));
            assert_eq!(map[&kept].lost, Some(LostReason::RenewalFailed));
        }
        assert_eq!(holds.ended_reason(&over), Some(LostReason::Expired));
        // Told once, however often the watchdog looks again.
        holds.expire(now, |_| false);
        holds.expire(now, |_| false);
        let mut reasons = told(&mut events);
        reasons.sort_by_key(|r| r.number());
        assert_eq!(
            reasons,
            vec![
                LostReason::Expired,
                LostReason::Expired,
                LostReason::RenewalFailed
            ]
        );
        assert!(!holds.lock().contains_key(&busy));
        // The owner's release hears of it once.
        assert_eq!(
            holds.take_ended(&over).map(|e| e.reason),
            Some(LostReason::Expired)
        );
        assert!(holds.take_ended(&over).is_none());
        // The owner's next acquire forgets it.
        assert!(holds.ended_reason(&busy).is_some());
        holds.end_for_new_hold(&mut holds.lock(), &busy, now);
        assert!(holds.ended_reason(&busy).is_none());
        assert!(told(&mut events).is_empty());
    }

    #[test]
    fn an_owner_back_before_the_watchdog_ends_the_old_hold_itself() {
        let holds = Holds::default();
        let mut events = holds.lost_events();
        let now = Instant::now();
        let fixed = LeaseMode::Fixed(Duration::from_millis(200));
        let k = key("back", 3);
        let signal = insert(&holds, &k, fixed, now - Duration::from_millis(1));
        holds.end_for_new_hold(&mut holds.lock(), &k, now);
        assert!(holds.lock().is_empty());
        assert_eq!(signal.state(), State::Lost(LostReason::Expired));
        assert_eq!(told(&mut events), vec![LostReason::Expired]);
        assert!(holds.ended_reason(&k).is_none(), "nothing left to tell");
        // While the lease runs, the hold stays: the acquire is a re-entry.
        insert(&holds, &k, fixed, now + Duration::from_secs(60));
        holds.end_for_new_hold(&mut holds.lock(), &k, now);
        assert!(holds.lock().contains_key(&k));
        // A hold the watchdog keeps never ends so, even lost.
        let w = key("watchdog", 3);
        insert(
            &holds,
            &w,
            LeaseMode::Watchdog,
            now - Duration::from_secs(1),
        );
        holds
            .lock()
            .get_mut(&w)
            .unwrap()
            .mark_lost(&w, LostReason::Deleted);
        holds.end_for_new_hold(&mut holds.lock(), &w, now);
        assert_eq!(holds.lock()[&w].lost, Some(LostReason::Deleted));
    }

    #[test]
    fn the_ended_records_are_bounded() {
        let holds = Holds::default();
        let now = Instant::now();
        let fixed = LeaseMode::Fixed(Duration::from_millis(1));
        for i in 0..(3 * ENDED_KEPT as u64) {
            let k = key(&format!("n{i}"), i);
            insert(&holds, &k, fixed, now - Duration::from_millis(1));
            holds.expire(now, |_| false);
            // Every other one is taken out of turn (its owner released it).
            if i % 2 == 0 {
                assert!(holds.take_ended(&k).is_some());
            }
        }
        assert!(holds.lock().is_empty());
        assert_eq!(holds.ended_count(), ENDED_KEPT);
        let order = holds.ended_records().order.len();
        assert!(order <= 2 * ENDED_KEPT, "{order} places kept");
        // The newest are the ones kept.
        let newest = 3 * ENDED_KEPT as u64 - 1;
        assert!(holds
            .ended_reason(&key(&format!("n{newest}"), newest))
            .is_some());
        assert!(holds.ended_reason(&key("n1", 1)).is_none());
    }
}
