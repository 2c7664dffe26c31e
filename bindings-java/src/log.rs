//! The core's log events handed to SLF4J: `io.polylock.Logs.log`, a static method, called from
//! whichever thread logged (a runtime thread, attached to the JVM as a daemon like the other
//! calls into Java, or a Java thread inside a native call).
//!
//! Installed once, when `Native` loads (`Logs.install`), at the most verbose level SLF4J has on
//! for polylock's loggers then; below it the core does not even build the events. The class and
//! method are looked up once, on the loading thread: a runtime thread has no class loader of its
//! own to find `Logs` with (a Spring Boot fat JAR's, an application server's). Nothing crosses
//! back: a Java exception is cleared here (`Logs.log` catches everything anyway), a panic is
//! caught, and an event logged while the same thread is already handing one to Java (an appender
//! that uses polylock) is dropped instead of recursing.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use jni::objects::{GlobalRef, JClass, JObject, JValue};
use jni::signature::{Primitive, ReturnType};
use jni::sys::{jboolean, jint, JNI_FALSE};
use jni::JNIEnv;
use polylock::log::{LogLevel, LogRecord};

use crate::convert::jbool;
use crate::error::{entry, jni_error};
use crate::jvm::{attach, remember_vm, vm};

/// `Logs.class` and its `log` method, found on the thread that installed the forwarding.
static TARGET: OnceLock<(GlobalRef, jni::objects::JStaticMethodID)> = OnceLock::new();

const SIGNATURE: &str =
    "(ILjava/lang/String;Ljava/lang/String;Ljava/lang/String;[Ljava/lang/String;)V";

thread_local! {
    /// True while this thread hands an event to Java.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// The level numbers shared with `Logs.java`: 0 error, 1 warn, 2 info, 3 debug.
fn number(level: LogLevel) -> jint {
    match level {
        LogLevel::Error => 0,
        LogLevel::Warn => 1,
        LogLevel::Info => 2,
        LogLevel::Debug => 3,
    }
}

fn level(n: jint) -> LogLevel {
    match n {
        i32::MIN..=0 => LogLevel::Error,
        1 => LogLevel::Warn,
        2 => LogLevel::Info,
        _ => LogLevel::Debug,
    }
}

/// Hand the core's events at `max_level` and above to `target.log(level, target, message,
/// lock, fields)` (`target` is `Logs.class`). False if forwarding was installed before, or the
/// process already has a `tracing` subscriber.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_forwardLogs<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    target: JClass<'l>,
    max_level: jint,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        remember_vm(env)?;
        let method = env
            .get_static_method_id(&target, "log", SIGNATURE)
            .map_err(jni_error)?;
        let class = env.new_global_ref(&target).map_err(jni_error)?;
        if TARGET.set((class, method)).is_err() {
            return Ok(JNI_FALSE);
        }
        Ok(jbool(polylock::log::forward(level(max_level), sink)))
    })
}

fn sink(record: LogRecord) {
    BUSY.with(|busy| {
        if busy.replace(true) {
            return;
        }
        let _ = catch_unwind(AssertUnwindSafe(|| deliver(&record)));
        busy.set(false);
    });
}

fn deliver(r: &LogRecord) {
    let (Some(vm), Some((class, method))) = (vm(), TARGET.get()) else {
        return;
    };
    let Ok(mut env) = attach(vm) else {
        return;
    };
    // A Java thread inside a native call may have an exception pending, which Java code must not
    // run under: that event is dropped.
    if env.exception_check().unwrap_or(true) {
        return;
    }
    let _ = env.with_local_frame(8, |env| -> jni::errors::Result<()> {
        let target = env.new_string(&r.target)?;
        let message = env.new_string(&r.message)?;
        let lock = match &r.lock {
            Some(l) => JObject::from(env.new_string(l)?),
            None => JObject::null(),
        };
        let fields = env.new_object_array(
            (2 * r.fields.len()) as i32,
            "java/lang/String",
            JObject::null(),
        )?;
        for (i, (k, v)) in r.fields.iter().enumerate() {
            let k = env.new_string(k)?;
            env.set_object_array_element(&fields, (2 * i) as i32, &k)?;
            env.delete_local_ref(k)?;
            let v = env.new_string(v)?;
            env.set_object_array_element(&fields, (2 * i + 1) as i32, &v)?;
            env.delete_local_ref(v)?;
        }
        let class: &JClass = <&JClass>::from(class.as_obj());
        // SAFETY: `method` is `Logs.log` of this very class, found with `SIGNATURE`, and the
        // arguments are of that signature.
        unsafe {
            env.call_static_method_unchecked(
                class,
                *method,
                ReturnType::Primitive(Primitive::Void),
                &[
                    JValue::Int(number(r.level)).as_jni(),
                    JValue::Object(&target).as_jni(),
                    JValue::Object(&message).as_jni(),
                    JValue::Object(&lock).as_jni(),
                    JValue::Object(&fields).as_jni(),
                ],
            )?;
        }
        Ok(())
    });
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
}
