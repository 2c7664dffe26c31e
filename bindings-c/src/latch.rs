//! `polylock_latch`: a count-down latch (Redisson's RCountDownLatch on Redis, a Curator
//! SharedCount on ZooKeeper).

use std::ffi::c_char;

use polylock::CountDownLatch;

use crate::client::polylock_client;
use crate::result::{
    block, boundary, fail, null, polylock_result, put, wait_arg, POLYLOCK_OK, POLYLOCK_TIMEOUT,
};
use crate::semaphore::new_handle;

/// A count-down latch (opaque). Thread-safe. It keeps its client alive.
pub struct polylock_latch {
    latch: CountDownLatch,
}

/// Run `f` on a live latch and store its answer in `*out`.
///
/// # Safety
/// `latch` is NULL or live; `out` NULL or writable.
unsafe fn with<T: Send + 'static, F>(
    latch: *mut polylock_latch,
    f: impl FnOnce(CountDownLatch) -> F,
    out: *mut T,
) -> polylock_result
where
    F: std::future::Future<Output = polylock::Result<T>> + Send + 'static,
{
    boundary(|| {
        // SAFETY: caller contract.
        let Some(l) = (unsafe { latch.as_ref() }) else {
            return null("latch");
        };
        match block(f(l.latch.clone())) {
            // SAFETY: caller contract on `out`.
            Ok(v) => unsafe { put(out, v) },
            Err(e) => fail(&e),
        }
    })
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
                latch: c.count_down_latch(n)?,
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

/// Set the count (at least 1) if the latch is not counting; `*out_set` says whether this call
/// did.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_try_set_count(
    latch: *mut polylock_latch,
    count: u64,
    out_set: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        with(
            latch,
            |l| async move { l.try_set_count(count).await },
            out_set,
        )
    }
}

/// Count down by one; at zero the latch opens and every waiter wakes.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_count_down(latch: *mut polylock_latch) -> polylock_result {
    let mut done = ();
    // SAFETY: forwarded contract.
    unsafe { with(latch, |l| async move { l.count_down().await }, &mut done) }
}

/// The count now (0 when open), in `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_count(
    latch: *mut polylock_latch,
    out: *mut u64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe { with(latch, |l| async move { l.count().await }, out) }
}

/// Wait until the count is zero: `POLYLOCK_OK` when open, `POLYLOCK_TIMEOUT` when `wait_ms`
/// (-1 forever, 0 just look, or a positive number of ms) ran out first. Blocks the calling
/// thread.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_wait(
    latch: *mut polylock_latch,
    wait_ms: i64,
) -> polylock_result {
    let wait = match wait_arg(wait_ms) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let mut open = false;
    // SAFETY: forwarded contract.
    let r = unsafe { with(latch, |l| async move { l.wait(wait).await }, &mut open) };
    match r {
        POLYLOCK_OK if !open => POLYLOCK_TIMEOUT,
        r => r,
    }
}

/// Delete the latch (it opens; its waiters wake); `*out_was` says whether it was counting.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_delete(
    latch: *mut polylock_latch,
    out_was: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe { with(latch, |l| async move { l.delete().await }, out_was) }
}
