// Generated from core/api/semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeSemaphore`: A counting semaphore (Redisson's RSemaphore on Redis, Curator's
//! InterProcessSemaphoreV2 on ZooKeeper, a lease per permit on etcd). On Redis permits belong to
//! nobody: anyone may release them, and a crashed holder's permits are not given back (the
//! semaphore of expiring permits gives them back). On ZooKeeper and etcd they are leases of this
//! client, freed when its session ends. Blocking calls release the GIL and answer Ctrl-C; waiting
//! calls have an async twin that reports to asyncio through a callback.

use polylock::{ErrorKind, Semaphore, Wait};
use pyo3::prelude::*;

use crate::call::{interruptible, NativeCall, Outcome, Reply};
use crate::convert::blocking;
use crate::errors::{err, to_py};

/// A counting semaphore (Redisson's RSemaphore on Redis, Curator's InterProcessSemaphoreV2 on
/// ZooKeeper, a lease per permit on etcd). On Redis permits belong to nobody: anyone may release
/// them, and a crashed holder's permits are not given back (the semaphore of expiring permits gives
/// them back). On ZooKeeper and etcd they are leases of this client, freed when its session ends.
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeSemaphore {
    inner: Semaphore,
}

impl NativeSemaphore {
    pub(crate) fn new(inner: Semaphore) -> NativeSemaphore {
        NativeSemaphore { inner }
    }
}

#[pymethods]
impl NativeSemaphore {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// True when the permits taken are leases of this client (ZooKeeper, etcd), false when they
    /// belong to nobody (Redis). Local: no round trip.
    #[getter]
    fn holds_permits(&self) -> bool {
        self.inner.holds_permits()
    }

    /// How many permits this client holds (its leases on ZooKeeper and etcd; 0 on Redis). Local: no
    /// round trip.
    #[getter]
    fn held_permits(&self) -> u32 {
        self.inner.held_permits()
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

    /// Take `permits` permits (at least 1) at once, waiting up to the wait; nothing is taken when
    /// it runs out. On ZooKeeper and etcd they are leases of this client.
    #[pyo3(signature = (permits, wait))]
    fn acquire(&self, py: Python<'_>, permits: u32, wait: Option<f64>) -> PyResult<bool> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let inner = self.inner.clone();
        match interruptible(py, async move { inner.acquire(permits, wait).await })? {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(false),
            Err(e) => Err(to_py(py, e)),
        }
    }

    /// The same, started for asyncio: `done(ok, value)` when it ends (what it won is given back by
    /// `release` if the call was cancelled meanwhile).
    fn acquire_async(
        &self,
        permits: u32,
        wait: Option<f64>,
        done: Py<PyAny>,
    ) -> PyResult<NativeCall> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let inner = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match inner.acquire(permits, wait).await {
                    Ok(p) => Outcome::Taken(
                        Reply::Bool(true),
                        Box::new(move || {
                            Box::pin(async move {
                                let _ = p.release(&inner).await;
                            })
                        }),
                    ),
                    Err(e) if e.kind() == ErrorKind::Timeout => Outcome::Value(Reply::Bool(false)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        ))
    }

    /// Give back `permits` permits (at least 1). Redis: anyone may. ZooKeeper and etcd: that many
    /// of this client's leases, NOT_OWNER if it holds fewer.
    fn release(&self, py: Python<'_>, permits: u32) -> PyResult<()> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.release(permits).await })
    }

    /// The same, started for asyncio: `done(ok, value)` when it ends.
    fn release_async(&self, permits: u32, done: Py<PyAny>) -> PyResult<NativeCall> {
        let inner = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match inner.release(permits).await {
                    Ok(_) => Outcome::Value(Reply::Bool(true)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        ))
    }

    /// The permits free now.
    fn available_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.available_permits().await })
    }

    /// Take every permit free now; how many (on ZooKeeper and etcd, leases of this client).
    fn drain_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.drain_permits().await })
    }
}
