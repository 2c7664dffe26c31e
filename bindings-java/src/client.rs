//! The process-wide calls (version, owners) and the client handle: connect, close, free, its
//! queries, and the stream of lost holds handed to `PolylockClient.onLost`.

use jni::objects::{JClass, JObject, JObjectArray, JString, JValue};
use jni::sys::{jboolean, jlong, jstring, JNI_FALSE};
use jni::JNIEnv;
use polylock::{args, runtime, Client, ClientOptions};

use crate::convert::{block, java_string, jbool, kind_number, string, strings};
use crate::error::{entry, jni_error, Result};
use crate::handle::{borrow, free, into_handle};
use crate::jvm::{call_java, remember_vm};

/// The client behind a handle. The Java side keeps the handle alive during the call.
pub(crate) fn client<'a>(handle: jlong) -> Result<&'a Client> {
    // PolylockClient.enter/exit keep it alive while this call is in flight.
    borrow(handle, "the polylock client")
}

/// The crate version (the JAR checks it against its own).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_version<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        java_string(env, polylock::VERSION)
    })
}

/// A process-wide fresh owner id (one per Java thread, chosen by the Java side).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_freshOwner<'l>(
    _env: JNIEnv<'l>,
    _: JClass<'l>,
) -> jlong {
    polylock::owner::fresh() as jlong
}

/// The statements of the SQL fences as `[what, text, what, text, ...]` (`JdbcFence` sends them
/// through the application's own JDBC connection).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_fenceSql<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
) -> jni::sys::jobjectArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let flat: Vec<String> = polylock::fence::SQL
            .iter()
            .flat_map(|(what, text)| [what.to_string(), text.to_string()])
            .collect();
        crate::convert::string_array(env, &flat)
    })
}

/// Check a SQL fence's name and token by the core's rules (an `InvalidArgumentException`
/// otherwise).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_fenceChecked<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    name: JString<'l>,
    token: jlong,
) {
    entry(&mut env, (), |env| {
        let name = string(env, &name, "fence name")?;
        let token = args::token_from_i64(token, "token")?;
        polylock::fence::checked_sql(&name, token)?;
        Ok(())
    })
}

/// What `Polylock.Options` gives besides durations: the names with series of their own, the
/// service and runtime shown to operators.
struct Shown {
    metric_names: Vec<String>,
    service: Option<String>,
    runtime: Option<String>,
}

impl Shown {
    /// From the Java arguments: a `String[]` of globs (null: none), and two strings that may be
    /// null.
    fn of(
        env: &mut JNIEnv,
        metric_names: &JObjectArray,
        service: &JString,
        runtime: &JString,
    ) -> Result<Shown> {
        let metric_names = if metric_names.is_null() {
            Vec::new()
        } else {
            strings(env, metric_names, "metricNames")?
        };
        let optional = |env: &mut JNIEnv, s: &JString, what: &str| -> Result<Option<String>> {
            if s.is_null() {
                Ok(None)
            } else {
                string(env, s, what).map(Some)
            }
        };
        Ok(Shown {
            metric_names,
            service: optional(env, service, "service")?,
            runtime: optional(env, runtime, "runtime")?,
        })
    }
}

/// Client options from durations in milliseconds (every one positive; core checks the rest).
fn options(
    watchdog_ms: jlong,
    connect_ms: jlong,
    command_ms: jlong,
    session_ms: jlong,
    fair_wait_ms: jlong,
    shown: Shown,
) -> Result<ClientOptions> {
    Ok(ClientOptions {
        watchdog_timeout: args::millis(watchdog_ms, "watchdog timeout")?,
        connect_timeout: args::millis(connect_ms, "connect timeout")?,
        command_timeout: args::millis(command_ms, "command timeout")?,
        session_timeout: args::millis(session_ms, "session timeout")?,
        fair_wait_timeout: args::millis(fair_wait_ms, "fair wait timeout")?,
        metric_names: shown.metric_names,
        service: shown.service,
        runtime: shown.runtime,
        ..ClientOptions::default()
    })
}

/// Connect; returns the client handle. Durations in milliseconds; `metric_names` (globs, may be
/// null), `service` and `runtime` (may be null) as `ClientOptions` has them.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_polylock_Native_connect<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    url: JString<'l>,
    watchdog_ms: jlong,
    connect_ms: jlong,
    command_ms: jlong,
    session_ms: jlong,
    fair_wait_ms: jlong,
    metric_names: JObjectArray<'l>,
    service: JString<'l>,
    runtime: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        remember_vm(env)?;
        let url = string(env, &url, "url")?;
        let shown = Shown::of(env, &metric_names, &service, &runtime)?;
        let options = options(
            watchdog_ms,
            connect_ms,
            command_ms,
            session_ms,
            fair_wait_ms,
            shown,
        )?;
        let c = block(async move { Client::connect_with(&url, options).await })?;
        Ok(into_handle(c))
    })
}

/// Connect a RedLock over the independent Redis masters `urls` (core checks their number, 3 to
/// 16, and that they are distinct servers); returns a client handle like `connect`'s, whose
/// reentrant lock is a RedLock. Durations in milliseconds.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_polylock_Native_connectRedlock<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    urls: JObjectArray<'l>,
    watchdog_ms: jlong,
    connect_ms: jlong,
    command_ms: jlong,
    session_ms: jlong,
    fair_wait_ms: jlong,
    metric_names: JObjectArray<'l>,
    service: JString<'l>,
    runtime: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        remember_vm(env)?;
        let urls = strings(env, &urls, "urls")?;
        let shown = Shown::of(env, &metric_names, &service, &runtime)?;
        let options = options(
            watchdog_ms,
            connect_ms,
            command_ms,
            session_ms,
            fair_wait_ms,
            shown,
        )?;
        let c = block(async move { Client::connect_redlock_with(&urls, options).await })?;
        Ok(into_handle(c))
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
        free::<Client>(handle);
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
        java_string(env, &id)
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

/// Call `target.onLost(name, kind, owner, message, reason)` from a runtime thread for every hold of this
/// client that is lost from now on, a lock's or a permit's (`kind` numbered as in `convert`). The
/// task ends when the client is freed.
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
        let target = env.new_global_ref(target).map_err(jni_error)?;
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
                    let error = ev.reason.error_for(ev.kind, &ev.name);
                    let message = env.new_string(error.message())?;
                    env.call_method(
                        target.as_obj(),
                        "onLost",
                        "(Ljava/lang/String;IJLjava/lang/String;I)V",
                        &[
                            JValue::Object(&name),
                            JValue::Int(kind_number(ev.kind)),
                            JValue::Long(ev.owner as i64),
                            JValue::Object(&message),
                            JValue::Int(ev.reason.number() as i32),
                        ],
                    )?;
                    Ok(())
                });
            }
        });
        Ok(())
    })
}
