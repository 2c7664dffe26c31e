//! The one way a backend removes what an operation that ended early left on the server: a
//! contender node of a cancelled wait, a hold an acquire in flight may have taken, a fair-queue
//! entry, a subscription, a permit a cancelled acquire took.
//!
//! A clean-up runs on polylock's own runtime, never on the caller's: a wait dropped outside any
//! runtime, or inside a caller's short-lived `current_thread` runtime that then ends, must still
//! leave nothing behind. It is retried with backoff a bounded number of times, and what it could
//! not do is logged with what it was for, so nothing is forgotten without a word.

use std::future::Future;
use std::time::Duration;

/// What one attempt of a clean-up found.
pub(crate) enum CleanUp {
    /// Done (or there was nothing to do).
    Done,
    /// No longer needed: what it would remove ends anyway (its session or lease is gone).
    Moot,
    /// Failed this time (the server did not answer): try again.
    Retry(String),
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
