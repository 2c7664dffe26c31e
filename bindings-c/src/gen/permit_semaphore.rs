// Generated from core/api/permit_semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `polylock_permit_semaphore`: A semaphore of expiring permits (Redisson's
//! RPermitExpirableSemaphore; Redis only).

use std::ffi::c_char;

use polylock::{PermitExpirableSemaphore, Wait};

use crate::client::{new_handle, polylock_client};
use crate::result::{
    boundary, null, on, polylock_result, set_last_error, text, POLYLOCK_INVALID_ARGUMENT,
    POLYLOCK_OK, POLYLOCK_PERMIT_ID_LEN,
};

/// A semaphore of expiring permits (Redisson's RPermitExpirableSemaphore; Redis only). Opaque and
/// thread-safe; it keeps its client alive.
pub struct polylock_permit_semaphore {
    inner: PermitExpirableSemaphore,
}

/// A semaphore of expiring permits for `name` (Redis; `POLYLOCK_UNSUPPORTED` on ZooKeeper, etcd and
/// SQL). Free it with `polylock_permit_semaphore_free`.
#[no_mangle]
pub unsafe extern "C" fn polylock_permit_semaphore_new(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_permit_semaphore,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        new_handle(client, name, out, |c, n| {
            Ok(polylock_permit_semaphore {
                inner: c.permit_expirable_semaphore(n)?,
            })
        })
    }
}

/// Free a semaphore handle (permits taken stay taken until released or expired). NULL is allowed.
#[no_mangle]
pub unsafe extern "C" fn polylock_permit_semaphore_free(
    permit_semaphore: *mut polylock_permit_semaphore,
) {
    let _ = boundary(|| {
        if !permit_semaphore.is_null() {
            // SAFETY: from polylock_permit_semaphore_new, freed once (caller contract).
            drop(unsafe { Box::from_raw(permit_semaphore) });
        }
        POLYLOCK_OK
    });
}

/// Set the number of permits if nobody set it yet; true if this call set it. The answer goes to
/// `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_permit_semaphore_try_set_permits(
    permit_semaphore: *mut polylock_permit_semaphore,
    permits: u32,
    out: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(permit_semaphore, "permit_semaphore", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.try_set_permits(permits).await })
        })
    }
}

/// Add permits, or take free ones away with a negative `delta`.
#[no_mangle]
pub unsafe extern "C" fn polylock_permit_semaphore_add_permits(
    permit_semaphore: *mut polylock_permit_semaphore,
    delta: i64,
) -> polylock_result {
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(permit_semaphore, "permit_semaphore", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.add_permits(delta).await })
        })
    }
}

/// Take one permit and copy its id (32 hexadecimal characters and a NUL) into `id_out`, which has
/// room for `id_len` >= `POLYLOCK_PERMIT_ID_LEN` bytes. `lease_ms`: `POLYLOCK_WATCHDOG` (-1:
/// renewed while the client lives) or a positive lease. `POLYLOCK_TIMEOUT` when none was free in
/// time. `wait_ms`: -1 forever, 0 one try, a positive number of ms. Blocks the calling thread.
#[no_mangle]
pub unsafe extern "C" fn polylock_permit_semaphore_acquire(
    permit_semaphore: *mut polylock_permit_semaphore,
    wait_ms: i64,
    lease_ms: i64,
    id_out: *mut c_char,
    id_len: usize,
) -> polylock_result {
    if id_out.is_null() {
        return null("id_out");
    }
    if id_len < POLYLOCK_PERMIT_ID_LEN {
        set_last_error(&format!(
            "id_out needs room for {POLYLOCK_PERMIT_ID_LEN} bytes, got {id_len}"
        ));
        return POLYLOCK_INVALID_ARGUMENT;
    }
    let mut id = String::new();
    // SAFETY: forwarded contract.
    let r = unsafe {
        on(permit_semaphore, "permit_semaphore", &mut id, |h| {
            let wait = Wait::from_millis(wait_ms, "wait_ms")?;
            let lease = polylock::args::lease_millis(lease_ms, "lease_ms")?;
            let inner = h.inner.clone();
            Ok(async move { Ok(inner.acquire(lease, wait).await?.id) })
        })
    };
    if r == POLYLOCK_OK {
        // SAFETY: `id_out` has room for POLYLOCK_PERMIT_ID_LEN bytes (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(id.as_ptr(), id_out.cast::<u8>(), id.len());
            *id_out.add(id.len()) = 0;
        }
    }
    r
}

/// Give back the permit `id` (any client may): NOT_OWNER if there is no such permit (never taken,
/// released before, or expired and taken again), LOCK_LOST if its lease had run out (it is counted
/// back all the same), INVALID_ARGUMENT for an id that is not 32 hexadecimal characters.
#[no_mangle]
pub unsafe extern "C" fn polylock_permit_semaphore_release(
    permit_semaphore: *mut polylock_permit_semaphore,
    id: *const c_char,
) -> polylock_result {
    // SAFETY: caller contract.
    let id = match unsafe { text(id, "id") } {
        Ok(v) => v.to_string(),
        Err(r) => return r,
    };
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(permit_semaphore, "permit_semaphore", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.release(&id).await })
        })
    }
}

/// Redisson's tryRelease: give back the permit `id`; true if it was there (expired or not). The
/// answer goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_permit_semaphore_try_release(
    permit_semaphore: *mut polylock_permit_semaphore,
    id: *const c_char,
    out: *mut bool,
) -> polylock_result {
    // SAFETY: caller contract.
    let id = match unsafe { text(id, "id") } {
        Ok(v) => v.to_string(),
        Err(r) => return r,
    };
    // SAFETY: forwarded contract.
    unsafe {
        on(permit_semaphore, "permit_semaphore", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.try_release(&id).await })
        })
    }
}

/// The permits free now (expired ones counted back first). The answer goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_permit_semaphore_available(
    permit_semaphore: *mut polylock_permit_semaphore,
    out: *mut i64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(permit_semaphore, "permit_semaphore", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.available_permits().await })
        })
    }
}
