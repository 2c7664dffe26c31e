// Generated from core/api/lock.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `polylock_lock`: A lock of any kind (reentrant, mutex, read or write half, fair, multi-lock,
//! RedLock); every call names its owner.

use polylock::Wait;

use crate::lock::polylock_lock;
use crate::result::{boundary, null, on, polylock_result, put, set_last_error, POLYLOCK_NOT_OWNER};

/// The fencing token of `owner`'s current hold, none if it holds nothing (or its hold was lost). 0
/// on an SQL client whose URL says `fencing=none`. The token goes to `*out`; `POLYLOCK_NOT_OWNER`
/// when there is none. Local: no round trip.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_fencing_token(
    lock: *mut polylock_lock,
    owner: u64,
    out: *mut u64,
) -> polylock_result {
    boundary(|| {
        // SAFETY: caller contract.
        let Some(h) = (unsafe { lock.as_ref() }) else {
            return null("lock");
        };
        match h.inner.fencing_token(owner) {
            // SAFETY: caller contract on `out`.
            Some(v) => unsafe { put(out, v) },
            None if out.is_null() => null("out"),
            None => {
                set_last_error("this owner holds no live hold of the lock");
                POLYLOCK_NOT_OWNER
            }
        }
    })
}

/// Why `owner`'s hold of the lock was lost, in `*out`: 0 while it is not lost (held, or not held at
/// all), else one of `POLYLOCK_LOST_*`. A lost hold stays lost until its owner releases it (which
/// returns `POLYLOCK_LOCK_LOST`). Callable from a lost callback. Local: no round trip.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_lost_reason(
    lock: *mut polylock_lock,
    owner: u64,
    out: *mut u32,
) -> polylock_result {
    boundary(|| {
        // SAFETY: caller contract.
        let Some(h) = (unsafe { lock.as_ref() }) else {
            return null("lock");
        };
        // SAFETY: caller contract on `out`.
        unsafe { put(out, h.inner.lost_reason(owner).map_or(0, |r| r.number())) }
    })
}

/// Acquire (or re-enter) the lock for `owner`. `lease_ms`: `POLYLOCK_WATCHDOG` (-1: renewed while
/// the client lives) or a positive lease in ms after which the lock expires. `POLYLOCK_TIMEOUT`
/// when it was not acquired in time. `wait_ms`: -1 forever, 0 one try, a positive number of ms.
/// Blocks the calling thread.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_acquire(
    lock: *mut polylock_lock,
    owner: u64,
    wait_ms: i64,
    lease_ms: i64,
) -> polylock_result {
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(lock, "lock", &mut answer, |h| {
            let wait = Wait::from_millis(wait_ms, "wait_ms")?;
            let lease = polylock::args::lease_millis(lease_ms, "lease_ms")?;
            let inner = h.inner.clone();
            Ok(async move {
                inner
                    .acquire(owner, polylock::AcquireOptions { wait, lease })
                    .await
                    .map(drop)
            })
        })
    }
}

/// Release one hold of `owner`: NOT_OWNER if it holds nothing, LOCK_LOST if its hold was lost
/// meanwhile (the hold is then forgotten).
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_release(
    lock: *mut polylock_lock,
    owner: u64,
) -> polylock_result {
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(lock, "lock", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.release(owner).await.map(drop) })
        })
    }
}

/// How many times `owner` holds the lock (0 if not at all). The answer goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_hold_count(
    lock: *mut polylock_lock,
    owner: u64,
    out: *mut u32,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(lock, "lock", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.hold_count(owner).await })
        })
    }
}

/// Whether anybody holds the lock (asks the server). The answer goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_is_locked(
    lock: *mut polylock_lock,
    out: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(lock, "lock", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.is_locked().await })
        })
    }
}

/// Delete the lock whoever holds it and wake its waiters (Redisson's forceUnlock).
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_force_unlock(lock: *mut polylock_lock) -> polylock_result {
    let mut answer = ();
    // SAFETY: forwarded contract.
    unsafe {
        on(lock, "lock", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.force_unlock().await.map(drop) })
        })
    }
}

/// The remaining lease of whoever holds the lock: `POLYLOCK_LEASE_NOT_HELD` (-2) if nobody holds
/// it, `POLYLOCK_LEASE_NO_EXPIRY` (-1) if it is held with no expiry (ZooKeeper, SQL session locks),
/// else the milliseconds left (Redis's `PTTL`, Redisson's `remainTimeToLive`). It goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_remaining_lease_ms(
    lock: *mut polylock_lock,
    out: *mut i64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(lock, "lock", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { Ok(inner.remaining_lease().await?.as_millis_code()) })
        })
    }
}
