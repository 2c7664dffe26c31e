//! The boundary of every entry point: panics caught, core errors thrown as the Java exception
//! `PolylockException.fromNative` picks for their code (the one place codes become Java types).

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::{JClass, JThrowable, JValue};
use jni::sys::{jint, jstring};
use jni::JNIEnv;
use polylock::{Error, ErrorKind};

/// Results inside the binding carry core's error, whatever went wrong.
pub(crate) type Result<T> = std::result::Result<T, Error>;

/// A failure of the JNI machinery itself (a Java string not made, a reference not taken).
pub(crate) fn jni_error(e: jni::errors::Error) -> Error {
    Error::new(ErrorKind::Internal, e.to_string())
}

/// Throw the Java exception for `kind` (chosen by `PolylockException.fromNative`) unless one is
/// already pending.
fn throw(env: &mut JNIEnv, kind: ErrorKind, message: &str) {
    if env.exception_check().unwrap_or(true) {
        return;
    }
    let made = env.new_string(message).and_then(|msg| {
        env.call_static_method(
            "io/polylock/PolylockException",
            "fromNative",
            "(ILjava/lang/String;)Ljava/lang/RuntimeException;",
            &[JValue::Int(kind.code() as jint), JValue::Object(&msg)],
        )
        .and_then(|v| v.l())
    });
    match made {
        Ok(obj) if !obj.is_null() => {
            let _ = env.throw(JThrowable::from(obj));
        }
        _ => {
            if !env.exception_check().unwrap_or(true) {
                let _ = env.throw_new("java/lang/RuntimeException", message);
            }
        }
    }
}

/// Run `f` behind a panic boundary; an error or a panic becomes a pending Java exception and
/// `fallback` is returned to the JVM (which ignores it while the exception is pending).
pub(crate) fn entry<'l, T>(
    env: &mut JNIEnv<'l>,
    fallback: T,
    f: impl FnOnce(&mut JNIEnv<'l>) -> Result<T>,
) -> T {
    match catch_unwind(AssertUnwindSafe(|| f(env))) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            throw(env, e.kind(), e.message());
            fallback
        }
        Err(_) => {
            throw(
                env,
                ErrorKind::Panic,
                "a panic was caught in polylock's native code; this is a bug, please report it",
            );
            fallback
        }
    }
}

/// The stable name of an error code, or null (tests compare it with the Java `Code` enum).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_errorName<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    code: jint,
) -> jstring {
    entry(
        &mut env,
        std::ptr::null_mut(),
        |env| match ErrorKind::from_code(code as u32) {
            Some(k) => env
                .new_string(k.name())
                .map(|s| s.into_raw())
                .map_err(jni_error),
            None => Ok(std::ptr::null_mut()),
        },
    )
}
