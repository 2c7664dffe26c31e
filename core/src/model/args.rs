//! Arguments as each runtime passes them, parsed once here for every binding: a wait (C and
//! Java: -1 forever, 0 one try, milliseconds; Python: `None` forever, seconds; Node: `undefined`
//! forever, milliseconds), a lease (the same, with the watchdog's lease for -1 or none), a
//! duration and a count (a whole number, from an integer or a JS number).

use std::time::Duration;

use super::error::{Error, Result};
use super::options::{check_duration, Wait};
use super::outcome::LeaseChange;

impl Wait {
    /// A wait as C and Java pass it: -1 forever, 0 one try, a positive number of milliseconds
    /// (checked as every wait is). `what` names the argument in the error.
    pub fn from_millis(ms: i64, what: &str) -> Result<Wait> {
        match ms {
            -1 => Ok(Wait::Forever),
            0 => Ok(Wait::Never),
            ms if ms > 0 => Wait::For(Duration::from_millis(ms as u64)).checked(),
            ms => Err(Error::invalid(format!(
                "{what} must be -1 (forever), 0 (one try) or a positive number of ms, got {ms}"
            ))),
        }
    }

    /// A wait as Python passes it: `None` forever, 0 one try, a positive number of seconds.
    pub fn from_secs(secs: Option<f64>, what: &str) -> Result<Wait> {
        from_float(secs, 1.0, "seconds", what)
    }

    /// A wait as Node passes it: `undefined` forever, 0 one try, a positive number of
    /// milliseconds.
    pub fn from_millis_f64(ms: Option<f64>, what: &str) -> Result<Wait> {
        from_float(ms, 1e3, "milliseconds", what)
    }
}

fn from_float(v: Option<f64>, per_second: f64, unit: &str, what: &str) -> Result<Wait> {
    match v {
        None => Ok(Wait::Forever),
        Some(0.0) => Ok(Wait::Never),
        Some(v) if v.is_finite() && v > 0.0 => Duration::try_from_secs_f64(v / per_second)
            .map_err(|_| Error::invalid(format!("{what} {v} is too large")))
            .and_then(|d| Wait::For(d).checked()),
        Some(v) => Err(Error::invalid(format!(
            "{what} must be a positive number of {unit} (or 0 for one try), got {v}"
        ))),
    }
}

/// A duration as C and Java pass it: a positive number of milliseconds.
pub fn millis(ms: i64, what: &str) -> Result<Duration> {
    if ms <= 0 {
        return Err(Error::invalid(format!(
            "{what} must be a positive number of ms, got {ms}"
        )));
    }
    check_duration(what, Duration::from_millis(ms as u64))
}

/// A duration as Python passes it: a positive number of seconds.
pub fn secs(secs: f64, what: &str) -> Result<Duration> {
    float_duration(secs, 1.0, "seconds", what)
}

/// A duration as Node passes it: a positive number of milliseconds.
pub fn millis_f64(ms: f64, what: &str) -> Result<Duration> {
    float_duration(ms, 1e3, "milliseconds", what)
}

fn float_duration(v: f64, per_second: f64, unit: &str, what: &str) -> Result<Duration> {
    if !(v.is_finite() && v > 0.0) {
        return Err(Error::invalid(format!(
            "{what} must be a positive number of {unit}, got {v}"
        )));
    }
    let d = Duration::try_from_secs_f64(v / per_second)
        .map_err(|_| Error::invalid(format!("{what} {v} is too large")))?;
    check_duration(what, d)
}

/// A lease as C and Java pass it: -1 the watchdog's (`None`), else a positive number of ms.
pub fn lease_millis(ms: i64, what: &str) -> Result<Option<Duration>> {
    match ms {
        -1 => Ok(None),
        ms => millis(ms, what).map(Some),
    }
}

/// A lease as Python passes it: `None` the watchdog's, else a positive number of seconds.
pub fn lease_secs(v: Option<f64>, what: &str) -> Result<Option<Duration>> {
    v.map(|v| secs(v, what)).transpose()
}

/// A lease as Node passes it: `undefined` the watchdog's, else a positive number of ms.
pub fn lease_millis_f64(v: Option<f64>, what: &str) -> Result<Option<Duration>> {
    v.map(|v| millis_f64(v, what)).transpose()
}

/// A change of a fixed lease as the bindings name it: `how` is `add` (`amount` more), `set`
/// (`amount` from now) or `reset` (its original length from now; `amount` unused).
pub fn lease_change(how: &str, amount: Option<Duration>, what: &str) -> Result<LeaseChange> {
    let amount = || amount.ok_or_else(|| Error::invalid(format!("a lease change needs {what}")));
    match how {
        "add" => Ok(LeaseChange::Add(amount()?)),
        "set" => Ok(LeaseChange::Set(amount()?)),
        "reset" => Ok(LeaseChange::Reset),
        other => Err(Error::invalid(format!(
            "unknown lease change '{}' (add, set or reset)",
            crate::model::shown::escape(other)
        ))),
    }
}

/// A count as C, Java and Python pass it: a whole number, not negative.
pub fn count_from_i64(v: i64, what: &str) -> Result<u64> {
    u64::try_from(v).map_err(|_| Error::invalid(format!("{what} must not be negative, got {v}")))
}

/// A count as Node passes it: a whole JS number from 0 to 2^53 (the largest it holds exactly).
pub fn count_from_f64(v: f64, what: &str) -> Result<u64> {
    const MAX_SAFE: f64 = 9_007_199_254_740_992.0;
    if v.fract() != 0.0 || !(0.0..=MAX_SAFE).contains(&v) {
        return Err(Error::invalid(format!(
            "{what} must be a whole number from 0 to 2^53, got {v}"
        )));
    }
    Ok(v as u64)
}

/// A number of permits as C, Java and Python pass it: a whole number from 0 to 2^32 - 1.
pub fn permits_from_i64(v: i64, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| {
        Error::invalid(format!(
            "{what} must be a whole number from 0 to {}, got {v}",
            u32::MAX
        ))
    })
}

/// A number of permits as Node passes it: a whole JS number from 0 to 2^32 - 1.
pub fn permits_from_f64(v: f64, what: &str) -> Result<u32> {
    if v.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&v) {
        return Err(Error::invalid(format!(
            "{what} must be a whole number from 0 to {}, got {v}",
            u32::MAX
        )));
    }
    Ok(v as u32)
}

/// A fencing token as Python and Java pass it (a signed 64-bit integer): what a fence takes
/// (`fence::checked_token`: 1 to 2^63 - 1).
pub fn token_from_i64(v: i64, what: &str) -> Result<u64> {
    let t = u64::try_from(v).map_err(|_| {
        Error::invalid(format!(
            "{what} must be a fencing token (1 or more), got {v}"
        ))
    })?;
    crate::primitives::fence::checked_token(t)
}

/// A fencing token as Node passes it: a whole JS number from 1 to 2^53.
pub fn token_from_f64(v: f64, what: &str) -> Result<u64> {
    if v.fract() != 0.0 || !(1.0..=9_007_199_254_740_992.0).contains(&v) {
        return Err(Error::invalid(format!(
            "{what} must be a fencing token (a whole number from 1 to 2^53), got {v}"
        )));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::error::ErrorKind;

    #[test]
    fn lease_changes_by_name() {
        let d = Duration::from_secs(2);
        assert_eq!(
            lease_change("add", Some(d), "s").unwrap(),
            LeaseChange::Add(d)
        );
        assert_eq!(
            lease_change("set", Some(d), "s").unwrap(),
            LeaseChange::Set(d)
        );
        assert_eq!(
            lease_change("reset", None, "s").unwrap(),
            LeaseChange::Reset
        );
        for (how, amount) in [
            ("add", None),
            ("set", None),
            ("grow", Some(d)),
            ("", Some(d)),
        ] {
            let e = lease_change(how, amount, "seconds").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{how}: {e}");
        }
    }

    #[test]
    fn waits_in_each_runtimes_convention() {
        assert_eq!(Wait::from_millis(-1, "w").unwrap(), Wait::Forever);
        assert_eq!(Wait::from_millis(0, "w").unwrap(), Wait::Never);
        assert_eq!(
            Wait::from_millis(1500, "w").unwrap(),
            Wait::For(Duration::from_millis(1500))
        );
        assert_eq!(Wait::from_secs(None, "w").unwrap(), Wait::Forever);
        assert_eq!(Wait::from_secs(Some(0.0), "w").unwrap(), Wait::Never);
        assert_eq!(
            Wait::from_secs(Some(1.5), "w").unwrap(),
            Wait::For(Duration::from_millis(1500))
        );
        assert_eq!(
            Wait::from_millis_f64(Some(1500.0), "w").unwrap(),
            Wait::For(Duration::from_millis(1500))
        );
        assert_eq!(Wait::from_millis_f64(None, "w").unwrap(), Wait::Forever);
    }

    #[test]
    fn leases_and_durations_in_each_runtimes_convention() {
        let ms = Duration::from_millis;
        assert_eq!(lease_millis(-1, "l").unwrap(), None);
        assert_eq!(lease_millis(250, "l").unwrap(), Some(ms(250)));
        assert_eq!(lease_secs(None, "l").unwrap(), None);
        assert_eq!(lease_secs(Some(0.25), "l").unwrap(), Some(ms(250)));
        assert_eq!(lease_millis_f64(None, "l").unwrap(), None);
        assert_eq!(lease_millis_f64(Some(250.0), "l").unwrap(), Some(ms(250)));
        assert_eq!(millis(30_000, "d").unwrap(), ms(30_000));
        assert_eq!(secs(30.0, "d").unwrap(), ms(30_000));
        assert_eq!(millis_f64(30_000.0, "d").unwrap(), ms(30_000));
    }

    #[test]
    fn bad_waits_and_counts_are_typed_errors() {
        let bad = [
            Wait::from_millis(-2, "wait_ms"),
            Wait::from_millis(i64::MAX, "wait_ms"),
            Wait::from_secs(Some(-1.0), "timeout"),
            Wait::from_secs(Some(f64::NAN), "timeout"),
            Wait::from_secs(Some(f64::INFINITY), "timeout"),
            Wait::from_secs(Some(1e300), "timeout"),
            Wait::from_secs(Some(1e-6), "timeout"),
            Wait::from_millis_f64(Some(-0.5), "waitMs"),
        ];
        for r in bad {
            assert_eq!(r.unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
        for r in [
            millis(0, "lease_ms"),
            millis(-5, "lease_ms"),
            millis(i64::MAX, "lease_ms"),
            secs(0.0, "lease"),
            secs(f64::NAN, "lease"),
            secs(1e-4, "lease"),
            millis_f64(f64::INFINITY, "leaseMs"),
            lease_millis(-2, "lease_ms").map(|_| Duration::ZERO),
            lease_secs(Some(-1.0), "lease").map(|_| Duration::ZERO),
            lease_millis_f64(Some(0.0), "leaseMs").map(|_| Duration::ZERO),
        ] {
            assert_eq!(r.unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
        let e = Wait::from_millis(-2, "wait_ms").unwrap_err();
        assert!(e.message().contains("wait_ms"), "{}", e.message());
        assert_eq!(count_from_i64(7, "count").unwrap(), 7);
        assert_eq!(
            count_from_f64(9_007_199_254_740_992.0, "count").unwrap(),
            1 << 53
        );
        for r in [
            count_from_i64(-1, "count"),
            count_from_f64(-1.0, "count"),
            count_from_f64(1.5, "count"),
            count_from_f64(f64::NAN, "count"),
            count_from_f64(1e17, "count"),
        ] {
            assert_eq!(r.unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
        assert_eq!(permits_from_i64(3, "permits").unwrap(), 3);
        assert_eq!(
            permits_from_f64(4_294_967_295.0, "permits").unwrap(),
            u32::MAX
        );
        for r in [
            permits_from_i64(-1, "permits"),
            permits_from_i64(1 << 32, "permits"),
            permits_from_f64(-1.0, "permits"),
            permits_from_f64(2.5, "permits"),
            permits_from_f64(f64::NAN, "permits"),
            permits_from_f64(4_294_967_296.0, "permits"),
        ] {
            assert_eq!(r.unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
    }
}
