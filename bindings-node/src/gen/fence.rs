// Generated from core/api/fence.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeFence`: A fence: fenced writes of Redis commands under a lock's fencing token (Redis
//! only). Every call settles a Promise from polylock's runtime; waiting calls take a `CancelToken`
//! (for `AbortSignal`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::Fence;

use crate::boundary::entry;
use crate::driver::promise;
use crate::outcome::{failed, outcome, replies, sync_err};

/// A fence: fenced writes of Redis commands under a lock's fencing token (Redis only). The JS class
/// over it is in `index.js`.
#[napi]
pub struct NativeFence {
    inner: Fence,
}

impl NativeFence {
    pub(crate) fn new(inner: Fence) -> NativeFence {
        NativeFence { inner }
    }
}

#[napi]
impl NativeFence {
    /// The name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// Run the commands (each a command's name and its arguments) in one atomic step if `token` is
    /// not smaller than the largest token this fence accepted, recording it; their replies, in
    /// order. A smaller token fails with STALE_TOKEN and nothing runs; the same token may write any
    /// number of times. In a Redis Cluster the commands' keys must carry the name's hash tag
    /// ({name}).
    #[napi]
    pub fn write<'e>(
        &self,
        env: &'e Env,
        token: f64,
        commands: Vec<Vec<Buffer>>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let token = polylock::args::token_from_f64(token, "token").map_err(sync_err)?;
            let commands: Vec<Vec<Vec<u8>>> = commands
                .iter()
                .map(|c| c.iter().map(|a| a.to_vec()).collect())
                .collect();
            let inner = self.inner.clone();
            promise(
                env,
                async move { replies(inner.write(token, &commands).await) },
            )
        })
    }

    /// The largest token this fence accepted, or none.
    #[napi]
    pub fn accepted<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let inner = self.inner.clone();
            promise(env, async move {
                match inner.accepted().await {
                    Ok(t) => outcome(t.is_some(), t.map(|t| t as f64)),
                    Err(e) => failed(&e),
                }
            })
        })
    }
}
