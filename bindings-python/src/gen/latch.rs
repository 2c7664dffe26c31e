// Generated from core/api/latch.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeLatch`: A count-down latch (Redisson's RCountDownLatch on Redis, a Curator SharedCount on
//! ZooKeeper). Blocking calls release the GIL and answer Ctrl-C; waiting calls have an async twin
//! that reports to asyncio through a callback.

use polylock::{CountDownLatch, Wait};
use pyo3::prelude::*;

use crate::call::{interruptible, NativeCall, Outcome, Reply};
use crate::convert::blocking;
use crate::errors::{err, to_py};

/// A count-down latch (Redisson's RCountDownLatch on Redis, a Curator SharedCount on ZooKeeper).
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeLatch {
    inner: CountDownLatch,
}

impl NativeLatch {
    pub(crate) fn new(inner: CountDownLatch) -> NativeLatch {
        NativeLatch { inner }
    }
}

#[pymethods]
impl NativeLatch {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// Set the count (at least 1) if the latch is not counting; true if this call set it.
    fn try_set_count(&self, py: Python<'_>, count: u64) -> PyResult<bool> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.try_set_count(count).await })
    }

    /// Count down by one; at zero the latch opens and every waiter wakes. Nothing on an open latch.
    fn count_down(&self, py: Python<'_>) -> PyResult<()> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.count_down().await })
    }

    /// The count now (0 when open).
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.count().await })
    }

    /// Wait until the count is zero: true when open, false when the wait ran out.
    #[pyo3(signature = (wait))]
    fn wait(&self, py: Python<'_>, wait: Option<f64>) -> PyResult<bool> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let inner = self.inner.clone();
        interruptible(py, async move { inner.wait(wait).await })?.map_err(|e| to_py(py, e))
    }

    /// The same, started for asyncio: `done(ok, value)` when it ends.
    fn wait_async(&self, wait: Option<f64>, done: Py<PyAny>) -> PyResult<NativeCall> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let inner = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match inner.wait(wait).await {
                    Ok(v) => Outcome::Value(Reply::Bool(v)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        ))
    }

    /// Delete the latch (it opens; its waiters wake); true if it was counting.
    fn delete(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.delete().await })
    }
}
