// Generated from core/api/semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `polylock_semaphore`: A counting semaphore (Redisson's RSemaphore on Redis, Curator's
//! InterProcessSemaphoreV2 on ZooKeeper, a lease per permit on etcd). On Redis permits belong to
//! nobody: anyone may release them, and a crashed holder's permits are not given back (the
//! semaphore of expiring permits gives them back). On ZooKeeper and etcd they are leases of this
//! client, freed when its session ends.

use std::ffi::c_char;

use polylock::{Semaphore, Wait};

use crate::client::{new_handle, polylock_client};
use crate::result::{boundary, on, polylock_result, POLYLOCK_OK};

/// A counting semaphore (Redisson's RSemaphore on Redis, Curator's InterProcessSemaphoreV2 on
/// ZooKeeper, a lease per permit on etcd). On Redis permits belong to nobody: anyone may release
/// them, and a crashed holder's permits are not given back (the semaphore of expiring permits gives
/// them back). On ZooKeeper and etcd they are leases of this client, freed when its session ends.
/// Opaque and thread-safe; it keeps its client alive.
pub struct polylock_semaphore {
    inner: Semaphore,
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
                inner: c.semaphore(n)?,
            })
        })
    }
}

/// Free a semaphore handle (permits taken stay taken). NULL is allowed.
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

/// Set the number of permits if nobody set it yet; true if this call set it. The answer goes to
/// `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_try_set_permits(
    semaphore: *mut polylock_semaphore,
    permits: u32,
    out: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(semaphore, "semaphore", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.try_set_permits(permits).await })
        })
    }
}

/// Add permits, or take free ones away with a negative `delta`.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_add_permits(
    semaphore: *mut polylock_semaphore,
    delta: i64,
) -> polylock_result {
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(semaphore, "semaphore", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.add_permits(delta).await })
        })
    }
}

/// Take `permits` permits (at least 1) at once. `POLYLOCK_TIMEOUT` when not enough were free in
/// time (nothing is then taken). On ZooKeeper and etcd they are leases of this client, given back
/// by `polylock_semaphore_release`. `wait_ms`: -1 forever, 0 one try, a positive number of ms.
/// Blocks the calling thread.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_acquire(
    semaphore: *mut polylock_semaphore,
    permits: u32,
    wait_ms: i64,
) -> polylock_result {
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(semaphore, "semaphore", &mut answer, |h| {
            let wait = Wait::from_millis(wait_ms, "wait_ms")?;
            let inner = h.inner.clone();
            Ok(async move { inner.acquire(permits, wait).await.map(drop) })
        })
    }
}

/// Give back `permits` permits (at least 1). Redis: anyone may. ZooKeeper and etcd: that many of
/// this client's leases, NOT_OWNER if it holds fewer.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_release(
    semaphore: *mut polylock_semaphore,
    permits: u32,
) -> polylock_result {
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(semaphore, "semaphore", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.release(permits).await })
        })
    }
}

/// The permits free now. The answer goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_available(
    semaphore: *mut polylock_semaphore,
    out: *mut i64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(semaphore, "semaphore", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.available_permits().await })
        })
    }
}

/// Take every permit free now; how many (on ZooKeeper and etcd, leases of this client). The answer
/// goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_drain(
    semaphore: *mut polylock_semaphore,
    out: *mut i64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(semaphore, "semaphore", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.drain_permits().await })
        })
    }
}
