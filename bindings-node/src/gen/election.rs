// Generated from core/api/election.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeElection`: A candidate in a leader election (Curator's LeaderLatch on ZooKeeper, etcd's
//! concurrency.Election, a Redisson lock plus a leader record on Redis). Every call settles a
//! Promise from polylock's runtime; waiting calls take a `CancelToken` (for `AbortSignal`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{count_from_f64, Election, Wait};

use crate::boundary::entry;
use crate::cancel::{aborted, CancelToken, Ran};
use crate::driver::promise;
use crate::outcome::{failed, leader_outcome, outcome, sync_err, Outcome};

/// A candidate in a leader election (Curator's LeaderLatch on ZooKeeper, etcd's
/// concurrency.Election, a Redisson lock plus a leader record on Redis). The JS class over it is in
/// `index.js`.
#[napi]
pub struct NativeElection {
    inner: Election,
}

impl NativeElection {
    pub(crate) fn new(inner: Election) -> NativeElection {
        NativeElection { inner }
    }
}

#[napi]
impl NativeElection {
    /// The name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// The identity this candidate campaigns with. Local: no round trip.
    #[napi(getter)]
    pub fn identity(&self) -> Result<String> {
        entry(|| Ok(self.inner.identity().to_string()))
    }

    /// The term (a fencing token, greater for every new leader) while this candidate leads, else
    /// none. Local: no round trip.
    #[napi(getter)]
    pub fn term(&self) -> Result<Option<f64>> {
        entry(|| Ok(self.inner.term().map(|t| t as f64)))
    }

    /// Campaign until this candidate leads: its term, or none when the wait ran out (the candidacy
    /// is then withdrawn). Leading already: the same term.
    #[napi]
    pub fn campaign<'e>(
        &self,
        env: &'e Env,
        wait_ms: Option<f64>,
        token: Option<&CancelToken>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let wait = Wait::from_millis_f64(wait_ms, "waitMs").map_err(sync_err)?;
            let (inner, token) = (self.inner.clone(), CancelToken::state_of(token));
            promise(env, async move {
                match token.run(inner.campaign(wait)).await {
                    Ran::AbortedAfter(Some(_)) => {
                        let _ = inner.resign().await;
                        aborted()
                    }
                    Ran::Aborted | Ran::AbortedAfter(None) => aborted(),
                    Ran::Done(Ok(Some(l))) => outcome(true, Some(l.term as f64)),
                    Ran::Done(Ok(None)) => outcome(false, None),
                    Ran::Done(Err(e)) => failed(&e),
                }
            })
        })
    }

    /// Stop leading: true if this candidate led; LOCK_LOST if its leadership had been lost
    /// meanwhile.
    #[napi]
    pub fn resign<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.resign().await {
                    Ok(v) => outcome(v, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// The leader now (any client may ask): its identity and term, or none.
    #[napi]
    pub fn leader<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.leader().await {
                    Ok(l) => leader_outcome(l),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// The candidates' identities in their order, the leader first (ZooKeeper and etcd queue their
    /// candidates; Redis keeps no queue and lists the leader only).
    #[napi]
    pub fn candidates<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.candidates().await {
                    Ok(v) => Outcome {
                        text: Some(v.join("\0")),
                        ..outcome(true, None)
                    },
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Wait until the leader differs from the one seen (named by its term, 0 for nobody): the
    /// leader then (none: nobody leads), or no change when the wait ran out.
    #[napi]
    pub fn next_change<'e>(
        &self,
        env: &'e Env,
        seen_term: f64,
        wait_ms: Option<f64>,
        token: Option<&CancelToken>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let seen_term = count_from_f64(seen_term, "seenTerm").map_err(sync_err)?;
            let wait = Wait::from_millis_f64(wait_ms, "waitMs").map_err(sync_err)?;
            let (inner, token) = (self.inner.clone(), CancelToken::state_of(token));
            promise(env, async move {
                match token.run(inner.next_change_after(seen_term, wait)).await {
                    Ran::Aborted | Ran::AbortedAfter(_) => aborted(),
                    Ran::Done(Ok(Some(now))) => Outcome {
                        value: true,
                        ..leader_outcome(now)
                    },
                    Ran::Done(Ok(None)) => outcome(false, None),
                    Ran::Done(Err(e)) => failed(&e),
                }
            })
        })
    }
}
