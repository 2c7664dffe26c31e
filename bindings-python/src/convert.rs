//! Python arguments to core's types: seconds to durations, the wait and lease of an acquire, the
//! kind of a lock, and running a short call with the GIL released.

use std::time::Duration;

use polylock::{runtime, ErrorKind, LockKind, Wait};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::{err, to_py};

pub(crate) fn seconds(v: f64, what: &str) -> PyResult<Duration> {
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
pub(crate) fn wait_arg(wait: Option<f64>) -> PyResult<Wait> {
    match wait {
        None => Ok(Wait::Forever),
        Some(0.0) => Ok(Wait::Never),
        Some(w) => Ok(Wait::For(seconds(w, "timeout")?)),
    }
}

pub(crate) fn lease_arg(lease: Option<f64>) -> PyResult<Option<Duration>> {
    lease.map(|l| seconds(l, "lease")).transpose()
}

/// The Python side's names of the lock kinds.
pub(crate) fn kind_arg(kind: &str) -> PyResult<LockKind> {
    match kind {
        "reentrant" => Ok(LockKind::Reentrant),
        "mutex" => Ok(LockKind::Mutex),
        "read" => Ok(LockKind::Read),
        "write" => Ok(LockKind::Write),
        "fair" => Ok(LockKind::Fair),
        other => Err(err(polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("unknown lock kind '{other}'"),
        ))),
    }
}

/// The Python side's name of what a lost hold held: a lock kind, or `permit`.
pub(crate) fn hold_kind_name(kind: polylock::HoldKind) -> &'static str {
    match kind {
        polylock::HoldKind::Lock(k) => kind_name(k),
        _ => "permit",
    }
}

pub(crate) fn kind_name(kind: LockKind) -> &'static str {
    match kind {
        LockKind::Reentrant => "reentrant",
        LockKind::Mutex => "mutex",
        LockKind::Read => "read",
        LockKind::Write => "write",
        LockKind::Fair => "fair",
        _ => "other",
    }
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
