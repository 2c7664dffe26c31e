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

    /// Run `start(done)` (a native `*_async` call) with this driver as the one its call runs on.
    fn call(
        slf: &Bound<'_, Self>,
        start: &Bound<'_, PyAny>,
        done: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let this = slf.borrow();
        let driver = this.driver.clone();
        // A call waits a moment for its reply inside this method only when no other task awaits
        // one: the others run only after this returns, and waiting for each call in turn would
        // serialize them. Nor after YIELD_EVERY calls in a row were answered inside the call:
        // awaiting a settled future does not yield to the loop, so a task calling in a loop
        // would keep the loop's other tasks and I/O waiting; this call's caller yields instead.
        let alone = this.awaiting.get() == 0;
        let yield_now = this.answered_in_calls.get() >= YIELD_EVERY;
        if yield_now {
            this.answered_in_calls.set(0);
        }
        driver.poll_in_calls(alone && !yield_now);
        this.awaiting.set(this.awaiting.get() + 1);
        drop(this);
        let before = driver.in_flight();
        let me = slf.clone().unbind();
        let previous = CURRENT.with(|c| c.borrow_mut().replace((driver.clone(), me)));
        let result = start.call1((done,));
        CURRENT.with(|c| *c.borrow_mut() = previous);
        let this = slf.borrow();
        if result.is_err() {
            this.resumed(); // nothing to await
        }
        // Answered inside the call (its task already ended): its caller will not yield to the
        // loop when it awaits.
        if driver.in_flight() <= before {
            this.answered_in_calls.set(this.answered_in_calls.get() + 1);
        } else {
            this.answered_in_calls.set(0);
        }
        result.map(Bound::unbind)
    }

    /// The caller of a call resumed (its result was taken, or it was cancelled).
    fn resumed(&self) {
        self.awaiting.set(self.awaiting.get().saturating_sub(1));
    }

    /// The loop saw `fd` readable or writable.
    fn io_ready(&self, fd: Fd, readable: bool, writable: bool) {
        self.batch(|d| d.io_ready(fd, readable, writable));
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
    /// One loop callback of the driver (see [`Driver::callback`]); asyncio needs no scope.
    fn batch(&self, f: impl FnOnce(&Driver)) {
        self.driver.callback(&|work| work(), f);
    }
}
