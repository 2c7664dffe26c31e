//! The `JavaVM`, remembered by the entry points that start work on core's runtime, so that the
//! runtime's threads can call back into Java (to complete a future, to report a lost hold).

use std::sync::OnceLock;

use jni::objects::JValue;
use jni::{JNIEnv, JavaVM};
use polylock::{Error, ErrorKind};

use crate::error::Result;

static VM: OnceLock<JavaVM> = OnceLock::new();

/// Remember the JVM of `env` (once per process; every later call is a no-op).
pub(crate) fn remember_vm(env: &JNIEnv) -> Result<()> {
    if VM.get().is_none() {
        let vm = env
            .get_java_vm()
            .map_err(|e| Error::new(ErrorKind::Internal, format!("no JavaVM: {e}")))?;
        let _ = VM.set(vm);
    }
    Ok(())
}

/// The JVM, once an entry point remembered it.
pub(crate) fn vm() -> Option<&'static JavaVM> {
    VM.get()
}

/// This thread's `JNIEnv`, attaching it as a daemon if it is not attached yet (it stays attached
/// until it ends). A thread attached here gets its Rust name in Java too (`polylock-worker`, where
/// a JVM would call it `Thread-7` in thread dumps and log lines).
pub(crate) fn attach(vm: &JavaVM) -> jni::errors::Result<JNIEnv<'_>> {
    if let Ok(env) = vm.get_env() {
        return Ok(env);
    }
    let mut env = vm.attach_current_thread_as_daemon()?;
    let name = std::thread::current()
        .name()
        .unwrap_or("polylock-native")
        .to_string();
    let _ = env.with_local_frame(4, |env| -> jni::errors::Result<()> {
        let thread = env
            .call_static_method(
                "java/lang/Thread",
                "currentThread",
                "()Ljava/lang/Thread;",
                &[],
            )?
            .l()?;
        let name = env.new_string(name)?;
        env.call_method(
            &thread,
            "setName",
            "(Ljava/lang/String;)V",
            &[JValue::Object(&name)],
        )?;
        Ok(())
    });
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
    Ok(env)
}

/// Call into Java from a runtime thread: attach it (as a daemon; it stays attached), give the
/// call a local frame (a runtime thread has no Java frame to free local references), and print
/// and clear whatever the Java side throws, which has nobody to go to here.
pub(crate) fn call_java(f: impl FnOnce(&mut JNIEnv) -> jni::errors::Result<()>) {
    let Some(vm) = VM.get() else { return };
    let Ok(mut env) = attach(vm) else {
        return;
    };
    let _ = env.with_local_frame(8, |env| f(env));
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_describe();
        let _ = env.exception_clear();
    }
}
