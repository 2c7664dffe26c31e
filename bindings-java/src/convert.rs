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

/// A fenced write's commands from Java's `byte[][][]` (each command its name and arguments).
pub(crate) fn byte_commands(
    env: &mut JNIEnv,
    commands: &JObjectArray,
) -> Result<Vec<Vec<Vec<u8>>>> {
    let invalid = |what: &str| Error::new(ErrorKind::InvalidArgument, what.to_string());
    if commands.is_null() {
        return Err(invalid("commands must not be null"));
    }
    let n = env.get_array_length(commands).map_err(jni_error)?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let command = JObjectArray::from(
            env.get_object_array_element(commands, i)
                .map_err(jni_error)?,
        );
        if command.is_null() {
            return Err(invalid(&format!("command {i} is null")));
        }
        let argc = env.get_array_length(&command).map_err(jni_error)?;
        let mut args = Vec::with_capacity(argc as usize);
        for j in 0..argc {
            let arg = jni::objects::JByteArray::from(
                env.get_object_array_element(&command, j)
                    .map_err(jni_error)?,
            );
            if arg.is_null() {
                return Err(invalid(&format!("argument {j} of command {i} is null")));
            }
            args.push(env.convert_byte_array(&arg).map_err(jni_error)?);
            env.delete_local_ref(arg).map_err(jni_error)?;
        }
        env.delete_local_ref(command).map_err(jni_error)?;
        out.push(args);
    }
    Ok(out)
}

/// A fenced write's replies as a Java `Object[]`: null, a `Long`, a `String` (a status, or bulk
/// bytes that are UTF-8), a `byte[]` (other bulk bytes) or an `Object[]` (an array reply).
pub(crate) fn reply_array(env: &mut JNIEnv, replies: Vec<polylock::Reply>) -> Result<jobjectArray> {
    use polylock::Reply as R;
    let array = env
        .new_object_array(replies.len() as i32, "java/lang/Object", JObject::null())
        .map_err(jni_error)?;
    for (i, r) in replies.into_iter().enumerate() {
        let item: JObject = match r {
            R::Nil => continue,
            R::Int(n) => env
                .call_static_method(
                    "java/lang/Long",
                    "valueOf",
                    "(J)Ljava/lang/Long;",
                    &[jni::objects::JValue::Long(n)],
                )
                .and_then(|v| v.l())
                .map_err(jni_error)?,
            R::Status(s) => env.new_string(s).map_err(jni_error)?.into(),
            R::Bytes(b) => match String::from_utf8(b) {
                Ok(s) => env.new_string(s).map_err(jni_error)?.into(),
                Err(e) => env
                    .byte_array_from_slice(e.as_bytes())
                    .map_err(jni_error)?
                    .into(),
            },
            // SAFETY: a local reference this call just made.
            R::Array(items) => unsafe { JObject::from_raw(reply_array(env, items)?) },
        };
        env.set_object_array_element(&array, i as i32, &item)
            .map_err(jni_error)?;
        env.delete_local_ref(item).map_err(jni_error)?;
    }
    Ok(array.into_raw())
}
