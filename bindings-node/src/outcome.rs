//! What native calls hand back to the JS wrapper: outcomes (never rejections, so the wrapper
//! builds a `PolylockError` with the stable `code`), synchronous errors, durations in ms, and the
//! Promise settled from polylock's runtime.

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{runtime, ErrorKind};

/// The result of one native call, as the JS wrapper reads it.
#[napi(object)]
pub struct Outcome {
    /// False when the call failed; `code` and `message` say why.
    pub ok: bool,
    /// The boolean answer of the call (acquired / was locked / ...).
    pub value: bool,
    /// A number answer (hold count, remaining lease in ms, fencing token), if any.
    pub number: Option<f64>,
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
        code: None,
        message: None,
    }
}

pub(crate) fn failed(e: &polylock::Error) -> Outcome {
    Outcome {
        ok: false,
        value: false,
        number: None,
        code: Some(e.kind().name().to_string()),
        message: Some(e.message().to_string()),
    }
}

/// A synchronous error for the JS wrapper: `CODE\u{1}message`.
pub(crate) fn sync_err(e: polylock::Error) -> Error {
    Error::from_reason(format!("{}\u{1}{}", e.kind().name(), e.message()))
}

pub(crate) fn ms(v: f64, what: &str) -> std::result::Result<Duration, polylock::Error> {
    if !v.is_finite() || v <= 0.0 {
        return Err(polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must be a positive number of milliseconds, got {v}"),
        ));
    }
    Duration::try_from_secs_f64(v / 1e3).map_err(|_| {
        polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} {v} is too large"),
        )
    })
}

/// Spawn `fut` on polylock's runtime; its outcome settles the returned Promise.
pub(crate) fn promise<F>(env: &Env, fut: F) -> Result<Object<'_>>
where
    F: std::future::Future<Output = Outcome> + Send + 'static,
{
    let (deferred, promise) = env.create_deferred::<Outcome, _>()?;
    runtime::handle().spawn(async move {
        let o = fut.await;
        deferred.resolve(move |_| Ok(o));
    });
    Ok(promise)
}
