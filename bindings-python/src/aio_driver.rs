//! The asyncio loop driver: polylock's futures polled on the thread of a running asyncio (or
//! uvloop) loop, with that loop's own Redis sockets (`loop.add_reader`), so an asyncio call
//! crosses no thread (see `polylock::driver`). One driver per loop; `_aio.py` makes it and hands
//! it its host (the loop's `add_reader`, `remove_reader`, `call_soon_threadsafe`).
//!
//! A call started inside [`LoopDriver::call`] runs on the driver (`NativeCall::start` asks
//! [`current`]); its `done` runs on the loop's thread, and the Python side settles the future with
//! `loop.call_soon`. Wake-ups from polylock's runtime (timers, pub/sub, the watchdog's news) reach
//! the loop through a self-pipe the loop watches, coalesced.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use polylock::driver::{Driver, Fd, LoopHost, TaskId};
use pyo3::prelude::*;

struct PyHost {
    host: Py<PyAny>,
}

impl LoopHost for PyHost {
    fn watch(&self, fd: Fd, write: bool) -> std::io::Result<()> {
        Python::attach(|py| self.host.call_method1(py, "watch", (fd, write)).map(|_| ()))
            .map_err(|e| std::io::Error::other(e.to_string()))
    }

    fn unwatch(&self, fd: Fd) {
        Python::attach(|py| {
            if let Err(e) = self.host.call_method1(py, "unwatch", (fd,)) {
                e.print(py);
            }
        });
    }

    fn keep_alive(&self, _yes: bool) {
        // An asyncio program lives while its coroutine runs: nothing to keep alive.
    }

    fn flush_soon(&self) -> bool {
        Python::attach(|py| {
            self.host
                .call_method0(py, "flush_soon")
                .and_then(|r| r.extract::<bool>(py))
                .unwrap_or_else(|e| {
                    e.print(py);
                    false
                })
        })
    }
}

/// The driver of one asyncio loop.
#[pyclass(unsendable, weakref, module = "polylock._native")]
pub(crate) struct LoopDriver {
    driver: Rc<Driver>,
    wake_pending: Arc<AtomicBool>,
    /// The self-pipe other threads wake the loop through: its read end is watched by the loop
    /// (`wake_fd`), a byte on its write end makes the loop call `woken()`. Waking never waits
    /// for the GIL (a runtime thread that woke a call while holding a lock the loop's thread
    /// waits for would deadlock).
    pipe: [std::os::fd::OwnedFd; 2],
    /// Calls whose callers have not yet resumed (`call` .. `resumed`).
    awaiting: std::cell::Cell<usize>,
    /// Calls answered inside `call` in a row (see `YIELD_EVERY`).
    answered_in_calls: std::cell::Cell<u32>,
}

/// At most this many calls answered inside the call in a row (about a millisecond of a task's
/// calls) before a caller yields to the loop once (see `LoopDriver::call`).
const YIELD_EVERY: u32 = 16;

fn self_pipe() -> std::io::Result<[std::os::fd::OwnedFd; 2]> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    Ok(unsafe {
        [
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        ]
    })
}

thread_local! {
    /// The driver a call made now on this thread runs on (set by [`LoopDriver::call`]).
    static CURRENT: RefCell<Option<(Rc<Driver>, Py<LoopDriver>)>> = const { RefCell::new(None) };
}

/// The driver of the call being started on this thread, if it is started on one.
pub(crate) fn current() -> Option<(Rc<Driver>, Py<LoopDriver>)> {
    CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .map(|(d, p)| (d.clone(), Python::attach(|py| p.clone_ref(py))))
    })
}

/// Cancel the call `id` of `driver` (on the loop's thread).
pub(crate) fn cancel(driver: &Py<LoopDriver>, id: TaskId) -> bool {
    Python::attach(|py| match driver.try_borrow(py) {
        Ok(d) => d.driver.cancel(id),
        Err(_) => false,
    })
}

#[pymethods]
impl LoopDriver {
    /// A driver whose host has `watch(fd, write)` and `unwatch(fd)`; the host must also have
    /// the loop call `woken()` when `wake_fd` is readable.
    #[new]
    fn new(host: Py<PyAny>) -> PyResult<LoopDriver> {
        use std::os::fd::AsRawFd;
        let pipe = self_pipe().map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
        let wake_pending = Arc::new(AtomicBool::new(false));
        let pending = wake_pending.clone();
        let write_end = pipe[1].as_raw_fd();
        let driver = Driver::new(
            Box::new(PyHost { host }),
            Box::new(move || {
                if !pending.swap(true, Ordering::AcqRel) {
                    // SAFETY: a one-byte write to the pipe's write end, which lives as long as
                    // the driver (the driver stops calling this when it is closed or dropped,
                    // before the pipe closes: fields drop in order). A full pipe already wakes.
                    unsafe { libc::write(write_end, [1u8].as_ptr().cast(), 1) };
                }
            }),
        );
        // Its settled futures run on the loop's next round, not inside its callbacks.
        driver.follow_up(false);
        Ok(LoopDriver {
            driver: Rc::new(driver),
            wake_pending,
            pipe,
            awaiting: std::cell::Cell::new(0),
            answered_in_calls: std::cell::Cell::new(0),
        })
    }

    /// The descriptor the loop watches for wake-ups from other threads.
    #[getter]
    fn wake_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.pipe[0].as_raw_fd()
    }

    /// Run `start(*args, done)` (a native `*_async` call) with this driver as the one its call
    /// runs on, and return what its caller awaits (see [`Awaited`]; a call answered within
    /// this call ends the await at once). `give_back(args[0], value)` runs for a value that
    /// arrives after the caller stopped waiting (`False` and `None`: nothing taken); `loop` is
    /// the loop this driver serves.
    fn call(
        slf: &Bound<'_, Self>,
        start: &Bound<'_, PyAny>,
        args: &Bound<'_, pyo3::types::PyTuple>,
        give_back: Option<Py<PyAny>>,
        r#loop: Py<PyAny>,
    ) -> PyResult<Py<Awaited>> {
        let py = slf.py();
        let this = slf.borrow();
        let driver = this.driver.clone();
        // A call waits a moment for its reply inside this method only when no other task awaits
        // one: the others run only after this returns, and waiting for each call in turn would
        // serialize them. Nor after YIELD_EVERY calls in a row were answered inside the call:
        // awaiting a settled call does not yield to the loop, so a task calling in a loop
        // would keep the loop's other tasks and I/O waiting; this call's caller yields instead.
        let alone = this.awaiting.get() == 0;
        let yield_now = this.answered_in_calls.get() >= YIELD_EVERY;
        if yield_now {
            this.answered_in_calls.set(0);
        }
        driver.poll_in_calls(alone && !yield_now);
        // With other calls awaited, the loop goes round for their replies: this call's command
        // waits for that round (`flush`), and goes out in one write with those of the tasks the
        // loop resumes in this round.
        driver.defer_writes(!alone);
        this.awaiting.set(this.awaiting.get() + 1);
        drop(this);
        let awaited = Py::new(
            py,
            Awaited {
                driver: slf.clone().unbind(),
                r#loop,
                give_back: match give_back {
                    Some(g) => Some((g, args.get_item(0)?.unbind())),
                    None => None,
                },
                call: RefCell::new(None),
                state: RefCell::new(State::Running),
            },
        )?;
        let before = driver.in_flight();
        let me = slf.clone().unbind();
        let previous = CURRENT.with(|c| c.borrow_mut().replace((driver.clone(), me)));
        let mut with_done: Vec<Bound<'_, PyAny>> = args.iter().collect();
        with_done.push(awaited.bind(py).clone().into_any());
        let result = start.call1(pyo3::types::PyTuple::new(py, with_done)?);
        CURRENT.with(|c| *c.borrow_mut() = previous);
        let call = result.inspect_err(|_| {
            let a = awaited.borrow(py);
            a.state.replace(State::Taken);
            a.resumed(py); // nothing to await
        })?;
        // Answered inside the call (its task already ended): its caller will not yield to the
        // loop when it awaits.
        let this = slf.borrow();
        if driver.in_flight() <= before {
            this.answered_in_calls.set(this.answered_in_calls.get() + 1);
        } else {
            this.answered_in_calls.set(0);
        }
        drop(this);
        *awaited.borrow(py).call.borrow_mut() = Some(call.unbind());
        Ok(awaited)
    }

    /// The loop saw `fd` readable or writable.
    fn io_ready(&self, fd: Fd, readable: bool, writable: bool) {
        self.batch(|d| d.io_ready(fd, readable, writable));
    }

    /// The loop writes the commands calls left unwritten (the host's `flush_soon`).
    fn flush(&self) {
        self.driver.flush();
    }

    /// The loop runs what other threads woke (`wake_fd` was readable).
    fn woken(&self) {
        use std::os::fd::AsRawFd;
        // Empty the pipe first, then clear the flag: a wake after this writes a byte again, and
        // one between the two finds the flag set and writes nothing, but its future is already
        // queued and the turn below polls it. (Clearing first could swallow the byte of a wake
        // whose flag stays set, and no wake would reach the loop again.)
        let mut buf = [0u8; 64];
        // SAFETY: reads into a buffer of our own from the pipe's non-blocking read end.
        while unsafe { libc::read(self.pipe[0].as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) }
            > 0
        {}
        self.wake_pending.store(false, Ordering::Release);
        self.batch(|d| d.woken());
    }

    /// What the driver holds (diagnostics).
    fn describe(&self) -> String {
        self.driver.describe()
    }

    /// Writes made to the loop's sockets so far (diagnostics).
    fn writes(&self) -> u64 {
        self.driver.writes()
    }

    /// Open loop connections (tests: one per server, closed with their client).
    fn connections(&self) -> usize {
        self.driver.connections()
    }

    /// Close the driver (the loop is closing): its calls are dropped, its sockets closed.
    fn close(&self) {
        self.driver.close();
    }
}

impl LoopDriver {
    /// The caller of a call resumed (its result was taken, or it was cancelled).
    fn resumed(&self) {
        self.awaiting.set(self.awaiting.get().saturating_sub(1));
    }

    /// One loop callback of the driver (see [`Driver::callback`]); asyncio needs no scope.
    fn batch(&self, f: impl FnOnce(&Driver)) {
        self.driver.callback(&|work| work(), f);
    }
}

/// Where an [`Awaited`] call is.
enum State {
    /// Under way; nobody waits on the loop yet.
    Running,
    /// Done before its caller waited: `(ok, value)`.
    Done(bool, Py<PyAny>),
    /// Its caller waits on this asyncio future.
    Waiting(Py<PyAny>),
    /// Its outcome was taken, or its caller stopped waiting.
    Taken,
}

/// What an asyncio caller awaits for a call on a loop driver: the call's `done` callback and
/// its awaitable in one object. A call answered before it is awaited (its reply came while the
/// call waited a moment) resumes its caller at once, with no future made; otherwise an asyncio
/// future of the loop is made and waited on. Cancelling the caller cancels the call, and what
/// the call took anyway is given back.
#[pyclass(unsendable, module = "polylock._native")]
pub(crate) struct Awaited {
    driver: Py<LoopDriver>,
    r#loop: Py<PyAny>,
    /// `give_back` and the call's first argument (the owner, the permits) it is called with.
    give_back: Option<(Py<PyAny>, Py<PyAny>)>,
    call: RefCell<Option<Py<PyAny>>>,
    state: RefCell<State>,
}

impl Awaited {
    /// The caller resumed or gave up: tell the driver, once.
    fn resumed(&self, py: Python<'_>) {
        if let Ok(d) = self.driver.try_borrow(py) {
            d.resumed();
        }
    }

    fn give_back(&self, py: Python<'_>, ok: bool, value: &Bound<'_, PyAny>) {
        if let Some((g, first)) = &self.give_back {
            let is_false =
                value.is_instance_of::<pyo3::types::PyBool>() && !value.is_truthy().unwrap_or(true);
            if ok && !value.is_none() && !is_false {
                if let Err(e) = g.call1(py, (first, value)) {
                    e.print(py);
                }
            }
        }
    }

    /// Hand `(ok, value)` to the caller: `StopIteration(value)` ends the await with the value.
    fn outcome(py: Python<'_>, ok: bool, value: Py<PyAny>) -> PyErr {
        if ok {
            pyo3::exceptions::PyStopIteration::new_err((value,))
        } else {
            PyErr::from_value(value.into_bound(py))
        }
    }

    fn cancel_call(&self, py: Python<'_>) {
        if let Some(call) = self.call.borrow().as_ref() {
            if let Err(e) = call.call_method0(py, "cancel") {
                e.print(py);
            }
        }
    }
}

#[pymethods]
impl Awaited {
    /// The call's `done(ok, value)`, on the loop's thread.
    fn __call__(&self, py: Python<'_>, ok: bool, value: Py<PyAny>) -> PyResult<()> {
        let state = self.state.replace(State::Taken);
        match state {
            State::Running => {
                self.state.replace(State::Done(ok, value));
            }
            State::Waiting(fut) => {
                let fut = fut.bind(py);
                if fut.call_method0("done")?.is_truthy()? {
                    self.give_back(py, ok, value.bind(py)); // the caller was cancelled
                } else if ok {
                    fut.call_method1("set_result", (value,))?;
                } else {
                    fut.call_method1("set_exception", (value,))?;
                }
                self.state.replace(State::Waiting(fut.clone().unbind()));
            }
            State::Done(..) | State::Taken => self.give_back(py, ok, value.bind(py)),
        }
        Ok(())
    }

    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// One step of the await: the outcome (as `StopIteration`), or a future to wait on.
    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let state = self.state.replace(State::Taken);
        match state {
            State::Done(ok, value) => {
                self.resumed(py);
                Err(Self::outcome(py, ok, value))
            }
            State::Running => {
                let fut = self.r#loop.call_method0(py, "create_future")?;
                fut.bind(py).setattr("_asyncio_future_blocking", true)?;
                self.state.replace(State::Waiting(fut.clone_ref(py)));
                Ok(fut)
            }
            State::Waiting(fut) => {
                self.resumed(py);
                let value = fut.call_method0(py, "result")?; // its error, raised
                Err(Self::outcome(py, true, value))
            }
            State::Taken => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "this polylock call was already awaited",
            )),
        }
    }

    /// The caller is cancelled (or another exception is thrown in): cancel the call, then
    /// raise what was thrown.
    #[pyo3(signature = (typ, val=None, _tb=None))]
    fn throw(
        &self,
        py: Python<'_>,
        typ: &Bound<'_, PyAny>,
        val: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.stop(py);
        let exc = match val {
            Some(v) if !v.is_none() => v.clone(),
            _ if typ.is_instance_of::<pyo3::exceptions::PyBaseException>() => typ.clone(),
            _ => typ.call0()?,
        };
        Err(PyErr::from_value(exc))
    }

    /// The caller's coroutine is closed: cancel the call.
    fn close(&self, py: Python<'_>) {
        self.stop(py);
    }
}

impl Awaited {
    /// The caller stopped waiting: the call is cancelled, and what it took is given back.
    fn stop(&self, py: Python<'_>) {
        match self.state.replace(State::Taken) {
            State::Taken => return,
            State::Done(ok, value) => self.give_back(py, ok, value.bind(py)),
            State::Running => self.cancel_call(py),
            State::Waiting(fut) => {
                let fut = fut.bind(py);
                if fut
                    .call_method0("done")
                    .is_ok_and(|d| d.is_truthy().unwrap_or(false))
                {
                    if let Ok(v) = fut.call_method0("result") {
                        self.give_back(py, true, &v);
                    }
                } else {
                    let _ = fut.call_method0("cancel");
                }
                self.cancel_call(py);
            }
        }
        self.resumed(py);
    }
}

impl Drop for Awaited {
    fn drop(&mut self) {
        // Never awaited to its end (a caller that went away): as if it stopped waiting.
        if !matches!(*self.state.borrow(), State::Taken) {
            Python::attach(|py| self.stop(py));
        }
    }
}
