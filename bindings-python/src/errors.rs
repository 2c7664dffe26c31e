//! Core's errors as the exception classes of `polylock._errors`.

use polylock::ErrorKind;
use pyo3::prelude::*;
use pyo3::types::PyType;

// BEGIN generated from core/api/errors.toml by `python3 scripts/gen-bindings.py`: do not edit
/// The `polylock._errors` class of each kind of core's error table.
pub(crate) fn error_class(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument | ErrorKind::NullParameter => "InvalidArgumentError",
        ErrorKind::Timeout => "LockTimeoutError",
        ErrorKind::NotOwner => "NotOwnerError",
        ErrorKind::LockLost => "LockLostError",
        ErrorKind::Connection => "PolylockConnectionError",
        ErrorKind::Auth => "AuthError",
        ErrorKind::Backend => "BackendError",
        ErrorKind::InvalidState => "InvalidStateError",
        ErrorKind::Internal | ErrorKind::Panic => "InternalError",
        ErrorKind::Cancelled => "OperationCancelledError",
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::UpgradeNotSupported => "UpgradeNotSupportedError",
        ErrorKind::NotReplicated => "NotReplicatedError",
        ErrorKind::StaleToken => "StaleTokenError",
        _ => "InternalError",
    }
}
// END generated (errors)

/// A core error as the matching `polylock._errors` exception (message, code name, code number).
pub(crate) fn to_py(py: Python<'_>, e: polylock::Error) -> PyErr {
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

/// [`to_py`] where no `Python` token is at hand.
pub(crate) fn err(e: polylock::Error) -> PyErr {
    Python::attach(|py| to_py(py, e))
}

/// The stable error table (code number → name → class), for the Python side's checks.
#[pyfunction]
pub(crate) fn error_table() -> Vec<(u32, &'static str, &'static str)> {
    ErrorKind::ALL
        .iter()
        .map(|k| (k.code(), k.name(), error_class(*k)))
        .collect()
}
