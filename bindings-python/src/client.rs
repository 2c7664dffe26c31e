//! `NativeClient`: connecting, handing out lock handles, closing, and the lost-event hook.

use polylock::{runtime, Client, ClientOptions};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert::{blocking, seconds, text};
use crate::errors::err;
use crate::gen::election::NativeElection;
use crate::gen::fence::NativeFence;
use crate::gen::latch::NativeLatch;
use crate::gen::permit_semaphore::NativePermitSemaphore;
use crate::gen::semaphore::NativeSemaphore;
use crate::lock::NativeLock;

/// The options of a connect, a tuple (checked here): durations in seconds (the watchdog timeout,
/// connect timeout, command timeout, session timeout and fair wait timeout), then the lock-name
/// globs that get metric series of their own, the service name and the runtime (`python 3.12.1`).
#[derive(FromPyObject)]
pub(crate) struct Options(
    f64,
    f64,
    f64,
    f64,
    f64,
    Vec<String>,
    Option<String>,
    Option<String>,
);

impl Options {
    fn checked(&self) -> PyResult<ClientOptions> {
        Ok(ClientOptions {
            watchdog_timeout: seconds(self.0, "watchdog_timeout")?,
            connect_timeout: seconds(self.1, "connect_timeout")?,
            command_timeout: seconds(self.2, "command_timeout")?,
            session_timeout: seconds(self.3, "session_timeout")?,
            fair_wait_timeout: seconds(self.4, "fair_wait_timeout")?,
            metric_names: self.5.clone(),
            service: self.6.clone(),
            runtime: self.7.clone(),
            ..ClientOptions::default()
        })
    }
}

/// Connect to a lock server; `options` is a tuple of durations in seconds (see `Options`).
#[pyfunction]
pub(crate) fn connect(py: Python<'_>, url: String, options: Options) -> PyResult<NativeClient> {
    let options = options.checked()?;
    crate::log::refresh_debug(py);
    let client = blocking(py, async move { Client::connect_with(&url, options).await })?;
    Ok(NativeClient { inner: client })
}

/// Connect a RedLock over independent Redis masters.
#[pyfunction]
pub(crate) fn connect_redlock(
    py: Python<'_>,
    urls: Vec<String>,
    options: Options,
) -> PyResult<NativeClient> {
    let options = options.checked()?;
    crate::log::refresh_debug(py);
    let client = blocking(py, async move {
        Client::connect_redlock_with(&urls, options).await
    })?;
    Ok(NativeClient { inner: client })
}

/// A client (see `polylock.Client`).
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeClient {
    inner: Client,
}

#[pymethods]
impl NativeClient {
    /// A handle of any lock kind: "reentrant", "mutex", "read", "write" or "fair".
    fn lock(&self, name: &Bound<'_, PyString>, kind: &str) -> PyResult<NativeLock> {
        let name = &text(name, "lock name")?;
        self.inner
            .lock_of_kind(name, polylock::LockKind::from_name(kind).map_err(err)?)
            .map(NativeLock::new)
            .map_err(err)
    }

    fn semaphore(&self, name: &Bound<'_, PyString>) -> PyResult<NativeSemaphore> {
        let name = &text(name, "lock name")?;
        self.inner
            .semaphore(name)
            .map(NativeSemaphore::new)
            .map_err(err)
    }

    fn permit_semaphore(&self, name: &Bound<'_, PyString>) -> PyResult<NativePermitSemaphore> {
        let name = &text(name, "lock name")?;
        self.inner
            .permit_expirable_semaphore(name)
            .map(NativePermitSemaphore::new)
            .map_err(err)
    }

    fn count_down_latch(&self, name: &Bound<'_, PyString>) -> PyResult<NativeLatch> {
        let name = &text(name, "lock name")?;
        self.inner
            .count_down_latch(name)
            .map(NativeLatch::new)
            .map_err(err)
    }

    fn fence(&self, name: &Bound<'_, PyString>) -> PyResult<NativeFence> {
        let name = &text(name, "lock name")?;
        self.inner.fence(name).map(NativeFence::new).map_err(err)
    }

    fn election(
        &self,
        name: &Bound<'_, PyString>,
        identity: &Bound<'_, PyString>,
    ) -> PyResult<NativeElection> {
        let name = &text(name, "lock name")?;
        let identity = &text(identity, "identity")?;
        self.inner
            .election(name, identity)
            .map(NativeElection::new)
            .map_err(err)
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let c = self.inner.clone();
        blocking(py, async move { c.close().await })
    }

    /// This client's metrics alone, in the Prometheus text format.
    fn metrics_text(&self, py: Python<'_>) -> String {
        let c = self.inner.clone();
        py.detach(move || c.metrics_text())
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

    /// Call `hook(name, kind, owner)` (from a runtime thread, with the GIL) for every hold of this
    /// client that is lost from now on. One task for the whole client; it ends with the client.
    fn watch_lost(&self, hook: Py<PyAny>) {
        let mut events = self.inner.lost_events();
        runtime::handle().spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    // Not once the interpreter exits (holds are lost as the process exits).
                    Ok(ev) => {
                        let told = crate::call::from_runtime(|py| {
                            let args = (
                                ev.name.to_string(),
                                ev.kind.name(),
                                ev.owner,
                                ev.reason.name(),
                            );
                            if let Err(e) = hook.call1(py, args) {
                                e.print(py);
                            }
                        });
                        if told.is_none() {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }
}
