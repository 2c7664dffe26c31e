//! The calls on one lock, for every kind of lock: each takes the lock's `kind` (numbered in
//! `convert`) and makes the core handle with `Client::lock_of_kind`, so a kind added to core needs
//! no new native method. The waiting acquire completes a `NativeFuture` (see `wait`).

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jint, jlong, jstring, JNI_FALSE};
use jni::JNIEnv;
use polylock::{AcquireOptions, Lock, Released};

use crate::client::client;
use crate::convert::{block, jbool, kind_word, lease_arg, lock_kind, owner, string, wait_arg};
use crate::error::{entry, jni_error, Result};
use crate::wait::{start, Won};

/// The core handle of the lock `name` of `kind` (name and kind checked, no round trip).
pub(crate) fn lock(env: &mut JNIEnv, handle: jlong, name: &JString, kind: jint) -> Result<Lock> {
    let c = client(handle)?;
    let name = string(env, name, "lock name")?;
    c.lock_of_kind(&name, lock_kind(kind)?)
}

/// Core's word for a kind number ("lock", "read lock", ..., "permit"), or null for an unknown
/// number (tests compare it with the `KIND_*` constants of `Native.java`).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_kindName<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        match kind_word(kind) {
            Some(w) => env.new_string(w).map(|s| s.into_raw()).map_err(jni_error),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// Check a lock name (or ZooKeeper path) and kind without touching the server.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_validate<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) {
    entry(&mut env, (), |env| lock(env, handle, &name, kind).map(drop))
}

/// One attempt: the fencing token when acquired (or re-entered), -1 when another owner holds it.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_tryAcquire<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    owner_id: jlong,
    lease_ms: jlong,
) -> jlong {
    entry(&mut env, -1, |env| {
        let l = lock(env, handle, &name, kind)?;
        let (owner, lease) = (owner(owner_id)?, lease_arg(lease_ms)?);
        let got = block(async move { l.try_acquire(owner, lease).await })?;
        Ok(got.map_or(-1, |a| a.fencing_token as jlong))
    })
}

/// Start a waiting acquire that completes `future` with the fencing token, or TIMEOUT; an
/// acquire cancelled as it arrived releases the hold it got. Returns the cancel handle.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_polylock_Native_acquireAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    owner_id: jlong,
    wait_ms: jlong,
    lease_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let l = lock(env, handle, &name, kind)?;
        let owner = owner(owner_id)?;
        let options = AcquireOptions {
            wait: wait_arg(wait_ms)?,
            lease: lease_arg(lease_ms)?,
        };
        start(env, &future, async move {
            let a = l.acquire(owner, options).await?;
            Ok(Won::value(a.fencing_token as i64).give_back(async move {
                let _ = l.release(owner).await;
            }))
        })
    })
}

/// Release one hold; returns how many holds the owner keeps (0 when the lock is free).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_release<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    owner_id: jlong,
) -> jint {
    entry(&mut env, 0, |env| {
        let l = lock(env, handle, &name, kind)?;
        let owner = owner(owner_id)?;
        match block(async move { l.release(owner).await })? {
            Released::StillHeld(n) => Ok(n as jint),
            Released::Freed => Ok(0),
        }
    })
}

/// How many times `owner` holds the lock.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_holdCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    owner_id: jlong,
) -> jint {
    entry(&mut env, 0, |env| {
        let l = lock(env, handle, &name, kind)?;
        let owner = owner(owner_id)?;
        Ok(block(async move { l.hold_count(owner).await })? as jint)
    })
}

/// Whether anybody holds the lock (for a half of a read-write lock: in that mode).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_isLocked<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = lock(env, handle, &name, kind)?;
        Ok(jbool(block(async move { l.is_locked().await })?))
    })
}

/// Whether any owner of this client holds the lock (local).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_isHeldLocally<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        Ok(jbool(lock(env, handle, &name, kind)?.is_held_locally()))
    })
}

/// Remaining lease in ms: -1 when held without expiry, -2 when free (Redisson's
/// `remainTimeToLive` convention).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_remainTimeToLive<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jlong {
    entry(&mut env, -2, |env| {
        let l = lock(env, handle, &name, kind)?;
        block(async move {
            match l.remaining_lease().await? {
                Some(d) => Ok(d.as_millis() as jlong),
                None if l.is_locked().await? => Ok(-1),
                None => Ok(-2),
            }
        })
    })
}

/// Delete the lock whoever holds it; true if it was held.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_forceUnlock<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = lock(env, handle, &name, kind)?;
        Ok(jbool(block(async move { l.force_unlock().await })?))
    })
}

/// The fencing token of `owner`'s hold, or -1 if it holds none (local).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_fencingToken<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    owner_id: jlong,
) -> jlong {
    entry(&mut env, -1, |env| {
        let l = lock(env, handle, &name, kind)?;
        Ok(l.fencing_token(owner(owner_id)?).map_or(-1, |t| t as jlong))
    })
}

/// Whether `owner` has a hold that was lost and not yet released (local).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_isLost<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    owner_id: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = lock(env, handle, &name, kind)?;
        let lost = l.lost_signal(owner(owner_id)?).is_some_and(|s| s.is_lost());
        Ok(jbool(lost))
    })
}
