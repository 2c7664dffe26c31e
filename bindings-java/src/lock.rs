//! The calls on one lock, for every kind of lock: `lockNew` takes the lock's `kind` (numbered in
//! `convert`) and makes the core lock with `Client::lock_of_kind`, so a kind added to core needs
//! no new native method. The waiting acquire completes a `NativeFuture` (see `wait`).
//!
//! A lock is not rebuilt per call: `lockNew` (a named lock) and `multiLockNew` (a multi-lock)
//! build its core `Lock` once and hand Java a lock handle (a `Box<Lock>` as a `long`), which every
//! lock native takes in place of a client handle when its `kind` is `LOCK_HANDLE`. The Java side
//! counts the calls in flight on it and frees it with `lockFree` when none is left
//! (`NativeHandle.java`). The core `Lock` keeps its clients alive by itself, so it never points at
//! a freed client handle.

use jni::objects::{JClass, JIntArray, JLongArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong, jstring, JNI_FALSE};
use jni::JNIEnv;
use polylock::{args, AcquireOptions, Error, ErrorKind, HoldKind, Lock, MultiLock, Released, Wait};

use crate::client::client;
use crate::convert::{
    block, java_string, jbool, kind_number, kind_word, lock_kind, owner, string, LOCK_HANDLE,
};
use crate::error::{entry, jni_error, Result};
use crate::handle::{borrow, free, into_handle};
use crate::wait::{start, Won};

/// The lock behind a lock handle. The Java side keeps the handle alive during the call.
fn handle_lock<'a>(handle: jlong) -> Result<&'a Lock> {
    // NativeHandle.enter/exit keep it alive while this call is in flight.
    borrow(handle, "this lock handle")
}

/// The core handle of the lock `name` of `kind` on the client `handle` (name and kind checked, no
/// round trip), or, when `kind` is `LOCK_HANDLE`, the lock behind the lock handle `handle`.
pub(crate) fn lock(env: &mut JNIEnv, handle: jlong, name: &JString, kind: jint) -> Result<Lock> {
    if kind == LOCK_HANDLE {
        return handle_lock(handle).cloned();
    }
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
            Some(w) => java_string(env, w),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// Check a lock name (or ZooKeeper path) and kind without touching the server; returns whether
/// waiting for the lock takes a place in a queue (ZooKeeper, a fair lock, a multi-lock with such a
/// member), where Java skips its one-try fast path before a wait.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_validate<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        Ok(jbool(lock(env, handle, &name, kind)?.queues_waiters()))
    })
}

/// The kind number the lock's holds are recorded, and their losses reported, with: its own, but
/// a fair lock on ZooKeeper is the ordinary lock there, and reports as one (-1 for a multi-lock,
/// whose holds are its members').
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_holdKind<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jint {
    entry(&mut env, -1, |env| {
        let l = lock(env, handle, &name, kind)?;
        if l.is_multi() {
            return Ok(-1);
        }
        Ok(kind_number(HoldKind::Lock(l.kind())))
    })
}

/// The lock handle of the lock `name` of `kind` on the client `handle` (name and kind checked, no
/// round trip): every lock native takes it with `LOCK_HANDLE`, so a call borrows the core lock
/// made here instead of building one. Freed with `lockFree` once.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jlong {
    entry(&mut env, 0, |env| {
        Ok(into_handle(lock(env, handle, &name, kind)?))
    })
}

/// Build a multi-lock over the locks `(handles[i], names[i], kinds[i])` (each a named lock of a
/// client, or a lock handle with `LOCK_HANDLE`, whose members it takes); returns its lock handle.
/// `InvalidArgument` for no lock, the same lock twice, or arrays of different lengths.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_multiLockNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handles: JLongArray<'l>,
    names: JObjectArray<'l>,
    kinds: JIntArray<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let n = env.get_array_length(&handles).map_err(jni_error)?;
        if env.get_array_length(&names).map_err(jni_error)? != n
            || env.get_array_length(&kinds).map_err(jni_error)? != n
        {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "a multi-lock's handles, names and kinds differ in length",
            ));
        }
        let len = n as usize;
        let (mut hs, mut ks) = (vec![0; len], vec![0; len]);
        env.get_long_array_region(&handles, 0, &mut hs)
            .map_err(jni_error)?;
        env.get_int_array_region(&kinds, 0, &mut ks)
            .map_err(jni_error)?;
        let mut members = Vec::with_capacity(len);
        for i in 0..len {
            let name = JString::from(
                env.get_object_array_element(&names, i as jint)
                    .map_err(jni_error)?,
            );
            members.push(lock(env, hs[i], &name, ks[i])?);
            env.delete_local_ref(name).map_err(jni_error)?;
        }
        let multi: Lock = MultiLock::new(members)?;
        Ok(into_handle(multi))
    })
}

/// Free a lock handle. The Java side calls this once, when no call is in flight. Holds taken
/// through it stay held (they are its members' holds, in their clients).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockFree<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) {
    entry(&mut env, (), |_| {
        free::<Lock>(handle);
        Ok(())
    })
}

/// The lock's name (a multi-lock's: its members' names joined by `+`, in the order it takes them).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockName<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let l = lock(env, handle, &name, kind)?;
        java_string(env, l.name())
    })
}

/// Whether `owner` has a hold of the lock, kept or lost and not yet released (local); for a
/// multi-lock, a hold of every member. Tells a multi-lock's listeners which of its members' lost
/// holds are its own.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_hasHold<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    owner_id: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = lock(env, handle, &name, kind)?;
        let owner = owner(owner_id)?;
        Ok(jbool(
            l.members().iter().all(|m| m.lost_signal(owner).is_some()),
        ))
    })
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
    before_wait: jboolean,
) -> jlong {
    entry(&mut env, -1, |env| {
        let l = lock(env, handle, &name, kind)?;
        let (owner, lease) = (
            owner(owner_id)?,
            args::lease_millis(lease_ms, "lease time")?,
        );
        // Java's fast path before a wait (lock(), tryLock(time)): a refusal is recorded by the
        // wait that follows, not twice.
        let got = if before_wait != 0 {
            block(async move { l.try_acquire_before_wait(owner, lease).await })?
        } else {
            block(async move { l.try_acquire(owner, lease).await })?
        };
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
            wait: Wait::from_millis(wait_ms, "wait time")?,
            lease: args::lease_millis(lease_ms, "lease time")?,
        };
        start(env, &future, async move {
            let a = l.acquire(owner, options).await?;
            Ok(Won::value(a.fencing_token as i64).give_back(async move {
                let _ = l.release(owner).await;
            }))
        })
    })
}

/// Start a release of one hold of `owner` on the runtime (`unlockAsync`): completes `future`
/// with how many holds the owner keeps. Returns the cancel handle (a release is not cancelled:
/// Java only frees it).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_releaseAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    owner_id: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let l = lock(env, handle, &name, kind)?;
        let owner = owner(owner_id)?;
        start(env, &future, async move {
            Ok(Won::value(match l.release(owner).await? {
                Released::StillHeld(n) => n as i64,
                Released::Freed => 0,
            }))
        })
    })
}

/// Start a force-unlock on the runtime (`forceUnlockAsync`): completes `future` with 1 if the
/// lock was held, 0 if not.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_forceUnlockAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let l = lock(env, handle, &name, kind)?;
        start(env, &future, async move {
            Ok(Won::value(i64::from(l.force_unlock().await?)))
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
        block(async move { Ok(l.remaining_lease().await?.as_millis_code()) })
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

/// Whether `owner` has a hold that was lost and not yet released (local); for a multi-lock, a
/// hold of every member, one of them lost. Read from the members' own signals: a multi-lock's
/// `lost_signal` is made afresh per call and says "held" until its task has looked at them.
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
        let owner = owner(owner_id)?;
        let signals = l
            .members()
            .iter()
            .map(|m| m.lost_signal(owner))
            .collect::<Option<Vec<_>>>();
        Ok(jbool(
            signals.is_some_and(|s| s.iter().any(|s| s.is_lost())),
        ))
    })
}
