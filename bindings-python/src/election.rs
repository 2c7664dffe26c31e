//! `NativeElection`: a candidate in a leader election (see `polylock.Election`). Blocking calls
//! release the GIL and answer Ctrl-C; async calls report to asyncio through a callback.

use polylock::{Election, Leader};
use pyo3::prelude::*;

use crate::call::{interruptible, NativeCall, Outcome, Reply};
use crate::convert::{blocking, wait_arg};
use crate::errors::to_py;

/// A candidate (see `polylock.Election`).
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeElection {
    inner: Election,
}

impl NativeElection {
    pub(crate) fn new(inner: Election) -> NativeElection {
        NativeElection { inner }
    }
}

fn pair(l: Leader) -> (String, u64) {
    (l.identity, l.term)
}

#[pymethods]
impl NativeElection {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    #[getter]
    fn identity(&self) -> String {
        self.inner.identity().to_string()
    }

    /// The term while leading, else None (local).
    #[getter]
    fn term(&self) -> Option<u64> {
        self.inner.leadership().map(|l| l.term)
    }

    /// Campaign; the term when leading, None when the wait ran out. Ctrl-C interrupts it.
    #[pyo3(signature = (wait))]
    fn campaign(&self, py: Python<'_>, wait: Option<f64>) -> PyResult<Option<u64>> {
        let wait = wait_arg(wait)?;
        let e = self.inner.clone();
        let outcome = interruptible(py, async move { e.campaign(wait).await })?;
        match outcome {
            Ok(l) => Ok(l.map(|l| l.term)),
            Err(e) => Err(to_py(py, e)),
        }
    }

    fn resign(&self, py: Python<'_>) -> PyResult<bool> {
        let e = self.inner.clone();
        blocking(py, async move { e.resign().await })
    }

    fn leader(&self, py: Python<'_>) -> PyResult<Option<(String, u64)>> {
        let e = self.inner.clone();
        Ok(blocking(py, async move { e.leader().await })?.map(pair))
    }

    fn candidates(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let e = self.inner.clone();
        blocking(py, async move { e.candidates().await })
    }

    /// Wait until the leader differs from `seen`: `(True, leader or None)`, or `(False, None)`
    /// when the wait ran out. Ctrl-C interrupts it.
    #[pyo3(signature = (seen, wait))]
    #[allow(clippy::type_complexity)]
    fn next_change(
        &self,
        py: Python<'_>,
        seen: Option<(String, u64)>,
        wait: Option<f64>,
    ) -> PyResult<(bool, Option<(String, u64)>)> {
        let wait = wait_arg(wait)?;
        let e = self.inner.clone();
        let seen = seen.map(|(identity, term)| Leader { identity, term });
        let outcome = interruptible(py, async move { e.next_change(seen.as_ref(), wait).await })?;
        match outcome {
            Ok(Some(now)) => Ok((true, now.map(pair))),
            Ok(None) => Ok((false, None)),
            Err(e) => Err(to_py(py, e)),
        }
    }

    /// Start a campaign; `done(ok, value)`: True when leading (resigned again if the call was
    /// cancelled meanwhile), False when the wait ran out.
    fn campaign_async(&self, wait: Option<f64>, done: Py<PyAny>) -> PyResult<NativeCall> {
        let wait = wait_arg(wait)?;
        let e = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match e.campaign(wait).await {
                    Ok(Some(_)) => Outcome::Taken(
                        Reply::Bool(true),
                        Box::new(move || {
                            Box::pin(async move {
                                let _ = e.resign().await;
                            })
                        }),
                    ),
                    Ok(None) => Outcome::Value(Reply::Bool(false)),
                    Err(err) => Outcome::Error(err),
                }
            },
            done,
        ))
    }

    /// Start a resign; `done(ok, value)` with whether this candidate led.
    fn resign_async(&self, done: Py<PyAny>) -> NativeCall {
        let e = self.inner.clone();
        NativeCall::start(
            async move {
                match e.resign().await {
                    Ok(was) => Outcome::Value(Reply::Bool(was)),
                    Err(err) => Outcome::Error(err),
                }
            },
            done,
        )
    }
}
