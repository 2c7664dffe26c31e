//! The multi-lock: all of several locks or none, even on different clients and servers (Redis
//! and ZooKeeper together), with the semantics of Redisson's `RedissonMultiLock` and Curator's
//! `InterProcessMultiLock`.
//!
//! Members are taken in one canonical order, whatever order they were given in: by name, then by
//! server (its URL without credentials), then by kind. Two multi-locks over overlapping sets,
//! in any process, therefore take their common members in the same order and never deadlock.
//! Releases go in the reverse order. An acquire has one deadline for all members; when a member
//! cannot be had in time (or fails), the members already taken are given back before the acquire
//! returns, so nothing stays held.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::one::OneLock;
use crate::backend::cleanup::{clean_up, CleanUp};
use crate::hold::any_lost;
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::lost::LostSignal;
use crate::model::options::{AcquireOptions, Wait};
use crate::model::outcome::{Acquired, LeaseChange, LockStatus, Released, RemainingLease};
use crate::model::owner::OwnerId;
use crate::model::shown::escape;

/// The members of a multi-lock, in the order it takes them (see the module docs). The public
/// handle is a [`Lock`](super::lock::Lock) made by [`MultiLock::new`](super::lock::MultiLock).
#[derive(Debug)]
pub(crate) struct Multi {
    members: Vec<OneLock>,
    name: String,
}

impl Multi {
    /// The multi-lock over `members` (already flattened). `InvalidArgument` when there is none,
    /// or the same lock is given twice.
    pub(crate) fn new(mut members: Vec<OneLock>) -> Result<Multi> {
        if members.is_empty() {
            return Err(Error::invalid("a multi-lock needs at least one lock"));
        }
        members.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
        if members.windows(2).any(|w| w[0].same_lock(&w[1])) {
            return Err(Error::invalid(
                "a multi-lock cannot take the same lock twice",
            ));
        }
        let name = members
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join("+");
        Ok(Multi { members, name })
    }

    /// The members, in the order they are taken.
    pub(crate) fn members(&self) -> &[OneLock] {
        &self.members
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn is_mutex(&self) -> bool {
        self.members.iter().any(|m| m.is_mutex())
    }

    pub(crate) fn queues_waiters(&self) -> bool {
        self.members.iter().any(|m| m.queues_waiters())
    }

    /// Take every member within the one wait, in order; give back what was taken if one cannot
    /// be had.
    pub(crate) async fn acquire(
        &self,
        owner: OwnerId,
        options: AcquireOptions,
    ) -> Result<Acquired> {
        let wait = options.wait.checked()?;
        let deadline = wait.deadline();
        let mut taken: Vec<(&OneLock, Acquired)> = Vec::with_capacity(self.members.len());
        let mut undo = GiveBack {
            owner,
            taken: Vec::new(),
        };
        for m in &self.members {
            let left = match (wait, deadline) {
                (Wait::Forever, _) => Wait::Forever,
                (_, Some(d)) => match d.checked_duration_since(Instant::now()) {
                    // Under the 1 ms resolution of waits, what is left is one more try.
                    Some(left) if left >= Duration::from_millis(1) => Wait::For(left),
                    _ => Wait::Never,
                },
                (w, None) => w,
            };
            let got = m
                .acquire(
                    owner,
                    AcquireOptions {
                        wait: left,
                        lease: options.lease,
                    },
                )
                .await;
            match got {
                Ok(a) => {
                    undo.taken.push(m.clone());
                    taken.push((m, a));
                }
                Err(e) => {
                    undo.give_back().await;
                    return Err(match e.kind() {
                        ErrorKind::Timeout => Error::timeout(
                            &self.name,
                            match wait {
                                Wait::For(d) => Some(d),
                                _ => None,
                            },
                        ),
                        _ => e,
                    });
                }
            }
        }
        undo.taken.clear();
        let fencing_token = taken
            .iter()
            .map(|(_, a)| a.fencing_token)
            .max()
            .unwrap_or(0);
        let hold_count = taken.iter().map(|(_, a)| a.hold_count).min().unwrap_or(0);
        let lost = any_lost(taken.into_iter().map(|(_, a)| a.lost).collect());
        Ok(Acquired {
            fencing_token,
            hold_count,
            lost,
        })
    }

    pub(crate) async fn try_acquire(
        &self,
        owner: OwnerId,
        lease: Option<Duration>,
    ) -> Result<Option<Acquired>> {
        let options = AcquireOptions {
            wait: Wait::Never,
            lease,
        };
        match self.acquire(owner, options).await {
            Ok(a) => Ok(Some(a)),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Release every member once, in the reverse order, going on past errors (the first is
    /// returned).
    pub(crate) async fn release(&self, owner: OwnerId) -> Result<Released> {
        let mut first_err: Option<Error> = None;
        let mut still: Option<u32> = None;
        for m in self.members.iter().rev() {
            match m.release(owner).await {
                Ok(Released::StillHeld(n)) => still = Some(still.map_or(n, |s| s.min(n))),
                Ok(Released::Freed) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match (first_err, still) {
            (Some(e), _) => Err(e),
            (None, Some(n)) => Ok(Released::StillHeld(n)),
            (None, None) => Ok(Released::Freed),
        }
    }

    pub(crate) async fn is_locked(&self) -> Result<bool> {
        for m in &self.members {
            if !m.is_locked().await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(crate) async fn hold_count(&self, owner: OwnerId) -> Result<u32> {
        let mut least = u32::MAX;
        for m in &self.members {
            least = least.min(m.hold_count(owner).await?);
        }
        Ok(least)
    }

    /// Not held unless every member is; then the least of the members' leases, or no expiry.
    pub(crate) async fn remaining_lease(&self) -> Result<RemainingLease> {
        let mut least = RemainingLease::NoExpiry;
        for m in &self.members {
            match m.remaining_lease().await? {
                RemainingLease::NotHeld => return Ok(RemainingLease::NotHeld),
                RemainingLease::NoExpiry => {}
                RemainingLease::Expires(d) => {
                    least = RemainingLease::Expires(least.duration().map_or(d, |l| l.min(d)))
                }
            }
        }
        Ok(least)
    }

    /// Each member's fixed lease changed alike; the least of the new leases.
    pub(crate) async fn extend_lease(
        &self,
        owner: OwnerId,
        change: LeaseChange,
    ) -> Result<Duration> {
        let mut least: Option<Duration> = None;
        for m in &self.members {
            let d = m.extend_lease(owner, change).await?;
            least = Some(least.map_or(d, |l| l.min(d)));
        }
        least.ok_or_else(|| Error::internal("a multi-lock without members"))
    }

    pub(crate) async fn force_unlock(&self) -> Result<bool> {
        let mut any = false;
        for m in self.members.iter().rev() {
            any |= m.force_unlock().await?;
        }
        Ok(any)
    }

    pub(crate) fn is_held_locally(&self) -> bool {
        self.members.iter().all(|m| m.is_held_locally())
    }

    pub(crate) fn fencing_token(&self, owner: OwnerId) -> Option<u64> {
        self.members
            .iter()
            .map(|m| m.fencing_token(owner))
            .collect::<Option<Vec<u64>>>()
            .and_then(|t| t.into_iter().max())
    }

    pub(crate) fn lost_signal(&self, owner: OwnerId) -> Option<LostSignal> {
        let signals = self
            .members
            .iter()
            .map(|m| m.lost_signal(owner))
            .collect::<Option<Vec<_>>>()?;
        Some(any_lost(signals))
    }

    /// Every member's holders and waiters together; locked when all members are.
    pub(crate) async fn status(&self) -> Result<LockStatus> {
        let mut all = LockStatus {
            name: self.name.clone(),
            locked: true,
            mode: None,
            holders: Vec::new(),
            ttl: None,
            waiters: Vec::new(),
            waiter_identities: Vec::new(),
            shared_with: Vec::new(),
        };
        for m in &self.members {
            let st = m.status().await?;
            all.locked &= st.locked;
            all.holders.extend(st.holders);
            all.waiters.extend(st.waiters);
            all.ttl = match (all.ttl, st.ttl) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(all)
    }
}

/// Gives back the members an acquire took when it ends without all of them: inline when it
/// fails, in the background when it is cancelled.
struct GiveBack {
    owner: OwnerId,
    taken: Vec<OneLock>,
}

impl GiveBack {
    async fn give_back(&mut self) {
        for m in std::mem::take(&mut self.taken).iter().rev() {
            let _ = m.release(self.owner).await;
        }
    }
}

impl Drop for GiveBack {
    fn drop(&mut self) {
        if self.taken.is_empty() {
            return;
        }
        let owner = self.owner;
        let names: Vec<String> = self.taken.iter().map(|m| escape(m.name()).into()).collect();
        // Given back from the last taken; a member stays in the list until its release is done
        // or moot, so a retry goes on where the last attempt stopped.
        let left = Arc::new(Mutex::new(std::mem::take(&mut self.taken)));
        let what = format!(
            "the members {} taken by a multi-lock acquire that was cancelled",
            names.join(", ")
        );
        clean_up(what, move || {
            let left = left.clone();
            async move {
                loop {
                    let next = left
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .last()
                        .cloned();
                    let Some(m) = next else {
                        return CleanUp::Done;
                    };
                    if let CleanUp::Retry(why) = CleanUp::of(&m.release(owner).await) {
                        return CleanUp::Retry(why);
                    }
                    left.lock().unwrap_or_else(|e| e.into_inner()).pop();
                }
            }
        });
    }
}
