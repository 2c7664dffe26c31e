// Generated from core/api/lock.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeLock`: A lock of any kind (reentrant, mutex, read or write half, fair, multi-lock,
//! RedLock); every call names its owner. Blocking calls release the GIL and answer Ctrl-C; waiting
//! calls have an async twin that reports to asyncio through a callback.

use polylock::{ErrorKind, Wait};
use pyo3::prelude::*;

use crate::call::{interruptible, NativeCall, Outcome, Reply};
use crate::convert::blocking;
use crate::errors::{err, to_py};
use crate::lock::NativeLock;

#[pymethods]
impl NativeLock {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// The kind: reentrant, mutex, read, write, fair, or multi for a multi-lock. Local: no round
    /// trip.
    #[getter]
    fn kind(&self) -> String {
        self.inner.kind_name().to_string()
    }

    /// True for a mutex (ZooKeeper's InterProcessSemaphoreMutex): not reentrant. Local: no round
    /// trip.
    #[getter]
    fn is_mutex(&self) -> bool {
        self.inner.is_mutex()
    }

    /// The fencing token of `owner`'s current hold, none if it holds nothing (or its hold was
    /// lost). 0 on an SQL client whose URL says `fencing=none`. Local: no round trip.
    fn fencing_token(&self, owner: u64) -> Option<u64> {
        self.inner.fencing_token(owner)
    }

    /// True if `owner`'s hold was lost and not yet released. Local: no round trip.
    fn is_lost(&self, owner: u64) -> bool {
        self.inner.is_lost(owner)
    }

    /// Why `owner`'s hold was lost, none while it is not lost (held, or not held at all). A lost
    /// hold stays lost until its owner releases it (which says LOCK_LOST). Local: no round trip.
    fn lost_reason(&self, owner: u64) -> Option<&'static str> {
        self.inner.lost_reason(owner).map(|r| r.name())
    }

    /// Acquire (or re-enter) the lock for `owner`, waiting up to the wait; true when held, false
    /// when the wait ran out. Without a lease the watchdog renews it while the client lives.
    #[pyo3(signature = (owner, wait, lease))]
    fn acquire(
        &self,
        py: Python<'_>,
        owner: u64,
        wait: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<bool> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let lease = polylock::args::lease_secs(lease, "lease").map_err(err)?;
        let inner = self.inner.clone();
        if wait == Wait::Never {
            // One try, on the blocking path.
            return blocking(py, async move { inner.try_acquire(owner, lease).await })
                .map(|got| got.is_some());
        }
        match interruptible(py, async move {
            inner
                .acquire(owner, polylock::AcquireOptions { wait, lease })
                .await
        })? {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(false),
            Err(e) => Err(to_py(py, e)),
        }
    }

    /// The same, started for asyncio: `done(ok, value)` when it ends (what it won is given back by
    /// `release` if the call was cancelled meanwhile).
    fn acquire_async(
        &self,
        owner: u64,
        wait: Option<f64>,
        lease: Option<f64>,
        done: Py<PyAny>,
    ) -> PyResult<NativeCall> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let lease = polylock::args::lease_secs(lease, "lease").map_err(err)?;
        let inner = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match inner
                    .acquire(owner, polylock::AcquireOptions { wait, lease })
                    .await
                {
                    Ok(_) => Outcome::Taken(
                        Reply::Bool(true),
                        Box::new(move || {
                            Box::pin(async move {
                                let _ = inner.release(owner).await;
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

    /// Release one hold of `owner`: NOT_OWNER if it holds nothing, LOCK_LOST if its hold was lost
    /// meanwhile (the hold is then forgotten).
    fn release(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.release(owner).await }).map(|_| ())
    }

    /// The same, started for asyncio: `done(ok, value)` when it ends.
    fn release_async(&self, owner: u64, done: Py<PyAny>) -> PyResult<NativeCall> {
        let inner = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match inner.release(owner).await {
                    Ok(_) => Outcome::Value(Reply::Bool(true)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        ))
    }

    /// How many times `owner` holds the lock (0 if not at all).
    fn hold_count(&self, py: Python<'_>, owner: u64) -> PyResult<u32> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.hold_count(owner).await })
    }

    /// Whether anybody holds the lock (asks the server).
    fn is_locked(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.is_locked().await })
    }

    /// Delete the lock whoever holds it and wake its waiters (Redisson's forceUnlock); true if it
    /// was held.
    fn force_unlock(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.force_unlock().await })
    }

    /// The remaining lease of whoever holds the lock: not held, held with no expiry (ZooKeeper, SQL
    /// session locks), or the time left (Redis's PTTL, Redisson's remainTimeToLive).
    fn remaining_lease(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        let inner = self.inner.clone();
        let v = blocking(py, async move { inner.remaining_lease().await })?;
        Ok(v.as_secs())
    }

    /// Change `owner`'s fixed lease: add (that much more), set (that long from now) or reset (its
    /// original length from now); the new lease.
    fn extend_lease(
        &self,
        py: Python<'_>,
        owner: u64,
        how: &str,
        seconds: Option<f64>,
    ) -> PyResult<f64> {
        let seconds = polylock::args::lease_secs(seconds, "seconds").map_err(err)?;
        let how = polylock::args::lease_change(how, seconds, "a number of seconds").map_err(err)?;
        let inner = self.inner.clone();
        let v = blocking(py, async move { inner.extend_lease(owner, how).await })?;
        Ok(v.as_secs_f64())
    }
}
