//! Calls that wait for somebody else (a lock's acquire, a semaphore's, a latch's wait): started
//! here, run on core's runtime, and reported by completing a Java `NativeFuture` exactly once, so
//! that the Java thread waits interruptibly and an interrupt cancels the native wait. Every
//! waiting native (`lock`, `semaphore`, `latch`) goes through [`start`]; Java waits on the future
//! with `Waits.await`.
//!
//! What a call got is given back if nobody wants it: by the task, when the cancel arrived before
//! the result; by `giveBack`, when Java sees the result only after it cancelled.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use jni::objects::{GlobalRef, JClass, JObject, JValue};
use jni::sys::{jint, jlong};
use jni::JNIEnv;
use polylock::{runtime, ErrorKind};

use crate::error::{entry, jni_error, Result};
use crate::jvm::{call_java, remember_vm};

/// Gives back what a waiting call got (a lock's hold, permits), run only if Java does not take it.
pub(crate) type GiveBack = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a waiting call that succeeded hands to Java: a number, a text (a permit's id), and how
/// to give it back.
pub(crate) struct Won {
    value: i64,
    text: String,
    give_back: Option<GiveBack>,
}

impl Won {
    /// A number for Java (a fencing token, a lease handle, a boolean as 0 or 1).
    pub(crate) fn value(value: i64) -> Won {
        Won {
            value,
            text: String::new(),
            give_back: None,
        }
    }

    /// A text for Java (`NativeFuture.text()`).
    pub(crate) fn text(text: String) -> Won {
        Won {
            text,
            ..Won::value(0)
        }
    }

    /// Run `undo` if Java does not take this result (cancelled as it arrived). `undo` must also
    /// free whatever `value` points at, since Java then never sees it.
    pub(crate) fn give_back(mut self, undo: impl Future<Output = ()> + Send + 'static) -> Won {
        self.give_back = Some(Box::pin(undo));
        self
    }
}

/// Shared between a waiting call and the Java thread that may cancel it.
#[derive(Default)]
struct CancelState {
    cancelled: AtomicBool,
    wake: tokio::sync::Notify,
    /// The give-back of a result handed to Java, kept until Java takes the result (`freeCancel`
    /// drops it unrun) or refuses it (`giveBack` runs it).
    give_back: Mutex<Option<GiveBack>>,
}

/// Completes a Java `NativeFuture` exactly once: explicitly, or with CANCELLED when dropped
/// (the task was aborted, panicked, or saw the cancel).
struct Completer {
    future: Option<GlobalRef>,
}

impl Completer {
    fn complete(&mut self, code: u32, value: i64, text: &str) {
        let Some(future) = self.future.take() else {
            return;
        };
        call_java(|env| {
            let text = env.new_string(text)?;
            env.call_method(
                future.as_obj(),
                "done",
                "(IJLjava/lang/String;)V",
                &[
                    JValue::Int(code as jint),
                    JValue::Long(value),
                    JValue::Object(&text),
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
            "the wait was cancelled before it completed",
        );
    }
}

/// Start `op` on the runtime; it completes `future` with (0, value, text), (TIMEOUT, 0, message)
/// when its wait ran out, (CANCELLED, ...) or (error code, 0, message). Returns the cancel handle
/// for `cancel`, `giveBack` and `freeCancel`. A cancel drops `op` at once.
pub(crate) fn start(
    env: &mut JNIEnv,
    future: &JObject,
    op: impl Future<Output = polylock::Result<Won>> + Send + 'static,
) -> Result<jlong> {
    remember_vm(env)?;
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
        // A cancel drops `op` (core's acquires are cancel-safe: a dropped acquire leaves
        // nothing taken on the server). Notify keeps a permit, so a cancel between the check
        // above and this select is not missed.
        let result = tokio::select! {
            r = op => Some(r),
            _ = token.wake.notified() => None,
        };
        match result {
            None => {}
            Some(Ok(won)) if token.cancelled.load(Ordering::SeqCst) => {
                if let Some(undo) = won.give_back {
                    undo.await; // cancelled as it arrived: nobody takes it
                }
            }
            Some(Ok(won)) => {
                // Kept before Java can see the result, so a `giveBack` after it finds it.
                *lock(&token.give_back) = won.give_back;
                completer.complete(0, won.value, &won.text);
            }
            Some(Err(e)) => completer.complete(e.kind().code(), 0, e.message()),
        }
    });
    Ok(Box::into_raw(Box::new(state)) as jlong)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The state behind a cancel handle.
///
/// # Safety
/// `cancel` is a handle from [`start`] not yet given to `freeCancel`.
unsafe fn state<'a>(cancel: jlong) -> &'a Arc<CancelState> {
    // SAFETY: see above.
    unsafe { &*(cancel as *const Arc<CancelState>) }
}

/// Cancel a waiting call: its future completes with CANCELLED, or with the result that beat the
/// cancel (which Java then refuses with `giveBack`).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_cancel<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    cancel: jlong,
) {
    entry(&mut env, (), |_| {
        if cancel != 0 {
            // SAFETY: Java frees each handle once, after its future completed and its last use.
            let state = unsafe { state(cancel) };
            state.cancelled.store(true, Ordering::SeqCst);
            state.wake.notify_one();
        }
        Ok(())
    })
}

/// Give back what a completed call got (a hold, permits), because Java no longer wants it
/// (interrupted as it arrived). Does nothing the second time, or for a call that got nothing.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_giveBack<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    cancel: jlong,
) {
    entry(&mut env, (), |_| {
        if cancel == 0 {
            return Ok(());
        }
        // SAFETY: as in `cancel`.
        let undo = lock(&unsafe { state(cancel) }.give_back).take();
        match undo {
            Some(undo) => runtime::block_on(undo),
            None => Ok(()),
        }
    })
}

/// Free a cancel handle (once its future completed). A give-back still kept is dropped unrun:
/// Java took the result.
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
