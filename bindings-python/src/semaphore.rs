//! `NativeSemaphore` (RSemaphore / InterProcessSemaphoreV2): blocking calls release the GIL and
//! answer Ctrl-C, async calls report to asyncio through a callback, like the lock's.
//! (`NativePermitSemaphore` is generated from core/api/permit_semaphore.toml.)

use polylock::{ErrorKind, Semaphore, Wait};
use pyo3::prelude::*;

use crate::call::{interruptible, NativeCall, Outcome, Reply};
use crate::convert::{blocking, wait_arg};
use crate::errors::to_py;

/// A semaphore handle (see `polylock.Semaphore`).
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeSemaphore {
    inner: Semaphore,
}

impl NativeSemaphore {
    pub(crate) fn new(inner: Semaphore) -> NativeSemaphore {
        NativeSemaphore { inner }
    }
}

/// The outcome of an async acquire of permits: True when taken (given back if cancelled).
async fn take(s: Semaphore, permits: u32, wait: Wait) -> Outcome {
    match s.acquire(permits, wait).await {
        Ok(p) => Outcome::Taken(
            Reply::Bool(true),
            Box::new(move || {
                Box::pin(async move {
                    let _ = p.release(&s).await;
                })
            }),
        ),
        Err(e) if e.kind() == ErrorKind::Timeout => Outcome::Value(Reply::Bool(false)),
        Err(e) => Outcome::Error(e),
    }
}

#[pymethods]
impl NativeSemaphore {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    #[getter]
    fn holds_permits(&self) -> bool {
        self.inner.holds_permits()
    }

    #[getter]
    fn held_permits(&self) -> u32 {
        self.inner.held_permits()
    }

    fn try_set_permits(&self, py: Python<'_>, permits: u32) -> PyResult<bool> {
        let s = self.inner.clone();
        blocking(py, async move { s.try_set_permits(permits).await })
    }

    fn add_permits(&self, py: Python<'_>, delta: i64) -> PyResult<()> {
        let s = self.inner.clone();
        blocking(py, async move { s.add_permits(delta).await })
    }

    /// True when taken, False when the wait ran out; Ctrl-C interrupts the wait.
    #[pyo3(signature = (permits, wait))]
    fn acquire(&self, py: Python<'_>, permits: u32, wait: Option<f64>) -> PyResult<bool> {
        let wait = wait_arg(wait)?;
        let s = self.inner.clone();
        if wait == Wait::Never {
            let got = blocking(py, async move { s.try_acquire(permits, Wait::Never).await })?;
            return Ok(got.is_some());
        }
        // On this thread, interruptible: the uncontended case is one round trip.
        let outcome = interruptible(py, async move { s.acquire(permits, wait).await })?;
        match outcome {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(false),
            Err(e) => Err(to_py(py, e)),
        }
    }

    fn release(&self, py: Python<'_>, permits: u32) -> PyResult<()> {
        let s = self.inner.clone();
        blocking(py, async move { s.release(permits).await })
    }

    fn available_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let s = self.inner.clone();
        blocking(py, async move { s.available_permits().await })
    }

    fn drain_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let s = self.inner.clone();
        blocking(py, async move { s.drain_permits().await })
    }

    /// Start an acquire; `done(ok, value)` as for `NativeLock.acquire_async`.
    fn acquire_async(
        &self,
        permits: u32,
        wait: Option<f64>,
        done: Py<PyAny>,
    ) -> PyResult<NativeCall> {
        let wait = wait_arg(wait)?;
        Ok(NativeCall::start(
            take(self.inner.clone(), permits, wait),
            done,
        ))
    }

    /// Start a release; `done(ok, value)` as for `NativeLock.release_async`.
    fn release_async(&self, permits: u32, done: Py<PyAny>) -> NativeCall {
        let s = self.inner.clone();
        NativeCall::start(
            async move {
                match s.release(permits).await {
                    Ok(()) => Outcome::Value(Reply::Bool(true)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        )
    }
}
