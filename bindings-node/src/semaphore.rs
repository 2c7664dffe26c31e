//! `NativeSemaphore` (RSemaphore / InterProcessSemaphoreV2): every call settles a Promise from
//! polylock's runtime; waiting calls take a `CancelToken` (for `AbortSignal`). `PermitsSlot` keeps
//! the permits of one acquire, so that their hold gives back exactly those (ZooKeeper: those
//! leases). (`NativePermitSemaphore` is generated from core/api/permit_semaphore.toml.)

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{ErrorKind, Permits, Semaphore};

use crate::boundary::entry;
use crate::cancel::{aborted, CancelToken, Ran};
use crate::convert::wait_arg;
use crate::driver::promise;
use crate::outcome::{done, failed, number, outcome, sync_err};

fn count(v: f64, what: &str) -> Result<u32> {
    if !(v.is_finite() && v >= 1.0 && v.fract() == 0.0 && v <= u32::MAX as f64) {
        return Err(sync_err(polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must be a whole number of at least 1, got {v}"),
        )));
    }
    Ok(v as u32)
}

/// A semaphore (see `index.js`).
#[napi]
pub struct NativeSemaphore {
    inner: Semaphore,
}

impl NativeSemaphore {
    pub(crate) fn new(inner: Semaphore) -> NativeSemaphore {
        NativeSemaphore { inner }
    }
}

#[napi]
impl NativeSemaphore {
    /// The semaphore's name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// True when permits taken are leases of this client (ZooKeeper).
    #[napi(getter)]
    pub fn holds_permits(&self) -> Result<bool> {
        entry(|| Ok(self.inner.holds_permits()))
    }

    /// Set the number of permits if nobody set it yet: `value` says whether this call did.
    #[napi]
    pub fn try_set_permits<'e>(&self, env: &'e Env, permits: u32) -> Result<Object<'e>> {
        entry(|| {
            let s = self.inner.clone();
            promise(env, async move {
                match s.try_set_permits(permits).await {
                    Ok(set) => outcome(set, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Add permits, or take free ones away with a negative `delta`.
    #[napi]
    pub fn add_permits<'e>(&self, env: &'e Env, delta: i64) -> Result<Object<'e>> {
        entry(|| {
            let s = self.inner.clone();
            promise(env, async move { done(s.add_permits(delta).await) })
        })
    }

    /// Take `permits` permits: `value` true when taken (and put in `slot`), false when
    /// `waitMs` ran out.
    #[napi]
    pub fn acquire<'e>(
        &self,
        env: &'e Env,
        permits: f64,
        wait_ms: Option<f64>,
        token: Option<&CancelToken>,
        slot: Option<&PermitsSlot>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let (permits, wait) = (count(permits, "permits")?, wait_arg(wait_ms)?);
            let (s, token) = (self.inner.clone(), CancelToken::state_of(token));
            let slot = slot.map(|slot| slot.inner.clone());
            promise(env, async move {
                match token.run(s.acquire(permits, wait)).await {
                    Ran::Aborted => aborted(),
                    Ran::AbortedAfter(p) => {
                        let _ = p.release(&s).await;
                        aborted()
                    }
                    Ran::Done(Ok(p)) => {
                        if let Some(slot) = slot {
                            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
                        }
                        outcome(true, None)
                    }
                    Ran::Done(Err(e)) if e.kind() == ErrorKind::Timeout => outcome(false, None),
                    Ran::Done(Err(e)) => failed(&e),
                }
            })
        })
    }

    /// Give back `permits` permits.
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, permits: f64) -> Result<Object<'e>> {
        entry(|| {
            let (permits, s) = (count(permits, "permits")?, self.inner.clone());
            promise(env, async move { done(s.release(permits).await) })
        })
    }

    /// The permits free now (`number`).
    #[napi]
    pub fn available_permits<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let s = self.inner.clone();
            promise(env, async move {
                number(s.available_permits().await.map(|n| n as f64))
            })
        })
    }

    /// Take every permit free now; how many (`number`).
    #[napi]
    pub fn drain_permits<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let s = self.inner.clone();
            promise(env, async move {
                number(s.drain_permits().await.map(|n| n as f64))
            })
        })
    }
}

/// The permits of one acquire (filled by `NativeSemaphore::acquire`), given back exactly: on
/// ZooKeeper the leases that acquire took, not any of this client's.
#[napi]
pub struct PermitsSlot {
    inner: Arc<Mutex<Option<Permits>>>,
}

#[napi]
impl PermitsSlot {
    /// An empty slot.
    #[napi(constructor)]
    pub fn new() -> Result<Self> {
        entry(|| {
            Ok(PermitsSlot {
                inner: Arc::default(),
            })
        })
    }

    /// Give the permits back to `semaphore` (once: `NOT_OWNER` after that, or before any were
    /// put here).
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, semaphore: &NativeSemaphore) -> Result<Object<'e>> {
        entry(|| {
            let taken = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
            let s = semaphore.inner.clone();
            promise(env, async move {
                match taken {
                    Some(p) => done(p.release(&s).await),
                    None => failed(&polylock::Error::new(
                        ErrorKind::NotOwner,
                        format!(
                            "these permits of semaphore '{}' were given back already",
                            s.name()
                        ),
                    )),
                }
            })
        })
    }

    /// True once a lease of these permits was lost (ZooKeeper; never on Redis).
    #[napi(getter)]
    pub fn is_lost(&self) -> Result<bool> {
        entry(|| {
            Ok(self
                .inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_some_and(|p| p.is_lost()))
        })
    }
}
