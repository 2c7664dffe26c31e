// Generated from core/api/latch.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeLatch`: A count-down latch (Redisson's RCountDownLatch on Redis, a Curator SharedCount on
//! ZooKeeper). Every call settles a Promise from polylock's runtime; waiting calls take a
//! `CancelToken` (for `AbortSignal`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{count_from_f64, CountDownLatch, Wait};

use crate::boundary::entry;
use crate::cancel::{aborted, CancelToken, Ran};
use crate::driver::promise;
use crate::outcome::{done, failed, number, outcome, sync_err};

/// A count-down latch (Redisson's RCountDownLatch on Redis, a Curator SharedCount on ZooKeeper).
/// The JS class over it is in `index.js`.
#[napi]
pub struct NativeLatch {
    inner: CountDownLatch,
}

impl NativeLatch {
    pub(crate) fn new(inner: CountDownLatch) -> NativeLatch {
        NativeLatch { inner }
    }
}

#[napi]
impl NativeLatch {
    /// The name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// Set the count (at least 1) if the latch is not counting; true if this call set it.
    #[napi]
    pub fn try_set_count<'e>(&self, env: &'e Env, count: f64) -> Result<Object<'e>> {
        entry(|| {
            let count = count_from_f64(count, "count").map_err(sync_err)?;
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.try_set_count(count).await {
                    Ok(v) => outcome(v, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Count down by one; at zero the latch opens and every waiter wakes. Nothing on an open latch.
    #[napi]
    pub fn count_down<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move { done(inner.count_down().await) })
        })
    }

    /// The count now (0 when open).
    #[napi]
    pub fn count<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(
                env,
                async move { number(inner.count().await.map(|n| n as f64)) },
            )
        })
    }

    /// Wait until the count is zero: true when open, false when the wait ran out.
    #[napi]
    pub fn wait<'e>(
        &self,
        env: &'e Env,
        wait_ms: Option<f64>,
        token: Option<&CancelToken>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let wait = Wait::from_millis_f64(wait_ms, "waitMs").map_err(sync_err)?;
            let (inner, token) = (self.inner.clone(), CancelToken::state_of(token));
            promise(env, async move {
                match token.run(inner.wait(wait)).await {
                    Ran::Aborted | Ran::AbortedAfter(_) => aborted(),
                    Ran::Done(Ok(v)) => outcome(v, None),
                    Ran::Done(Err(e)) => failed(&e),
                }
            })
        })
    }

    /// Delete the latch (it opens; its waiters wake); true if it was counting.
    #[napi]
    pub fn delete<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.delete().await {
                    Ok(v) => outcome(v, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }
}
