//! The core's log events into Python's `logging`: target `polylock::hold` becomes the logger
//! `polylock.hold` (a child of `polylock`), the level maps to logging's, the lock name goes in
//! `extra={"lock": ...}` and the other fields in `extra={"fields": {...}}`.
//!
//! The core calls the sink from any thread, often with a mutex of its own held (a hold marked
//! lost under the holds registry's lock), so the sink never waits for the GIL: a thread holding
//! the GIL may be about to take that mutex (a fencing-token query does, without releasing the
//! GIL). The sink only queues the record; one thread of the binding's own (`polylock-log`) hands
//! the queue to `logging`, with the GIL, in order.
//!
//! Debug events (every acquire and release) are queued only while a `polylock` logger is enabled
//! for DEBUG, as last seen: when the module loaded, at every connect, and after every batch of
//! records handed to `logging` (an atomic read in the sink, no GIL).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use polylock::log::{LogLevel, LogRecord};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

/// The most records waiting for `logging`; more are counted and dropped (and that is logged).
const QUEUE_LEN: usize = 10_000;
/// The most records handed to `logging` under one hold of the GIL.
const BATCH: usize = 256;

/// Whether a `polylock` logger wants DEBUG records, as last seen.
static DEBUG: AtomicBool = AtomicBool::new(false);
/// Records queued, handed over (or dropped at exit) and dropped because the queue was full.
static QUEUED: AtomicU64 = AtomicU64::new(0);
static HANDLED: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// The queue of this process (a forked child starts its own: the parent's thread is not there).
struct Queue {
    pid: u32,
    tx: SyncSender<LogRecord>,
}

static QUEUE: Mutex<Option<Queue>> = Mutex::new(None);

/// Hand the core's events to `logging` from now on (once, when the module loads).
pub(crate) fn install(py: Python<'_>) {
    // False if the process already has a `tracing` subscriber: then it gets the events.
    let _ = polylock::log::forward(LogLevel::Info, sink);
    refresh_debug(py);
}

fn sink(record: LogRecord) {
    if record.level == LogLevel::Debug && !DEBUG.load(Relaxed) {
        return;
    }
    let pid = std::process::id();
    let mut queue = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    if queue.as_ref().is_none_or(|q| q.pid != pid) {
        // A forked child: the parent's thread does not exist here and its queue may be in any
        // state, so it is left alone (leaked) and its records no longer awaited.
        std::mem::forget(queue.take());
        HANDLED.store(QUEUED.load(SeqCst), SeqCst);
        *queue = start(pid);
    }
    let Some(q) = queue.as_ref() else {
        return; // no thread could be started: nobody to hand records to
    };
    match q.tx.try_send(record) {
        Ok(()) => {
            QUEUED.fetch_add(1, SeqCst);
        }
        Err(TrySendError::Full(_)) => {
            DROPPED.fetch_add(1, Relaxed);
        }
        Err(TrySendError::Disconnected(_)) => *queue = None,
    }
}

fn start(pid: u32) -> Option<Queue> {
    let (tx, rx) = sync_channel(QUEUE_LEN);
    std::thread::Builder::new()
        .name("polylock-log".into())
        .spawn(move || deliver(rx))
        .ok()?;
    Some(Queue { pid, tx })
}

/// The `polylock-log` thread: batches of records to `logging`, with the GIL, until the
/// interpreter exits (then they are dropped: see `call::from_runtime`).
fn deliver(rx: Receiver<LogRecord>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let n = batch.len() as u64;
        let dropped = DROPPED.swap(0, Relaxed);
        crate::call::from_runtime(move |py| {
            if dropped > 0 {
                emit(
                    py,
                    LogRecord {
                        level: LogLevel::Warn,
                        target: "polylock".into(),
                        message: format!(
                            "polylock: {dropped} log records dropped: Python's logging did not \
                             keep up with the core's events"
                        ),
                        lock: None,
                        fields: Vec::new(),
                    },
                );
            }
            for r in batch {
                emit(py, r);
            }
            refresh_debug(py);
        });
        HANDLED.fetch_add(n, SeqCst);
    }
}

fn get_logger<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    static GET_LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    GET_LOGGER
        .import(py, "logging", "getLogger")?
        .call1((name,))
}

fn level_number(level: LogLevel) -> i32 {
    match level {
        LogLevel::Error => 40,
        LogLevel::Warn => 30,
        LogLevel::Info => 20,
        LogLevel::Debug => 10,
    }
}

/// One record to its logger; a failure of `logging` itself is reported as unraisable.
fn emit(py: Python<'_>, r: LogRecord) {
    let told = (|| -> PyResult<()> {
        let logger = get_logger(py, &r.target.replace("::", "."))?;
        let level = level_number(r.level);
        if !logger
            .call_method1(intern!(py, "isEnabledFor"), (level,))?
            .is_truthy()?
        {
            return Ok(());
        }
        let fields = PyDict::new(py);
        for (k, v) in r.fields {
            fields.set_item(k, v)?;
        }
        let extra = PyDict::new(py);
        extra.set_item(intern!(py, "lock"), r.lock)?;
        extra.set_item(intern!(py, "fields"), fields)?;
        // Made as `Logger.log` makes it, but for where it comes from: no Python frame called
        // it, so the record's path is the core's module (`polylock::hold`) and its line 0. No
        // args: logging leaves a message without args as it is (a '%' in it is safe).
        let record = logger.call_method1(
            intern!(py, "makeRecord"),
            (
                logger.getattr(intern!(py, "name"))?,
                level,
                &r.target,
                0,
                r.message,
                PyTuple::empty(py),
                py.None(),
                py.None(),
                extra,
            ),
        )?;
        logger.call_method1(intern!(py, "handle"), (record,))?;
        Ok(())
    })();
    if let Err(e) = told {
        e.write_unraisable(py, None);
    }
}

/// Look again whether a `polylock` logger wants DEBUG records.
pub(crate) fn refresh_debug(py: Python<'_>) {
    let on = ["polylock", "polylock.acquire", "polylock.release"]
        .iter()
        .any(|name| {
            get_logger(py, name)
                .and_then(|l| l.call_method1(intern!(py, "isEnabledFor"), (10,)))
                .and_then(|v| v.is_truthy())
                .unwrap_or(false)
        });
    DEBUG.store(on, Relaxed);
    // The core then builds no debug record at all while nobody wants one.
    polylock::log::set_level(if on { LogLevel::Debug } else { LogLevel::Info });
}

/// Wait (GIL released) until every record queued so far is in `logging`, for at most `timeout`
/// seconds; whether it was. Runs at exit before runtime threads are kept out of Python, so
/// that the events of closing clients (a hold lost as its client closes) are not dropped.
#[pyfunction]
#[pyo3(signature = (timeout = 1.0))]
pub(crate) fn flush_logs(py: Python<'_>, timeout: f64) -> bool {
    refresh_debug(py);
    let target = QUEUED.load(SeqCst);
    let until = Instant::now() + Duration::from_secs_f64(timeout.clamp(0.0, 3600.0));
    py.detach(|| loop {
        if HANDLED.load(SeqCst) >= target {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    })
}
