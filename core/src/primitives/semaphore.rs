//! The semaphore: a number of permits shared by every client of a name (Redisson's `RSemaphore`
//! on Redis, Curator's `InterProcessSemaphoreV2` on ZooKeeper).

use foldhash::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::backend::{Granted, PermitRequest, SemaphoreOps};
use crate::hold::{is_hold_of, watch_gone, ClientCore, Hold, HoldKey, LeaseMode};
use crate::metrics::{Outcome, Prim, Track};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::HoldKind;
use crate::model::lost::LostSignal;
use crate::model::options::{Wait, MAX_DURATION};
use crate::model::outcome::SemaphoreStatus;
use crate::model::owner::{self, OwnerId};

/// A semaphore handle. Cheap to clone.
///
/// On Redis (Redisson's `RSemaphore`) permits belong to nobody, as in
/// `java.util.concurrent.Semaphore`: any caller may release, and a crashed holder's permits are
/// not given back by anybody. On ZooKeeper (Curator's `InterProcessSemaphoreV2`) an acquired
/// permit is a lease of this client: only this client releases it, and it is freed when the
/// client's session ends (its holder then hears the lost signal). For permits that come back
/// after a crash on Redis, use [`PermitExpirableSemaphore`](crate::PermitExpirableSemaphore).
#[derive(Clone)]
pub struct Semaphore {
    core: Arc<ClientCore>,
    name: Arc<str>,
    ops: Arc<dyn SemaphoreOps>,
    track: Track,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("name", &self.name)
            .finish()
    }
}

/// Permits taken by one acquire. Dropping it gives nothing back: call
/// [`Semaphore::release`] or [`Permits::release`].
#[derive(Debug, Clone)]
pub struct Permits {
    /// How many permits were taken.
    pub count: u32,
    /// The leases this client holds for them (ZooKeeper; empty on Redis), as registry owners.
    leases: Vec<OwnerId>,
    /// The lost signal of the first lease (ZooKeeper: a session loss ends them all); `None` on
    /// Redis, where nothing is held.
    pub lost: Option<LostSignal>,
}

fn check_permits(permits: u32, what: &str) -> Result<u32> {
    if permits == 0 {
        return Err(Error::invalid(format!(
            "{what} must be at least 1 permit, got 0"
        )));
    }
    Ok(permits)
}

impl Semaphore {
    pub(crate) fn new(core: Arc<ClientCore>, name: &str) -> Result<Semaphore> {
        let ops = core.backend.semaphore_ops()?;
        let name: Arc<str> = Arc::from(name);
        let track = core.metrics.track(Prim::Semaphore, &name);
        Ok(Semaphore {
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

    /// True when acquired permits are held by this client (ZooKeeper leases) rather than
    /// belonging to nobody (Redis).
    pub fn holds_permits(&self) -> bool {
        self.ops.holds_permits()
    }

    /// Set the number of permits if nobody set it yet (Redisson's `trySetPermits`); true if this
    /// call set it.
    pub async fn try_set_permits(&self, permits: u32) -> Result<bool> {
        self.core.check_usable()?;
        self.ops.try_set_permits(&self.name, permits).await
    }

    /// Add permits, or take them away with a negative `delta` (Redisson's `addPermits`).
    pub async fn add_permits(&self, delta: i64) -> Result<()> {
        self.core.check_usable()?;
        if delta.unsigned_abs() > i32::MAX as u64 {
            return Err(Error::invalid(format!("{delta} permits are out of range")));
        }
        self.ops.add_permits(&self.name, delta).await
    }

    /// Take `permits` permits, waiting as `wait` says; `Timeout` when the wait runs out (nothing
    /// is then taken). Waiters are woken by the server's notification. Cancel-safe; closing the
    /// client ends the wait with `InvalidState`.
    pub async fn acquire(&self, permits: u32, wait: Wait) -> Result<Permits> {
        let waiting = self.track.waiting();
        let r = self.acquire_recorded(permits, wait).await;
        waiting.done(Outcome::of(&r));
        r
    }

    async fn acquire_recorded(&self, permits: u32, wait: Wait) -> Result<Permits> {
        self.core.check_usable()?;
        let permits = check_permits(permits, "acquire")?;
        let wait = wait.checked()?;
        let stop = self.core.stop.clone();
        let req = PermitRequest {
            name: &self.name,
            permits,
            wait,
            max_sleep: self.core.options.watchdog_timeout,
            lease: self.core.options.watchdog_timeout,
            ids: &[],
        };
        let got = tokio::select! {
            biased;
            r = self.ops.acquire(&req) => r?,
            _ = stop.cancelled() => {
                return Err(Error::state("the polylock client was closed while this acquire waited"))
            }
        };
        let Some(leases) = got else {
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
        Ok(self.hold_leases(permits, leases))
    }

    /// One try, or a bounded wait; `Ok(None)` if the permits were not free in time.
    pub async fn try_acquire(&self, permits: u32, wait: Wait) -> Result<Option<Permits>> {
        match self.acquire(permits, wait).await {
            Ok(p) => Ok(Some(p)),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Register the leases of an acquire as holds of this client.
    fn hold_leases(&self, count: u32, leases: Vec<Granted>) -> Permits {
        let mut owners = Vec::with_capacity(leases.len());
        let mut lost = None;
        for mut g in leases {
            let owner = owner::fresh();
            let key: HoldKey = (self.name.clone(), HoldKind::Permit, owner);
            let hold = Hold::new(
                &self.core.holds,
                g.token,
                1,
                LeaseMode::Session,
                Instant::now() + MAX_DURATION,
                g.node.take(),
                self.track.hold(g.token),
            );
            lost.get_or_insert_with(|| hold.signal());
            self.core.holds.lock().insert(key.clone(), hold);
            if let Some(gone) = g.gone.take() {
                watch_gone(&self.core, key, g.token, gone);
            }
            owners.push(owner);
        }
        Permits {
            count,
            leases: owners,
            lost,
        }
    }

    /// Give back `permits` permits. On Redis anyone may (the free count grows); on ZooKeeper this
    /// client gives back that many of the leases it holds (`NotOwner` if it holds fewer).
    pub async fn release(&self, permits: u32) -> Result<()> {
        self.core.check_usable()?;
        let permits = check_permits(permits, "release")?;
        if !self.ops.holds_permits() {
            return self.ops.release(&self.name, permits, &[]).await;
        }
        // Pick the leases and mark them as being released under one lock: two releases at once
        // give back two different leases, never the same one twice (which would leave the other
        // held forever).
        let picked = {
            let mut map = self.core.holds.lock();
            let mut mine: Vec<(OwnerId, bool)> = map
                .iter()
                .filter(|(k, h)| is_hold_of(k, &self.name, HoldKind::Permit) && !h.releasing)
                .map(|(k, h)| (k.2, h.lost.is_some()))
                .collect();
            if mine.len() < permits as usize {
                return Err(Error::new(
                    ErrorKind::NotOwner,
                    format!(
                        "this client holds {} permits of semaphore '{}' and cannot release {permits}",
                        mine.len(),
                        self.name
                    ),
                ));
            }
            // Lost leases first (nothing to give back on the server), then the newest.
            mine.sort_by_key(|(o, lost)| (!lost, std::cmp::Reverse(*o)));
            let owners: Vec<OwnerId> = mine
                .into_iter()
                .take(permits as usize)
                .map(|(o, _)| o)
                .collect();
            self.mark_releasing(&mut map, &owners)
        };
        self.give_back(&picked).await
    }

    /// Mark the holds of `owners` (registry owners of this semaphore's permit holds) as being
    /// released; the ones that were there and not being released already.
    fn mark_releasing(&self, map: &mut HashMap<HoldKey, Hold>, owners: &[OwnerId]) -> Vec<OwnerId> {
        owners
            .iter()
            .copied()
            .filter(|o| {
                map.get_mut(&(self.name.clone(), HoldKind::Permit, *o))
                    .filter(|h| !h.releasing)
                    .map(|h| h.releasing = true)
                    .is_some()
            })
            .collect()
    }

    /// Give back the leases of `owners` (marked as being released). A lease leaves the registry
    /// only once its node is gone from the server: one whose delete failed stays held, and the
    /// first error is returned after the others were tried. `LockLost` if one of them was lost.
    async fn give_back(&self, owners: &[OwnerId]) -> Result<()> {
        let mut first_err = None;
        let mut lost = None;
        for owner in owners {
            let key: HoldKey = (self.name.clone(), HoldKind::Permit, *owner);
            let node = {
                let mut map = self.core.holds.lock();
                let Some(h) = map.get(&key) else { continue };
                if let Some(reason) = h.lost {
                    // Lost: gone with its session or deleted; nothing to give back.
                    lost = Some(reason);
                    map.remove(&key);
                    continue;
                }
                h.node.clone()
            };
            let deleted = match &node {
                Some(node) => {
                    self.ops
                        .release(&self.name, 1, std::slice::from_ref(node))
                        .await
                }
                None => Ok(()),
            };
            let mut map = self.core.holds.lock();
            match deleted {
                Ok(()) => {
                    if let Some(h) = map.remove(&key) {
                        match h.lost {
                            Some(reason) => lost = Some(reason),
                            None => h.mark_released(),
                        }
                    }
                }
                Err(e) => {
                    if let Some(h) = map.get_mut(&key) {
                        h.releasing = false;
                    }
                    tracing::warn!(
                        semaphore = &*self.name,
                        "polylock: giving back a lease of semaphore '{}' failed ({e}); it stays \
                         held by this client",
                        self.name
                    );
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        match lost {
            Some(reason) => Err(reason.error_for(HoldKind::Permit, &self.name)),
            None => Ok(()),
        }
    }

    /// The permits free now.
    pub async fn available_permits(&self) -> Result<i64> {
        self.core.check_usable()?;
        self.ops.available(&self.name).await
    }

    /// Take every permit free now (Redisson's `drainPermits`); how many. On ZooKeeper they are
    /// leases of this client, given back by [`release`](Self::release).
    pub async fn drain_permits(&self) -> Result<i64> {
        self.core.check_usable()?;
        let (n, leases) = self.ops.drain(&self.name).await?;
        if !leases.is_empty() {
            self.hold_leases(leases.len() as u32, leases);
        }
        Ok(n)
    }

    /// How many permits this client holds (ZooKeeper leases; always 0 on Redis, where permits
    /// belong to nobody). Local, no round trip.
    pub fn held_permits(&self) -> u32 {
        let map = self.core.holds.lock();
        map.iter()
            .filter(|(k, h)| is_hold_of(k, &self.name, HoldKind::Permit) && h.lost.is_none())
            .count() as u32
    }

    /// The server's view: free permits, all permits where known, the leases held.
    pub async fn status(&self) -> Result<SemaphoreStatus> {
        self.core.check_usable()?;
        self.ops.status(&self.name).await
    }
}

impl Permits {
    /// Give these permits back (see [`Semaphore::release`]).
    pub async fn release(&self, semaphore: &Semaphore) -> Result<()> {
        semaphore.core.check_usable()?;
        if !semaphore.ops.holds_permits() {
            return semaphore
                .ops
                .release(&semaphore.name, self.count, &[])
                .await;
        }
        let picked = semaphore.mark_releasing(&mut semaphore.core.holds.lock(), &self.leases);
        semaphore.give_back(&picked).await
    }

    /// True once one of the leases is lost (ZooKeeper).
    pub fn is_lost(&self) -> bool {
        self.lost.as_ref().is_some_and(|l| l.is_lost())
    }
}
