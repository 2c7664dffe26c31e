//! The native library behind the `io.polylock` Java package (JNI).
//!
//! A thin adapter: every `native` method of `io.polylock.Native` lands here, converts its
//! arguments, calls the core and turns a core error into the Java exception that
//! `PolylockException.fromNative` picks for its code. The Java side chooses owners (one per Java
//! thread), validates time units and counts the calls in flight on a client handle, so that a
//! handle is freed only when no call uses it.
//!
//! Short calls (one round trip) block the calling Java thread on core's runtime. Calls that wait
//! for another holder are started here and complete a Java `NativeFuture` from a runtime thread, so
//! that Java can wait on it interruptibly and cancel the native wait on `Thread.interrupt()`. The
//! future is completed exactly once on every path, including cancellation and panics.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use jni::objects::{GlobalRef, JClass, JObject, JString, JThrowable, JValue};
use jni::sys::{jboolean, jint, jlong, jstring, JNI_FALSE, JNI_TRUE};
use jni::{JNIEnv, JavaVM};
use polylock::{runtime, AcquireOptions, Client, ClientOptions, Error, ErrorKind, Lock, Wait};

type Result<T> = std::result::Result<T, Error>;

static VM: OnceLock<JavaVM> = OnceLock::new();

fn remember_vm(env: &JNIEnv) -> Result<()> {
    if VM.get().is_none() {
        let vm = env
            .get_java_vm()
            .map_err(|e| Error::new(ErrorKind::Internal, format!("no JavaVM: {e}")))?;
        let _ = VM.set(vm);
    }
    Ok(())
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
fn entry<'l, T>(
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

fn string(env: &mut JNIEnv, s: &JString, what: &str) -> Result<String> {
    if s.is_null() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must not be null"),
        ));
    }
    // Java strings arrive as modified UTF-8; the conversion decodes it (U+0000 included, which
    // core then refuses in names).
    env.get_string(s)
        .map(String::from)
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("{what}: {e}")))
}

/// The client behind a handle. The Java side keeps the handle alive during the call.
fn client<'a>(handle: jlong) -> Result<&'a Client> {
    if handle == 0 {
        return Err(Error::new(
            ErrorKind::InvalidState,
            "the polylock client is closed",
        ));
    }
    // SAFETY: a non-zero handle is a `Box<Client>` from `connect`, not freed while Java counts
    // this call as in flight (PolylockClient.enter/exit).
    Ok(unsafe { &*(handle as *const Client) })
}

fn lock(env: &mut JNIEnv, handle: jlong, name: &JString, mutex: jboolean) -> Result<Lock> {
    let c = client(handle)?;
    let name = string(env, name, "lock name")?;
    if mutex == JNI_TRUE {
        c.mutex(&name)
    } else {
        c.lock(&name)
    }
}

fn millis(v: jlong, what: &str) -> Result<Duration> {
    if v <= 0 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must be positive, got {v} ms"),
        ));
    }
    Ok(Duration::from_millis(v as u64))
}

/// `-1` waits forever, `0` tries once, a positive value waits that many milliseconds.
fn wait_arg(wait_ms: jlong) -> Result<Wait> {
    match wait_ms {
        -1 => Ok(Wait::Forever),
        0 => Ok(Wait::Never),
        w => millis(w, "wait time").map(Wait::For),
    }
}

/// `-1` is the watchdog lease, a positive value a fixed lease in milliseconds.
fn lease_arg(lease_ms: jlong) -> Result<Option<Duration>> {
    match lease_ms {
        -1 => Ok(None),
        l => millis(l, "lease time").map(Some),
    }
}

fn owner(v: jlong) -> Result<u64> {
    u64::try_from(v).map_err(|_| Error::new(ErrorKind::InvalidArgument, "negative owner id"))
}

fn block<T: Send + 'static>(
    fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    runtime::block_on(fut).and_then(|r| r)
}

fn jbool(b: bool) -> jboolean {
    if b {
        JNI_TRUE
    } else {
        JNI_FALSE
    }
}

/// The crate version (the JAR checks it against its own).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_version<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        env.new_string(polylock::VERSION)
            .map(|s| s.into_raw())
            .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))
    })
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
                .map_err(|e| Error::new(ErrorKind::Internal, e.to_string())),
            None => Ok(std::ptr::null_mut()),
        },
    )
}

/// A process-wide fresh owner id (one per Java thread, chosen by the Java side).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_freshOwner<'l>(
    _env: JNIEnv<'l>,
    _: JClass<'l>,
) -> jlong {
    polylock::owner::fresh() as jlong
}

/// Connect; returns the client handle. Durations in milliseconds.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_connect<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    url: JString<'l>,
    watchdog_ms: jlong,
    connect_ms: jlong,
    command_ms: jlong,
    session_ms: jlong,
) -> jlong {
    entry(&mut env, 0, |env| {
        remember_vm(env)?;
        let url = string(env, &url, "url")?;
        let options = ClientOptions {
            watchdog_timeout: millis(watchdog_ms, "watchdog timeout")?,
            connect_timeout: millis(connect_ms, "connect timeout")?,
            command_timeout: millis(command_ms, "command timeout")?,
            session_timeout: millis(session_ms, "session timeout")?,
        };
        let c = block(async move { Client::connect_with(&url, options).await })?;
        Ok(Box::into_raw(Box::new(c)) as jlong)
    })
}

/// Close the client (releases what its owners hold, ends their waits). Idempotent.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_close<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) {
    entry(&mut env, (), |_| {
        let c = client(handle)?.clone();
        block(async move { c.close().await })
    })
}

/// Free the handle. The Java side calls this once, when no call is in flight.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_free<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) {
    entry(&mut env, (), |_| {
        if handle != 0 {
            // SAFETY: `handle` came from `connect` and the Java side frees it exactly once.
            drop(unsafe { Box::from_raw(handle as *mut Client) });
        }
        Ok(())
    })
}

/// The client's random id (the `<uuid>` of `<uuid>:<owner>` on Redis).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_clientId<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let id = client(handle)?.id().to_string();
        env.new_string(id)
            .map(|s| s.into_raw())
            .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))
    })
}

/// True while a ZooKeeper connection is down but its session may still be alive.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_isSuspended<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        Ok(jbool(client(handle)?.is_suspended()))
    })
}

/// True when waiting takes a queue place (ZooKeeper): no one-try fast path before a wait then.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_queuesWaiters<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        Ok(jbool(client(handle)?.queues_waiters()))
    })
}

/// Check a lock name (or ZooKeeper path) without touching the server.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_validate<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
) {
    entry(&mut env, (), |env| {
        lock(env, handle, &name, mutex).map(drop)
    })
}

/// One attempt: the fencing token when acquired (or re-entered), -1 when another owner holds it.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_tryAcquire<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
    owner_id: jlong,
    lease_ms: jlong,
) -> jlong {
    entry(&mut env, -1, |env| {
        let l = lock(env, handle, &name, mutex)?;
        let (owner, lease) = (owner(owner_id)?, lease_arg(lease_ms)?);
        let got = block(async move { l.try_acquire(owner, lease).await })?;
        Ok(got.map_or(-1, |a| a.fencing_token as jlong))
    })
}

/// Call into Java from a runtime thread: attach it (as a daemon; it stays attached), give the
/// call a local frame (a runtime thread has no Java frame to free local references), and print
/// and clear whatever the Java side throws, which has nobody to go to here.
fn call_java(f: impl FnOnce(&mut JNIEnv) -> jni::errors::Result<()>) {
    let Some(vm) = VM.get() else { return };
    let Ok(mut env) = vm.attach_current_thread_as_daemon() else {
        return;
    };
    let _ = env.with_local_frame(8, |env| f(env));
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_describe();
        let _ = env.exception_clear();
    }
}

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
    mutex: jboolean,
    owner_id: jlong,
    wait_ms: jlong,
    lease_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        remember_vm(env)?;
        let l = lock(env, handle, &name, mutex)?;
        let owner = owner(owner_id)?;
        let options = AcquireOptions {
            wait: wait_arg(wait_ms)?,
            lease: lease_arg(lease_ms)?,
        };
        let future = env
            .new_global_ref(future)
            .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
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

/// Release one hold; returns how many holds the owner keeps (0 when the lock is free).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_release<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
    owner_id: jlong,
) -> jint {
    entry(&mut env, 0, |env| {
        let l = lock(env, handle, &name, mutex)?;
        let owner = owner(owner_id)?;
        match block(async move { l.release(owner).await })? {
            polylock::Released::StillHeld(n) => Ok(n as jint),
            polylock::Released::Freed => Ok(0),
        }
    })
}

/// How many times `owner` holds the lock.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_holdCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
    owner_id: jlong,
) -> jint {
    entry(&mut env, 0, |env| {
        let l = lock(env, handle, &name, mutex)?;
        let owner = owner(owner_id)?;
        Ok(block(async move { l.hold_count(owner).await })? as jint)
    })
}

/// Whether anybody holds the lock.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_isLocked<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = lock(env, handle, &name, mutex)?;
        Ok(jbool(block(async move { l.is_locked().await })?))
    })
}

/// Whether any owner of this client holds the lock (local).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_isHeldLocally<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        Ok(jbool(lock(env, handle, &name, mutex)?.is_held_locally()))
    })
}

/// Remaining lease in ms: -1 when held without expiry, -2 when free (Redisson's
/// `remainTimeToLive` convention).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_remainTimeToLive<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
) -> jlong {
    entry(&mut env, -2, |env| {
        let l = lock(env, handle, &name, mutex)?;
        block(async move {
            match l.remaining_lease().await? {
                Some(d) => Ok(d.as_millis() as jlong),
                None if l.is_locked().await? => Ok(-1),
                None => Ok(-2),
            }
        })
    })
}

/// Delete the lock whoever holds it; true if it was held.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_forceUnlock<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = lock(env, handle, &name, mutex)?;
        Ok(jbool(block(async move { l.force_unlock().await })?))
    })
}

/// The fencing token of `owner`'s hold, or -1 if it holds none (local).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_fencingToken<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
    owner_id: jlong,
) -> jlong {
    entry(&mut env, -1, |env| {
        let l = lock(env, handle, &name, mutex)?;
        Ok(l.fencing_token(owner(owner_id)?).map_or(-1, |t| t as jlong))
    })
}

/// Whether `owner` has a hold that was lost and not yet released (local).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_isLost<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    mutex: jboolean,
    owner_id: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let l = lock(env, handle, &name, mutex)?;
        let lost = l.lost_signal(owner(owner_id)?).is_some_and(|s| s.is_lost());
        Ok(jbool(lost))
    })
}

/// Call `target.onLost(name, owner, message)` from a runtime thread for every hold of this
/// client that is lost from now on. The task ends when the client is freed.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_watchLost<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    target: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        remember_vm(env)?;
        let mut events = client(handle)?.lost_events();
        let target = env
            .new_global_ref(target)
            .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
        runtime::handle().spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                let ev = match events.recv().await {
                    Ok(ev) => ev,
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                };
                call_java(|env| {
                    let name = env.new_string(&*ev.name)?;
                    let message = env.new_string(ev.reason.error(&ev.name).message())?;
                    env.call_method(
                        target.as_obj(),
                        "onLost",
                        "(Ljava/lang/String;JLjava/lang/String;)V",
                        &[
                            JValue::Object(&name),
                            JValue::Long(ev.owner as i64),
                            JValue::Object(&message),
                        ],
                    )?;
                    Ok(())
                });
            }
        });
        Ok(())
    })
}
