//! `NativeLock`: one handle for every lock kind; blocking calls release the GIL, async calls
//! run on polylock's runtime and report to asyncio through a callback.

use polylock::{AcquireOptions, ErrorKind, LeaseChange, Lock, MultiLock, RemainingLease, Wait};
use pyo3::prelude::*;

use crate::call::{interruptible, NativeCall, Outcome, Reply};
use crate::convert::{blocking, lease_arg, wait_arg};
use crate::errors::{err, to_py};

/// A lock handle (see `polylock.Lock`); every call names its owner.
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeLock {
    inner: Lock,
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

#[pymethods]
impl NativeLock {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    #[getter]
    fn is_mutex(&self) -> bool {
        self.inner.is_mutex()
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind().name()
    }

    /// Blocking acquire: True when held, False when the wait ran out. Ctrl-C (any Python signal
    /// handler that raises) interrupts the wait within 50 ms; the wait is cancelled and a hold that
    /// arrived meanwhile is given back before the exception propagates.
    #[pyo3(signature = (owner, wait, lease))]
    fn acquire(
        &self,
        py: Python<'_>,
        owner: u64,
        wait: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<bool> {
        let options = AcquireOptions {
            wait: wait_arg(wait)?,
            lease: lease_arg(lease)?,
        };
        let lock = self.inner.clone();
        if options.wait == Wait::Never {
            let lease = options.lease;
            return blocking(py, async move { lock.try_acquire(owner, lease).await })
                .map(|got| got.is_some());
        }
        // An acquire that may wait runs on this thread and stays interruptible: the uncontended
        // case is one round trip, for every kind of lock, with one place in a queue where waiters
        // queue (no try first that would queue twice).
        let outcome = interruptible(py, async move { lock.acquire(owner, options).await })?;
        match outcome {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(false),
            Err(e) => Err(to_py(py, e)),
        }
    }

    fn release(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let l = self.inner.clone();
        blocking(py, async move { l.release(owner).await }).map(|_| ())
    }

    fn hold_count(&self, py: Python<'_>, owner: u64) -> PyResult<u32> {
        let l = self.inner.clone();
        blocking(py, async move { l.hold_count(owner).await })
    }

    fn is_locked(&self, py: Python<'_>) -> PyResult<bool> {
        let l = self.inner.clone();
        blocking(py, async move { l.is_locked().await })
    }

    /// The contract's three answers: None (not held), inf (held with no expiry), or the seconds
    /// left.
    fn remaining_lease(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        let l = self.inner.clone();
        blocking(py, async move { l.remaining_lease().await }).map(|left| match left {
            RemainingLease::NotHeld => None,
            RemainingLease::NoExpiry => Some(f64::INFINITY),
            RemainingLease::Expires(d) => Some(d.as_secs_f64()),
        })
    }

    /// Change `owner`'s fixed lease: `how` is "add" (`seconds` more), "set" (`seconds` from now)
    /// or "reset" (its original length from now). The new lease in seconds.
    #[pyo3(signature = (owner, how, seconds))]
    fn extend_lease(
        &self,
        py: Python<'_>,
        owner: u64,
        how: &str,
        seconds: Option<f64>,
    ) -> PyResult<f64> {
        let amount = || -> PyResult<std::time::Duration> {
            lease_arg(seconds)?.ok_or_else(|| {
                err(polylock::Error::new(
                    ErrorKind::InvalidArgument,
                    "a lease change needs a number of seconds",
                ))
            })
        };
        let change = match how {
            "add" => LeaseChange::Add(amount()?),
            "set" => LeaseChange::Set(amount()?),
            "reset" => LeaseChange::Reset,
            other => {
                return Err(err(polylock::Error::new(
                    ErrorKind::InvalidArgument,
                    format!("unknown lease change '{other}'"),
                )))
            }
        };
        let l = self.inner.clone();
        blocking(py, async move { l.extend_lease(owner, change).await }).map(|d| d.as_secs_f64())
    }

    /// Why `owner`'s hold was lost (`"DELETED"`, ...), or None while it is not lost.
    fn lost_reason(&self, owner: u64) -> Option<&'static str> {
        self.inner
            .members()
            .iter()
            .find_map(|m| match m.lost_signal(owner).map(|s| s.state()) {
                Some(polylock::HoldState::Lost(r)) => Some(r.name()),
                _ => None,
            })
    }

    fn force_unlock(&self, py: Python<'_>) -> PyResult<bool> {
        let l = self.inner.clone();
        blocking(py, async move { l.force_unlock().await })
    }

    fn fencing_token(&self, owner: u64) -> Option<u64> {
        self.inner.fencing_token(owner)
    }

    fn is_lost(&self, owner: u64) -> bool {
        self.inner.lost_signal(owner).is_some_and(|s| s.is_lost())
    }

    /// Start an acquire on the runtime; `done(ok, value)` is called from a runtime thread with
    /// (True, True) when held, (True, False) when the wait ran out, (False, exception) on error.
    #[pyo3(signature = (owner, wait, lease, done))]
    fn acquire_async(
        &self,
        owner: u64,
        wait: Option<f64>,
        lease: Option<f64>,
        done: Py<PyAny>,
    ) -> PyResult<NativeCall> {
        let options = AcquireOptions {
            wait: wait_arg(wait)?,
            lease: lease_arg(lease)?,
        };
        let lock = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match lock.acquire(owner, options).await {
                    Ok(_) => Outcome::Taken(
                        Reply::Bool(true),
                        Box::new(move || {
                            Box::pin(async move {
                                let _ = lock.release(owner).await;
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

    /// Start a release on the runtime; `done(ok, value)` as for `acquire_async`.
    fn release_async(&self, owner: u64, done: Py<PyAny>) -> NativeCall {
        let lock = self.inner.clone();
        NativeCall::start(
            async move {
                match lock.release(owner).await {
                    Ok(_) => Outcome::Value(Reply::Bool(true)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        )
    }
}
