//! What native calls hand back to the JS wrapper: outcomes (never rejections, so the wrapper
//! builds a `PolylockError` with the stable `code`), synchronous errors and durations in ms
//! (the Promise that carries an outcome is made by `driver::promise`).

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The result of one native call, as the JS wrapper reads it.
#[napi(object)]
pub struct Outcome {
    /// False when the call failed; `code` and `message` say why.
    pub ok: bool,
    /// The boolean answer of the call (acquired / was locked / ...).
    pub value: bool,
    /// A number answer (hold count, remaining lease in ms, fencing token), if any.
    pub number: Option<f64>,
    /// A text answer (a permit's id), if any.
    pub text: Option<String>,
    /// The stable error name (`NOT_OWNER`, ...), when `ok` is false.
    pub code: Option<String>,
    /// What went wrong and what to do.
    pub message: Option<String>,
}

pub(crate) fn outcome(value: bool, number: Option<f64>) -> Outcome {
    Outcome {
        ok: true,
        value,
        number,
        text: None,
        code: None,
        message: None,
    }
}

/// A successful outcome carrying text (a permit's id).
pub(crate) fn outcome_text(text: String) -> Outcome {
    Outcome {
        text: Some(text),
        ..outcome(true, None)
    }
}

/// The outcome of a call with nothing to answer, or its error.
pub(crate) fn done(r: polylock::Result<()>) -> Outcome {
    match r {
        Ok(()) => outcome(true, None),
        Err(e) => failed(&e),
    }
}

/// The outcome of a call answering a number, or its error.
pub(crate) fn number<N: Into<f64>>(r: polylock::Result<N>) -> Outcome {
    match r {
        Ok(n) => outcome(true, Some(n.into())),
        Err(e) => failed(&e),
    }
}

/// The hot calls' answer (a lock's acquire and release): a plain boolean when the call
/// succeeded with nothing but its boolean to say (no object to build per call), else the
/// outcome. The JS wrapper reads both (`norm` in index.js).
pub(crate) fn answer(o: Outcome) -> Either<bool, Outcome> {
    if o.ok && o.number.is_none() && o.text.is_none() {
        Either::A(o.value)
    } else {
        Either::B(o)
    }
}

pub(crate) fn failed(e: &polylock::Error) -> Outcome {
    Outcome {
        ok: false,
        value: false,
        number: None,
        text: None,
        code: Some(e.kind().name().to_string()),
        message: Some(e.message().to_string()),
    }
}

/// A synchronous error for the JS wrapper: `CODE\u{1}message` (index.js's `call` reads it).
pub(crate) fn sync_err(e: polylock::Error) -> Error {
    Error::from_reason(format!("{}\u{1}{}", e.kind().name(), e.message()))
}

/// The outcome that carries a leader: `value` true, its term in `number`, its identity in
/// `text`; or `value` false for nobody.
pub(crate) fn leader_outcome(l: Option<polylock::Leader>) -> Outcome {
    match l {
        Some(l) => Outcome {
            text: Some(l.identity),
            ..outcome(true, Some(l.term as f64))
        },
        None => outcome(false, None),
    }
}

/// One reply of a fenced write as JS gets it: null, a number (a BigInt beyond 2^53), a string (a
/// status, or bulk bytes that are UTF-8), a Buffer (other bulk bytes) or an array.
pub(crate) struct JsReply(polylock::Reply);

impl ToNapiValue for JsReply {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        use polylock::Reply as R;
        // SAFETY (each arm): forwarded from the caller, on the environment's thread.
        unsafe {
            match val.0 {
                R::Nil => Null::to_napi_value(env, Null),
                R::Int(n) if n.unsigned_abs() <= 1 << 53 => f64::to_napi_value(env, n as f64),
                R::Int(n) => BigInt::to_napi_value(env, BigInt::from(n)),
                R::Status(s) => String::to_napi_value(env, s),
                R::Bytes(b) => match String::from_utf8(b) {
                    Ok(s) => String::to_napi_value(env, s),
                    Err(e) => Buffer::to_napi_value(env, Buffer::from(e.into_bytes())),
                },
                R::Array(items) => {
                    Vec::<JsReply>::to_napi_value(env, items.into_iter().map(JsReply).collect())
                }
            }
        }
    }
}

/// A fenced write's answer: its replies, or the outcome of its error (index.js tells them apart
/// by `Array.isArray`).
pub(crate) fn replies(r: polylock::Result<Vec<polylock::Reply>>) -> Either<Vec<JsReply>, Outcome> {
    match r {
        Ok(v) => Either::A(v.into_iter().map(JsReply).collect()),
        Err(e) => Either::B(failed(&e)),
    }
}
