//! Leader election, written once over the backend's [`LockKind::Leader`] lock and its
//! [`ElectionOps`]: a candidate campaigns by acquiring that lock with its identity, leads while
//! it holds it (renewed by the watchdog, or kept by its session), and is told through the lock's
//! lost signal when it stops leading. Its term is the hold's fencing token.

use std::sync::Arc;
use std::time::Instant;

use super::one::OneLock;
use crate::backend::ElectionOps;
use crate::hold::ClientCore;
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::LockKind;
use crate::model::lost::LostSignal;
use crate::model::options::{AcquireOptions, Wait};
use crate::model::outcome::Leader;
use crate::model::owner::{self, OwnerId};

/// Longest identity a candidate may publish.
pub const MAX_IDENTITY_LEN: usize = 1024;

/// One candidate in the leader election `name`: Curator's `LeaderLatch` on ZooKeeper, etcd's
/// `concurrency.Election` on etcd, a Redisson lock plus a leader record on Redis (see the
/// backends' module docs). Any client, candidate or not, can read who leads and follow changes.
///
/// A candidate is one owner: campaigning again while leading changes nothing, and two handles
/// made by two calls of [`Client::election`](crate::Client::election) are two candidates.
#[derive(Clone)]
pub struct Election {
    lock: OneLock,
    ops: Arc<dyn ElectionOps>,
    identity: Arc<str>,
    owner: OwnerId,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("name", &self.lock.name())
            .field("identity", &self.identity)
            .finish()
    }
}

/// A candidate's leadership: its term and what tells when it ends.
#[derive(Debug, Clone)]
pub struct Leadership {
    /// The term: greater than every earlier leader's, a fencing token for what the leader
    /// writes.
    pub term: u64,
    /// Fires when leadership is lost (session expired, lease not renewed, key deleted): stop
    /// leading at once.
    pub lost: LostSignal,
}

/// Check a candidate's identity: non-empty, at most [`MAX_IDENTITY_LEN`] bytes, no NUL.
pub fn validate_identity(identity: &str) -> Result<()> {
    if identity.is_empty() {
        return Err(Error::invalid("a candidate's identity must not be empty"));
    }
    if identity.len() > MAX_IDENTITY_LEN {
        return Err(Error::invalid(format!(
            "a candidate's identity is {} bytes; at most {MAX_IDENTITY_LEN}",
            identity.len()
        )));
    }
    if identity.contains('\0') {
        return Err(Error::invalid(
            "a candidate's identity must not contain a NUL byte",
        ));
    }
    Ok(())
}

impl Election {
    pub(crate) fn new(core: Arc<ClientCore>, name: &str, identity: &str) -> Result<Election> {
        validate_identity(identity)?;
        let ops = core.backend.election_ops()?;
        Ok(Election {
            lock: OneLock::new(core, name, LockKind::Leader)?.with_data(identity),
            ops,
            identity: Arc::from(identity),
            owner: owner::fresh(),
        })
    }

    /// The election's name.
    pub fn name(&self) -> &str {
        self.lock.name()
    }

    /// The identity this candidate campaigns with.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Campaign until this candidate leads, or until `wait` runs out (`Ok(None)`; its
    /// candidacy is then withdrawn from the server). While leading, returns the leadership it
    /// has. Cancel-safe: dropping the future withdraws the candidacy.
    pub async fn campaign(&self, wait: Wait) -> Result<Option<Leadership>> {
        if let Some(l) = self.leadership() {
            return Ok(Some(l));
        }
        let options = AcquireOptions { wait, lease: None };
        match self.lock.acquire(self.owner, options).await {
            Ok(a) => Ok(Some(Leadership {
                term: a.fencing_token,
                lost: a.lost,
            })),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// This candidate's leadership, if it leads (local, no round trip; false once lost).
    pub fn leadership(&self) -> Option<Leadership> {
        let term = self.lock.fencing_token(self.owner)?;
        let lost = self.lock.lost_signal(self.owner)?;
        (!lost.is_lost()).then_some(Leadership { term, lost })
    }

    /// Whether this candidate leads (local, no round trip).
    pub fn is_leader(&self) -> bool {
        self.leadership().is_some()
    }

    /// This candidate's term while it leads (local, no round trip).
    pub fn term(&self) -> Option<u64> {
        self.leadership().map(|l| l.term)
    }

    /// Stop leading: the next candidate leads. True if this candidate led; false if it did not
    /// (nothing to do). `LockLost` if its leadership had been lost meanwhile (it is then
    /// forgotten).
    pub async fn resign(&self) -> Result<bool> {
        if self.lock.fencing_token(self.owner).is_none()
            && self.lock.lost_signal(self.owner).is_none()
        {
            return Ok(false);
        }
        match self.lock.release(self.owner).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotOwner => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The leader now (any client may ask): its identity and term, or `None`.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        self.ops.leader(self.lock.name()).await
    }

    /// The candidates' identities in their order, the leader first (ZooKeeper and etcd queue
    /// their candidates; Redis keeps no queue and lists the leader only).
    pub async fn candidates(&self) -> Result<Vec<String>> {
        self.ops.candidates(self.lock.name()).await
    }

    /// Wait until the leader differs from `seen` (a new leader, or none), as far as `wait`
    /// allows: `Ok(Some(now))` with the leader then, `Ok(None)` when the wait ran out with no
    /// change. Successive calls passing the last answer see every leader in turn (one that led
    /// for less than a server round trip may be missed).
    pub async fn next_change(
        &self,
        seen: Option<&Leader>,
        wait: Wait,
    ) -> Result<Option<Option<Leader>>> {
        self.next_change_where(|now| now.as_ref() != seen, wait)
            .await
    }

    /// [`next_change`](Self::next_change) with the leader seen named by its term (0: nobody
    /// led), as the bindings pass it: a term names one leadership, since every new leader gets
    /// a greater one.
    pub async fn next_change_after(
        &self,
        seen_term: u64,
        wait: Wait,
    ) -> Result<Option<Option<Leader>>> {
        self.next_change_where(|now| now.as_ref().map_or(0, |l| l.term) != seen_term, wait)
            .await
    }

    async fn next_change_where(
        &self,
        changed: impl Fn(&Option<Leader>) -> bool,
        wait: Wait,
    ) -> Result<Option<Option<Leader>>> {
        let name = self.lock.name();
        let deadline = wait.checked()?.deadline();
        loop {
            let mut change = self.ops.arm(name).await?;
            // Registered before the look: a change between the look and the wait still counts.
            let came = futures_util::poll!(&mut change).is_ready();
            let now = self.ops.leader(name).await?;
            if changed(&now) {
                return Ok(Some(now));
            }
            if came {
                continue; // it told of a change already (and is spent): arm again
            }
            match deadline {
                Some(d) if Instant::now() >= d => return Ok(None),
                Some(d) => {
                    if tokio::time::timeout_at(d.into(), change).await.is_err() {
                        return Ok(None);
                    }
                }
                None => change.await,
            }
        }
    }
}
