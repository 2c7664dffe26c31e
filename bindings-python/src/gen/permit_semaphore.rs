// Generated from core/api/permit_semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativePermitSemaphore`: A semaphore of expiring permits (Redisson's RPermitExpirableSemaphore;
//! Redis only). Blocking calls release the GIL and answer Ctrl-C; waiting calls have an async twin
//! that reports to asyncio through a callback.

use polylock::{ErrorKind, PermitExpirableSemaphore, Wait};
use pyo3::prelude::*;

use crate::call::{interruptible, NativeCall, Outcome, Reply};
use crate::convert::blocking;
use crate::errors::{err, to_py};

/// A semaphore of expiring permits (Redisson's RPermitExpirableSemaphore; Redis only).
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativePermitSemaphore {
    inner: PermitExpirableSemaphore,
}

impl NativePermitSemaphore {
    pub(crate) fn new(inner: PermitExpirableSemaphore) -> NativePermitSemaphore {
        NativePermitSemaphore { inner }
    }
}

#[pymethods]
impl NativePermitSemaphore {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// Set the number of permits if nobody set it yet; true if this call set it.
    fn try_set_permits(&self, py: Python<'_>, permits: u32) -> PyResult<bool> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.try_set_permits(permits).await })
    }

    /// Add permits, or take free ones away with a negative `delta`.
    fn add_permits(&self, py: Python<'_>, delta: i64) -> PyResult<()> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.add_permits(delta).await })
    }

    /// Take one permit, waiting up to the wait: its id (32 hexadecimal characters), or none when
    /// the wait ran out. Without a lease the watchdog renews it while the client lives.
    #[pyo3(signature = (wait, lease))]
    fn acquire(
        &self,
        py: Python<'_>,
        wait: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<Option<String>> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let lease = polylock::args::lease_secs(lease, "lease").map_err(err)?;
        let inner = self.inner.clone();
        match interruptible(py, async move { inner.acquire(lease, wait).await })? {
            Ok(p) => Ok(Some(p.id)),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
            Err(e) => Err(to_py(py, e)),
        }
    }

    /// The same, started for asyncio: `done(ok, value)` when it ends (what it won is given back by
    /// `release` if the call was cancelled meanwhile).
    fn acquire_async(
        &self,
        wait: Option<f64>,
        lease: Option<f64>,
        done: Py<PyAny>,
    ) -> PyResult<NativeCall> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let lease = polylock::args::lease_secs(lease, "lease").map_err(err)?;
        let inner = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match inner.acquire(lease, wait).await {
                    Ok(p) => {
                        let id = p.id.clone();
                        Outcome::Taken(
                            Reply::Text(p.id),
                            Box::new(move || {
                                Box::pin(async move {
                                    let _ = inner.release(&id).await;
                                })
                            }),
                        )
                    }
                    Err(e) if e.kind() == ErrorKind::Timeout => Outcome::Value(Reply::Bool(false)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        ))
    }

    /// Give back the permit `id` (any client may): NOT_OWNER if there is no such permit (never
    /// taken, released before, or expired and taken again), LOCK_LOST if its lease had run out (it
    /// is counted back all the same), INVALID_ARGUMENT for an id that is not 32 hexadecimal
    /// characters.
    fn release(&self, py: Python<'_>, id: String) -> PyResult<()> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.release(&id).await })
    }

    /// Redisson's tryRelease: give back the permit `id`; true if it was there (expired or not).
    fn try_release(&self, py: Python<'_>, id: String) -> PyResult<bool> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.try_release(&id).await })
    }

    /// The permits free now (expired ones counted back first).
    fn available_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.available_permits().await })
    }
}
