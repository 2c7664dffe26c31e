//! JS arguments to core's types (core's `args` parses them): durations, waits and leases in ms.

use std::time::Duration;

use napi::bindgen_prelude::*;
use polylock::Wait;

use crate::outcome::sync_err;

/// A positive number of milliseconds, as a core error (for calls that gather several).
pub(crate) use polylock::args::millis_f64 as ms;

/// `waitMs`: omitted waits forever, 0 tries once, a positive number waits that long.
pub(crate) fn wait_arg(wait_ms: Option<f64>) -> Result<Wait> {
    Wait::from_millis_f64(wait_ms, "waitMs").map_err(sync_err)
}

/// `leaseMs`: omitted is the watchdog's lease, a positive number a fixed lease.
pub(crate) fn lease_arg(lease_ms: Option<f64>) -> Result<Option<Duration>> {
    polylock::args::lease_millis_f64(lease_ms, "leaseMs").map_err(sync_err)
}
