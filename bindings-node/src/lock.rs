//! `NativeLock`: one handle for every lock kind; every call names its owner and settles a
//! Promise. `CancelToken` cancels a waiting acquire (for `AbortSignal`).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{AcquireOptions, ErrorKind, Lock, Wait};

use crate::outcome::{failed, ms, outcome, promise, sync_err};

/// Cancels one in-flight acquire (for `AbortSignal`).
#[napi]
pub struct CancelToken {
    inner: Arc<TokenState>,
}

#[derive(Default)]
struct TokenState {
    cancelled: std::sync::atomic::AtomicBool,
    done: std::sync::atomic::AtomicBool,
    wake: tokio::sync::Notify,
}

#[napi]
impl CancelToken {
    /// A token for one call.
    #[napi(constructor)]
    pub fn new() -> Self {
        CancelToken {
            inner: Arc::default(),
        }
    }

    /// Cancel the call: the wait is dropped (leaving no node or field behind) and a hold that
    /// arrives anyway is given back. False if the call had already finished.
    #[napi]
    pub fn cancel(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.wake.notify_one();
        !self.inner.done.load(Ordering::SeqCst)
    }
}

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}

/// A lock handle (see `index.js`); every call names its owner.
#[napi]
pub struct NativeLock {
    inner: Lock,
}

impl NativeLock {
    pub(crate) fn new(inner: Lock) -> NativeLock {
        NativeLock { inner }
    }
}

#[napi]
impl NativeLock {
    /// The lock's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// `reentrant`, `mutex`, `read` or `write`.
    #[napi(getter)]
    pub fn kind(&self) -> &'static str {
        crate::client::kind_name(self.inner.kind())
    }

    /// Acquire: resolves `value` true when held, false when `waitMs` ran out; a cancelled
    /// token resolves `{ ok: false, code: "CANCELLED" }`.
    #[napi]
    pub fn acquire<'e>(
        &self,
        env: &'e Env,
        owner: f64,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        token: &CancelToken,
    ) -> Result<Object<'e>> {
        let wait = match wait_ms {
            None => Wait::Forever,
            Some(0.0) => Wait::Never,
            Some(w) => Wait::For(ms(w, "waitMs").map_err(sync_err)?),
        };
        let lease = lease_ms
            .map(|l| ms(l, "leaseMs"))
            .transpose()
            .map_err(sync_err)?;
        let owner = owner as u64;
        let lock = self.inner.clone();
        let token = token.inner.clone();
        promise(env, async move {
            use std::sync::atomic::Ordering;
            let aborted = || {
                failed(&polylock::Error::new(
                    ErrorKind::Cancelled,
                    "the acquire was aborted",
                ))
            };
            if token.cancelled.load(Ordering::SeqCst) {
                return aborted();
            }
            // Dropping the acquire future (the cancel branch) is cancel-safe in core.
            let result = tokio::select! {
                r = lock.acquire(owner, AcquireOptions { wait, lease }) => Some(r),
                _ = token.wake.notified() => None,
            };
            token.done.store(true, Ordering::SeqCst);
            match result {
                None => aborted(),
                Some(Ok(_)) if token.cancelled.load(Ordering::SeqCst) => {
                    let _ = lock.release(owner).await; // aborted as it arrived: give it back
                    aborted()
                }
                Some(Ok(_)) => outcome(true, None),
                Some(Err(e)) if e.kind() == ErrorKind::Timeout => outcome(false, None),
                Some(Err(e)) => failed(&e),
            }
        })
    }

    /// Release one hold of `owner`.
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, owner: f64) -> Result<Object<'e>> {
        let lock = self.inner.clone();
        promise(env, async move {
            match lock.release(owner as u64).await {
                Ok(r) => outcome(r == polylock::Released::Freed, None),
                Err(e) => failed(&e),
            }
        })
    }

    /// Whether anybody holds the lock.
    #[napi]
    pub fn is_locked<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let lock = self.inner.clone();
        promise(env, async move {
            match lock.is_locked().await {
                Ok(b) => outcome(b, None),
                Err(e) => failed(&e),
            }
        })
    }

    /// Delete the lock whoever holds it.
    #[napi]
    pub fn force_unlock<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let lock = self.inner.clone();
        promise(env, async move {
            match lock.force_unlock().await {
                Ok(b) => outcome(b, None),
                Err(e) => failed(&e),
            }
        })
    }

    /// Remaining lease in ms (`number`), none if free or without a lease.
    #[napi]
    pub fn remaining_lease<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let lock = self.inner.clone();
        promise(env, async move {
            match lock.remaining_lease().await {
                Ok(d) => outcome(d.is_some(), d.map(|d| d.as_millis() as f64)),
                Err(e) => failed(&e),
            }
        })
    }

    /// The fencing token of `owner`'s hold, if it holds one (no round trip).
    #[napi]
    pub fn fencing_token(&self, owner: f64) -> Option<f64> {
        self.inner.fencing_token(owner as u64).map(|t| t as f64)
    }

    /// True if `owner`'s hold was lost and not yet released.
    #[napi]
    pub fn is_lost(&self, owner: f64) -> bool {
        self.inner
            .lost_signal(owner as u64)
            .is_some_and(|s| s.is_lost())
    }
}
