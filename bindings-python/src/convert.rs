//! Python arguments to core's types (core's `args` parses them): seconds to durations, text; and
//! running a short call with the GIL released.

use std::time::Duration;

use polylock::runtime;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::{err, to_py};

/// A positive number of seconds (core's convention).
pub(crate) fn seconds(v: f64, what: &str) -> PyResult<Duration> {
    polylock::args::secs(v, what).map_err(err)
}

/// Run a short call on the runtime with the GIL released.
pub(crate) fn blocking<T: Send + 'static>(
    py: Python<'_>,
    fut: impl std::future::Future<Output = polylock::Result<T>> + Send + 'static,
) -> PyResult<T> {
    py.detach(|| runtime::block_on(fut).and_then(|r| r))
        .map_err(|e| to_py(py, e))
}

/// A str argument. A str holding a lone surrogate has no UTF-8 form: the core's strict UTF-16
/// decoding names it (`InvalidArgumentError`, not a bare UnicodeEncodeError).
pub(crate) fn text(s: &Bound<'_, PyString>, what: &str) -> PyResult<String> {
    if let Ok(t) = s.to_cow() {
        return Ok(t.into_owned());
    }
    let bytes = s.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let bytes: &[u8] = bytes.extract()?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    polylock::text_from_utf16(&units, what).map_err(err)
}

/// A fenced write's replies as Python gets them: a list of None, int, bytes (a bulk string), str
/// (a status such as "OK") and lists, as redis-py answers an `EVAL`.
pub(crate) struct Replies(pub(crate) Vec<polylock::Reply>);

fn reply(py: Python<'_>, r: polylock::Reply) -> PyResult<Bound<'_, PyAny>> {
    use polylock::Reply as R;
    Ok(match r {
        R::Nil => pyo3::types::PyNone::get(py).to_owned().into_any(),
        R::Int(n) => n.into_pyobject(py)?.into_any(),
        R::Bytes(b) => pyo3::types::PyBytes::new(py, &b).into_any(),
        R::Status(s) => PyString::new(py, &s).into_any(),
        R::Array(items) => Replies(items).into_pyobject(py)?,
    })
}

impl<'py> IntoPyObject<'py> for Replies {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let items = self
            .0
            .into_iter()
            .map(|r| reply(py, r))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(pyo3::types::PyList::new(py, items)?.into_any())
    }
}
