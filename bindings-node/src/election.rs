//! `NativeElection`: a candidate in a leader election. Every call settles a Promise from
//! polylock's runtime; a campaign and a wait for a change take a `CancelToken` (for
//! `AbortSignal`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{Election, Leader};

use crate::boundary::entry;
use crate::cancel::{aborted, CancelToken, Ran};
use crate::convert::wait_arg;
use crate::driver::promise;
use crate::outcome::{failed, outcome, sync_err, Outcome};

/// The outcome that carries a leader: `value` true, its term in `number`, its identity in
/// `text`; or `value` false for nobody.
fn leader_outcome(l: Option<Leader>) -> Outcome {
    match l {
        Some(l) => Outcome {
            text: Some(l.identity),
            ..outcome(true, Some(l.term as f64))
        },
        None => outcome(false, None),
    }
}

/// A candidate (see `index.js`).
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
    /// The election's name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// The identity this candidate campaigns with.
    #[napi(getter)]
    pub fn identity(&self) -> Result<String> {
        entry(|| Ok(self.inner.identity().to_string()))
    }

    /// The term while leading, else null (local).
    #[napi(getter)]
    pub fn term(&self) -> Result<Option<f64>> {
        entry(|| Ok(self.inner.leadership().map(|l| l.term as f64)))
    }

    /// Campaign: `value` true when leading (the term in `number`), false when `waitMs` ran out.
    #[napi]
    pub fn campaign<'e>(
        &self,
        env: &'e Env,
        wait_ms: Option<f64>,
        token: Option<&CancelToken>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let wait = wait_arg(wait_ms)?;
            let (e, token) = (self.inner.clone(), CancelToken::state_of(token));
            promise(env, async move {
                match token.run(e.campaign(wait)).await {
                    Ran::Aborted => aborted(),
                    Ran::AbortedAfter(Some(_)) => {
                        let _ = e.resign().await;
                        aborted()
                    }
                    Ran::AbortedAfter(None) => aborted(),
                    Ran::Done(Ok(Some(l))) => outcome(true, Some(l.term as f64)),
                    Ran::Done(Ok(None)) => outcome(false, None),
                    Ran::Done(Err(err)) => failed(&err),
                }
            })
        })
    }

    /// Stop leading: `value` says whether this candidate led.
    #[napi]
    pub fn resign<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let e = self.inner.clone();
            promise(env, async move {
                match e.resign().await {
                    Ok(was) => outcome(was, None),
                    Err(err) => failed(&err),
                }
            })
        })
    }

    /// The leader now (see `leader_outcome`).
    #[napi]
    pub fn leader<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let e = self.inner.clone();
            promise(env, async move {
                match e.leader().await {
                    Ok(l) => leader_outcome(l),
                    Err(err) => failed(&err),
                }
            })
        })
    }

    /// The candidates' identities in order, in `text`, separated by NUL (never in an identity).
    #[napi]
    pub fn candidates<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let e = self.inner.clone();
            promise(env, async move {
                match e.candidates().await {
                    Ok(ids) => Outcome {
                        text: Some(ids.join("\0")),
                        ..outcome(true, None)
                    },
                    Err(err) => failed(&err),
                }
            })
        })
    }

    /// Wait until the leader differs from the one seen (`seenIdentity`/`seenTerm`, both null
    /// for nobody): `value` true with the leader now in `number`/`text` (both null: nobody), or
    /// `value` false when `waitMs` ran out.
    #[napi]
    pub fn next_change<'e>(
        &self,
        env: &'e Env,
        seen_identity: Option<String>,
        seen_term: Option<f64>,
        wait_ms: Option<f64>,
        token: Option<&CancelToken>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let wait = wait_arg(wait_ms)?;
            let seen = match (seen_identity, seen_term) {
                (Some(identity), Some(term)) if term.is_finite() && term >= 0.0 => Some(Leader {
                    identity,
                    term: term as u64,
                }),
                (None, None) => None,
                _ => {
                    return Err(sync_err(polylock::Error::new(
                        polylock::ErrorKind::InvalidArgument,
                        "a leader seen is an identity and a term, or neither",
                    )))
                }
            };
            let (e, token) = (self.inner.clone(), CancelToken::state_of(token));
            promise(env, async move {
                match token.run(e.next_change(seen.as_ref(), wait)).await {
                    Ran::Aborted | Ran::AbortedAfter(_) => aborted(),
                    Ran::Done(Ok(Some(now))) => Outcome {
                        value: true,
                        ..leader_outcome(now)
                    },
                    Ran::Done(Ok(None)) => outcome(false, None),
                    Ran::Done(Err(err)) => failed(&err),
                }
            })
        })
    }
}
