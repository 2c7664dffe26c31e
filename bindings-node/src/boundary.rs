//! The panic boundary of the addon (STYLE 3): a panic in polylock's native code never unwinds
//! into Node (which would abort the process). Every entry point runs its body through [`entry`]
//! (a panic becomes a thrown `PANIC\u{1}message` error, a `PolylockError` with code
//! `ERR_POLYLOCK_PANIC` once index.js has read it), every call's future through [`caught`] (a
//! panic while it is polled, inside the JS call, in a libuv callback or on a runtime thread,
//! settles its Promise with the `PANIC` outcome), and every libuv callback through [`callback`]
//! (a panic outside any call's future is written to stderr; the loop goes on).

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

use futures_util::FutureExt;
use napi::bindgen_prelude::*;

use crate::outcome::Outcome;

/// What a caught panic says: the note and the panic's own message.
pub(crate) fn message(payload: Box<dyn Any + Send>) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_string());
    // A payload whose Drop panics again would abort here: leak it instead (napi-rs does too).
    std::mem::forget(payload);
    format!(
        "a panic was caught in polylock's native code; this is a bug, please report it ({what})"
    )
}

/// Run the body of an entry point: a panic becomes a `PANIC` error thrown to JS.
pub(crate) fn entry<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(Error::from_reason(format!(
            "{}\u{1}{}",
            polylock::ErrorKind::Panic.name(),
            message(payload)
        ))),
    }
}

/// The outcome of a call whose future panicked.
pub(crate) fn panicked(message: String) -> Outcome {
    Outcome {
        ok: false,
        value: false,
        number: None,
        text: None,
        code: Some(polylock::ErrorKind::Panic.name().to_string()),
        message: Some(message),
    }
}

/// `fut`, with a panic while it is polled turned into the `PANIC` outcome.
pub(crate) fn caught<F: Future>(fut: F) -> impl Future<Output = Either<F::Output, Outcome>> {
    AssertUnwindSafe(fut).catch_unwind().map(|r| match r {
        Ok(v) => Either::A(v),
        Err(payload) => Either::B(panicked(message(payload))),
    })
}

/// Run a libuv callback's work: a panic is written to stderr, never unwound into libuv.
pub(crate) fn callback(what: &str, f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        eprintln!(
            "polylock: {} (in the loop driver's {what} callback)",
            message(payload)
        );
    }
}
