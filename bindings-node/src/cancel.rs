//! `CancelToken`: cancels one waiting call (for `AbortSignal`), and gives back what the call
//! took if it finished as it was cancelled.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::boundary::entry;

/// Cancels one in-flight acquire (for `AbortSignal`).
#[napi]
pub struct CancelToken {
    inner: Arc<TokenState>,
}

#[derive(Default)]
pub(crate) struct TokenState {
    cancelled: std::sync::atomic::AtomicBool,
    done: std::sync::atomic::AtomicBool,
    wake: tokio::sync::Notify,
}

#[napi]
impl CancelToken {
    /// A token for one call.
    #[napi(constructor)]
    pub fn new() -> Result<Self> {
        entry(|| {
            Ok(CancelToken {
                inner: Arc::default(),
            })
        })
    }

    /// Cancel the call: the wait is dropped (leaving no node or field behind) and a hold that
    /// arrives anyway is given back. False if the call had already finished.
    #[napi]
    pub fn cancel(&self) -> Result<bool> {
        entry(|| {
            use std::sync::atomic::Ordering;
            self.inner.cancelled.store(true, Ordering::SeqCst);
            self.inner.wake.notify_one();
            Ok(!self.inner.done.load(Ordering::SeqCst))
        })
    }
}

impl CancelToken {
    /// The state of `token`, or of a token nobody can cancel (a call without an AbortSignal).
    pub(crate) fn state_of(token: Option<&CancelToken>) -> Arc<TokenState> {
        token.map_or_else(Arc::default, |t| t.inner.clone())
    }
}

/// How a cancellable call ended.
pub(crate) enum Ran<T> {
    /// It finished (a timeout or an error included).
    Done(polylock::Result<T>),
    /// It was cancelled before it finished (dropping it left nothing behind in core).
    Aborted,
    /// It finished with a value as it was cancelled: give that back.
    AbortedAfter(T),
}

impl TokenState {
    /// Run `fut` unless the token is (or gets) cancelled.
    pub(crate) async fn run<T>(
        &self,
        fut: impl std::future::Future<Output = polylock::Result<T>>,
    ) -> Ran<T> {
        use std::sync::atomic::Ordering;
        if self.cancelled.load(Ordering::SeqCst) {
            return Ran::Aborted;
        }
        // Notify keeps a permit: a cancel between the check above and this select is not lost.
        let result = tokio::select! {
            r = fut => Some(r),
            _ = self.wake.notified() => None,
        };
        self.done.store(true, Ordering::SeqCst);
        match result {
            None => Ran::Aborted,
            Some(Ok(v)) if self.cancelled.load(Ordering::SeqCst) => Ran::AbortedAfter(v),
            Some(r) => Ran::Done(r),
        }
    }
}

/// The outcome of an aborted call (the JS side rejects with the signal's reason).
pub(crate) fn aborted() -> crate::outcome::Outcome {
    crate::outcome::failed(&polylock::Error::new(
        polylock::ErrorKind::Cancelled,
        "the call was aborted",
    ))
}
