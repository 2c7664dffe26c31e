//! Async calls for asyncio: a call runs on polylock's runtime and reports its outcome through a
//! Python callback (which hands it to the event loop); it can be cancelled.

use std::sync::{Arc, Mutex};

use polylock::{runtime, Lock};
use pyo3::prelude::*;
use pyo3::types::PyBool;

use crate::errors::to_py;

pub(crate) enum Outcome {
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
pub(crate) struct NativeCall {
    state: Arc<Mutex<CallState>>,
}

impl NativeCall {
    pub(crate) fn start(
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
