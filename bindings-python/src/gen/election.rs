// Generated from core/api/election.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeElection`: A candidate in a leader election (Curator's LeaderLatch on ZooKeeper, etcd's
//! concurrency.Election, a Redisson lock plus a leader record on Redis). Blocking calls release the
//! GIL and answer Ctrl-C; waiting calls have an async twin that reports to asyncio through a
//! callback.

use polylock::{Election, Wait};
use pyo3::prelude::*;

use crate::call::{interruptible, NativeCall, Outcome, Reply};
use crate::convert::blocking;
use crate::errors::{err, to_py};

/// A candidate in a leader election (Curator's LeaderLatch on ZooKeeper, etcd's
/// concurrency.Election, a Redisson lock plus a leader record on Redis).
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeElection {
    inner: Election,
}

impl NativeElection {
    pub(crate) fn new(inner: Election) -> NativeElection {
        NativeElection { inner }
    }
}

#[pymethods]
impl NativeElection {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// The identity this candidate campaigns with. Local: no round trip.
    #[getter]
    fn identity(&self) -> String {
        self.inner.identity().to_string()
    }

    /// The term (a fencing token, greater for every new leader) while this candidate leads, else
    /// none. Local: no round trip.
    #[getter]
    fn term(&self) -> Option<u64> {
        self.inner.term()
    }

    /// Campaign until this candidate leads: its term, or none when the wait ran out (the candidacy
    /// is then withdrawn). Leading already: the same term.
    #[pyo3(signature = (wait))]
    fn campaign(&self, py: Python<'_>, wait: Option<f64>) -> PyResult<Option<u64>> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let inner = self.inner.clone();
        interruptible(py, async move { inner.campaign(wait).await })?
            .map(|v| v.map(|l| l.term))
            .map_err(|e| to_py(py, e))
    }

    /// The same, started for asyncio: `done(ok, value)` when it ends (what it won is given back by
    /// `resign` if the call was cancelled meanwhile).
    fn campaign_async(&self, wait: Option<f64>, done: Py<PyAny>) -> PyResult<NativeCall> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let inner = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match inner.campaign(wait).await {
                    Ok(Some(_)) => Outcome::Taken(
                        Reply::Bool(true),
                        Box::new(move || {
                            Box::pin(async move {
                                let _ = inner.resign().await;
                            })
                        }),
                    ),
                    Ok(None) => Outcome::Value(Reply::Bool(false)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        ))
    }

    /// Stop leading: true if this candidate led; LOCK_LOST if its leadership had been lost
    /// meanwhile.
    fn resign(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.resign().await })
    }

    /// The same, started for asyncio: `done(ok, value)` when it ends.
    fn resign_async(&self, done: Py<PyAny>) -> PyResult<NativeCall> {
        let inner = self.inner.clone();
        Ok(NativeCall::start(
            async move {
                match inner.resign().await {
                    Ok(v) => Outcome::Value(Reply::Bool(v)),
                    Err(e) => Outcome::Error(e),
                }
            },
            done,
        ))
    }

    /// The leader now (any client may ask): its identity and term, or none.
    fn leader(&self, py: Python<'_>) -> PyResult<Option<(String, u64)>> {
        let inner = self.inner.clone();
        let v = blocking(py, async move { inner.leader().await })?;
        Ok(v.map(|l| (l.identity, l.term)))
    }

    /// The candidates' identities in their order, the leader first (ZooKeeper and etcd queue their
    /// candidates; Redis keeps no queue and lists the leader only).
    fn candidates(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.candidates().await })
    }

    /// Wait until the leader differs from the one seen (named by its term, 0 for nobody): the
    /// leader then (none: nobody leads), or no change when the wait ran out.
    #[pyo3(signature = (seen_term, wait))]
    fn next_change(
        &self,
        py: Python<'_>,
        seen_term: u64,
        wait: Option<f64>,
    ) -> PyResult<(bool, Option<(String, u64)>)> {
        let wait = Wait::from_secs(wait, "timeout").map_err(err)?;
        let inner = self.inner.clone();
        interruptible(
            py,
            async move { inner.next_change_after(seen_term, wait).await },
        )?
        .map(|v| match v {
            Some(now) => (true, now.map(|l| (l.identity, l.term))),
            None => (false, None),
        })
        .map_err(|e| to_py(py, e))
    }
}
