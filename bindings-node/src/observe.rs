//! Metrics and logs for Node: the core's process-wide metrics snapshot as plain objects (index.js
//! hands them to prom-client or OpenTelemetry) and the Prometheus text, and the core's log events
//! forwarded to each Node environment (the main thread and every worker that loaded the addon)
//! through a weak threadsafe function, so that index.js emits them on `polylock.events`.

use std::sync::{Mutex, OnceLock};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use polylock::log::{LogLevel, LogRecord};
use polylock::metrics::{Family, SampleValue};

use crate::boundary::entry;

/// One series of a metric family.
#[napi(object)]
pub struct MetricSampleJs {
    /// Label names and values, alternating: `[name, value, name, value, ...]`.
    pub labels: Vec<String>,
    /// A counter's or gauge's value (absent for a histogram).
    pub value: Option<f64>,
    /// A histogram's bucket upper bounds in seconds (without `+Inf`).
    pub le: Option<Vec<f64>>,
    /// A histogram's cumulative count at each bound of `le`.
    pub buckets: Option<Vec<f64>>,
    /// A histogram's count of observations (the `+Inf` bucket).
    pub count: Option<f64>,
    /// A histogram's sum of observations, in seconds.
    pub sum: Option<f64>,
}

/// A metric family of the snapshot.
#[napi(object)]
pub struct MetricFamilyJs {
    /// The metric's name (`polylock_acquire_wait_seconds`; counters' end in `_total`).
    pub name: String,
    /// What it measures.
    pub help: String,
    /// `counter`, `gauge` or `histogram`.
    #[napi(js_name = "type")]
    pub kind: String,
    /// Its series.
    pub samples: Vec<MetricSampleJs>,
}

fn family_js(f: Family) -> MetricFamilyJs {
    let kind = f.kind.name();
    let samples = f
        .samples
        .into_iter()
        .map(|s| {
            let labels = s
                .labels
                .into_iter()
                .flat_map(|(k, v)| [k.to_string(), v])
                .collect();
            match s.value {
                SampleValue::Number(v) => MetricSampleJs {
                    labels,
                    value: Some(v),
                    le: None,
                    buckets: None,
                    count: None,
                    sum: None,
                },
                SampleValue::Histogram(h) => MetricSampleJs {
                    labels,
                    value: None,
                    le: Some(h.buckets.iter().map(|b| b.0).collect()),
                    buckets: Some(h.buckets.iter().map(|b| b.1 as f64).collect()),
                    count: Some(h.count as f64),
                    sum: Some(h.sum),
                },
            }
        })
        .collect();
    MetricFamilyJs {
        name: f.name.to_string(),
        help: f.help.to_string(),
        kind: kind.to_string(),
        samples,
    }
}

/// Every client of the process added up (closed clients' counts kept); `include_zero` lists
/// every kind and outcome of each backend in use even where nothing happened yet.
#[napi]
pub fn metrics_snapshot(include_zero: bool) -> Result<Vec<MetricFamilyJs>> {
    entry(|| {
        Ok(polylock::metrics::snapshot(include_zero)
            .into_iter()
            .map(family_js)
            .collect())
    })
}

/// Every client of the process in the Prometheus text format (0.0.4).
#[napi]
pub fn metrics_text() -> Result<String> {
    entry(|| Ok(polylock::metrics::prometheus_text()))
}

/// Every family the core records, `[name, type, help]` in its order (prom-client needs each name
/// before the first scrape, when a snapshot may not list it yet).
#[napi]
pub fn metric_families() -> Result<Vec<Vec<&'static str>>> {
    entry(|| {
        Ok(polylock::metrics::families()
            .into_iter()
            .map(|(name, help, kind)| vec![name, kind.name(), help])
            .collect())
    })
}

// ---- Logs ----

/// One log event of the core, as index.js receives it.
#[napi(object)]
#[derive(Clone)]
pub struct LogRecordJs {
    /// `error`, `warn`, `info` or `debug`.
    pub level: String,
    /// `polylock`, `polylock::acquire`, `polylock::release`, or the core module that logged it.
    pub target: String,
    /// The message.
    pub message: String,
    /// The lock (or semaphore) it is about, if any.
    pub lock: Option<String>,
    /// The other fields, alternating names and values: `[name, value, ...]`.
    pub fields: Vec<String>,
}

impl From<&LogRecord> for LogRecordJs {
    fn from(r: &LogRecord) -> Self {
        LogRecordJs {
            level: r.level.word().to_string(),
            target: r.target.clone(),
            message: r.message.clone(),
            lock: r.lock.clone(),
            fields: r
                .fields
                .iter()
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect(),
        }
    }
}

/// Weak (unref'd: it never keeps an environment alive), not callee-handled.
type LogSink = ThreadsafeFunction<LogRecordJs, (), LogRecordJs, Status, false, true>;

/// The environments' sinks: one per environment that loaded index.js. A sink whose environment
/// has ended (its threadsafe function aborted) answers `Closing` and is dropped.
static SINKS: Mutex<Vec<LogSink>> = Mutex::new(Vec::new());

/// The level the process forwards at, once installed; `None` when the process already had a
/// `tracing` subscriber of its own (which then gets the events).
static INSTALLED: OnceLock<Option<LogLevel>> = OnceLock::new();

/// Called by the core, on whatever thread logged: hand the event to every environment's sink,
/// never blocking and never unwinding into the core.
fn deliver(record: LogRecord) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut sinks = SINKS.lock().unwrap_or_else(|e| e.into_inner());
        if sinks.is_empty() {
            return;
        }
        let js = LogRecordJs::from(&record);
        sinks.retain(|sink| {
            sink.call(js.clone(), ThreadsafeFunctionCallMode::NonBlocking) != Status::Closing
        });
    }));
}

/// Deliver the core's log events to `callback` (one per environment; its events are the whole
/// process's). The first call of the process installs the forwarding at `debug` level when
/// `debug` is true, else at `info`; later calls keep that level. Answers the level in effect
/// (`debug`, `info`), or `none` when the process has a `tracing` subscriber of its own.
#[napi]
pub fn forward_logs(callback: Function<LogRecordJs, ()>, debug: bool) -> Result<&'static str> {
    entry(|| {
        let sink: LogSink = callback
            .build_threadsafe_function()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        SINKS.lock().unwrap_or_else(|e| e.into_inner()).push(sink);
        let level = INSTALLED.get_or_init(|| {
            let max = if debug {
                LogLevel::Debug
            } else {
                LogLevel::Info
            };
            polylock::log::forward(max, deliver).then_some(max)
        });
        Ok(level.map_or("none", LogLevel::word))
    })
}
