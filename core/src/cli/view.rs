//! What operators see: every name that matches a pattern, read as whatever it holds, with its
//! holders' and waiters' identities; the one view behind `status --match`, `top` and `serve`.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::status_of_any;
use crate::{Client, Error};

/// The most names one view reads (`--limit` changes it).
pub(super) const DEFAULT_LIMIT: usize = 1000;

/// Every name that matches `pattern`, as `status` prints it, except free ones.
pub(super) async fn scan(
    client: &Client,
    pattern: &str,
    limit: usize,
) -> Result<Vec<Value>, Error> {
    let names = client.list_names(pattern, limit).await?;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        match status_of_any(client, &name).await {
            Ok(line) if line["kind"] != "free" => out.push(line),
            Ok(_) => {}
            // A name that changed kind (or vanished) between the listing and its read.
            Err(e) => out.push(json!({"name": name, "kind": "unreadable", "error": e.to_string()})),
        }
    }
    Ok(out)
}

/// One view taken at a moment, with what a view over time knows: how long each hold has been
/// seen (a hold's start is not stored on every server; this is the time since a view first saw
/// it, a lower bound after the viewer starts) and each waiter's time waited (the same).
pub(super) struct Tracker {
    seen: HashMap<String, Instant>,
}

impl Tracker {
    pub(super) fn new() -> Tracker {
        Tracker {
            seen: HashMap::new(),
        }
    }

    /// Add `held_for_ms` to each holder and `waited_ms` to each waiter of `lines`, and forget the
    /// holds and waits no longer seen.
    pub(super) fn age(&mut self, lines: &mut [Value]) {
        let now = Instant::now();
        let mut live = HashMap::new();
        for line in lines.iter_mut() {
            let name = line["name"].as_str().unwrap_or_default().to_string();
            let mut stamp = |who: &str, prefix: &str| {
                let key = format!("{prefix}\u{0}{name}\u{0}{who}");
                let since = *self.seen.get(&key).unwrap_or(&now);
                live.insert(key, since);
                now.duration_since(since).as_millis() as u64
            };
            if let Some(holders) = line["holders"].as_array_mut() {
                for h in holders {
                    let who = h["owner"]
                        .as_str()
                        .or_else(|| h["id"].as_str())
                        .unwrap_or_default()
                        .to_string();
                    h["held_for_ms"] = json!(stamp(&who, "h"));
                }
            }
            if let Some(waiters) = line["waiters"].as_array() {
                let waited: Vec<u64> = waiters
                    .iter()
                    .map(|w| stamp(w.as_str().unwrap_or_default(), "w"))
                    .collect();
                line["waited_ms"] = json!(waited);
            }
        }
        self.seen = live;
    }
}

/// Milliseconds since the epoch (the views' timestamps).
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

/// A holder's identity in a few words: `service@host/pid (runtime)` for a polylock client,
/// the stored text for anybody else, `-` when nothing is stored.
pub(super) fn who(identity: &Value) -> String {
    match identity {
        Value::Object(o) => format!(
            "{}@{}/{} ({})",
            o.get("service").and_then(Value::as_str).unwrap_or("?"),
            o.get("host").and_then(Value::as_str).unwrap_or("?"),
            o.get("pid").map(|p| p.to_string()).unwrap_or_default(),
            o.get("runtime").and_then(Value::as_str).unwrap_or("?"),
        ),
        Value::String(s) => s.clone(),
        _ => "-".to_string(),
    }
}

/// The longest time any holder of `line` has been seen holding it, in ms.
pub(super) fn held_for(line: &Value) -> u64 {
    line["holders"]
        .as_array()
        .map(|hs| {
            hs.iter()
                .filter_map(|h| h["held_for_ms"].as_u64())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// How many wait for `line`'s name.
pub(super) fn waiting(line: &Value) -> usize {
    line["waiters"].as_array().map_or(0, Vec::len)
}

/// The server's view in the Prometheus text format: per name its holders, waiters, the longest
/// hold seen and the lease left; per semaphore its permits; and the scan itself.
pub(super) fn prometheus(lines: &[Value], scan_ok: bool, took: Duration) -> String {
    use crate::metrics::{to_prometheus_text, Family, MetricType, Sample, SampleValue};
    let mut fams: Vec<Family> = Vec::new();
    let mut add =
        |name: &'static str, help: &'static str, kind, l: Vec<(&'static str, String)>, v: f64| {
            if let Some(f) = fams.iter_mut().find(|f| f.name == name) {
                f.samples.push(Sample {
                    labels: l,
                    value: SampleValue::Number(v),
                });
            } else {
                fams.push(Family {
                    name,
                    help,
                    kind,
                    samples: vec![Sample {
                        labels: l,
                        value: SampleValue::Number(v),
                    }],
                });
            }
        };
    for line in lines {
        let name = line["name"].as_str().unwrap_or_default().to_string();
        let kind = line["kind"].as_str().unwrap_or_default().to_string();
        let nk = || vec![("name", name.clone()), ("kind", kind.clone())];
        let holders = line["holders"].as_array().map_or(0, Vec::len);
        if line.get("available").is_some() {
            add(
                "polylock_semaphore_permits_used",
                "Permits of the semaphore taken now (where the server knows who holds them).",
                MetricType::Gauge,
                vec![("name", name.clone())],
                line["taken"].as_f64().unwrap_or(0.0),
            );
            add(
                "polylock_semaphore_permits_available",
                "Permits of the semaphore free now.",
                MetricType::Gauge,
                vec![("name", name.clone())],
                line["available"].as_f64().unwrap_or(0.0),
            );
            continue;
        }
        add(
            "polylock_lock_held",
            "1 while somebody holds the lock.",
            MetricType::Gauge,
            nk(),
            f64::from(u8::from(holders > 0 || line["leader"].is_string())),
        );
        add(
            "polylock_lock_holders",
            "Holders of the lock now (readers of a read-write lock count each).",
            MetricType::Gauge,
            nk(),
            holders as f64,
        );
        add(
            "polylock_lock_waiters",
            "Contenders queued for the lock (servers that keep a queue).",
            MetricType::Gauge,
            nk(),
            waiting(line) as f64,
        );
        add(
            "polylock_lock_hold_age_seconds",
            "How long the oldest holder has been seen holding the lock by this exporter.",
            MetricType::Gauge,
            nk(),
            held_for(line) as f64 / 1e3,
        );
        if let Some(ttl) = line["ttl_ms"].as_f64() {
            add(
                "polylock_lock_lease_seconds",
                "Lease left on the lock (servers with leases).",
                MetricType::Gauge,
                nk(),
                ttl / 1e3,
            );
        }
    }
    add(
        "polylock_exporter_names",
        "Names that matched the pattern and hold something.",
        MetricType::Gauge,
        vec![],
        lines.len() as f64,
    );
    add(
        "polylock_exporter_scan_ok",
        "1 if the last read of the server succeeded.",
        MetricType::Gauge,
        vec![],
        f64::from(u8::from(scan_ok)),
    );
    add(
        "polylock_exporter_scan_seconds",
        "How long the last read of the server took.",
        MetricType::Gauge,
        vec![],
        took.as_secs_f64(),
    );
    to_prometheus_text(&fams)
}
