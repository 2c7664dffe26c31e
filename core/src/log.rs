//! The core's log events, handed to a runtime's own logging.
//!
//! The core logs with `tracing` (target `polylock` and below): a lock lost, a renewal that
//! failed, a connection suspended or back, a clean-up that failed (warnings), and every acquire
//! and release with its wait time (debug, target `polylock::acquire` / `polylock::release`). A
//! Rust program sees them through its own `tracing` subscriber. A binding has no subscriber of
//! its own: it calls [`forward`] once with a function that hands each event to Python's
//! `logging`, SLF4J, Node's emitter or a C callback.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// How severe an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Something failed that the caller has not been told of (a clean-up, a renewal).
    Error,
    /// A hold lost, a renewal failed, a connection suspended.
    Warn,
    /// A connection back, a session renewed.
    Info,
    /// Every acquire and release with its wait time.
    Debug,
}

impl LogLevel {
    /// `error`, `warn`, `info` or `debug`.
    pub fn word(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
        }
    }

    fn of(level: &Level) -> LogLevel {
        match *level {
            Level::ERROR => LogLevel::Error,
            Level::WARN => LogLevel::Warn,
            Level::INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        }
    }
}

/// One event of the core.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    /// Its level.
    pub level: LogLevel,
    /// Where it comes from: `polylock`, `polylock::acquire`, `polylock::release`, or the module
    /// that logged it.
    pub target: String,
    /// The message.
    pub message: String,
    /// The lock (or semaphore) it is about, if any.
    pub lock: Option<String>,
    /// Its other fields (`kind`, `owner`, `outcome`, `wait_ms`...), in order.
    pub fields: Vec<(String, String)>,
}

struct Forward<F> {
    sink: F,
    spans: AtomicU64,
}

/// The most detailed level forwarded now ([`set_level`]), as `LogLevel as u8`.
static MAX: AtomicU8 = AtomicU8::new(LogLevel::Warn as u8);

/// Change the most detailed level [`forward`] hands on, at any time (a binding follows its
/// logger's level: debug events cost nothing while nobody wants them).
pub fn set_level(max: LogLevel) {
    MAX.store(max as u8, Ordering::Relaxed);
}

fn wanted(level: LogLevel) -> bool {
    level as u8 <= MAX.load(Ordering::Relaxed)
}

impl<F: Fn(LogRecord) + Send + Sync + 'static> Subscriber for Forward<F> {
    // Asked at every event rather than cached per call site: the level may change.
    fn register_callsite(&self, m: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        if m.target().starts_with("polylock") {
            tracing::subscriber::Interest::sometimes()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn enabled(&self, m: &Metadata<'_>) -> bool {
        wanted(LogLevel::of(m.level())) && m.target().starts_with("polylock")
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::DEBUG)
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.spans.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut v = Fields::default();
        event.record(&mut v);
        let m = event.metadata();
        (self.sink)(LogRecord {
            level: LogLevel::of(m.level()),
            target: m.target().to_string(),
            // The last line of defence: a URL in any event shows without its secrets, and a
            // name or holder written by someone else without what a terminal would obey.
            message: shown(&v.message),
            lock: v.lock,
            fields: v.fields.into_iter().map(|(k, v)| (k, shown(&v))).collect(),
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[derive(Default)]
struct Fields {
    message: String,
    lock: Option<String>,
    fields: Vec<(String, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            "lock" => self.lock = Some(value.to_string()),
            name => self.fields.push((name.to_string(), value.to_string())),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut s = String::new();
        let _ = write!(s, "{value:?}");
        match field.name() {
            "message" => self.message = s,
            "lock" => self.lock = Some(s.trim_matches('"').to_string()),
            name => self.fields.push((name.to_string(), s)),
        }
    }
}

/// Hand the core's events at `max` and above to `sink`, for the whole process ([`set_level`]
/// changes the level later). A binding calls this once, when it loads; false if the process
/// already has a `tracing` subscriber (a Rust program's own, which then gets the events instead).
pub fn forward<F>(max: LogLevel, sink: F) -> bool
where
    F: Fn(LogRecord) + Send + Sync + 'static,
{
    set_level(max);
    let sub = Forward {
        sink,
        spans: AtomicU64::new(0),
    };
    tracing::dispatcher::set_global_default(tracing::Dispatch::new(sub)).is_ok()
}

/// A message or field value as it may be shown: secrets masked, controls escaped.
fn shown(text: &str) -> String {
    crate::model::shown::escape(&crate::model::secret::redact_text(text)).into_owned()
}

/// A subscriber that hands the core's events to `sink`, for a test's `with_default`.
#[cfg(test)]
pub(crate) fn test_subscriber<F>(sink: F) -> impl Subscriber
where
    F: Fn(LogRecord) + Send + Sync + 'static,
{
    Forward {
        sink,
        spans: AtomicU64::new(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn events_reach_the_sink_with_their_lock_and_fields() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = got.clone();
        let sub = test_subscriber(move |r: LogRecord| seen.lock().unwrap().push(r));
        set_level(LogLevel::Info);
        tracing::subscriber::with_default(sub, || {
            tracing::warn!(target: "polylock", lock = "orders:1", kind = "lock", "lost: deleted");
            tracing::debug!(target: "polylock::acquire", lock = "orders:1", "below the level");
            tracing::warn!(target: "other", "not ours");
        });
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].level, LogLevel::Warn);
        assert_eq!(got[0].lock.as_deref(), Some("orders:1"));
        assert_eq!(got[0].message, "lost: deleted");
        assert_eq!(
            got[0].fields,
            vec![("kind".to_string(), "lock".to_string())]
        );
    }

    /// A holder's identity is written by someone else: the message a runtime's logger prints
    /// has its controls escaped (and its secrets masked).
    #[test]
    fn messages_and_fields_show_controls_escaped() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = got.clone();
        let sub = test_subscriber(move |r: LogRecord| seen.lock().unwrap().push(r));
        set_level(LogLevel::Info);
        tracing::subscriber::with_default(sub, || {
            let holder = "x\u{1b}]0;pwned\u{7}";
            tracing::warn!(target: "polylock", holder, "held by {holder} at redis://:pw@h");
        });
        let got = got.lock().unwrap();
        assert_eq!(
            got[0].message,
            "held by x\\u001b]0;pwned\\u0007 at redis://:***@h"
        );
        assert_eq!(
            got[0].fields,
            vec![("holder".to_string(), "x\\u001b]0;pwned\\u0007".to_string())]
        );
    }
}
