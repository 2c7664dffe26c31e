// Generated from core/api/semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeSemaphore`: A counting semaphore (Redisson's RSemaphore on Redis, Curator's
//! InterProcessSemaphoreV2 on ZooKeeper, a lease per permit on etcd). On Redis permits belong to
//! nobody: anyone may release them, and a crashed holder's permits are not given back (the
//! semaphore of expiring permits gives them back). On ZooKeeper and etcd they are leases of this
//! client, freed when its session ends. Every call settles a Promise from polylock's runtime;
//! waiting calls take a `CancelToken` (for `AbortSignal`).

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{ErrorKind, Permits, Semaphore, Wait};

use crate::boundary::entry;
use crate::cancel::{aborted, CancelToken, Ran};
use crate::driver::promise;
use crate::outcome::{done, failed, number, outcome, sync_err};

/// A counting semaphore (Redisson's RSemaphore on Redis, Curator's InterProcessSemaphoreV2 on
/// ZooKeeper, a lease per permit on etcd). On Redis permits belong to nobody: anyone may release
/// them, and a crashed holder's permits are not given back (the semaphore of expiring permits gives
/// them back). On ZooKeeper and etcd they are leases of this client, freed when its session ends.
/// The JS class over it is in `index.js`.
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
    /// The name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// True when the permits taken are leases of this client (ZooKeeper, etcd), false when they
    /// belong to nobody (Redis). Local: no round trip.
    #[napi(getter)]
    pub fn holds_permits(&self) -> Result<bool> {
        entry(|| Ok(self.inner.holds_permits()))
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

    /// Take `permits` permits (at least 1) at once, waiting up to the wait; nothing is taken when
    /// it runs out. On ZooKeeper and etcd they are leases of this client.
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
            let permits = polylock::args::permits_from_f64(permits, "permits").map_err(sync_err)?;
            let wait = Wait::from_millis_f64(wait_ms, "waitMs").map_err(sync_err)?;
            let (inner, token) = (self.inner.clone(), CancelToken::state_of(token));
            let slot = slot.map(|slot| slot.inner.clone());
            promise(env, async move {
                match token.run(inner.acquire(permits, wait)).await {
                    Ran::Aborted => aborted(),
                    Ran::AbortedAfter(p) => {
                        let _ = p.release(&inner).await;
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

    /// Give back `permits` permits (at least 1). Redis: anyone may. ZooKeeper and etcd: that many
    /// of this client's leases, NOT_OWNER if it holds fewer.
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, permits: f64) -> Result<Object<'e>> {
        entry(|| {
            let permits = polylock::args::permits_from_f64(permits, "permits").map_err(sync_err)?;
            let inner = self.inner.clone();
            promise(env, async move { done(inner.release(permits).await) })
        })
    }

    /// The permits free now.
    #[napi]
    pub fn available_permits<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                number(inner.available_permits().await.map(|n| n as f64))
            })
        })
    }

    /// Take every permit free now; how many (on ZooKeeper and etcd, leases of this client).
    #[napi]
    pub fn drain_permits<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                number(inner.drain_permits().await.map(|n| n as f64))
            })
        })
    }
}

/// The permits of one acquire (filled by `NativeSemaphore::acquire`), given back exactly: on ZooKeeper and
/// etcd the leases that acquire took, not any of this client's.
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

    /// True once a lease of these permits was lost (ZooKeeper, etcd; never on Redis).
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
