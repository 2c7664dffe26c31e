//! Native handles: a core value (a client, a lock, a latch, a candidate) boxed for Java, which
//! holds its address as a `long`, keeps it alive while a call is in flight (`NativeHandle`,
//! `PolylockClient`) and frees it once, after its last call.

use jni::sys::jlong;
use polylock::{Error, ErrorKind};

use crate::error::Result;

/// A new handle owning `value`.
pub(crate) fn into_handle<T>(value: T) -> jlong {
    Box::into_raw(Box::new(value)) as jlong
}

/// The value behind `handle`; `InvalidState` ("`what` is closed") for 0.
pub(crate) fn borrow<'a, T>(handle: jlong, what: &str) -> Result<&'a T> {
    if handle == 0 {
        return Err(Error::new(
            ErrorKind::InvalidState,
            format!("{what} is closed"),
        ));
    }
    // SAFETY: a non-zero handle is a `Box<T>` from `into_handle`, which Java frees (with `free`)
    // only after its last call.
    Ok(unsafe { &*(handle as *const T) })
}

/// Free a handle from `into_handle` (0 is allowed). Java calls it once, after the last call.
pub(crate) fn free<T>(handle: jlong) {
    if handle != 0 {
        // SAFETY: from `into_handle::<T>`, freed once (the Java side's contract).
        drop(unsafe { Box::from_raw(handle as *mut T) });
    }
}
