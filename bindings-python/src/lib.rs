//! `polylock._native`: the private native module under the hand-written `polylock` package.
//!
//! A thin adapter: it converts arguments, releases the GIL around everything that waits, maps
//! core's errors to the classes of `polylock._errors`, and calls the core. Owner ids are chosen by
//! the Python side (per thread for sync calls, per task for asyncio).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use polylock::{runtime, AcquireOptions, Client, ClientOptions, ErrorKind, Lock, Wait};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyType};

/// How often a blocking wait looks for Ctrl-C (the issue asks for ≤ 100 ms).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

fn error_class(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Timeout => "LockTimeoutError",
        ErrorKind::NotOwner => "NotOwnerError",
        ErrorKind::LockLost => "LockLostError",
        ErrorKind::Connection => "PolylockConnectionError",
        ErrorKind::InvalidArgument | ErrorKind::NullParameter => "InvalidArgumentError",
        ErrorKind::Auth => "AuthError",
        ErrorKind::Backend => "BackendError",
        ErrorKind::InvalidState => "InvalidStateError",
        ErrorKind::Cancelled => "OperationCancelledError",
        ErrorKind::Unsupported => "UnsupportedError",
        _ => "InternalError",
    }
}

/// A core error as the matching `polylock._errors` exception (message, code name, code number).
fn to_py(py: Python<'_>, e: polylock::Error) -> PyErr {
    let class = py
        .import("polylock._errors")
        .and_then(|m| m.getattr(error_class(e.kind())))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(cls) => PyErr::from_type(
            cls,
            (e.message().to_string(), e.kind().name(), e.kind().code()),
        ),
        Err(err) => err,
    }
}

fn err(e: polylock::Error) -> PyErr {
    Python::attach(|py| to_py(py, e))
}

fn seconds(v: f64, what: &str) -> PyResult<Duration> {
    if !v.is_finite() || v <= 0.0 {
        return Err(err(polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must be a positive number of seconds, got {v}"),
        )));
    }
    Duration::try_from_secs_f64(v).map_err(|_| {
        err(polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} {v} is too large"),
        ))
    })
}

/// `None` waits forever, `0` tries once, a positive number waits that many seconds.
fn wait_arg(wait: Option<f64>) -> PyResult<Wait> {
    match wait {
        None => Ok(Wait::Forever),
        Some(0.0) => Ok(Wait::Never),
        Some(w) => Ok(Wait::For(seconds(w, "timeout")?)),
    }
}

fn lease_arg(lease: Option<f64>) -> PyResult<Option<Duration>> {
    lease.map(|l| seconds(l, "lease")).transpose()
}

/// Run a short call on the runtime with the GIL released.
fn blocking<T: Send + 'static>(
    py: Python<'_>,
    fut: impl std::future::Future<Output = polylock::Result<T>> + Send + 'static,
) -> PyResult<T> {
    py.detach(|| runtime::block_on(fut).and_then(|r| r))
        .map_err(|e| to_py(py, e))
}

/// A new owner id, never handed out twice in this process.
#[pyfunction]
fn fresh_owner() -> u64 {
    polylock::owner::fresh()
}

/// Connect to a lock server; durations in seconds.
#[pyfunction]
#[pyo3(signature = (url, watchdog_timeout, connect_timeout, command_timeout, session_timeout))]
fn connect(
    py: Python<'_>,
    url: String,
    watchdog_timeout: f64,
    connect_timeout: f64,
    command_timeout: f64,
    session_timeout: f64,
) -> PyResult<NativeClient> {
    let options = ClientOptions {
        watchdog_timeout: seconds(watchdog_timeout, "watchdog_timeout")?,
        connect_timeout: seconds(connect_timeout, "connect_timeout")?,
        command_timeout: seconds(command_timeout, "command_timeout")?,
        session_timeout: seconds(session_timeout, "session_timeout")?,
    };
    let client = blocking(py, async move { Client::connect_with(&url, options).await })?;
    Ok(NativeClient { inner: client })
}

/// A client (see `polylock.Client`).
#[pyclass(frozen, module = "polylock._native")]
struct NativeClient {
    inner: Client,
}

#[pymethods]
impl NativeClient {
    fn lock(&self, name: &str) -> PyResult<NativeLock> {
        self.inner
            .lock(name)
            .map(|inner| NativeLock { inner })
            .map_err(err)
    }

    fn mutex(&self, path: &str) -> PyResult<NativeLock> {
        self.inner
            .mutex(path)
            .map(|inner| NativeLock { inner })
            .map_err(err)
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let c = self.inner.clone();
        blocking(py, async move { c.close().await })
    }

    #[getter]
    fn id(&self) -> String {
        self.inner.id().to_string()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    #[getter]
    fn suspended(&self) -> bool {
        self.inner.is_suspended()
    }

    /// Call `hook(name, owner)` (from a runtime thread, with the GIL) for every hold of this
    /// client that is lost from now on. One task for the whole client; it ends with the client.
    fn watch_lost(&self, hook: Py<PyAny>) {
        let mut events = self.inner.lost_events();
        runtime::handle().spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(ev) => Python::attach(|py| {
                        if let Err(e) = hook.call1(py, (ev.name.to_string(), ev.owner)) {
                            e.print(py);
                        }
                    }),
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }
}

/// A lock handle (see `polylock.Lock`); every call names its owner.
#[pyclass(frozen, module = "polylock._native")]
struct NativeLock {
    inner: Lock,
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
        // The uncontended case is one round trip: no need for the interruptible machinery. Not
        // on ZooKeeper, where a try and then a wait would queue twice and lose the FIFO place.
        let first = if lock.queues_waiters() && options.wait != Wait::Never {
            None
        } else {
            let (l, lease) = (lock.clone(), options.lease);
            blocking(py, async move { l.try_acquire(owner, lease).await })?
        };
        match first {
            Some(_) => Ok(true),
            None if options.wait == Wait::Never => Ok(false),
            None => {
                let l = lock.clone();
                let pending = runtime::spawn(async move { l.acquire(owner, options).await })
                    .map_err(|e| to_py(py, e))?;
                let outcome: Result<polylock::Result<polylock::Acquired>, PyErr> =
                    py.detach(move || loop {
                        match pending.wait_timeout(SIGNAL_POLL) {
                            Ok(Some(r)) => return Ok(r),
                            Ok(None) => {}
                            Err(e) => return Ok(Err(e)),
                        }
                        if let Err(signal) = Python::attach(|py| py.check_signals()) {
                            if let Some(Ok(_)) = pending.cancel() {
                                // It was acquired just before the cancel: give it back.
                                let l = lock.clone();
                                let _ = runtime::block_on(async move { l.release(owner).await });
                            }
                            return Err(signal);
                        }
                    });
                match outcome? {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == ErrorKind::Timeout => Ok(false),
                    Err(e) => Err(to_py(py, e)),
                }
            }
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

    fn remaining_lease(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        let l = self.inner.clone();
        blocking(py, async move { l.remaining_lease().await }).map(|d| d.map(|d| d.as_secs_f64()))
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
                    Ok(_) => Outcome::Acquired(lock, owner),
                    Err(e) if e.kind() == ErrorKind::Timeout => Outcome::Value(false),
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
                    Ok(_) => Outcome::Value(true),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        )
    }
}

enum Outcome {
    Acquired(Lock, u64),
    Value(bool),
    Error(polylock::Error),
}

enum CallState {
    Starting,
    Running(tokio::task::AbortHandle),
    Cancelled,
    Done,
}

/// An async call running on polylock's runtime, for asyncio.
#[pyclass(frozen, module = "polylock._native")]
struct NativeCall {
    state: Arc<Mutex<CallState>>,
}

impl NativeCall {
    fn start(
        fut: impl std::future::Future<Output = Outcome> + Send + 'static,
        done: Py<PyAny>,
    ) -> NativeCall {
        let state = Arc::new(Mutex::new(CallState::Starting));
        let st = state.clone();
        let task = runtime::handle().spawn(async move {
            let outcome = fut.await;
            let cancelled = {
                let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
                let c = matches!(*s, CallState::Cancelled);
                *s = CallState::Done;
                c
            };
            if cancelled {
                // Nobody waits for it any more: a hold that arrived is given back.
                if let Outcome::Acquired(lock, owner) = outcome {
                    let _ = lock.release(owner).await;
                }
                return;
            }
            Python::attach(|py| {
                let boolean = |v: bool| PyBool::new(py, v).to_owned().into_any().unbind();
                let (ok, value) = match outcome {
                    Outcome::Acquired(..) => (true, boolean(true)),
                    Outcome::Value(v) => (true, boolean(v)),
                    Outcome::Error(e) => (false, to_py(py, e).into_value(py).into_any()),
                };
                if let Err(e) = done.call1(py, (ok, value)) {
                    e.print(py);
                }
            });
        });
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*s, CallState::Starting) {
            *s = CallState::Running(task.abort_handle());
        }
        drop(s);
        NativeCall { state }
    }
}

#[pymethods]
impl NativeCall {
    /// Cancel the call. True if it had not finished (the core drops the wait cleanly and a hold
    /// that arrives anyway is given back); False if its result was already delivered.
    fn cancel(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(&mut *s, CallState::Cancelled) {
            CallState::Running(h) => {
                h.abort();
                true
            }
            CallState::Starting | CallState::Cancelled => true,
            CallState::Done => {
                *s = CallState::Done;
                false
            }
        }
    }
}

/// The stable error table (code number → name), for the Python side's checks.
#[pyfunction]
fn error_table() -> Vec<(u32, &'static str, &'static str)> {
    ErrorKind::ALL
        .iter()
        .map(|k| (k.code(), k.name(), error_class(*k)))
        .collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(connect, m)?)?;
    m.add_function(wrap_pyfunction!(fresh_owner, m)?)?;
    m.add_function(wrap_pyfunction!(error_table, m)?)?;
    m.add_class::<NativeClient>()?;
    m.add_class::<NativeLock>()?;
    m.add_class::<NativeCall>()?;
    m.add("VERSION", polylock::VERSION)?;
    Ok(())
}
