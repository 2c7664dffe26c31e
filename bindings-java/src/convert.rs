//! Java arguments to core values, and back: strings, owners, kinds of hold, permits, booleans
//! (waits, leases and durations go through core's `args`); and running a core future with the
//! calling Java thread blocked.

use jni::objects::{JObject, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong, jobjectArray, jstring, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;
use polylock::{runtime, Error, ErrorKind, HoldKind, LockKind};

use crate::error::{jni_error, Result};

/// The numbers of the kinds of hold, shared with the `KIND_*` constants of `Native.java`: the one
/// table on this side. Lock natives take a lock kind as their `kind` argument; lost holds are
/// reported with theirs (a permit's too). A number never changes meaning; a kind added to core
/// gets the next number here and a constant there, and every lock native serves a new lock kind
/// with no new entry point.
const KINDS: [(jint, HoldKind); 6] = [
    (0, HoldKind::Lock(LockKind::Reentrant)),
    (1, HoldKind::Lock(LockKind::Mutex)),
    (2, HoldKind::Lock(LockKind::Read)),
    (3, HoldKind::Lock(LockKind::Write)),
    (4, HoldKind::Permit),
    (5, HoldKind::Lock(LockKind::Fair)),
];

/// The lock kind of a `kind` argument (a permit's number is not one).
pub(crate) fn lock_kind(number: jint) -> Result<LockKind> {
    match KINDS.iter().find(|(n, _)| *n == number) {
        Some((_, HoldKind::Lock(k))) => Ok(*k),
        _ => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("unknown lock kind {number}"),
        )),
    }
}

/// The number of `kind` for Java, or -1 for a kind the table does not have yet.
pub(crate) fn kind_number(kind: HoldKind) -> jint {
    KINDS
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or(-1, |(n, _)| *n)
}

/// Core's word for a kind number ("lock", "read lock", "permit", ...).
pub(crate) fn kind_word(number: jint) -> Option<&'static str> {
    KINDS
        .iter()
        .find(|(n, _)| *n == number)
        .map(|(_, k)| k.word())
}

/// A new Java string of `s`, handed back to Java.
pub(crate) fn java_string(env: &mut JNIEnv, s: &str) -> Result<jstring> {
    env.new_string(s).map(|s| s.into_raw()).map_err(jni_error)
}

/// A Java string argument; null is an `InvalidArgument` naming `what`.
pub(crate) fn string(env: &mut JNIEnv, s: &JString, what: &str) -> Result<String> {
    if s.is_null() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must not be null"),
        ));
    }
    // Java strings arrive as modified UTF-8, decoded strictly by the core: a lone surrogate is
    // refused (a lossy decoding made it U+FFFD, so two names met on one lock); U+0000 decodes,
    // and the core refuses it in names.
    let chars = env
        .get_string(s)
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("{what}: {e}")))?;
    polylock::text_from_java_utf8(chars.to_bytes(), what)
}

/// A Java `String[]` argument: null, or a null element, is an `InvalidArgument` naming `what`
/// (the Java side checks both first and throws NullPointerException).
pub(crate) fn strings(env: &mut JNIEnv, a: &JObjectArray, what: &str) -> Result<Vec<String>> {
    if a.is_null() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must not be null"),
        ));
    }
    let n = env.get_array_length(a).map_err(jni_error)?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let s = JString::from(env.get_object_array_element(a, i).map_err(jni_error)?);
        out.push(string(env, &s, &format!("{what}[{i}]"))?);
        env.delete_local_ref(s).map_err(jni_error)?;
    }
    Ok(out)
}

/// An owner id chosen by the Java side (one per thread).
pub(crate) fn owner(v: jlong) -> Result<u64> {
    u64::try_from(v).map_err(|_| Error::new(ErrorKind::InvalidArgument, "negative owner id"))
}

/// Run `fut` on core's runtime with the calling Java thread blocked.
pub(crate) fn block<T: Send + 'static>(
    fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    runtime::block_on(fut).and_then(|r| r)
}

pub(crate) fn jbool(b: bool) -> jboolean {
    if b {
        JNI_TRUE
    } else {
        JNI_FALSE
    }
}

/// A Java `String[]` of `items`.
pub(crate) fn string_array(env: &mut JNIEnv, items: &[String]) -> Result<jobjectArray> {
    let array = env
        .new_object_array(items.len() as i32, "java/lang/String", JObject::null())
        .map_err(jni_error)?;
    for (i, item) in items.iter().enumerate() {
        let s = env.new_string(item).map_err(jni_error)?;
        env.set_object_array_element(&array, i as i32, &s)
            .map_err(jni_error)?;
        env.delete_local_ref(s).map_err(jni_error)?;
    }
    Ok(array.into_raw())
}
