// Generated from core/api/latch.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! The JNI entry points of `Native.latch*`: A count-down latch (Redisson's RCountDownLatch on
//! Redis, a Curator SharedCount on ZooKeeper). A latch is a native handle (a `Box<CountDownLatch>`
//! from `latchNew`, freed once by `latchFree`); a waiting call completes a `NativeFuture`.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jlong, JNI_FALSE};
use jni::JNIEnv;
use polylock::{count_from_i64, CountDownLatch, Wait};

use crate::client::client;
use crate::convert::{block, jbool, string};
use crate::error::{entry, Result};
use crate::handle::{borrow, free, into_handle};
use crate::wait::{start, Won};

/// The latch behind a handle from `latchNew` (NativeHandle keeps it alive during the call).
pub(crate) fn handle<'a>(handle: jlong) -> Result<&'a CountDownLatch> {
    borrow(handle, "this latch handle")
}

/// A latch for `name` on the client `client`; its handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    client_handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let c = client(client_handle)?;
        let name = string(env, &name, "latch name")?;
        Ok(into_handle(c.count_down_latch(&name)?))
    })
}

/// Free a latch's handle (0 is allowed).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchFree<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    latch: jlong,
) {
    entry(&mut env, (), |_| {
        free::<CountDownLatch>(latch);
        Ok(())
    })
}

/// Set the count (at least 1) if the latch is not counting; true if this call set it.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchTrySetCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    latch: jlong,
    count: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let count = count_from_i64(count, "count")?;
        let inner = handle(latch)?.clone();
        Ok(jbool(block(
            async move { inner.try_set_count(count).await },
        )?))
    })
}

/// Count down by one; at zero the latch opens and every waiter wakes. Nothing on an open latch.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchCountDown<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    latch: jlong,
) {
    entry(&mut env, (), |_| {
        let inner = handle(latch)?.clone();
        block(async move { inner.count_down().await })
    })
}

/// The count now (0 when open).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    latch: jlong,
) -> jlong {
    entry(&mut env, 0, |_| {
        let inner = handle(latch)?.clone();
        Ok(block(async move { inner.count().await })?.min(i64::MAX as u64) as jlong)
    })
}

/// Wait until the count is zero: true when open, false when the wait ran out.
/// Started: completes `future` with 1 (true) or 0 (false); returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchWaitAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    latch: jlong,
    wait_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let wait = Wait::from_millis(wait_ms, "wait time")?;
        let inner = handle(latch)?.clone();
        start(env, &future, async move {
            Ok(Won::value(i64::from(inner.wait(wait).await?)))
        })
    })
}

/// Delete the latch (it opens; its waiters wake); true if it was counting.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_latchDelete<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    latch: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let inner = handle(latch)?.clone();
        Ok(jbool(block(async move { inner.delete().await })?))
    })
}
