// Generated from core/api/lock.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! The JNI entry points of `Native.lock*`: A lock of any kind (reentrant, mutex, read or write
//! half, fair, multi-lock, RedLock); every call names its owner. A lock is a native handle (a
//! `Box<Lock>` from `lockNew`, freed once by `lockFree`); a waiting call completes a
//! `NativeFuture`.

use jni::objects::{JClass, JObject};
use jni::sys::{jboolean, jint, jlong, jstring, JNI_FALSE};
use jni::JNIEnv;
use polylock::{Lock, Released, Wait};

use crate::convert::{block, java_string, jbool, owner};
use crate::error::{entry, Result};
use crate::handle::borrow;
use crate::wait::{start, Won};

/// The lock behind a handle from `lockNew` (NativeHandle keeps it alive during the call).
pub(crate) fn handle<'a>(handle: jlong) -> Result<&'a Lock> {
    borrow(handle, "this lock handle")
}

/// The lock's name (a multi-lock's: its members' names joined by `+`, in the order it takes them).
/// Local: no round trip.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockName<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let v = handle(lock)?.name().to_string();
        java_string(env, &v)
    })
}

/// Whether waiting for the lock takes a place in a queue (ZooKeeper, a fair lock, a multi-lock with
/// such a member), where a one-try fast path before a wait would queue twice. Local: no round trip.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockQueuesWaiters<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let v = handle(lock)?.queues_waiters();
        Ok(jbool(v))
    })
}

/// Whether any owner of this client holds the lock. Local: no round trip.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockIsHeldLocally<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let v = handle(lock)?.is_held_locally();
        Ok(jbool(v))
    })
}

/// Whether `owner` has a hold of the lock, kept or lost and not yet released (a multi-lock: of
/// every member): tells a multi-lock's listeners which of its members' lost holds are its own.
/// Local: no round trip.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockHasHold<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    owner_id: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let owner = owner(owner_id)?;
        let v = handle(lock)?.has_hold(owner);
        Ok(jbool(v))
    })
}

/// The fencing token of `owner`'s current hold, none if it holds nothing (or its hold was lost). 0
/// on an SQL client whose URL says `fencing=none`. -1 for none. Local: no round trip.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockFencingToken<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    owner_id: jlong,
) -> jlong {
    entry(&mut env, -1, |_| {
        let owner = owner(owner_id)?;
        let v = handle(lock)?.fencing_token(owner);
        Ok(v.map_or(-1, |v| v.min(i64::MAX as u64) as jlong))
    })
}

/// True if `owner`'s hold was lost and not yet released. Local: no round trip.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockIsLost<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    owner_id: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let owner = owner(owner_id)?;
        let v = handle(lock)?.is_lost(owner);
        Ok(jbool(v))
    })
}

/// Acquire (or re-enter) the lock for `owner`, waiting up to the wait; true when held, false when
/// the wait ran out. Without a lease the watchdog renews it while the client lives.
/// Started: completes `future` with the fencing token (TIMEOUT when the wait ran out); returns the
/// cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockAcquireAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    owner_id: jlong,
    wait_ms: jlong,
    lease_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let owner = owner(owner_id)?;
        let wait = Wait::from_millis(wait_ms, "wait time")?;
        let lease = polylock::args::lease_millis(lease_ms, "lease time")?;
        let inner = handle(lock)?.clone();
        start(env, &future, async move {
            let a = inner
                .acquire(owner, polylock::AcquireOptions { wait, lease })
                .await?;
            Ok(Won::value(a.fencing_token as i64).give_back(async move {
                let _ = inner.release(owner).await;
            }))
        })
    })
}

/// Release one hold of `owner`: NOT_OWNER if it holds nothing, LOCK_LOST if its hold was lost
/// meanwhile (the hold is then forgotten).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockRelease<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    owner_id: jlong,
) -> jint {
    entry(&mut env, 0, |_| {
        let owner = owner(owner_id)?;
        let inner = handle(lock)?.clone();
        Ok(match block(async move { inner.release(owner).await })? {
            Released::StillHeld(n) => n.min(i32::MAX as u32) as jint,
            Released::Freed => 0,
        })
    })
}

/// The same, started on the runtime.
/// Started: completes `future` with the holds the owner keeps; returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockReleaseAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    owner_id: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let owner = owner(owner_id)?;
        let inner = handle(lock)?.clone();
        start(env, &future, async move {
            Ok(Won::value(match inner.release(owner).await? {
                Released::StillHeld(n) => i64::from(n),
                Released::Freed => 0,
            }))
        })
    })
}

/// How many times `owner` holds the lock (0 if not at all).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockHoldCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    owner_id: jlong,
) -> jint {
    entry(&mut env, 0, |_| {
        let owner = owner(owner_id)?;
        let inner = handle(lock)?.clone();
        Ok(block(async move { inner.hold_count(owner).await })?.min(i32::MAX as u32) as jint)
    })
}

/// Whether anybody holds the lock (asks the server).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockIsLocked<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let inner = handle(lock)?.clone();
        Ok(jbool(block(async move { inner.is_locked().await })?))
    })
}

/// Delete the lock whoever holds it and wake its waiters (Redisson's forceUnlock); true if it was
/// held.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockForceUnlock<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let inner = handle(lock)?.clone();
        Ok(jbool(block(async move { inner.force_unlock().await })?))
    })
}

/// The same, started on the runtime.
/// Started: completes `future` with 1 (true) or 0 (false); returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockForceUnlockAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let inner = handle(lock)?.clone();
        start(env, &future, async move {
            Ok(Won::value(i64::from(inner.force_unlock().await?)))
        })
    })
}

/// The remaining lease of whoever holds the lock: not held, held with no expiry (ZooKeeper, SQL
/// session locks), or the time left (Redis's PTTL, Redisson's remainTimeToLive).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockRemainingLease<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
) -> jlong {
    entry(&mut env, -2, |_| {
        let inner = handle(lock)?.clone();
        block(async move { Ok(inner.remaining_lease().await?.as_millis_code()) })
    })
}
