// Generated from core/api/permit_semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativePermitSemaphore`: A semaphore of expiring permits (Redisson's RPermitExpirableSemaphore;
//! Redis only). Every call settles a Promise from polylock's runtime; waiting calls take a
//! `CancelToken` (for `AbortSignal`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{ErrorKind, PermitExpirableSemaphore, Wait};

use crate::boundary::entry;
use crate::cancel::{aborted, CancelToken, Ran};
use crate::driver::promise;
use crate::outcome::{done, failed, number, outcome, outcome_text, sync_err};

/// A semaphore of expiring permits (Redisson's RPermitExpirableSemaphore; Redis only). The JS class
/// over it is in `index.js`.
#[napi]
pub struct NativePermitSemaphore {
    inner: PermitExpirableSemaphore,
}

impl NativePermitSemaphore {
    pub(crate) fn new(inner: PermitExpirableSemaphore) -> NativePermitSemaphore {
        NativePermitSemaphore { inner }
    }
}

#[napi]
impl NativePermitSemaphore {
    /// The name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// Set the number of permits if nobody set it yet; true if this call set it.
    #[napi]
    pub fn try_set_permits<'e>(&self, env: &'e Env, permits: f64) -> Result<Object<'e>> {
        entry(|| {
            let permits = polylock::args::permits_from_f64(permits, "permits").map_err(sync_err)?;
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.try_set_permits(permits).await {
                    Ok(v) => outcome(v, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Add permits, or take free ones away with a negative `delta`.
    #[napi]
    pub fn add_permits<'e>(&self, env: &'e Env, delta: i64) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move { done(inner.add_permits(delta).await) })
        })
    }

    /// Take one permit, waiting up to the wait: its id (32 hexadecimal characters), or none when
    /// the wait ran out. Without a lease the watchdog renews it while the client lives.
    #[napi]
    pub fn acquire<'e>(
        &self,
        env: &'e Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        token: Option<&CancelToken>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let wait = Wait::from_millis_f64(wait_ms, "waitMs").map_err(sync_err)?;
            let lease = polylock::args::lease_millis_f64(lease_ms, "leaseMs").map_err(sync_err)?;
            let (inner, token) = (self.inner.clone(), CancelToken::state_of(token));
            promise(env, async move {
                match token.run(inner.acquire(lease, wait)).await {
                    Ran::Aborted => aborted(),
                    Ran::AbortedAfter(p) => {
                        let _ = inner.release(&p.id).await;
                        aborted()
                    }
                    Ran::Done(Ok(p)) => outcome_text(p.id),
                    Ran::Done(Err(e)) if e.kind() == ErrorKind::Timeout => outcome(false, None),
                    Ran::Done(Err(e)) => failed(&e),
                }
            })
        })
    }

    /// Give back the permit `id` (any client may): NOT_OWNER if there is no such permit (never
    /// taken, released before, or expired and taken again), LOCK_LOST if its lease had run out (it
    /// is counted back all the same), INVALID_ARGUMENT for an id that is not 32 hexadecimal
    /// characters.
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, id: String) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move { done(inner.release(&id).await) })
        })
    }

    /// Redisson's tryRelease: give back the permit `id`; true if it was there (expired or not).
    #[napi]
    pub fn try_release<'e>(&self, env: &'e Env, id: String) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.try_release(&id).await {
                    Ok(v) => outcome(v, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// The permits free now (expired ones counted back first).
    #[napi]
    pub fn available_permits<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                number(inner.available_permits().await.map(|n| n as f64))
            })
        })
    }
}
