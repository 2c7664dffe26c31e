//! Durations and the options of clients and acquires.

use std::time::Duration;

use super::error::{Error, Result};

/// Longest accepted duration (lease, wait, watchdog timeout): ten years.
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Longest ZooKeeper session timeout: the protocol carries it as a 32-bit count of milliseconds
/// (about 24.8 days; a server also caps it at its own maxSessionTimeout).
pub const MAX_SESSION_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);
/// Shortest accepted watchdog timeout.
pub const MIN_WATCHDOG_TIMEOUT: Duration = Duration::from_millis(30);

/// Options of a [`Client`](crate::Client).
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Lease of locks acquired without an explicit lease; the watchdog renews it every third of
    /// it while the holder lives (Redisson's `lockWatchdogTimeout`). Default 30 s.
    pub watchdog_timeout: Duration,
    /// Limit of one connection attempt. Default 5 s.
    pub connect_timeout: Duration,
    /// Limit of one command's answer. Default 5 s.
    pub command_timeout: Duration,
    /// ZooKeeper session timeout (a `session_timeout_ms` in the URL wins). Locks held through a
    /// session are lost when it expires. Default 10 s.
    pub session_timeout: Duration,
    /// How long a waiter of a fair lock (Redis) stays in the queue without trying again: a live
    /// waiter renews its heartbeat every third of this, so only a dead waiter is dropped (by
    /// polylock's scripts; Redisson's know only their own chained 300 s deadlines). Default 5 s.
    pub fair_wait_timeout: Duration,
    /// SQL backends: the most connections this client opens (the query connection, and one per
    /// held or waiting session lock); an acquire that would need one more fails with
    /// `InvalidState`. `None`: the URL's `max_connections`, else 64. A `max_connections` in the
    /// URL wins. At least 2.
    pub max_sql_connections: Option<usize>,
    /// Lock names that get metric series of their own (a `name` label), as Redis-style globs
    /// (`orders:*`, `?` one character). Empty (the default): series per kind and backend only,
    /// so a service with millions of names still has a bounded number of series. A
    /// `metric_names=A,B` in the URL adds to these.
    pub metric_names: Vec<String>,
    /// Record metrics (crate::metrics). On by default: an uncontended acquire and release pair
    /// costs a few atomic additions and two clock reads more (`cargo bench --bench lock` prints
    /// the difference beside the server's round trip).
    pub metrics: bool,
    /// The service name this client shows to operators (`polylock status`, `top`, `serve`)
    /// next to its host, pid, runtime and version. `None`: a `service` in the URL, else the
    /// `POLYLOCK_SERVICE` environment variable, else the program's name.
    pub service: Option<String>,
    /// The runtime the client is used from, as shown to operators (`python 3.12.1`): the
    /// bindings set it. `None`: `rust`.
    pub runtime: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            watchdog_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            command_timeout: Duration::from_secs(5),
            session_timeout: Duration::from_secs(10),
            fair_wait_timeout: Duration::from_secs(5),
            max_sql_connections: None,
            metric_names: Vec::new(),
            metrics: true,
            service: None,
            runtime: None,
        }
    }
}

impl ClientOptions {
    pub(crate) fn validate(&self) -> Result<()> {
        check_duration("watchdog timeout", self.watchdog_timeout)?;
        if self.watchdog_timeout < MIN_WATCHDOG_TIMEOUT {
            return Err(Error::invalid(format!(
                "watchdog timeout {:?} is too short; use at least {MIN_WATCHDOG_TIMEOUT:?}",
                self.watchdog_timeout
            )));
        }
        check_duration("connect timeout", self.connect_timeout)?;
        check_duration("command timeout", self.command_timeout)?;
        check_duration("session timeout", self.session_timeout)?;
        if self.session_timeout > MAX_SESSION_TIMEOUT {
            return Err(Error::invalid(format!(
                "session timeout {:?} is too long: ZooKeeper carries it as a 32-bit count of ms \
                 (at most {MAX_SESSION_TIMEOUT:?})",
                self.session_timeout
            )));
        }
        check_duration("fair wait timeout", self.fair_wait_timeout)?;
        if self.max_sql_connections.is_some_and(|n| n < 2) {
            return Err(Error::invalid(
                "max_sql_connections must be at least 2 (the query connection and one lock)",
            ));
        }
        if self.fair_wait_timeout < Duration::from_millis(30) {
            return Err(Error::invalid(format!(
                "fair wait timeout {:?} is too short; use at least 30ms",
                self.fair_wait_timeout
            )));
        }
        Ok(())
    }
}

/// Check a user-given duration: positive, at least the 1 ms resolution of leases, at most
/// [`MAX_DURATION`].
pub(crate) fn check_duration(what: &str, d: Duration) -> Result<Duration> {
    if d.is_zero() {
        return Err(Error::invalid(format!("{what} must be positive, got 0")));
    }
    if d > MAX_DURATION {
        return Err(Error::invalid(format!(
            "{what} {d:?} is too long; the limit is {MAX_DURATION:?}"
        )));
    }
    if d.as_millis() == 0 {
        return Err(Error::invalid(format!(
            "{what} {d:?} is shorter than the 1 ms resolution of leases"
        )));
    }
    Ok(d)
}

/// How long an acquire may wait for another owner to release the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Wait until acquired (Redisson `lock()`).
    Forever,
    /// One attempt, no waiting (Redisson `tryLock()`).
    Never,
    /// Wait up to this long (Redisson `tryLock(waitTime, ...)`). Zero is the same as `Never`.
    For(Duration),
}

impl Wait {
    /// The same wait, checked: a zero `For` becomes `Never`, an out-of-range one an error.
    pub(crate) fn checked(self) -> Result<Wait> {
        match self {
            Wait::For(d) if d.is_zero() => Ok(Wait::Never),
            Wait::For(d) => Ok(Wait::For(check_duration("wait", d)?)),
            w => Ok(w),
        }
    }

    /// When the wait ends, from now (`None`: never). Never panics: a wait past what an
    /// `Instant` can hold (an unchecked one; [`Wait::checked`] refuses it first) ends never.
    pub(crate) fn deadline(self) -> Option<std::time::Instant> {
        match self {
            Wait::Forever => None,
            Wait::Never => Some(std::time::Instant::now()),
            Wait::For(d) => std::time::Instant::now().checked_add(d),
        }
    }
}

/// Options of one acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireOptions {
    /// How long to wait for the lock.
    pub wait: Wait,
    /// `None`: the watchdog keeps the lock while the client lives. `Some(d)`: the lock expires
    /// after `d` unless released first, and no watchdog renews it.
    pub lease: Option<Duration>,
}

impl Default for AcquireOptions {
    fn default() -> Self {
        AcquireOptions {
            wait: Wait::Forever,
            lease: None,
        }
    }
}

impl AcquireOptions {
    /// Wait forever, watchdog lease.
    pub fn forever() -> Self {
        Self::default()
    }

    /// One attempt, watchdog lease.
    pub fn try_once() -> Self {
        AcquireOptions {
            wait: Wait::Never,
            lease: None,
        }
    }

    /// Wait up to `d`, watchdog lease.
    pub fn wait_for(d: Duration) -> Self {
        AcquireOptions {
            wait: Wait::For(d),
            lease: None,
        }
    }

    /// The same options with a fixed lease.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }
}
