//! The semaphore of expiring permits (Redisson's `RPermitExpirableSemaphore`, Redis only): each
//! permit has an id and a lease, so a crashed holder's permits come back when their lease ends.
//! Beyond Redisson, the watchdog renews the permits of a live holder (Redisson's users call
//! `updateLeaseTime` themselves), and a holder whose permit expired anyway hears the lost signal.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::{ExpirableOps, PermitRelease, PermitRequest};
use crate::hold::{is_hold_of, ClientCore, Hold, HoldKey, LeaseMode};
use crate::metrics::{Outcome, Prim, Track};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::HoldKind;
use crate::model::lost::{LostReason, LostSignal};
use crate::model::options::{check_duration, Wait};
use crate::model::outcome::SemaphoreStatus;
use crate::model::owner;

/// A handle on a semaphore of expiring permits. Cheap to clone.
#[derive(Clone)]
pub struct PermitExpirableSemaphore {
    core: Arc<ClientCore>,
    name: Arc<str>,
    ops: Arc<dyn ExpirableOps>,
    track: Track,
}

impl std::fmt::Debug for PermitExpirableSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitExpirableSemaphore")
            .field("name", &self.name)
            .finish()
    }
}

/// One permit taken: its id (32 hexadecimal characters, as Redisson shows them) and its lost
/// signal.
#[derive(Debug, Clone)]
pub struct Permit {
    /// The permit's id: give it to [`PermitExpirableSemaphore::release`].
    pub id: String,
    /// Fires if the permit's lease ended before it was released.
    pub lost: LostSignal,
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl PermitExpirableSemaphore {
    pub(crate) fn new(core: Arc<ClientCore>, name: &str) -> Result<PermitExpirableSemaphore> {
        let ops = core.backend.permit_semaphore_ops()?;
        let name: Arc<str> = Arc::from(name);
        let track = core.metrics.track(Prim::ExpiringSemaphore, &name);
        Ok(PermitExpirableSemaphore {
            core,
            name,
            ops,
            track,
        })
    }

    /// The semaphore's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Set the number of permits if nobody set it yet; true if this call set it.
    pub async fn try_set_permits(&self, permits: u32) -> Result<bool> {
        self.core.check_usable()?;
        self.ops.try_set_permits(&self.name, permits).await
    }

    /// Add permits, or take free ones away with a negative `delta`.
    pub async fn add_permits(&self, delta: i64) -> Result<()> {
        self.core.check_usable()?;
        if delta.unsigned_abs() > i32::MAX as u64 {
            return Err(Error::invalid(format!("{delta} permits are out of range")));
        }
        self.ops.add_permits(&self.name, delta).await
    }

    /// Take one permit. `lease`: `None` lets the watchdog keep it while this client lives (it
    /// expires one watchdog timeout after the client dies); `Some(d)` expires it after `d` unless
    /// released first. `Timeout` when the wait runs out.
    pub async fn acquire(&self, lease: Option<Duration>, wait: Wait) -> Result<Permit> {
        Ok(self.acquire_many(1, lease, wait).await?.remove(0))
    }

    /// Take `permits` permits at once (all or none), each with its own id and the same lease.
    pub async fn acquire_many(
        &self,
        permits: u32,
        lease: Option<Duration>,
        wait: Wait,
    ) -> Result<Vec<Permit>> {
        let waiting = self.track.waiting();
        let r = self.acquire_recorded(permits, lease, wait).await;
        waiting.done(Outcome::of(&r));
        r
    }

    async fn acquire_recorded(
        &self,
        permits: u32,
        lease: Option<Duration>,
        wait: Wait,
    ) -> Result<Vec<Permit>> {
        self.core.check_usable()?;
        if permits == 0 {
            return Err(Error::invalid("acquire must be at least 1 permit, got 0"));
        }
        let wait = wait.checked()?;
        if let Some(l) = lease {
            check_duration("lease", l)?;
        }
        let mode = lease.map_or(LeaseMode::Watchdog, LeaseMode::Fixed);
        let lease = lease.unwrap_or(self.core.options.watchdog_timeout);
        let ids: Vec<String> = (0..permits).map(|_| new_id()).collect();
        let req = PermitRequest {
            name: &self.name,
            permits,
            wait,
            max_sleep: self.core.options.watchdog_timeout,
            lease,
            ids: &ids,
        };
        let stop = self.core.stop.clone();
        let got = tokio::select! {
            biased;
            r = self.ops.acquire(&req) => r?,
            _ = stop.cancelled() => {
                return Err(Error::state("the polylock client was closed while this acquire waited"))
            }
        };
        let Some(sent_at) = got else {
            let waited = match wait {
                Wait::For(d) => format!("; not acquired within {d:?}"),
                _ => String::new(),
            };
            return Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "semaphore '{}' has fewer than {permits} free permits{waited}",
                    self.name
                ),
            ));
        };
        let mut out = Vec::with_capacity(ids.len());
        let mut map = self.core.holds.lock();
        for id in ids {
            let key: HoldKey = (self.name.clone(), HoldKind::Permit, owner::fresh());
            let hold = Hold::new(
                &self.core.holds,
                0,
                1,
                mode,
                sent_at + lease,
                Some(id.clone()),
                self.track.hold(0),
            );
            out.push(Permit {
                id,
                lost: hold.signal(),
            });
            map.insert(key, hold);
        }
        drop(map);
        if let LeaseMode::Fixed(_) = mode {
            self.core.wake.notify_one();
        }
        Ok(out)
    }

    /// One try, or a bounded wait; `Ok(None)` if no permit was free in time.
    pub async fn try_acquire(&self, lease: Option<Duration>, wait: Wait) -> Result<Option<Permit>> {
        match self.acquire(lease, wait).await {
            Ok(p) => Ok(Some(p)),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Give back the permit `id` (any client may, as in Redisson). `NotOwner` if there is no
    /// such permit (never taken, released before, or expired and taken by another);
    /// `LockLost` if its lease had run out (it is counted back all the same).
    pub async fn release(&self, id: &str) -> Result<()> {
        match self.try_release_inner(id).await? {
            (PermitRelease::Released, _) => Ok(()),
            // Ours and gone from the server: its lease ran out (and another call may have counted
            // it back already).
            (PermitRelease::Expired, _) | (PermitRelease::Unknown, true) => {
                Err(LostReason::Expired.error_for(HoldKind::Permit, &self.name))
            }
            (PermitRelease::Unknown, false) => Err(Error::new(
                ErrorKind::NotOwner,
                format!(
                    "semaphore '{}' has no permit {id}: it was never acquired, was released before, or expired and was taken again",
                    self.name
                ),
            )),
        }
    }

    /// Redisson's `tryRelease`: true if the permit was there (expired or not).
    pub async fn try_release(&self, id: &str) -> Result<bool> {
        Ok(self.try_release_inner(id).await?.0 != PermitRelease::Unknown)
    }

    /// What the server found, and whether this client held the permit.
    async fn try_release_inner(&self, id: &str) -> Result<(PermitRelease, bool)> {
        self.core.check_usable()?;
        let (local, ended) = {
            let mut map = self.core.holds.lock();
            let key = map
                .iter()
                .find(|(k, h)| {
                    is_hold_of(k, &self.name, HoldKind::Permit) && h.node.as_deref() == Some(id)
                })
                .map(|(k, _)| k.clone());
            match key.and_then(|k| map.remove(&k).map(|h| (k, h))) {
                Some(local) => (Some(local), None),
                // Its fixed lease ran out and the hold ended (told lost): still ours.
                None => (None, self.core.holds.take_ended_permit(&self.name, id)),
            }
        };
        let outcome = self.ops.release(&self.name, id).await;
        let ours = local.is_some() || ended.is_some();
        if let (Err(_), Some((k, e))) = (&outcome, ended) {
            // Not told yet: a later release hears of it.
            self.core.holds.keep_ended(k, e);
        }
        match (&outcome, local) {
            (Ok(PermitRelease::Released), Some((_, h))) => h.mark_released(),
            (Ok(_), Some((k, mut h))) => {
                let reason = h.lost.unwrap_or(LostReason::Expired);
                h.mark_lost(&k, reason);
            }
            (Err(_), Some((k, h))) => {
                // Not known to have been released: keep renewing it.
                self.core.holds.lock().insert(k, h);
            }
            (_, None) => {}
        }
        outcome.map(|found| (found, ours))
    }

    /// The permits free now (expired ones are reclaimed first, as Redisson does).
    pub async fn available_permits(&self) -> Result<i64> {
        self.core.check_usable()?;
        self.ops.available(&self.name).await
    }

    /// The server's view: free permits, all permits, each taken permit with its remaining lease.
    pub async fn status(&self) -> Result<SemaphoreStatus> {
        self.core.check_usable()?;
        self.ops.status(&self.name).await
    }
}
