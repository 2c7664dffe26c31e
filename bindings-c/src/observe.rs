//! Metrics and log events for C programs: the Prometheus text of a client or of the process,
//! and a callback that receives the core's log events.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

use polylock::log::{LogLevel, LogRecord};

use crate::client::{client_ref, polylock_client};
use crate::result::{
    boundary, copy_out, polylock_result, POLYLOCK_INVALID_ARGUMENT, POLYLOCK_INVALID_STATE,
    POLYLOCK_OK,
};

/// Log levels of `polylock_set_log_callback` (lower is more severe).
pub const POLYLOCK_LOG_ERROR: c_int = 1;
/// A hold lost, a renewal failed, a connection suspended.
pub const POLYLOCK_LOG_WARN: c_int = 2;
/// A connection back.
pub const POLYLOCK_LOG_INFO: c_int = 3;
/// Every acquire and release with its wait time.
pub const POLYLOCK_LOG_DEBUG: c_int = 4;

/// Copy the metrics of `client` alone (acquire wait time by outcome, hold time, holds and
/// waiters now, re-entries, losses, renewals) in the Prometheus text format into `buf` (at most
/// `len` bytes, NUL-terminated when `len` > 0). Returns the full length of the text, as snprintf
/// does: call with `len` 0 to learn the size. 0 if `client` is NULL. `buf` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_metrics(
    client: *mut polylock_client,
    buf: *mut c_char,
    len: usize,
) -> usize {
    let mut n = 0;
    let _ = boundary(|| {
        // SAFETY: NULL or a live client handle (caller contract).
        if let Ok(c) = unsafe { client_ref(client) } {
            n = copy_out(&c.metrics_text(), buf, len);
        }
        POLYLOCK_OK
    });
    n
}

/// The metrics of every client of this process (closed ones included, so counters never go
/// down) in the Prometheus text format, as `polylock_client_metrics` copies them.
#[no_mangle]
pub unsafe extern "C" fn polylock_metrics(buf: *mut c_char, len: usize) -> usize {
    let mut n = 0;
    let _ = boundary(|| {
        n = copy_out(&polylock::metrics::prometheus_text(), buf, len);
        POLYLOCK_OK
    });
    n
}

/// Receives one log event: its level (`POLYLOCK_LOG_*`), where it comes from
/// (`polylock::acquire`...), the lock it is about (NULL if none) and the message. The strings
/// live only during the call. Called from polylock's own threads as well as the caller's: it
/// must be thread-safe and must not call back into polylock.
pub type polylock_log_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        level: c_int,
        target: *const c_char,
        lock: *const c_char,
        message: *const c_char,
    ),
>;

struct Sink {
    f: unsafe extern "C" fn(*mut c_void, c_int, *const c_char, *const c_char, *const c_char),
    user: usize,
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// Hand the core's log events at `max_level` (`POLYLOCK_LOG_*`) and more severe to `callback`,
/// with `user` as its first argument, for the rest of the process. Once per process:
/// `POLYLOCK_INVALID_STATE` the second time. `POLYLOCK_INVALID_ARGUMENT` for a NULL callback or
/// a level outside 1 to 4.
#[no_mangle]
pub unsafe extern "C" fn polylock_set_log_callback(
    callback: polylock_log_fn,
    user: *mut c_void,
    max_level: c_int,
) -> polylock_result {
    boundary(|| {
        let Some(f) = callback else {
            return POLYLOCK_INVALID_ARGUMENT;
        };
        let max = match max_level {
            POLYLOCK_LOG_ERROR => LogLevel::Error,
            POLYLOCK_LOG_WARN => LogLevel::Warn,
            POLYLOCK_LOG_INFO => LogLevel::Info,
            POLYLOCK_LOG_DEBUG => LogLevel::Debug,
            _ => return POLYLOCK_INVALID_ARGUMENT,
        };
        if SINK
            .set(Sink {
                f,
                user: user as usize,
            })
            .is_err()
        {
            return POLYLOCK_INVALID_STATE;
        }
        if !polylock::log::forward(max, deliver) {
            return POLYLOCK_INVALID_STATE;
        }
        POLYLOCK_OK
    })
}

fn deliver(r: LogRecord) {
    let Some(sink) = SINK.get() else {
        return;
    };
    let level = match r.level {
        LogLevel::Error => POLYLOCK_LOG_ERROR,
        LogLevel::Warn => POLYLOCK_LOG_WARN,
        LogLevel::Info => POLYLOCK_LOG_INFO,
        LogLevel::Debug => POLYLOCK_LOG_DEBUG,
    };
    // Interior NULs cannot reach C: cut there.
    let c = |s: &str| CString::new(s.split('\0').next().unwrap_or_default()).unwrap_or_default();
    let target = c(&r.target);
    let message = c(&r.message);
    let lock = r.lock.as_deref().map(c);
    let lock_ptr = lock.as_ref().map_or(std::ptr::null(), |l| l.as_ptr());
    // SAFETY: the callback's contract (thread-safe, copies what it keeps); the strings outlive
    // the call.
    unsafe {
        (sink.f)(
            sink.user as *mut c_void,
            level,
            target.as_ptr(),
            lock_ptr,
            message.as_ptr(),
        )
    };
}
