//! A fenced write's commands as C passes them (hiredis's argv/argvlen, flattened over the
//! commands) and its replies as C reads them: a `polylock_reply` tree, freed once by its root.

use std::ffi::{c_char, c_int, CStr};

use polylock::Reply;

use crate::result::{
    boundary, null, polylock_result, set_last_error, POLYLOCK_INVALID_ARGUMENT, POLYLOCK_OK,
};

/// A nil reply (`GET` of a missing key).
pub const POLYLOCK_REPLY_NIL: c_int = 0;
/// An integer reply: `polylock_reply_integer`.
pub const POLYLOCK_REPLY_INTEGER: c_int = 1;
/// A bulk string reply: `polylock_reply_string`.
pub const POLYLOCK_REPLY_STRING: c_int = 2;
/// A status reply (`OK`): `polylock_reply_string`.
pub const POLYLOCK_REPLY_STATUS: c_int = 3;
/// An array reply: `polylock_reply_count` and `polylock_reply_item`.
pub const POLYLOCK_REPLY_ARRAY: c_int = 4;

/// One reply of a fenced write (`polylock_fence_write` gives the array of all of them). Opaque;
/// the items of an array belong to it.
#[derive(Default)] // a nil reply (kind 0, POLYLOCK_REPLY_NIL)
pub struct polylock_reply {
    kind: c_int,
    integer: i64,
    /// A string's bytes followed by a NUL byte (C may read it as a C string when it holds none).
    bytes: Vec<u8>,
    items: Vec<polylock_reply>,
}

impl polylock_reply {
    fn of(r: Reply) -> polylock_reply {
        let text = |kind, mut b: Vec<u8>| {
            b.push(0);
            polylock_reply {
                kind,
                bytes: b,
                ..Default::default()
            }
        };
        match r {
            Reply::Nil => polylock_reply::default(),
            Reply::Int(n) => polylock_reply {
                kind: POLYLOCK_REPLY_INTEGER,
                integer: n,
                ..Default::default()
            },
            Reply::Bytes(b) => text(POLYLOCK_REPLY_STRING, b),
            Reply::Status(s) => text(POLYLOCK_REPLY_STATUS, s.into_bytes()),
            Reply::Array(items) => polylock_reply {
                kind: POLYLOCK_REPLY_ARRAY,
                items: items.into_iter().map(polylock_reply::of).collect(),
                ..Default::default()
            },
        }
    }
}

/// The commands of `polylock_fence_write`: `ncommands` commands, the i-th of `argcs[i]`
/// arguments, taken in order from `argv` (lengths in `argvlens`, or NUL-terminated when it is
/// NULL).
///
/// # Safety
/// `argcs` holds `ncommands` counts; `argv` (and `argvlens` unless NULL) hold their sum of
/// entries; each argument is readable for its length (or NUL-terminated).
pub(crate) unsafe fn commands(
    ncommands: usize,
    argcs: *const usize,
    argv: *const *const c_char,
    argvlens: *const usize,
) -> Result<Vec<Vec<Vec<u8>>>, polylock_result> {
    if ncommands == 0 {
        set_last_error("a fenced write needs at least one command (ncommands is 0)");
        return Err(POLYLOCK_INVALID_ARGUMENT);
    }
    if argcs.is_null() {
        return Err(null("argcs"));
    }
    if argv.is_null() {
        return Err(null("argv"));
    }
    if ncommands > polylock::fence::MAX_COMMANDS {
        set_last_error(&format!(
            "a fenced write runs at most {} commands, got {ncommands}",
            polylock::fence::MAX_COMMANDS
        ));
        return Err(POLYLOCK_INVALID_ARGUMENT);
    }
    let mut out = Vec::with_capacity(ncommands);
    let mut at = 0usize;
    for i in 0..ncommands {
        // SAFETY: `argcs` holds `ncommands` counts (caller contract).
        let argc = unsafe { *argcs.add(i) };
        if argc > polylock::fence::MAX_ARGUMENTS {
            set_last_error(&format!(
                "command {i} of the fenced write has {argc} arguments; the limit is {}",
                polylock::fence::MAX_ARGUMENTS
            ));
            return Err(POLYLOCK_INVALID_ARGUMENT);
        }
        let mut command = Vec::with_capacity(argc);
        for _ in 0..argc {
            // SAFETY: `argv` holds the sum of `argcs` entries (caller contract).
            let p = unsafe { *argv.add(at) };
            if p.is_null() {
                return Err(null("an argument in argv"));
            }
            let bytes = if argvlens.is_null() {
                // SAFETY: NUL-terminated without `argvlens` (caller contract).
                unsafe { CStr::from_ptr(p) }.to_bytes().to_vec()
            } else {
                // SAFETY: `argvlens` has an entry per argument, each readable for its length.
                unsafe { std::slice::from_raw_parts(p.cast::<u8>(), *argvlens.add(at)) }.to_vec()
            };
            command.push(bytes);
            at += 1;
        }
        out.push(command);
    }
    Ok(out)
}

/// Hand the replies of a fenced write that ended with `r` to `*out` (nothing when `out` is NULL
/// or the write failed).
///
/// # Safety
/// `out` is NULL or writable.
pub(crate) unsafe fn put_replies(
    r: polylock_result,
    replies: Vec<Reply>,
    out: *mut *mut polylock_reply,
) -> polylock_result {
    if r != POLYLOCK_OK || out.is_null() {
        return r;
    }
    let root = Box::new(polylock_reply::of(Reply::Array(replies)));
    // SAFETY: not NULL, writable (caller contract).
    unsafe { *out = Box::into_raw(root) };
    POLYLOCK_OK
}

/// The kind of `reply`: `POLYLOCK_REPLY_NIL`, `_INTEGER`, `_STRING`, `_STATUS` or `_ARRAY`; -1
/// for NULL.
///
/// # Safety
/// `reply` is NULL or a live reply (a root from `polylock_fence_write`, or an item of one).
#[no_mangle]
pub unsafe extern "C" fn polylock_reply_type(reply: *const polylock_reply) -> c_int {
    // SAFETY: caller contract.
    unsafe { reply.as_ref() }.map_or(-1, |r| r.kind)
}

/// The integer of an integer reply (0 for any other).
///
/// # Safety
/// As `polylock_reply_type`.
#[no_mangle]
pub unsafe extern "C" fn polylock_reply_integer(reply: *const polylock_reply) -> i64 {
    // SAFETY: caller contract.
    unsafe { reply.as_ref() }.map_or(0, |r| r.integer)
}

/// The bytes of a string or status reply, followed by a NUL byte, and their number (without the
/// NUL) in `*out_len` (which may be NULL); NULL for any other reply. They live as long as the
/// root reply.
///
/// # Safety
/// As `polylock_reply_type`; `out_len` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_reply_string(
    reply: *const polylock_reply,
    out_len: *mut usize,
) -> *const c_char {
    // SAFETY: caller contract.
    let Some(r) = (unsafe { reply.as_ref() }) else {
        return std::ptr::null();
    };
    if r.bytes.is_empty() {
        return std::ptr::null();
    }
    if !out_len.is_null() {
        // SAFETY: writable (caller contract).
        unsafe { *out_len = r.bytes.len() - 1 };
    }
    r.bytes.as_ptr().cast()
}

/// The number of items of an array reply (0 for any other).
///
/// # Safety
/// As `polylock_reply_type`.
#[no_mangle]
pub unsafe extern "C" fn polylock_reply_count(reply: *const polylock_reply) -> usize {
    // SAFETY: caller contract.
    unsafe { reply.as_ref() }.map_or(0, |r| r.items.len())
}

/// The item `index` of an array reply (NULL past its end or for any other reply). It belongs to
/// the root reply: never free it.
///
/// # Safety
/// As `polylock_reply_type`.
#[no_mangle]
pub unsafe extern "C" fn polylock_reply_item(
    reply: *const polylock_reply,
    index: usize,
) -> *const polylock_reply {
    // SAFETY: caller contract.
    unsafe { reply.as_ref() }
        .and_then(|r| r.items.get(index))
        .map_or(std::ptr::null(), |item| item as *const polylock_reply)
}

/// Free the replies of a fenced write (the root `polylock_fence_write` gave). NULL is allowed.
///
/// # Safety
/// `reply` is NULL or a root from `polylock_fence_write`, freed once.
#[no_mangle]
pub unsafe extern "C" fn polylock_reply_free(reply: *mut polylock_reply) {
    let _ = boundary(|| {
        if !reply.is_null() {
            // SAFETY: a root from polylock_fence_write, freed once (caller contract).
            drop(unsafe { Box::from_raw(reply) });
        }
        POLYLOCK_OK
    });
}
