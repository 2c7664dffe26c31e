//! Async calls for asyncio: a call runs on polylock's runtime and reports its outcome through a
//! Python callback (which hands it to the event loop); it can be cancelled.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use polylock::runtime;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use crate::errors::to_py;

/// Gives back what a call took (a lock hold, permits) when nobody wants it any more.
pub(crate) type GiveBack = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// What a call hands to Python.
pub(crate) enum Reply {
    Bool(bool),
    Text(String),
}

pub(crate) enum Outcome {
    /// Something was taken: handed over, or given back if the call was cancelled meanwhile.
    Taken(Reply, GiveBack),
    Value(Reply),
    Error(polylock::Error),
}

enum CallState {
    Starting,
    Running(tokio::task::AbortHandle),
    /// Running on an asyncio loop's driver.
    OnLoop(Py<crate::aio_driver::LoopDriver>, polylock::driver::TaskId),
    Cancelled,
    Done,
}

/// An async call running on polylock's runtime, for asyncio.
#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct NativeCall {
    state: Arc<Mutex<CallState>>,
}

impl NativeCall {
    pub(crate) fn start(
        fut: impl std::future::Future<Output = Outcome> + Send + 'static,
        done: Py<PyAny>,
    ) -> NativeCall {
        let state = Arc::new(Mutex::new(CallState::Starting));
        if let Some((driver, handle)) = crate::aio_driver::current() {
            // On the loop's thread: `done` runs there, when the call is done.
            let st = state.clone();
            let id = driver.spawn(fut, move |outcome| {
                *st.lock().unwrap_or_else(|e| e.into_inner()) = CallState::Done;
                // The loop's thread, inside a call or callback of the loop: it holds the GIL
                // and the interpreter runs, so no gate to pass.
                Python::attach(|py| hand_over(py, outcome, &done));
            });
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            if matches!(*s, CallState::Starting) {
                *s = CallState::OnLoop(handle, id);
            }
            drop(s);
            return NativeCall { state };
        }
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
                // Nobody waits for it any more: what arrived is given back.
                if let Outcome::Taken(_, give_back) = outcome {
                    give_back().await;
                }
                return;
            }
            deliver(outcome, &done);
        });
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*s, CallState::Starting) {
            *s = CallState::Running(task.abort_handle());
        }
        drop(s);
        NativeCall { state }
    }
}

/// Whether polylock's runtime threads may still enter Python, and how many are inside it.
static GATE: Mutex<(bool, usize)> = Mutex::new((true, 0));
/// Told when a runtime thread leaves Python.
static LEFT: Condvar = Condvar::new();
/// The longest the interpreter's exit waits for runtime threads to leave Python.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Run `f` with the GIL on one of polylock's runtime threads, unless the interpreter is exiting
/// (`None`). A runtime thread must not be inside Python when the interpreter finalizes: Python
/// code it runs can hand the GIL to the main thread, and taking it back during finalization ends
/// the thread under pyo3's guard, which aborts the process ("PyGILState_Release: thread state
/// must be current"). [`close_python_gate`] runs at exit, before finalization.
pub(crate) fn from_runtime<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    {
        let mut gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
        if !gate.0 {
            return None;
        }
        gate.1 += 1;
    }
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            let mut gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
            gate.1 -= 1;
            if !gate.0 {
                LEFT.notify_all(); // the exit waits for the last to leave
            }
        }
    }
    let _leave = Leave;
    Python::try_attach(f)
}

/// Registered with `atexit`: no runtime thread enters Python from now on, and those inside it
/// get the GIL to finish (for at most [`EXIT_WAIT`]) before the interpreter finalizes.
#[pyfunction]
pub(crate) fn close_python_gate(py: Python<'_>) {
    py.detach(|| {
        let mut gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
        gate.0 = false;
        let until = Instant::now() + EXIT_WAIT;
        while gate.1 > 0 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            gate = LEFT
                .wait_timeout(gate, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    });
}

/// Hand a call's outcome to Python from a runtime thread: `done(ok, value)`; not once the
/// interpreter exits (nobody is left to hear it).
fn deliver(outcome: Outcome, done: &Py<PyAny>) {
    from_runtime(|py| hand_over(py, outcome, done));
}

/// `done(ok, value)` with a call's outcome.
fn hand_over(py: Python<'_>, outcome: Outcome, done: &Py<PyAny>) {
    let reply = |r: Reply| match r {
        Reply::Bool(v) => PyBool::new(py, v).to_owned().into_any().unbind(),
        Reply::Text(t) => PyString::new(py, &t).into_any().unbind(),
    };
    let (ok, value) = match outcome {
        Outcome::Taken(r, _) | Outcome::Value(r) => (true, reply(r)),
        Outcome::Error(e) => (false, to_py(py, e).into_value(py).into_any()),
    };
    if let Err(e) = done.call1(py, (ok, value)) {
        e.print(py);
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
            CallState::OnLoop(driver, id) => {
                drop(s); // the dropped call may settle nothing, but keep the lock out of it
                crate::aio_driver::cancel(&driver, id)
            }
            CallState::Starting | CallState::Cancelled => true,
            CallState::Done => {
                *s = CallState::Done;
                false
            }
        }
    }
}

/// How often a blocking wait looks for Ctrl-C (the issue asks for ≤ 100 ms).
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Run a wait on this thread with the GIL released (runtime::block_on_for), looking for Python
/// signals (Ctrl-C) every 50 ms: a release wakes this thread directly, and the waiter's next
/// attempt runs on this thread's own connection, with no hand-over between threads. On a signal
/// the wait is dropped here, which cancels it (the core leaves nothing behind and gives back a
/// grant that raced the cancel), and the signal's exception is raised.
pub(crate) fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    fut: impl Future<Output = polylock::Result<T>> + Send + 'static,
) -> PyResult<polylock::Result<T>> {
    py.detach(move || {
        let mut fut = std::pin::pin!(fut);
        loop {
            match polylock::runtime::block_on_for(fut.as_mut(), SIGNAL_POLL) {
                Ok(Some(r)) => return Ok(r),
                Ok(None) => {}
                Err(e) => return Ok(Err(e)),
            }
            // A signal's exception (Ctrl-C) drops the wait here, which cancels it.
            Python::attach(|py| py.check_signals())?;
        }
    })
}
