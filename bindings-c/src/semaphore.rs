//! `polylock_semaphore` (Redisson's RSemaphore on Redis, Curator's InterProcessSemaphoreV2 on
//! ZooKeeper); the generated glue's handle maker (`new_handle`) and the room of a permit id (for
//! `polylock_permit_semaphore`, generated from core/api/permit_semaphore.toml).

use std::ffi::c_char;

use polylock::Semaphore;

use crate::client::{client_ref, polylock_client};
use crate::result::{boundary, fail, null, on, polylock_result, text, wait_arg, POLYLOCK_OK};

/// A semaphore (opaque). Thread-safe. It keeps its client alive.
///
/// On Redis permits belong to nobody: any thread or process may release them, and a crashed
/// holder's permits are not given back (use `polylock_permit_semaphore` for that). On ZooKeeper
/// the permits taken are leases of this client: `polylock_semaphore_release` gives back leases
/// this client holds, and a lost session frees them.
pub struct polylock_semaphore {
    semaphore: Semaphore,
}

/// Room for a permit id: 32 hexadecimal characters and the NUL.
pub const POLYLOCK_PERMIT_ID_LEN: usize = 33;

/// Make a handle for `name` with `make` and store it in `*out`.
///
/// # Safety
/// `client` is NULL or live; `name` NULL or NUL-terminated; `out` NULL or writable.
pub(crate) unsafe fn new_handle<T>(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut T,
    make: impl FnOnce(&polylock::Client, &str) -> polylock::Result<T>,
) -> polylock_result {
    boundary(|| {
        if out.is_null() {
            return null("out");
        }
        // SAFETY: `out` is writable (caller contract).
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: caller contract.
        let c = match unsafe { client_ref(client) } {
            Ok(c) => c,
            Err(r) => return r,
        };
        // SAFETY: caller contract.
        let n = match unsafe { text(name, "name") } {
            Ok(n) => n,
            Err(r) => return r,
        };
        match make(c, n) {
            Ok(h) => {
                // SAFETY: checked above.
                unsafe { *out = Box::into_raw(Box::new(h)) };
                POLYLOCK_OK
            }
            Err(e) => fail(&e),
        }
    })
}

/// Run `f` on a live semaphore handle.
///
/// # Safety
/// `h` is NULL or a live handle of type `H`.
unsafe fn with<H, T: Send + 'static, F>(
    h: *mut H,
    f: impl FnOnce(&H) -> F,
    out: *mut T,
) -> polylock_result
where
    F: std::future::Future<Output = polylock::Result<T>> + Send + 'static,
{
    // SAFETY: forwarded contract.
    unsafe { on(h, "semaphore", out, |h| Ok(f(h))) }
}

/// A semaphore handle for `name` (a znode path on ZooKeeper). Free it with
/// `polylock_semaphore_free`.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_new(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_semaphore,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        new_handle(client, name, out, |c, n| {
            Ok(polylock_semaphore {
                semaphore: c.semaphore(n)?,
            })
        })
    }
}

/// Free a semaphore handle. NULL is allowed. Permits taken stay taken.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_free(semaphore: *mut polylock_semaphore) {
    let _ = boundary(|| {
        if !semaphore.is_null() {
            // SAFETY: from polylock_semaphore_new, freed once (caller contract).
            drop(unsafe { Box::from_raw(semaphore) });
        }
        POLYLOCK_OK
    });
}

/// Set the number of permits if nobody set it yet; `*out_set` says whether this call did.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_try_set_permits(
    semaphore: *mut polylock_semaphore,
    permits: u32,
    out_set: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        with(
            semaphore,
            |h| {
                let s = h.semaphore.clone();
                async move { s.try_set_permits(permits).await }
            },
            out_set,
        )
    }
}

/// Add permits, or take free ones away with a negative `delta`.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_add_permits(
    semaphore: *mut polylock_semaphore,
    delta: i64,
) -> polylock_result {
    let mut done = ();
    // SAFETY: forwarded contract.
    unsafe {
        with(
            semaphore,
            |h| {
                let s = h.semaphore.clone();
                async move { s.add_permits(delta).await }
            },
            &mut done,
        )
    }
}

/// Take `permits` permits (at least 1). `wait_ms`: `POLYLOCK_WAIT_FOREVER` (-1),
/// `POLYLOCK_NO_WAIT` (0) or a positive number of ms. `POLYLOCK_TIMEOUT` when not enough were
/// free in time (nothing is then taken). Blocks the calling thread.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_acquire(
    semaphore: *mut polylock_semaphore,
    permits: u32,
    wait_ms: i64,
) -> polylock_result {
    let wait = match wait_arg(wait_ms) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let mut done = ();
    // SAFETY: forwarded contract.
    unsafe {
        with(
            semaphore,
            |h| {
                let s = h.semaphore.clone();
                async move { s.acquire(permits, wait).await.map(drop) }
            },
            &mut done,
        )
    }
}

/// Give back `permits` permits (at least 1). On ZooKeeper they are leases this client holds:
/// `POLYLOCK_NOT_OWNER` if it holds fewer.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_release(
    semaphore: *mut polylock_semaphore,
    permits: u32,
) -> polylock_result {
    let mut done = ();
    // SAFETY: forwarded contract.
    unsafe {
        with(
            semaphore,
            |h| {
                let s = h.semaphore.clone();
                async move { s.release(permits).await }
            },
            &mut done,
        )
    }
}

/// The permits free now, in `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_available(
    semaphore: *mut polylock_semaphore,
    out: *mut i64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        with(
            semaphore,
            |h| {
                let s = h.semaphore.clone();
                async move { s.available_permits().await }
            },
            out,
        )
    }
}

/// Take every permit free now; how many in `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_drain(
    semaphore: *mut polylock_semaphore,
    out: *mut i64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        with(
            semaphore,
            |h| {
                let s = h.semaphore.clone();
                async move { s.drain_permits().await }
            },
            out,
        )
    }
}
