//! `polylock._native`: the private native module under the hand-written `polylock` package.
//!
//! A thin adapter: it converts arguments, releases the GIL around everything that waits, maps
//! core's errors to the classes of `polylock._errors`, and calls the core. Owner ids are chosen by
//! the Python side (per thread for sync calls, per task for asyncio). One lock handle serves every
//! lock kind (reentrant lock, mutex, the halves of a read-write lock, fair lock, multi-lock).

mod aio_driver;
mod call;
mod client;
mod convert;
mod errors;
mod gen;
mod lock;
mod log;
mod metrics;

use pyo3::prelude::*;

/// A new owner id, never handed out twice in this process.
#[pyfunction]
fn fresh_owner() -> u64 {
    polylock::owner::fresh()
}

/// The `polylock` command with `argv` (program name first); its exit code. The GIL is released
/// while it runs (it may wait for a lock and run a child for hours).
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(move || polylock::cli::main(argv))
}

/// A fence's name and token as the SQL guards take them (core's rules), or InvalidArgumentError.
#[pyfunction]
fn fence_checked(name: &Bound<'_, pyo3::types::PyString>, token: i64) -> PyResult<(String, i64)> {
    let name = convert::text(name, "fence name")?;
    let token = polylock::args::token_from_i64(token, "token").map_err(errors::err)?;
    let (name, token) = polylock::fence::checked_sql(&name, token).map_err(errors::err)?;
    Ok((name.to_string(), token))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(client::connect, m)?)?;
    m.add_function(wrap_pyfunction!(client::connect_redlock, m)?)?;
    m.add_function(wrap_pyfunction!(lock::multi_lock, m)?)?;
    m.add_function(wrap_pyfunction!(fresh_owner, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(fence_checked, m)?)?;
    let sql = pyo3::types::PyDict::new(m.py());
    for (what, text) in polylock::fence::SQL {
        sql.set_item(what, text)?;
    }
    m.add("FENCE_SQL", sql)?;
    m.add_function(wrap_pyfunction!(errors::error_table, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::metrics_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::metrics_text, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::metric_families, m)?)?;
    m.add_function(wrap_pyfunction!(log::flush_logs, m)?)?;
    // Before the interpreter finalizes, runtime threads leave Python (see call::from_runtime);
    // just before that (atexit runs the last registered first), the core's log records still
    // queued reach `logging` (a hold lost as its client closes at exit, for one).
    let atexit = m.py().import("atexit")?;
    atexit.call_method1("register", (wrap_pyfunction!(call::close_python_gate, m)?,))?;
    atexit.call_method1("register", (wrap_pyfunction!(log::flush_logs, m)?,))?;
    // The core's log events go to `logging.getLogger("polylock...")` from now on.
    log::install(m.py());
    m.add_class::<client::NativeClient>()?;
    m.add_class::<lock::NativeLock>()?;
    m.add_class::<call::NativeCall>()?;
    m.add_class::<aio_driver::LoopDriver>()?;
    m.add_class::<aio_driver::Awaited>()?;
    m.add_class::<gen::semaphore::NativeSemaphore>()?;
    m.add_class::<gen::permit_semaphore::NativePermitSemaphore>()?;
    m.add_class::<gen::latch::NativeLatch>()?;
    m.add_class::<gen::fence::NativeFence>()?;
    m.add_class::<gen::election::NativeElection>()?;
    m.add("VERSION", polylock::VERSION)?;
    Ok(())
}
