//! The lock handle's making (`lockNew`: a named lock of any kind, numbered in `convert`, made with
//! `Client::lock_of_kind`, so a kind added to core needs no new native method; `multiLockNew`), its
//! freeing, the kind its holds are reported with, and Java's one try before a wait. Every other
//! call on a lock is generated from core/api/lock.toml (`gen/lock.rs`).
//!
//! A lock is not rebuilt per call: its core `Lock` is built once and Java holds a lock handle (a
//! `Box<Lock>` as a `long`), which every lock native takes. The Java side counts the calls in
//! flight on it and frees it with `lockFree` when none is left (`NativeHandle.java`). The core
//! `Lock` keeps its clients alive by itself, so it never points at a freed client handle.

use jni::objects::{JClass, JLongArray, JString};
use jni::sys::{jboolean, jint, jlong, jstring};
use jni::JNIEnv;
use polylock::{args, HoldKind, Lock, MultiLock};

use crate::client::client;
use crate::convert::{block, java_string, kind_number, kind_word, lock_kind, owner, string};
use crate::error::{entry, jni_error, Result};
use crate::gen::lock::handle;
use crate::handle::{free, into_handle};

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

/// The lock handle of the lock `name` of `kind` on the client `client_handle` (name and kind
/// checked, no round trip): every lock native takes it. Freed with `lockFree` once.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    client_handle: jlong,
    name: JString<'l>,
    kind: jint,
) -> jlong {
    entry(&mut env, 0, |env| {
        let c = client(client_handle)?;
        let name = string(env, &name, "lock name")?;
        Ok(into_handle(c.lock_of_kind(&name, lock_kind(kind)?)?))
    })
}

/// Build a multi-lock over the lock handles `locks` (a multi-lock among them gives its members);
/// returns its lock handle. `InvalidArgument` for no lock or the same lock twice.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_multiLockNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    locks: JLongArray<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let n = env.get_array_length(&locks).map_err(jni_error)? as usize;
        let mut hs = vec![0; n];
        env.get_long_array_region(&locks, 0, &mut hs)
            .map_err(jni_error)?;
        let members = hs
            .into_iter()
            .map(|h| handle(h).cloned())
            .collect::<Result<Vec<Lock>>>()?;
        Ok(into_handle(MultiLock::new(members)?))
    })
}

/// Free a lock handle. The Java side calls this once, when no call is in flight. Holds taken
/// through it stay held (they are its members' holds, in their clients).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockFree<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
) {
    entry(&mut env, (), |_| {
        free::<Lock>(lock);
        Ok(())
    })
}

/// The kind number the lock's holds are recorded, and their losses reported, with: its own, but
/// a fair lock on ZooKeeper is the ordinary lock there, and reports as one (-1 for a multi-lock,
/// whose holds are its members').
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockHoldKind<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
) -> jint {
    entry(&mut env, -1, |_| {
        let l = handle(lock)?;
        if l.is_multi() {
            return Ok(-1);
        }
        Ok(kind_number(HoldKind::Lock(l.kind())))
    })
}

/// One attempt: the fencing token when acquired (or re-entered), -1 when another owner holds it.
/// `before_wait`: Java's fast path before a wait (lock(), tryLock(time)), whose refusal the wait
/// that follows records, not twice.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_lockTryAcquire<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    owner_id: jlong,
    lease_ms: jlong,
    before_wait: jboolean,
) -> jlong {
    entry(&mut env, -1, |_| {
        let l = handle(lock)?.clone();
        let (owner, lease) = (
            owner(owner_id)?,
            args::lease_millis(lease_ms, "lease time")?,
        );
        let got = if before_wait != 0 {
            block(async move { l.try_acquire_before_wait(owner, lease).await })?
        } else {
            block(async move { l.try_acquire(owner, lease).await })?
        };
        Ok(got.map_or(-1, |a| a.fencing_token as jlong))
    })
}
