//! `NativeLock`: one handle for every lock kind, and the multi-lock's making. Its calls (each names
//! its owner and settles a Promise; `CancelToken` cancels a waiting acquire, for `AbortSignal`)
//! are generated from core/api/lock.toml (`src/gen/lock.rs`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{Lock, MultiLock};

use crate::boundary::entry;
use crate::outcome::sync_err;

/// A lock handle (see `index.js`); every call names its owner.
#[napi]
pub struct NativeLock {
    pub(crate) inner: Lock,
}

impl NativeLock {
    pub(crate) fn new(inner: Lock) -> NativeLock {
        NativeLock { inner }
    }
}

/// Collects the members of a multi-lock (a Promise-free way to pass several native handles).
#[napi]
pub struct MultiLockBuilder {
    members: Vec<Lock>,
}

#[napi]
impl MultiLockBuilder {
    /// No members yet.
    #[napi(constructor)]
    pub fn new() -> Result<Self> {
        entry(|| {
            Ok(MultiLockBuilder {
                members: Vec::new(),
            })
        })
    }

    /// Add a member.
    #[napi]
    pub fn add(&mut self, lock: &NativeLock) -> Result<()> {
        entry(|| {
            self.members.push(lock.inner.clone());
            Ok(())
        })
    }

    /// The multi-lock over the members added (see `MultiLock` in index.js).
    #[napi]
    pub fn build(&mut self) -> Result<NativeLock> {
        entry(|| {
            MultiLock::new(std::mem::take(&mut self.members))
                .map(NativeLock::new)
                .map_err(sync_err)
        })
    }
}
