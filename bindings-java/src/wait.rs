//! The waiting acquire: started here, run on core's runtime, and reported by completing a Java
//! `NativeFuture` exactly once, so that the Java thread waits interruptibly and an interrupt
//! cancels the native wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use jni::objects::{GlobalRef, JClass, JObject, JString, JValue};
use jni::sys::{jint, jlong};
use jni::JNIEnv;
use polylock::{runtime, AcquireOptions, ErrorKind};

use crate::convert::{lease_arg, owner, wait_arg};
use crate::error::{entry, jni_error};
use crate::jvm::{call_java, remember_vm};
use crate::lock::lock;

/// Shared between a waiting acquire and the Java thread that may cancel it.
#[derive(Default)]
struct CancelState {
    cancelled: AtomicBool,
    wake: tokio::sync::Notify,
}

/// Completes a Java `NativeFuture` exactly once: explicitly, or with CANCELLED when dropped
/// (the task was aborted or panicked).
struct Completer {
    future: Option<GlobalRef>,
}

impl Completer {
    fn complete(&mut self, code: u32, value: i64, message: &str) {
        let Some(future) = self.future.take() else {
            return;
        };
        call_java(|env| {
            let msg = env.new_string(message)?;
            env.call_method(
                future.as_obj(),
                "done",
                "(IJLjava/lang/String;)V",
                &[
                    JValue::Int(code as jint),
                    JValue::Long(value),
                    JValue::Object(&msg),
                ],
            )?;
            Ok(())
        });
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        self.complete(
            ErrorKind::Cancelled.code(),
            0,
            "the acquire was cancelled before it completed",
        );
    }
}

/// Start a waiting acquire that completes `future` with (0, fencing token), (TIMEOUT, 0),
/// (CANCELLED, 0) or (error code, message). Returns a cancel handle for `cancel`/`freeCancel`.
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
        remember_vm(env)?;
        let l = lock(env, handle, &name, kind)?;
        let owner = owner(owner_id)?;
        let options = AcquireOptions {
            wait: wait_arg(wait_ms)?,
            lease: lease_arg(lease_ms)?,
        };
        let future = env.new_global_ref(future).map_err(jni_error)?;
        let state = Arc::new(CancelState::default());
        let token = state.clone();
        let mut completer = Completer {
            future: Some(future),
        };
        runtime::handle().spawn(async move {
            if token.cancelled.load(Ordering::SeqCst) {
                return; // the completer reports CANCELLED
            }
            // Dropping the acquire (the cancel branch) is cancel-safe in core. Notify keeps a
            // permit, so a cancel between the check above and this select is not missed.
            let result = tokio::select! {
                r = l.acquire(owner, options) => Some(r),
                _ = token.wake.notified() => None,
            };
            match result {
                None => {}
                Some(Ok(_)) if token.cancelled.load(Ordering::SeqCst) => {
                    let _ = l.release(owner).await; // cancelled as it arrived: give it back
                }
                Some(Ok(a)) => completer.complete(0, a.fencing_token as i64, ""),
                Some(Err(e)) => completer.complete(e.kind().code(), 0, e.message()),
            }
        });
        Ok(Box::into_raw(Box::new(state)) as jlong)
    })
}

/// Cancel a waiting acquire: its future completes with CANCELLED, or with the result that beat
/// the cancel (in which case a hold is given back by the native side).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_cancel<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    cancel: jlong,
) {
    entry(&mut env, (), |_| {
        if cancel != 0 {
            // SAFETY: a handle from `acquireAsync`, freed only by `freeCancel` after its future
            // completed.
            let state = unsafe { &*(cancel as *const Arc<CancelState>) };
            state.cancelled.store(true, Ordering::SeqCst);
            state.wake.notify_one();
        }
        Ok(())
    })
}

/// Free a cancel handle (once its future completed).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_freeCancel<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    cancel: jlong,
) {
    entry(&mut env, (), |_| {
        if cancel != 0 {
            // SAFETY: see `cancel`; the Java side frees each handle once.
            drop(unsafe { Box::from_raw(cancel as *mut Arc<CancelState>) });
        }
        Ok(())
    })
}
