// Generated from core/api/fence.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! The JNI entry points of `Native.fence*`: A fence: fenced writes of Redis commands under a lock's
//! fencing token (Redis only). A fence is a native handle (a `Box<Fence>` from `fenceNew`, freed
//! once by `fenceFree`); a waiting call completes a `NativeFuture`.

use jni::objects::{JClass, JObjectArray, JString};
use jni::sys::{jlong, jobjectArray};
use jni::JNIEnv;
use polylock::Fence;

use crate::client::client;
use crate::convert::{block, byte_commands, reply_array, string};
use crate::error::{entry, Result};
use crate::handle::{borrow, free, into_handle};

/// The fence behind a handle from `fenceNew` (NativeHandle keeps it alive during the call).
pub(crate) fn handle<'a>(handle: jlong) -> Result<&'a Fence> {
    borrow(handle, "this fence handle")
}

/// A fence for `name` on the client `client`; its handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_fenceNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    client_handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let c = client(client_handle)?;
        let name = string(env, &name, "fence name")?;
        Ok(into_handle(c.fence(&name)?))
    })
}

/// Free a fence's handle (0 is allowed).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_fenceFree<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    fence: jlong,
) {
    entry(&mut env, (), |_| {
        free::<Fence>(fence);
        Ok(())
    })
}

/// Run the commands (each a command's name and its arguments) in one atomic step if `token` is not
/// smaller than the largest token this fence accepted, recording it; their replies, in order. A
/// smaller token fails with STALE_TOKEN and nothing runs; the same token may write any number of
/// times. In a Redis Cluster the commands' keys must carry the name's hash tag ({name}).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_fenceWrite<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    fence: jlong,
    token: jlong,
    commands: JObjectArray<'l>,
) -> jobjectArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let token = polylock::args::token_from_i64(token, "token")?;
        let commands = byte_commands(env, &commands)?;
        let inner = handle(fence)?.clone();
        let v = block(async move { inner.write(token, &commands).await })?;
        reply_array(env, v)
    })
}

/// The largest token this fence accepted, or none.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_fenceAccepted<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    fence: jlong,
) -> jlong {
    entry(&mut env, 0, |_| {
        let inner = handle(fence)?.clone();
        Ok(block(async move { inner.accepted().await })?
            .map_or(0, |t| t.min(i64::MAX as u64) as jlong))
    })
}
