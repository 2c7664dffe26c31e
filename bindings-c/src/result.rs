//! Result codes, the per-thread last error, the panic boundary, and the helpers every entry
//! point shares.

use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use polylock::{runtime, Error, ErrorKind};

/// A result code: `POLYLOCK_OK` (0) or one of the `POLYLOCK_*` error codes. Values never change
/// meaning; new codes get new numbers.
pub type polylock_result = u32;

/// Success.
pub const POLYLOCK_OK: polylock_result = 0;
// BEGIN generated from core/api/errors.toml by `python3 scripts/gen-bindings.py`: do not edit
/// A required pointer/handle was NULL (only produced by the C ABI; Java throws
/// NullPointerException).
pub const POLYLOCK_NULL_PARAMETER: polylock_result = 1;
/// An argument was malformed: empty or oversized name, NUL or non-UTF-8 text, bad duration,
/// malformed URL, ...
pub const POLYLOCK_INVALID_ARGUMENT: polylock_result = 2;
/// The lock was not acquired within the allowed wait.
pub const POLYLOCK_TIMEOUT: polylock_result = 3;
/// The caller released a lock it does not hold.
pub const POLYLOCK_NOT_OWNER: polylock_result = 4;
/// The lock was held, but its lease ended (expired, deleted, session lost) before the release.
pub const POLYLOCK_LOCK_LOST: polylock_result = 5;
/// The server could not be reached or stopped answering.
pub const POLYLOCK_CONNECTION: polylock_result = 6;
/// The server refused the credentials.
pub const POLYLOCK_AUTH: polylock_result = 7;
/// The server answered with an error polylock did not expect.
pub const POLYLOCK_BACKEND: polylock_result = 8;
/// The call is not valid in the current state (closed client, used after fork, blocking call from a
/// polylock runtime thread, ...).
pub const POLYLOCK_INVALID_STATE: polylock_result = 9;
/// A bug in polylock (an invariant did not hold).
pub const POLYLOCK_INTERNAL: polylock_result = 10;
/// A panic was caught at a language boundary (a bug, please report it).
pub const POLYLOCK_PANIC: polylock_result = 11;
/// The operation was cancelled by the caller (abort signal, interrupt, task cancellation).
pub const POLYLOCK_CANCELLED: polylock_result = 12;
/// The backend does not support this operation (for example a semaphore mutex on Redis, a lease on
/// ZooKeeper).
pub const POLYLOCK_UNSUPPORTED: polylock_result = 13;
/// An owner that holds the read half of a read-write lock asked for the write half. Neither
/// Redisson nor Curator can ever grant that (they wait forever); polylock says so at once. Release
/// the read lock first, or take the write lock first and downgrade.
pub const POLYLOCK_UPGRADE_NOT_SUPPORTED: polylock_result = 14;
/// Fewer replicas than the client asks for (the URL's `wait_replicas`) acknowledged an acquire in
/// time (Redis `WAIT`); the lock was given back.
pub const POLYLOCK_NOT_REPLICATED: polylock_result = 15;
/// A fenced write carried a fencing token smaller than one the resource already accepted for the
/// name: a holder whose lease ended wrote late, and the resource refused it (nothing of the write
/// was applied).
pub const POLYLOCK_STALE_TOKEN: polylock_result = 16;
// END generated (errors)

/// Room for a permit id: 32 hexadecimal characters and the NUL.
pub const POLYLOCK_PERMIT_ID_LEN: usize = 33;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

pub(crate) fn set_last_error(msg: &str) {
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.push_str(msg);
    });
}

pub(crate) fn fail(e: &Error) -> polylock_result {
    set_last_error(e.message());
    e.kind().code()
}

pub(crate) fn null(what: &str) -> polylock_result {
    set_last_error(&format!("{what} must not be NULL"));
    POLYLOCK_NULL_PARAMETER
}

/// Runs `f`, turning a panic into `POLYLOCK_PANIC` (never unwinding into C).
pub(crate) fn boundary(f: impl FnOnce() -> polylock_result) -> polylock_result {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => {
            if r == POLYLOCK_OK {
                set_last_error("");
            }
            r
        }
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("panic in polylock: {msg}"));
            POLYLOCK_PANIC
        }
    }
}

/// A NUL-terminated UTF-8 argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, polylock_result> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: the caller passes a NUL-terminated string (documented on each function).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| {
        set_last_error(&format!("{what} is not valid UTF-8"));
        POLYLOCK_INVALID_ARGUMENT
    })
}

/// Store `v` in `*out` (checked for NULL).
///
/// # Safety
/// `out` is NULL or writable.
pub(crate) unsafe fn put<T>(out: *mut T, v: T) -> polylock_result {
    if out.is_null() {
        return null("out");
    }
    // SAFETY: not NULL, writable by the caller's contract.
    unsafe { *out = v };
    POLYLOCK_OK
}

/// The shape of every generated entry point (`src/gen/`): on the live handle `handle` (NULL is
/// `POLYLOCK_NULL_PARAMETER` naming `what`), `call` checks the arguments and makes the core call,
/// which runs with the calling thread blocked; its answer goes to `*out`.
///
/// # Safety
/// `handle` is NULL or live; `out` NULL or writable.
pub(crate) unsafe fn on<H, T, F>(
    handle: *mut H,
    what: &str,
    out: *mut T,
    call: impl FnOnce(&H) -> polylock::Result<F>,
) -> polylock_result
where
    T: Send + 'static,
    F: std::future::Future<Output = polylock::Result<T>> + Send + 'static,
{
    boundary(|| {
        // SAFETY: caller contract.
        let Some(h) = (unsafe { handle.as_ref() }) else {
            return null(what);
        };
        // Checked before the call, so that nothing is done that could not be answered.
        if out.is_null() {
            return null("out");
        }
        match call(h).and_then(|fut| block(fut)) {
            // SAFETY: caller contract on `out`.
            Ok(v) => unsafe { put(out, v) },
            Err(e) => fail(&e),
        }
    })
}

/// Run `fut` on polylock's runtime with the calling thread blocked.
pub(crate) fn block<T: Send + 'static>(
    fut: impl std::future::Future<Output = polylock::Result<T>> + Send + 'static,
) -> Result<T, Error> {
    runtime::block_on(fut)?
}

pub(crate) fn copy_out(text: &str, buf: *mut c_char, len: usize) -> usize {
    if !buf.is_null() && len > 0 {
        let n = text.len().min(len - 1);
        // SAFETY: `buf` has room for `len` bytes (caller contract); we write n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    text.len()
}

/// The result of a call that answers a term or "the wait ran out": `POLYLOCK_OK` with the term
/// in `*out_term` (NULL allowed), `POLYLOCK_TIMEOUT` for none, or the call's own failure.
///
/// # Safety
/// `out_term` is NULL or writable.
pub(crate) unsafe fn term_or_timeout(
    r: polylock_result,
    term: Option<u64>,
    out_term: *mut u64,
) -> polylock_result {
    match (r, term) {
        (POLYLOCK_OK, Some(t)) => {
            if !out_term.is_null() {
                // SAFETY: writable (caller contract).
                unsafe { *out_term = t };
            }
            POLYLOCK_OK
        }
        (POLYLOCK_OK, None) => POLYLOCK_TIMEOUT,
        (r, _) => r,
    }
}

/// After a call that answered a leader (`r` its result): `*out_has` whether there is one, its
/// identity copied into `buf` as `copy_out` does (the full length in `*out_len`) and its term
/// in `*out_term`; each pointer may be NULL.
///
/// # Safety
/// `buf` NULL or `len` writable bytes; the others NULL or writable.
pub(crate) unsafe fn put_leader(
    r: polylock_result,
    leader: Option<polylock::Leader>,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
    out_term: *mut u64,
    out_has: *mut bool,
) -> polylock_result {
    if r != POLYLOCK_OK {
        return r;
    }
    boundary(|| {
        let (identity, term) = match &leader {
            Some(l) => (l.identity.as_str(), l.term),
            None => ("", 0),
        };
        let n = copy_out(identity, buf, len);
        // SAFETY: each pointer NULL or writable (caller contract).
        unsafe {
            if !out_len.is_null() {
                *out_len = n;
            }
            if !out_term.is_null() {
                *out_term = term;
            }
            put(out_has, leader.is_some())
        }
    })
}

/// After a call that answered a list of texts with no NUL in them (`r` its result): each
/// followed by a NUL byte, copied into `buf` only when all of it fits in `len` bytes; the bytes
/// it takes in `*out_len`, the number of texts in `*out_count`; each pointer may be NULL.
///
/// # Safety
/// `buf` NULL or `len` writable bytes; the others NULL or writable.
pub(crate) unsafe fn put_texts(
    r: polylock_result,
    texts: &[String],
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
    out_count: *mut usize,
) -> polylock_result {
    if r != POLYLOCK_OK {
        return r;
    }
    boundary(|| {
        let size: usize = texts.iter().map(|t| t.len() + 1).sum();
        if !buf.is_null() && size <= len {
            let mut at = 0;
            for t in texts {
                // SAFETY: `buf` has room for `len` >= `size` bytes (caller contract).
                unsafe {
                    std::ptr::copy_nonoverlapping(t.as_ptr(), buf.add(at).cast::<u8>(), t.len());
                    *buf.add(at + t.len()) = 0;
                }
                at += t.len() + 1;
            }
        }
        // SAFETY: each pointer NULL or writable (caller contract).
        unsafe {
            if !out_len.is_null() {
                *out_len = size;
            }
            if !out_count.is_null() {
                *out_count = texts.len();
            }
        }
        POLYLOCK_OK
    })
}

/// Copy the static description of `r` into `buf` (at most `len` bytes, NUL-terminated when
/// `len` > 0). Returns the full length of the text, as snprintf does; `buf` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn polylock_result_message(
    r: polylock_result,
    buf: *mut c_char,
    len: usize,
) -> usize {
    let text = match r {
        POLYLOCK_OK => "OK",
        r => ErrorKind::from_code(r).map_or("unknown polylock result code", |k| k.description()),
    };
    copy_out(text, buf, len)
}

/// Copy the detail of this thread's last failed call into `buf` (as `polylock_result_message`
/// does). Empty after a successful call.
#[no_mangle]
pub unsafe extern "C" fn polylock_last_error_message(buf: *mut c_char, len: usize) -> usize {
    LAST_ERROR.with(|e| copy_out(&e.borrow(), buf, len))
}

/// The library's version, a static NUL-terminated string equal to `POLYLOCK_VERSION`.
#[no_mangle]
pub extern "C" fn polylock_version() -> *const c_char {
    static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_result_code() {
        let r = boundary(|| panic!("boom"));
        assert_eq!(r, POLYLOCK_PANIC);
        let mut buf = [0 as c_char; 64];
        // SAFETY: a valid buffer.
        let n = unsafe { polylock_last_error_message(buf.as_mut_ptr(), buf.len()) };
        let msg = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert!(msg.contains("boom") && n == msg.len(), "{msg}");
    }
}
