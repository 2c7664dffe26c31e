//! `NativeLock`: one handle for every lock kind, and the multi-lock's making. Its calls
//! (blocking ones release the GIL, async ones report to asyncio through a callback) are generated
//! from core/api/lock.toml (`src/gen/lock.rs`).

use polylock::{Lock, MultiLock};
use pyo3::prelude::*;

use crate::errors::err;

/// A lock handle (see `polylock.Lock`); every call names its owner.
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeLock {
    pub(crate) inner: Lock,
}

impl NativeLock {
    pub(crate) fn new(inner: Lock) -> NativeLock {
        NativeLock { inner }
    }
}

/// A multi-lock over `locks` (see `polylock.MultiLock`).
#[pyfunction]
pub(crate) fn multi_lock(locks: Vec<PyRef<'_, NativeLock>>) -> PyResult<NativeLock> {
    let members = locks.iter().map(|l| l.inner.clone()).collect();
    MultiLock::new(members).map(NativeLock::new).map_err(err)
}
