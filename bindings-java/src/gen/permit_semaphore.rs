// Generated from core/api/permit_semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! The JNI entry points of `Native.permitSemaphore*`: A semaphore of expiring permits (Redisson's
//! RPermitExpirableSemaphore; Redis only). A permit semaphore is a native handle (a
//! `Box<PermitExpirableSemaphore>` from `permitSemaphoreNew`, freed once by `permitSemaphoreFree`);
//! a waiting call completes a `NativeFuture`.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jlong, jstring, JNI_FALSE};
use jni::JNIEnv;
use polylock::{PermitExpirableSemaphore, Wait};

use crate::client::client;
use crate::convert::{block, java_string, jbool, string};
use crate::error::{entry, Result};
use crate::handle::{borrow, free, into_handle};
use crate::wait::{start, Won};

/// The permit semaphore behind a handle from `permitSemaphoreNew` (NativeHandle keeps it alive
/// during the call).
pub(crate) fn handle<'a>(handle: jlong) -> Result<&'a PermitExpirableSemaphore> {
    borrow(handle, "this permit semaphore handle")
}

/// A permit semaphore for `name` on the client `client`; its handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    client_handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let c = client(client_handle)?;
        let name = string(env, &name, "permit semaphore name")?;
        Ok(into_handle(c.permit_expirable_semaphore(&name)?))
    })
}

/// Free a permit semaphore's handle (0 is allowed).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreFree<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    permit_semaphore: jlong,
) {
    entry(&mut env, (), |_| {
        free::<PermitExpirableSemaphore>(permit_semaphore);
        Ok(())
    })
}

/// Set the number of permits if nobody set it yet; true if this call set it.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreTrySetPermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    permit_semaphore: jlong,
    permits: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let permits = polylock::args::permits_from_i64(permits, "permits")?;
        let inner = handle(permit_semaphore)?.clone();
        Ok(jbool(block(async move {
            inner.try_set_permits(permits).await
        })?))
    })
}

/// Add permits, or take free ones away with a negative `delta`.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreAddPermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    permit_semaphore: jlong,
    delta: jlong,
) {
    entry(&mut env, (), |_| {
        let inner = handle(permit_semaphore)?.clone();
        block(async move { inner.add_permits(delta).await })
    })
}

/// Take one permit, waiting up to the wait: its id (32 hexadecimal characters), or none when the
/// wait ran out. Without a lease the watchdog renews it while the client lives.
/// Started: completes `future` with the permit's id as its text (TIMEOUT when the wait ran out);
/// returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreAcquireAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    permit_semaphore: jlong,
    wait_ms: jlong,
    lease_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let wait = Wait::from_millis(wait_ms, "wait time")?;
        let lease = polylock::args::lease_millis(lease_ms, "lease time")?;
        let inner = handle(permit_semaphore)?.clone();
        start(env, &future, async move {
            let p = inner.acquire(lease, wait).await?;
            let id = p.id.clone();
            Ok(Won::text(p.id).give_back(async move {
                let _ = inner.release(&id).await;
            }))
        })
    })
}

/// One try for a permit: its id, or none if none was free. Without a lease the watchdog renews it
/// while the client lives.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreTryAcquire<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    permit_semaphore: jlong,
    lease_ms: jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let lease = polylock::args::lease_millis(lease_ms, "lease time")?;
        let inner = handle(permit_semaphore)?.clone();
        match block(async move { inner.try_acquire(lease, Wait::Never).await })? {
            Some(p) => java_string(env, &p.id),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// Give back the permit `id` (any client may): NOT_OWNER if there is no such permit (never taken,
/// released before, or expired and taken again), LOCK_LOST if its lease had run out (it is counted
/// back all the same), INVALID_ARGUMENT for an id that is not 32 hexadecimal characters.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreRelease<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    permit_semaphore: jlong,
    id: JString<'l>,
) {
    entry(&mut env, (), |env| {
        let id = string(env, &id, "permit id")?;
        let inner = handle(permit_semaphore)?.clone();
        block(async move { inner.release(&id).await })
    })
}

/// Redisson's tryRelease: give back the permit `id`; true if it was there (expired or not).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreTryRelease<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    permit_semaphore: jlong,
    id: JString<'l>,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let id = string(env, &id, "permit id")?;
        let inner = handle(permit_semaphore)?.clone();
        Ok(jbool(block(async move { inner.try_release(&id).await })?))
    })
}

/// The permits free now (expired ones counted back first).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_permitSemaphoreAvailablePermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    permit_semaphore: jlong,
) -> jlong {
    entry(&mut env, 0, |_| {
        let inner = handle(permit_semaphore)?.clone();
        block(async move { inner.available_permits().await })
    })
}
