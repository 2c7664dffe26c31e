//! The calls on a count-down latch (Redisson's `RCountDownLatch`, a Curator `SharedCount` on
//! ZooKeeper), behind `DistributedCountDownLatch`. The wait completes a `NativeFuture` (see
//! `wait`).

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jlong, JNI_FALSE};
use jni::JNIEnv;
use polylock::{CountDownLatch, Error, ErrorKind};

use crate::client::client;
use crate::convert::{block, jbool, string, wait_arg};
use crate::error::{entry, Result};
use crate::wait::{start, Won};

/// The core handle of the latch `name` (name checked, no round trip).
fn latch(env: &mut JNIEnv, handle: jlong, name: &JString) -> Result<CountDownLatch> {
    let c = client(handle)?;
    c.count_down_latch(&string(env, name, "latch name")?)
}

/// Check a latch's name without touching the server.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_validateLatch<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) {
    entry(&mut env, (), |env| latch(env, handle, &name).map(drop))
}

/// Set the count (at least 1) if the latch is not counting; true if this call set it.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchTrySetCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    count: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = latch(env, handle, &name)?;
        let count = u64::try_from(count).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("a latch's count must be at least 1, got {count}"),
            )
        })?;
        Ok(jbool(block(async move { l.try_set_count(count).await })?))
    })
}

/// Count down by one (nothing on an open latch).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchCountDown<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) {
    entry(&mut env, (), |env| {
        let l = latch(env, handle, &name)?;
        block(async move { l.count_down().await })
    })
}

/// The count now (0 when open).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let l = latch(env, handle, &name)?;
        let n = block(async move { l.count().await })?;
        Ok(n.min(i64::MAX as u64) as jlong)
    })
}

/// Delete the latch (it opens, its waiters wake); true if it was counting.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchDelete<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = latch(env, handle, &name)?;
        Ok(jbool(block(async move { l.delete().await })?))
    })
}

/// Start a wait for the count to reach zero that completes `future` with 1 when the latch
/// opened, 0 when `wait_ms` ran out. Returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchAwaitAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    wait_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let l = latch(env, handle, &name)?;
        let wait = wait_arg(wait_ms)?;
        start(env, &future, async move {
            Ok(Won::value(i64::from(l.wait(wait).await?)))
        })
    })
}
