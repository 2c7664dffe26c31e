// Generated from core/api/lock.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeLock`: A lock of any kind (reentrant, mutex, read or write half, fair, multi-lock,
//! RedLock); every call names its owner. Every call settles a Promise from polylock's runtime;
//! waiting calls take a `CancelToken` (for `AbortSignal`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{ErrorKind, Wait};

use crate::boundary::entry;
use crate::cancel::{aborted, CancelToken, Ran};
use crate::driver::promise;
use crate::lock::NativeLock;
use crate::outcome::{answer, failed, outcome, sync_err};

#[napi]
impl NativeLock {
    /// The name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// The kind: reentrant, mutex, read, write, fair, or multi for a multi-lock. Local: no round
    /// trip.
    #[napi(getter)]
    pub fn kind(&self) -> Result<String> {
        entry(|| Ok(self.inner.kind_name().to_string()))
    }

    /// The fencing token of `owner`'s current hold, none if it holds nothing (or its hold was
    /// lost). 0 on an SQL client whose URL says `fencing=none`. Local: no round trip.
    #[napi]
    pub fn fencing_token(&self, owner: f64) -> Result<Option<f64>> {
        entry(|| {
            let owner = owner as u64;
            Ok(self.inner.fencing_token(owner).map(|t| t as f64))
        })
    }

    /// True if `owner`'s hold was lost and not yet released. Local: no round trip.
    #[napi]
    pub fn is_lost(&self, owner: f64) -> Result<bool> {
        entry(|| {
            let owner = owner as u64;
            Ok(self.inner.is_lost(owner))
        })
    }

    /// Why `owner`'s hold was lost, none while it is not lost (held, or not held at all). A lost
    /// hold stays lost until its owner releases it (which says LOCK_LOST). Local: no round trip.
    #[napi]
    pub fn lost_reason(&self, owner: f64) -> Result<Option<String>> {
        entry(|| {
            let owner = owner as u64;
            Ok(self.inner.lost_reason(owner).map(|r| r.name().to_string()))
        })
    }

    /// Acquire (or re-enter) the lock for `owner`, waiting up to the wait; true when held, false
    /// when the wait ran out. Without a lease the watchdog renews it while the client lives.
    #[napi]
    pub fn acquire<'e>(
        &self,
        env: &'e Env,
        owner: f64,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        token: Option<&CancelToken>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let owner = owner as u64;
            let wait = Wait::from_millis_f64(wait_ms, "waitMs").map_err(sync_err)?;
            let lease = polylock::args::lease_millis_f64(lease_ms, "leaseMs").map_err(sync_err)?;
            let (inner, token) = (self.inner.clone(), CancelToken::state_of(token));
            promise(env, async move {
                answer(
                    match token
                        .run(inner.acquire(owner, polylock::AcquireOptions { wait, lease }))
                        .await
                    {
                        Ran::Aborted => aborted(),
                        Ran::AbortedAfter(_) => {
                            // Aborted as it arrived: give it back.
                            let _ = inner.release(owner).await;
                            aborted()
                        }
                        Ran::Done(Ok(_)) => outcome(true, None),
                        Ran::Done(Err(e)) if e.kind() == ErrorKind::Timeout => outcome(false, None),
                        Ran::Done(Err(e)) => failed(&e),
                    },
                )
            })
        })
    }

    /// Release one hold of `owner`: NOT_OWNER if it holds nothing, LOCK_LOST if its hold was lost
    /// meanwhile (the hold is then forgotten).
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, owner: f64) -> Result<Object<'e>> {
        entry(|| {
            let owner = owner as u64;
            let inner = self.inner.clone();
            promise(env, async move {
                answer(match inner.release(owner).await {
                    Ok(r) => outcome(r == polylock::Released::Freed, None),
                    Err(e) => failed(&e),
                })
            })
        })
    }

    /// Whether anybody holds the lock (asks the server).
    #[napi]
    pub fn is_locked<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.is_locked().await {
                    Ok(v) => outcome(v, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Delete the lock whoever holds it and wake its waiters (Redisson's forceUnlock); true if it
    /// was held.
    #[napi]
    pub fn force_unlock<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.force_unlock().await {
                    Ok(v) => outcome(v, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// The remaining lease of whoever holds the lock: not held, held with no expiry (ZooKeeper, SQL
    /// session locks), or the time left (Redis's PTTL, Redisson's remainTimeToLive).
    #[napi]
    pub fn remaining_lease<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.remaining_lease().await {
                    Ok(left) => outcome(left.is_held(), Some(left.as_millis_code() as f64)),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Change `owner`'s fixed lease: add (that much more), set (that long from now) or reset (its
    /// original length from now); the new lease.
    #[napi]
    pub fn extend_lease<'e>(
        &self,
        env: &'e Env,
        owner: f64,
        how: String,
        amount_ms: Option<f64>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let owner = owner as u64;
            let amount = polylock::args::lease_millis_f64(amount_ms, "ms").map_err(sync_err)?;
            let how = polylock::args::lease_change(&how, amount, "ms").map_err(sync_err)?;
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.extend_lease(owner, how).await {
                    Ok(d) => outcome(true, Some(d.as_millis() as f64)),
                    Err(e) => failed(&e),
                }
            })
        })
    }
}
