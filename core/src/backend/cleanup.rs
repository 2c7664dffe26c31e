//! The one way polylock removes what an operation that ended early left on the server: a
//! contender node of a cancelled wait, a hold an acquire in flight may have taken, a fair-queue
//! entry, a subscription, a permit a cancelled acquire took, the members a cancelled multi-lock
//! acquire took, the hold of a `with_lock` whose future was dropped. Each one is counted while
//! it runs, so that a client's `close()` waits for it (`runtime::clean_ups_finished`).
//!
//! A clean-up runs on polylock's own runtime, never on the caller's: a wait dropped outside any
//! runtime, or inside a caller's short-lived `current_thread` runtime that then ends, must still
//! leave nothing behind. It is retried with backoff a bounded number of times, and what it could
//! not do is logged with what it was for, so nothing is forgotten without a word.

use std::future::Future;
use std::time::Duration;

use crate::model::error::{ErrorKind, Result};

/// What one attempt of a clean-up found.
pub(crate) enum CleanUp {
    /// Done (or there was nothing to do).
    Done,
    /// No longer needed: what it would remove ends anyway (its session or lease is gone).
    Moot,
    /// Failed this time (the server did not answer): try again.
    Retry(String),
}

impl CleanUp {
    /// The verdict on one attempt that gave something back (a release): done; worth another
    /// try when the server did not answer (`Connection`, `Backend`, `Timeout`); moot otherwise
    /// (not held any more, or the client closed, which gives back everything itself).
    pub(crate) fn of<T>(r: &Result<T>) -> CleanUp {
        match r {
            Ok(_) => CleanUp::Done,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::Connection | ErrorKind::Backend | ErrorKind::Timeout
                ) =>
            {
                CleanUp::Retry(e.message().to_string())
            }
            Err(_) => CleanUp::Moot,
        }
    }
}

/// Attempts of one clean-up: with the backoff below, about 40 s before it gives up.
pub(crate) const ATTEMPTS: u32 = 24;

/// Run `attempt` on polylock's runtime until it is done or moot, up to [`ATTEMPTS`] times with a
/// backoff of 50 ms doubling to 2 s; `what` names the clean-up in the logs ("contender node
/// /locks/x/_c_..-lock-0000000004").
pub(crate) fn clean_up<F, Fut>(what: String, mut attempt: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = CleanUp> + Send + 'static,
{
    crate::runtime::spawn_clean_up(async move {
        let mut delay = Duration::from_millis(50);
        for n in 1..=ATTEMPTS {
            match attempt().await {
                CleanUp::Done | CleanUp::Moot => return,
                CleanUp::Retry(why) if n == ATTEMPTS => {
                    tracing::error!(
                        what = what.as_str(),
                        attempts = n,
                        "polylock: clean-up of {what} failed {n} times, giving up: {why}"
                    );
                }
                CleanUp::Retry(why) => {
                    if n == 1 {
                        tracing::warn!(
                            what = what.as_str(),
                            "polylock: clean-up of {what} failed ({why}); retrying"
                        );
                    }
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::error::Error;

    #[test]
    fn a_release_is_tried_again_only_when_the_server_did_not_answer() {
        let verdict = |kind| CleanUp::of::<()>(&Err(Error::new(kind, "x")));
        assert!(matches!(CleanUp::of(&Ok(())), CleanUp::Done));
        for kind in [
            ErrorKind::Connection,
            ErrorKind::Backend,
            ErrorKind::Timeout,
        ] {
            assert!(matches!(verdict(kind), CleanUp::Retry(_)), "{kind:?}");
        }
        for kind in [
            ErrorKind::NotOwner,
            ErrorKind::LockLost,
            ErrorKind::InvalidState,
            ErrorKind::InvalidArgument,
        ] {
            assert!(matches!(verdict(kind), CleanUp::Moot), "{kind:?}");
        }
    }
}
