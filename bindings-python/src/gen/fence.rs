// Generated from core/api/fence.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `NativeFence`: A fence: fenced writes of Redis commands under a lock's fencing token (Redis
//! only). Blocking calls release the GIL and answer Ctrl-C; waiting calls have an async twin that
//! reports to asyncio through a callback.

use polylock::Fence;
use pyo3::prelude::*;

use crate::convert::blocking;
use crate::errors::err;

/// A fence: fenced writes of Redis commands under a lock's fencing token (Redis only).
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeFence {
    inner: Fence,
}

impl NativeFence {
    pub(crate) fn new(inner: Fence) -> NativeFence {
        NativeFence { inner }
    }
}

#[pymethods]
impl NativeFence {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// Run the commands (each a command's name and its arguments) in one atomic step if `token` is
    /// not smaller than the largest token this fence accepted, recording it; their replies, in
    /// order. A smaller token fails with STALE_TOKEN and nothing runs; the same token may write any
    /// number of times. In a Redis Cluster the commands' keys must carry the name's hash tag
    /// ({name}).
    fn write(
        &self,
        py: Python<'_>,
        token: i64,
        commands: Vec<Vec<Vec<u8>>>,
    ) -> PyResult<crate::convert::Replies> {
        let token = polylock::args::token_from_i64(token, "token").map_err(err)?;
        let inner = self.inner.clone();
        let v = blocking(py, async move { inner.write(token, &commands).await })?;
        Ok(crate::convert::Replies(v))
    }

    /// The largest token this fence accepted, or none.
    fn accepted(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let inner = self.inner.clone();
        blocking(py, async move { inner.accepted().await })
    }
}
