//! JS arguments to core's types: lock kinds, durations in ms, waits.

use std::time::Duration;

use napi::bindgen_prelude::*;
use polylock::{ErrorKind, LockKind, Wait};

use crate::outcome::sync_err;

/// The JS wrapper's names of the lock kinds.
pub(crate) fn kind_arg(kind: &str) -> std::result::Result<LockKind, polylock::Error> {
    match kind {
        "reentrant" => Ok(LockKind::Reentrant),
        "mutex" => Ok(LockKind::Mutex),
        "read" => Ok(LockKind::Read),
        "write" => Ok(LockKind::Write),
        "fair" => Ok(LockKind::Fair),
        other => Err(polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("unknown lock kind '{other}'"),
        )),
    }
}

/// The JS wrapper's name of what a lost hold held: a lock kind, or `permit`.
pub(crate) fn hold_kind_name(kind: polylock::HoldKind) -> &'static str {
    match kind {
        polylock::HoldKind::Lock(k) => kind_name(k),
        _ => "permit",
    }
}

pub(crate) fn kind_name(kind: LockKind) -> &'static str {
    match kind {
        LockKind::Reentrant => "reentrant",
        LockKind::Mutex => "mutex",
        LockKind::Read => "read",
        LockKind::Write => "write",
        LockKind::Fair => "fair",
        _ => "other",
    }
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

/// `waitMs`: omitted waits forever, 0 tries once, a positive number waits that long.
pub(crate) fn wait_arg(wait_ms: Option<f64>) -> Result<Wait> {
    Ok(match wait_ms {
        None => Wait::Forever,
        Some(0.0) => Wait::Never,
        Some(w) => Wait::For(ms(w, "waitMs").map_err(sync_err)?),
    })
}
