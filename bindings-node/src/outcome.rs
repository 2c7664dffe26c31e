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
