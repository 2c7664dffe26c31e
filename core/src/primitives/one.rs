//! One lock of one kind on one server: the reentrant lock, the mutex, either half of a read-write
//! lock, the fair lock. What differs between backends and kinds is asked of the kind's
//! [`LockOps`], never matched on. The public [`Lock`](super::lock::Lock) wraps it (or a
//! multi-lock of several).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::{
    AcquireRequest, LeaseSupport, LockOps, Reentry, ReleaseRequest, RenewItem, UnlockReply,
};
use crate::hold::gate::Entry;
use crate::hold::{is_hold_of, watch_gone, ClientCore, Hold, HoldKey, LeaseMode};
use crate::metrics::{Outcome, Prim, Track};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldKind, LockKind};
use crate::model::lost::{LostReason, LostSignal};
use crate::model::options::{check_duration, AcquireOptions, Wait, MAX_DURATION};
use crate::model::outcome::{Acquired, LeaseChange, LockStatus, Released, RemainingLease};
use crate::model::owner::OwnerId;

/// The hold of a non-reentrant mutex belongs to the whole client (Curator's
/// InterProcessSemaphoreMutex: any thread may release it), so it is kept under this owner.
const CLIENT_OWNER: OwnerId = u64::MAX;

/// One named lock of one kind. Every operation names its owner explicitly.
#[derive(Clone)]
pub(crate) struct OneLock {
    core: Arc<ClientCore>,
    name: Arc<str>,
    ops: Arc<dyn LockOps>,
    /// What the hold tells about its holder where the format has a place for it (an election
    /// candidate's identity).
    data: Option<Arc<str>>,
    /// Its metrics.
    track: Track,
}

impl std::fmt::Debug for OneLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneLock")
            .field("name", &self.name)
            .field("kind", &self.ops.kind())
            .finish()
    }
}

impl OneLock {
    /// A handle of `kind` on `name` (checked by the caller); `Unsupported` if the backend lacks
    /// that kind.
    pub(crate) fn new(core: Arc<ClientCore>, name: &str, kind: LockKind) -> Result<OneLock> {
        let ops = core.ops(kind)?;
        let name: Arc<str> = Arc::from(name);
        let track = core.metrics.track(Prim::of_lock(kind), &name);
        Ok(OneLock {
            core,
            name,
            ops,
            data: None,
            track,
        })
    }

    /// The same lock, its holds telling `data` about their holder.
    pub(crate) fn with_data(mut self, data: &str) -> OneLock {
        self.data = Some(Arc::from(data));
        self
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where a multi-lock takes this lock: by name, server, kind (the same in every process).
    pub(crate) fn order_key(&self) -> (&str, &str, LockKind) {
        (&self.name, &self.core.server, self.kind())
    }

    /// The same lock on the same client (one hold).
    pub(crate) fn same_lock(&self, other: &OneLock) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
            && self.name == other.name
            && self.kind() == other.kind()
    }

    /// The lock's kind.
    pub fn kind(&self) -> LockKind {
        self.ops.kind()
    }

    /// True for a non-reentrant mutex (see `Client::mutex`).
    pub fn is_mutex(&self) -> bool {
        self.ops.reentry() == Reentry::None
    }

    /// See `Client::queues_waiters`.
    pub fn queues_waiters(&self) -> bool {
        self.ops.queues_waiters()
    }

    /// The registry owner of a hold: the caller, or the whole client for a mutex.
    fn hold_owner(&self, owner: OwnerId) -> OwnerId {
        if self.is_mutex() {
            CLIENT_OWNER
        } else {
            owner
        }
    }

    fn key(&self, owner: OwnerId) -> HoldKey {
        (self.name.clone(), HoldKind::Lock(self.kind()), owner)
    }

    fn lost_error(&self, reason: LostReason) -> Error {
        reason.error(&self.name)
    }

    fn timeout_error(&self, wait: Wait) -> Error {
        let waited = match wait {
            Wait::For(d) => Some(d),
            _ => None,
        };
        Error::timeout(&self.name, waited)
    }

    /// Acquire (or re-enter) the lock for `owner`. Fails with `Timeout` when the wait runs out,
    /// with `LockLost` when `owner` still has a hold that was lost (release it first; a hold
    /// whose fixed lease ran out is over instead, and this acquire takes the lock anew), and, for
    /// the write half of a read-write lock, with `UpgradeNotSupported` when `owner` holds the
    /// read half.
    ///
    /// Cancel-safe: dropping the future leaves no hold behind. Closing the client ends the wait
    /// with `InvalidState`.
    pub async fn acquire(&self, owner: OwnerId, options: AcquireOptions) -> Result<Acquired> {
        self.acquire_and_record(owner, options, true).await
    }

    /// One try whose refusal is not recorded (see `Lock::try_acquire_before_wait`).
    pub(crate) async fn try_acquire_before_wait(
        &self,
        owner: OwnerId,
        lease: Option<Duration>,
    ) -> Result<Option<Acquired>> {
        self.try_once(owner, lease, false).await
    }

    /// One try without waiting, its refusal recorded or not; `Ok(None)` when refused.
    async fn try_once(
        &self,
        owner: OwnerId,
        lease: Option<Duration>,
        record_refusal: bool,
    ) -> Result<Option<Acquired>> {
        let options = AcquireOptions {
            wait: Wait::Never,
            lease,
        };
        match self
            .acquire_and_record(owner, options, record_refusal)
            .await
        {
            Ok(a) => Ok(Some(a)),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn acquire_and_record(
        &self,
        owner: OwnerId,
        options: AcquireOptions,
        record_refusal: bool,
    ) -> Result<Acquired> {
        let waiting = self.track.waiting();
        let r = self.acquire_recorded(owner, options).await;
        let outcome = Outcome::of(&r);
        if outcome == Outcome::NotAcquired && !record_refusal {
            waiting.forget();
            return r;
        }
        let waited = waiting.done(outcome);
        tracing::debug!(
            target: "polylock::acquire",
            lock = &*self.name,
            kind = self.kind().word(),
            owner,
            outcome = outcome.word(),
            wait_ms = waited.as_secs_f64() * 1e3,
            token = r.as_ref().map_or(0, |a| a.fencing_token),
            "acquire of '{}' {} after {waited:?}",
            self.name,
            outcome.word()
        );
        r
    }

    async fn acquire_recorded(&self, owner: OwnerId, options: AcquireOptions) -> Result<Acquired> {
        let acquired = tokio::select! {
            biased;
            r = self.acquire_unless_closed(owner, options) => r?,
            // Dropping the wait is cancel-safe: nothing is left behind on the server.
            _ = self.core.stop.cancelled() => return Err(closed_while_waiting()),
        };
        if self.core.is_closed() {
            // Granted while close() drained the holds: give it back, nobody renews it now.
            let key = self.key(self.hold_owner(owner));
            let hold = self.core.holds.lock().remove(&key);
            if let Some(mut h) = hold {
                h.mark_lost(&key, LostReason::ClientClosed);
                let dropped = self
                    .ops
                    .drop_hold(&self.name, key.2, h.node.as_deref())
                    .await;
                self.log_left_behind(dropped, "granted while the client closed");
            }
            return Err(closed_while_waiting());
        }
        Ok(acquired)
    }

    async fn acquire_unless_closed(
        &self,
        owner: OwnerId,
        options: AcquireOptions,
    ) -> Result<Acquired> {
        self.core.check_usable()?;
        let owner = self.hold_owner(owner);
        let wait = options.wait.checked()?;
        let lease_support = self.ops.lease_support();
        if let Some(lease) = options.lease {
            check_duration("lease", lease)?;
            if lease_support == LeaseSupport::Session {
                return Err(Error::unsupported(format!(
                    "{} locks have no lease: they are held while the session lives; acquire \
                     without a lease",
                    self.core.backend.server()
                )));
            }
        }
        let key = self.key(owner);
        let reentry = self.ops.reentry();
        // One acquire or release of this owner's hold at a time: a second first acquire waits for
        // the first's outcome and then re-enters (hold::gate). A mutex has no re-entry: its
        // acquires are anybody's and wait on the server.
        let asked = wait;
        let (_passage, wait) = match reentry {
            Reentry::None => (None, wait),
            _ => match self.core.gates.enter(&key, wait).await {
                Entry::Through(passage, wait) => (Some(passage), wait),
                Entry::Busy => return Err(self.timeout_error(asked)),
            },
        };
        let (held, mode) = {
            let mut map = self.core.holds.lock();
            if reentry != Reentry::None {
                // A fixed lease that ran out ended its hold (told lost once): this acquire starts
                // a new hold rather than failing on the old one's loss.
                self.core
                    .holds
                    .end_for_new_hold(&mut map, &key, Instant::now());
            }
            match map.get_mut(&key).filter(|_| reentry != Reentry::None) {
                Some(h) => {
                    if let Some(reason) = h.lost {
                        return Err(self.lost_error(reason));
                    }
                    if reentry == Reentry::Client {
                        // Re-entry is counted in the client, as Curator does: no round trip.
                        h.count += 1;
                        self.track.reentered();
                        return Ok(acquired_from(h));
                    }
                    let mode = match (h.lease, options.lease) {
                        (LeaseMode::Fixed(_), Some(l)) => LeaseMode::Fixed(l),
                        (m, _) => m,
                    };
                    (h.count, mode)
                }
                None => (
                    0,
                    match (lease_support, options.lease) {
                        (LeaseSupport::Session, _) => LeaseMode::Session,
                        (_, Some(l)) => LeaseMode::Fixed(l),
                        (_, None) => LeaseMode::Watchdog,
                    },
                ),
            }
        };
        let write_node = self.companion_write_node(owner, held)?;
        let lease = match mode {
            LeaseMode::Fixed(d) => d,
            LeaseMode::Watchdog | LeaseMode::Session => self.core.options.watchdog_timeout,
        };
        let sent_at = Instant::now();
        let granted = self
            .ops
            .acquire(&AcquireRequest {
                name: &self.name,
                owner,
                lease,
                held,
                wait,
                max_sleep: self.core.options.watchdog_timeout,
                write_node: write_node.as_deref(),
                // An election candidate's id, else who this client is (where the format keeps
                // data with a hold: ZooKeeper nodes).
                data: Some(self.data.as_deref().unwrap_or(&self.core.identity)),
            })
            .await;
        let granted = match granted {
            // A re-entry found the hold gone from the server (force-unlocked, expired, deleted)
            // before this client noticed: the hold is lost, and says so to its listeners and to
            // its release, rather than being taken again as if nothing had happened.
            Err(e) if held > 0 && e.kind() == ErrorKind::LockLost => {
                if let Some(h) = self.core.holds.lock().get_mut(&key) {
                    h.mark_lost(&key, LostReason::Deleted);
                }
                return Err(e);
            }
            other => other?,
        };
        let Some(mut granted) = granted else {
            return Err(self.timeout_error(asked));
        };
        let deadline = match mode {
            LeaseMode::Session => sent_at + MAX_DURATION,
            _ => granted.valid_until.unwrap_or(sent_at + lease),
        };
        if held > 0 {
            self.track.reentered();
            self.track.granted_token(granted.token);
        }
        let mut map = self.core.holds.lock();
        if held == 0 {
            // A mutex's acquires pass no gate: a hold of the client whose fixed lease ran out
            // while this acquire waited on the server is over (told lost once), and this is a new
            // hold, not a change of that one.
            self.core
                .holds
                .end_for_new_hold(&mut map, &key, Instant::now());
        }
        let hold = map
            .entry(key)
            .and_modify(|h| {
                h.count = granted.count;
                match mode {
                    LeaseMode::Fixed(_) => h.set_lease(mode, deadline),
                    _ => h.lease = mode,
                }
            })
            .or_insert_with(|| {
                Hold::new(
                    &self.core.holds,
                    granted.token,
                    granted.count,
                    mode,
                    deadline,
                    granted.node.take(),
                    self.track.hold(granted.token),
                )
            });
        let acquired = acquired_from(hold);
        drop(map);
        if let LeaseMode::Fixed(_) = mode {
            self.core.wake.notify_one();
        }
        if let Some(gone) = granted.gone.take() {
            watch_gone(&self.core, self.key(owner), acquired.fencing_token, gone);
        }
        Ok(acquired)
    }

    /// For the write half of a read-write lock: refuse an upgrade (the owner holds the read half
    /// and not the write half) at once, where Redisson and Curator would wait forever. For the
    /// read half: the owner's write node, if it holds the write half (a downgrade).
    fn companion_write_node(&self, owner: OwnerId, held: u32) -> Result<Option<String>> {
        let companion = match self.kind() {
            LockKind::Write if held == 0 => LockKind::Read,
            LockKind::Read => LockKind::Write,
            _ => return Ok(None),
        };
        let map = self.core.holds.lock();
        let now = Instant::now();
        let other = map
            .get(&(self.name.clone(), HoldKind::Lock(companion), owner))
            .filter(|h| h.lost.is_none() && !h.ended(now));
        match (self.kind(), other) {
            (LockKind::Write, Some(_)) => Err(Error::new(
                ErrorKind::UpgradeNotSupported,
                format!(
                    "owner {owner} holds the read lock of '{}' and asked for its write lock: an \
                     upgrade can never be granted (the other readers could ask the same). Release \
                     the read lock first, or take the write lock first and then the read lock \
                     (a downgrade)",
                    self.name
                ),
            )),
            (LockKind::Read, Some(w)) => Ok(w.node.clone()),
            _ => Ok(None),
        }
    }

    /// Try once without waiting; `Ok(None)` if another owner holds the lock.
    pub async fn try_acquire(
        &self,
        owner: OwnerId,
        lease: Option<Duration>,
    ) -> Result<Option<Acquired>> {
        self.try_once(owner, lease, true).await
    }

    /// Release one hold of `owner`. The last release frees the lock and wakes a waiter.
    ///
    /// `NotOwner` if `owner` holds nothing; `LockLost` if its hold was lost (the hold is then
    /// forgotten, so a second release says `NotOwner`).
    pub async fn release(&self, owner: OwnerId) -> Result<Released> {
        let r = self.release_logged(owner).await;
        tracing::debug!(
            target: "polylock::release",
            lock = &*self.name,
            kind = self.kind().word(),
            owner,
            outcome = match &r {
                Ok(Released::Freed) => "freed",
                Ok(Released::StillHeld(_)) => "still_held",
                Err(_) => "error",
            },
            "release of '{}': {r:?}",
            self.name
        );
        r
    }

    async fn release_logged(&self, owner: OwnerId) -> Result<Released> {
        self.core.check_usable()?;
        let owner = self.hold_owner(owner);
        let key = self.key(owner);
        let reentry = self.ops.reentry();
        if reentry == Reentry::None {
            return self.release_client_hold(key).await;
        }
        if !self.core.holds.lock().contains_key(&key) {
            return Err(self.not_held_error(&key, owner));
        }
        // After any acquire of the same owner that is under way (hold::gate).
        let Entry::Through(_passage, _) = self.core.gates.enter(&key, Wait::Forever).await else {
            return Err(Error::internal("a release was turned away at its gate"));
        };
        let held = {
            let mut map = self.core.holds.lock();
            let Some(h) = map.get_mut(&key) else {
                drop(map);
                return Err(self.not_held_error(&key, owner));
            };
            match h.lost {
                Some(reason) => {
                    let node = h.node.clone();
                    map.remove(&key);
                    Err((reason, node))
                }
                None if reentry == Reentry::Client && h.count > 1 => {
                    h.count -= 1;
                    return Ok(Released::StillHeld(h.count));
                }
                None => {
                    let retry = reentry == Reentry::Client && h.releasing;
                    if h.count <= 1 {
                        h.releasing = true;
                    }
                    let lease = match h.lease {
                        LeaseMode::Fixed(d) => d,
                        _ => self.core.options.watchdog_timeout,
                    };
                    Ok((lease, h.count, h.node.clone(), retry))
                }
            }
        };
        let (lease, count, node, retry) = match held {
            Ok(held) => held,
            Err((reason, node)) => {
                // Remove what may be left on the server (the loss may have been declared while
                // it was unreachable) before returning, so that it cannot race a new acquire
                // (which is also why a failure is told, not tried again later).
                let dropped = self.ops.drop_hold(&self.name, owner, node.as_deref()).await;
                self.log_left_behind(dropped, "a lost hold, at its release");
                return Err(self.lost_error(reason));
            }
        };
        let mut reset = ResetReleasing {
            lock: self,
            key: &key,
            armed: reentry == Reentry::Server,
        };
        let reply = self
            .ops
            .release(&ReleaseRequest {
                name: &self.name,
                owner,
                lease,
                held: count,
                node: node.as_deref(),
                retry,
            })
            .await;
        reset.armed = false;
        let mut map = self.core.holds.lock();
        match reply {
            Err(e) => {
                if let Some(h) = map.get_mut(&key) {
                    // Where the server counts, a later release is a first attempt again (its
                    // count tells whether this one ran) and the watchdog must notice a loss;
                    // where the client counts, this delete may have been applied.
                    h.releasing = reentry == Reentry::Client;
                }
                Err(e)
            }
            Ok(UnlockReply::Freed) => match map.remove(&key) {
                // Declared lost while the release was under way (its session ended): the holder
                // has been told, and the release says the same rather than "released".
                Some(Hold {
                    lost: Some(reason), ..
                }) => Err(self.lost_error(reason)),
                Some(h) => {
                    h.mark_released();
                    Ok(Released::Freed)
                }
                None => Ok(Released::Freed),
            },
            Ok(UnlockReply::Decremented) => match map.get_mut(&key) {
                Some(h) => {
                    h.count = h.count.saturating_sub(1).max(1);
                    h.releasing = false;
                    Ok(Released::StillHeld(h.count))
                }
                None => Err(Error::internal("hold vanished during release")),
            },
            Ok(UnlockReply::NotHeld) => {
                let reason = match map.remove(&key) {
                    Some(mut h) => {
                        let reason = h.lost.unwrap_or(match h.lease {
                            LeaseMode::Fixed(_) => LostReason::Expired,
                            _ => LostReason::Deleted,
                        });
                        h.mark_lost(&key, reason);
                        reason
                    }
                    None => LostReason::Deleted,
                };
                Err(self.lost_error(reason))
            }
        }
    }

    /// The error of a release by `owner`, who has no hold in the registry: `LockLost` once if its
    /// hold ended without a release (a fixed lease that ran out), else `NotOwner`.
    fn not_held_error(&self, key: &HoldKey, owner: OwnerId) -> Error {
        match self.core.holds.take_ended(key) {
            Some(ended) => self.lost_error(ended.reason),
            None => Error::not_owner(&self.name, owner),
        }
    }

    /// Release a hold of the whole client (a mutex): any owner may.
    async fn release_client_hold(&self, key: HoldKey) -> Result<Released> {
        // Forget the hold before removing it on the server: a waiter of this client may get the
        // mutex the moment it is gone and register its own hold under the same key.
        let Some(mut h) = self.core.holds.lock().remove(&key) else {
            // Its fixed lease ran out and the hold ended: LockLost once.
            if let Some(ended) = self.core.holds.take_ended(&key) {
                return Err(self.lost_error(ended.reason));
            }
            return Err(Error::new(
                ErrorKind::NotOwner,
                format!("mutex '{}' is not held by this client", self.name),
            ));
        };
        let req = ReleaseRequest {
            name: &self.name,
            owner: key.2,
            lease: self.core.options.watchdog_timeout,
            held: h.count,
            node: h.node.as_deref(),
            retry: h.releasing,
        };
        if let Some(reason) = h.lost {
            let dropped = self.ops.drop_hold(&self.name, key.2, req.node).await;
            self.log_left_behind(dropped, "a lost mutex hold, at its release");
            return Err(self.lost_error(reason));
        }
        match self.ops.release(&req).await {
            Ok(UnlockReply::NotHeld) => {
                h.mark_lost(&key, LostReason::Deleted);
                Err(self.lost_error(LostReason::Deleted))
            }
            Ok(_) => {
                h.mark_released();
                Ok(Released::Freed)
            }
            Err(e) => {
                h.releasing = true; // the release may have been applied
                self.core.holds.lock().insert(key, h);
                Err(e)
            }
        }
    }

    /// Tell when what a hold left on the server could not be removed: it then ends with its lease
    /// or session, and the log says which lock it was.
    fn log_left_behind(&self, dropped: Result<bool>, what: &str) {
        if let Err(e) = dropped {
            tracing::warn!(
                lock = &*self.name,
                "polylock: removing what is left on the server of {what} of '{}' failed ({e}); \
                 it ends with its lease or session",
                self.name
            );
        }
    }

    /// Whether anybody holds the lock (asks the server). For a read or write half: whether the
    /// read-write lock is held in that mode.
    pub async fn is_locked(&self) -> Result<bool> {
        self.core.check_usable()?;
        self.ops.is_locked(&self.name).await
    }

    /// How many times `owner` holds the lock (0 if not at all, or if its hold was lost).
    pub async fn hold_count(&self, owner: OwnerId) -> Result<u32> {
        self.core.check_usable()?;
        let owner = self.hold_owner(owner);
        let local = self
            .core
            .holds
            .lock()
            .get(&self.key(owner))
            .map(|h| (h.count, h.lost.is_some()));
        match (local, self.ops.reentry()) {
            (Some((_, true)), _) => Ok(0),
            (_, Reentry::Server) => self.ops.hold_count(&self.name, owner).await,
            // Re-entry is counted here: so is the count.
            (local, _) => Ok(local.map_or(0, |(count, _)| count)),
        }
    }

    /// Remaining lease of whoever holds the lock: not held, held with no expiry, or the time
    /// left.
    pub async fn remaining_lease(&self) -> Result<RemainingLease> {
        self.core.check_usable()?;
        self.ops.lease_left(&self.name).await
    }

    /// Change the fixed lease of `owner`'s hold (see [`LeaseChange`]); the new length of the
    /// lease from now. `NotOwner` without a hold, `LockLost` when it was lost (or its lease ran
    /// out before this), `InvalidState` for a hold the watchdog or a session keeps (nothing to
    /// extend).
    pub async fn extend_lease(&self, owner: OwnerId, change: LeaseChange) -> Result<Duration> {
        self.core.check_usable()?;
        let hold_owner = self.hold_owner(owner);
        let key = self.key(hold_owner);
        let (token, node, length, deadline) = {
            let mut map = self.core.holds.lock();
            let Some(h) = map.get_mut(&key) else {
                drop(map);
                return Err(match self.core.holds.ended_reason(&key) {
                    Some(reason) => self.lost_error(reason),
                    None => Error::not_owner(&self.name, owner),
                });
            };
            if let Some(reason) = h.lost {
                return Err(self.lost_error(reason));
            }
            let LeaseMode::Fixed(length) = h.lease else {
                return Err(Error::state(format!(
                    "lock '{}' is held without a fixed lease (the {} keeps it): there is no \
                     lease to extend",
                    self.name,
                    if h.lease == LeaseMode::Watchdog {
                        "watchdog"
                    } else {
                        "session"
                    }
                )));
            };
            if Instant::now() >= h.deadline {
                h.mark_lost(&key, LostReason::Expired);
                return Err(self.lost_error(LostReason::Expired));
            }
            (h.token, h.node.clone(), length, h.deadline)
        };
        let lease = match change {
            LeaseChange::Add(d) => deadline.saturating_duration_since(Instant::now()) + d,
            LeaseChange::Set(d) => d,
            LeaseChange::Reset => length,
        };
        check_duration("lease", lease)?;
        let sent_at = Instant::now();
        let item = RenewItem {
            name: self.name.clone(),
            owner: hold_owner,
            node,
        };
        let held = self.ops.renew(std::slice::from_ref(&item), lease).await?;
        let mut map = self.core.holds.lock();
        let Some(h) = map.get_mut(&key).filter(|h| h.token == token) else {
            drop(map);
            // Ended meanwhile (its fixed lease ran out during the request), or another hold now.
            return Err(match self.core.holds.ended_reason(&key) {
                Some(reason) => self.lost_error(reason),
                None => Error::not_owner(&self.name, owner),
            });
        };
        if let Some(reason) = h.lost {
            return Err(self.lost_error(reason));
        }
        if held.first() == Some(&true) {
            let valid = lease.saturating_sub(self.ops.lease_margin(lease));
            // The original length stays: `Reset` goes back to it.
            h.set_lease(LeaseMode::Fixed(length), sent_at + valid);
            drop(map);
            self.core.wake.notify_one();
            return Ok(lease);
        }
        let reason = if Instant::now() >= h.deadline {
            LostReason::Expired
        } else {
            LostReason::Deleted
        };
        h.mark_lost(&key, reason);
        Err(self.lost_error(reason))
    }

    /// Delete the lock whoever holds it and wake its waiters; true if it was held. Holds of this
    /// client on it are lost at once.
    pub async fn force_unlock(&self) -> Result<bool> {
        self.core.check_usable()?;
        let kind = HoldKind::Lock(self.kind());
        // The holds this ends are the ones this client had when it was sent: a waiter of this
        // client can be granted the lock between the server's delete and this reply, and its
        // new hold is not lost (it was, when the reply came second).
        let ended: Vec<_> = {
            let map = self.core.holds.lock();
            map.iter()
                .filter(|(key, _)| is_hold_of(key, &self.name, kind))
                .map(|(key, hold)| (key.clone(), hold.token))
                .collect()
        };
        let was = self.ops.force_unlock(&self.name).await?;
        let mut map = self.core.holds.lock();
        for (key, token) in ended {
            if let Some(hold) = map.get_mut(&key).filter(|h| h.token == token) {
                hold.mark_lost(&key, LostReason::Deleted);
            }
        }
        Ok(was)
    }

    /// Whether any owner of this client holds the lock (local, no round trip; Curator's
    /// `isAcquiredInThisProcess`).
    pub fn is_held_locally(&self) -> bool {
        let kind = HoldKind::Lock(self.kind());
        let map = self.core.holds.lock();
        let now = Instant::now();
        map.iter()
            .any(|(k, h)| is_hold_of(k, &self.name, kind) && h.lost.is_none() && !h.ended(now))
    }

    /// The fencing token of `owner`'s current hold, if it holds the lock (local, no round trip).
    pub fn fencing_token(&self, owner: OwnerId) -> Option<u64> {
        let key = self.key(self.hold_owner(owner));
        let map = self.core.holds.lock();
        let now = Instant::now();
        map.get(&key)
            .filter(|h| h.lost.is_none() && !h.ended(now))
            .map(|h| h.token)
    }

    /// The lost signal of `owner`'s current hold, if any (local): also of a hold that ended
    /// without its release (a fixed lease that ran out), until the owner releases or acquires
    /// again.
    pub fn lost_signal(&self, owner: OwnerId) -> Option<LostSignal> {
        let key = self.key(self.hold_owner(owner));
        let map = self.core.holds.lock();
        match map.get(&key) {
            Some(h) => Some(h.signal()),
            None => {
                let reason = self.core.holds.ended_reason(&key)?;
                Some(LostSignal::ended(reason))
            }
        }
    }

    /// The server's view of the lock: mode, holders with counts, the remaining lease, and the
    /// contenders queued behind (ZooKeeper).
    pub async fn status(&self) -> Result<LockStatus> {
        self.core.check_usable()?;
        let mut status = self.ops.status(&self.name).await?;
        // Where the client counts re-entries, the server shows a node per holder: our own
        // holders' counts are known here.
        {
            let map = self.core.holds.lock();
            for holder in &mut status.holders {
                // A backend may describe a holder by its node followed by more words (etcd: the
                // lease's TTL left).
                let described = |node: &str| {
                    holder.owner == node
                        || holder
                            .owner
                            .strip_prefix(node)
                            .is_some_and(|rest| rest.starts_with(' '))
                };
                if let Some(h) = map
                    .iter()
                    .find(|(k, h)| *k.0 == *self.name && h.node.as_deref().is_some_and(described))
                {
                    holder.count = h.1.count;
                }
            }
        }
        // Who they are, as the server keeps it (crate::model::identity).
        let owners: Vec<String> = status
            .holders
            .iter()
            .map(|h| h.owner.clone())
            .chain(status.waiters.iter().cloned())
            .collect();
        if !owners.is_empty() {
            let mut found = self
                .core
                .backend
                .identities(&self.name, &owners)
                .await
                .into_iter();
            for holder in &mut status.holders {
                holder.identity = found.next().flatten();
            }
            status.waiter_identities = found.collect();
        }
        Ok(status)
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
        self.core.check_usable()?;
        self.ops
            .release_once(&ReleaseRequest {
                name: &self.name,
                owner,
                lease: self.core.options.watchdog_timeout,
                held: expected,
                node: None,
                retry,
            })
            .await
    }
}

fn acquired_from(hold: &Hold) -> Acquired {
    Acquired {
        fencing_token: hold.token,
        hold_count: hold.count,
        lost: hold.signal(),
    }
}

fn closed_while_waiting() -> Error {
    Error::state("the polylock client was closed while this acquire waited")
}

/// Clears `releasing` if a release future is dropped mid-flight, so the watchdog notices a loss.
struct ResetReleasing<'a> {
    lock: &'a OneLock,
    key: &'a HoldKey,
    armed: bool,
}

impl Drop for ResetReleasing<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut map = self.lock.core.holds.lock();
            if let Some(h) = map.get_mut(self.key) {
                h.releasing = false;
            }
        }
    }
}
