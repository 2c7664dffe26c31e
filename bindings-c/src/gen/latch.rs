// Generated from core/api/latch.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `polylock_latch`: A count-down latch (Redisson's RCountDownLatch on Redis, a Curator SharedCount
//! on ZooKeeper).

use std::ffi::c_char;

use polylock::{CountDownLatch, Wait};

use crate::client::{new_handle, polylock_client};
use crate::result::{boundary, on, polylock_result, POLYLOCK_OK, POLYLOCK_TIMEOUT};

/// A count-down latch (Redisson's RCountDownLatch on Redis, a Curator SharedCount on ZooKeeper).
/// Opaque and thread-safe; it keeps its client alive.
pub struct polylock_latch {
    inner: CountDownLatch,
}

/// A latch handle for `name` (a znode path on ZooKeeper). Free it with `polylock_latch_free`.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_new(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_latch,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        new_handle(client, name, out, |c, n| {
            Ok(polylock_latch {
                inner: c.count_down_latch(n)?,
            })
        })
    }
}

/// Free a latch handle. NULL is allowed.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_free(latch: *mut polylock_latch) {
    let _ = boundary(|| {
        if !latch.is_null() {
            // SAFETY: from polylock_latch_new, freed once (caller contract).
            drop(unsafe { Box::from_raw(latch) });
        }
        POLYLOCK_OK
    });
}

/// Set the count (at least 1) if the latch is not counting; true if this call set it. The answer
/// goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_try_set_count(
    latch: *mut polylock_latch,
    count: u64,
    out: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(latch, "latch", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.try_set_count(count).await })
        })
    }
}

/// Count down by one; at zero the latch opens and every waiter wakes. Nothing on an open latch.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_count_down(latch: *mut polylock_latch) -> polylock_result {
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(latch, "latch", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.count_down().await })
        })
    }
}

/// The count now (0 when open). The answer goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_count(
    latch: *mut polylock_latch,
    out: *mut u64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(latch, "latch", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.count().await })
        })
    }
}

/// Wait until the count is zero: true when open, false when the wait ran out. `wait_ms`: -1
/// forever, 0 one try, a positive number of ms. Blocks the calling thread. `POLYLOCK_OK` when true,
/// `POLYLOCK_TIMEOUT` when false.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_wait(
    latch: *mut polylock_latch,
    wait_ms: i64,
) -> polylock_result {
    let mut answer = false;
    // SAFETY: forwarded contract.
    let r = unsafe {
        on(latch, "latch", &mut answer, |h| {
            let wait = Wait::from_millis(wait_ms, "wait_ms")?;
            let inner = h.inner.clone();
            Ok(async move { inner.wait(wait).await })
        })
    };
    match r {
        POLYLOCK_OK if !answer => POLYLOCK_TIMEOUT,
        r => r,
    }
}

/// Delete the latch (it opens; its waiters wake); true if it was counting. The answer goes to
/// `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_delete(
    latch: *mut polylock_latch,
    out: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(latch, "latch", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.delete().await })
        })
    }
}
