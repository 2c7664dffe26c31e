//! Metrics, recorded once in the core and read by every runtime through one snapshot.
//!
//! Each client records into its own [`Metrics`] with plain atomics (no lock on the acquire or
//! release path): acquire wait time by outcome, hold time, holds and waiters now, re-entries,
//! losses by reason, and the watchdog's renewals with their latency, per primitive kind. The
//! labels are `kind`, `backend` and `outcome`/`reason`; a lock's name is a label only for names
//! that match the client's opt-in patterns ([`ClientOptions::metric_names`]), so the number of
//! series stays bounded whatever names a service uses.
//!
//! [`snapshot`] adds up every client of the process (closed clients' counts are kept, so
//! counters never go down) and [`prometheus_text`] writes it in the Prometheus text format.
//! Each binding hands the snapshot to its runtime's own library: Python's `prometheus_client`,
//! Node's `prom-client`, Java's Micrometer, C's text; Rust programs read [`snapshot`] or the
//! text. See docs/src/operating.md.
//!
//! [`ClientOptions::metric_names`]: crate::ClientOptions::metric_names

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use foldhash::HashMap;

use crate::model::kind::LockKind;
use crate::model::lost::LostReason;

/// The upper bounds (seconds) of the histograms' buckets, after which `+Inf`.
pub const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// The most opted-in names one client keeps series for; later names are not tracked (and the
/// log says so once).
pub const MAX_NAMED: usize = 1000;

#[derive(Default)]
pub(crate) struct Histogram {
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl Histogram {
    pub(crate) fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(BUCKETS.len());
        self.counts[i].fetch_add(1, Relaxed);
        self.sum_ns
            .fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
    }

    fn add_into(&self, into: &Histogram) {
        for (a, b) in self.counts.iter().zip(&into.counts) {
            b.fetch_add(a.load(Relaxed), Relaxed);
        }
        into.sum_ns.fetch_add(self.sum_ns.load(Relaxed), Relaxed);
    }

    /// How many observations (without building the buckets).
    fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Relaxed)).sum()
    }

    fn read(&self) -> HistogramValue {
        let mut total = 0;
        let mut buckets = Vec::with_capacity(BUCKETS.len());
        for (i, le) in BUCKETS.iter().enumerate() {
            total += self.counts[i].load(Relaxed);
            buckets.push((*le, total));
        }
        total += self.counts[BUCKETS.len()].load(Relaxed);
        HistogramValue {
            buckets,
            count: total,
            sum: self.sum_ns.load(Relaxed) as f64 / 1e9,
        }
    }
}

/// The primitive kinds metrics are kept for (the `kind` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Prim {
    Lock,
    FairLock,
    ReadLock,
    WriteLock,
    Mutex,
    Leader,
    Semaphore,
    ExpiringSemaphore,
    Latch,
}

const PRIMS: [Prim; 9] = [
    Prim::Lock,
    Prim::FairLock,
    Prim::ReadLock,
    Prim::WriteLock,
    Prim::Mutex,
    Prim::Leader,
    Prim::Semaphore,
    Prim::ExpiringSemaphore,
    Prim::Latch,
];

impl Prim {
    pub(crate) fn of_lock(kind: LockKind) -> Prim {
        match kind {
            LockKind::Reentrant => Prim::Lock,
            LockKind::Mutex => Prim::Mutex,
            LockKind::Read => Prim::ReadLock,
            LockKind::Write => Prim::WriteLock,
            LockKind::Fair => Prim::FairLock,
            LockKind::Leader => Prim::Leader,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Prim::Lock => "lock",
            Prim::FairLock => "fair_lock",
            Prim::ReadLock => "read_lock",
            Prim::WriteLock => "write_lock",
            Prim::Mutex => "mutex",
            Prim::Leader => "leader",
            Prim::Semaphore => "semaphore",
            Prim::ExpiringSemaphore => "expiring_semaphore",
            Prim::Latch => "latch",
        }
    }
}

/// How an acquire (or a latch's wait) ended: the `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Granted (or the latch opened).
    Acquired,
    /// The wait ran out (a try that found it taken included).
    NotAcquired,
    /// Failed with any other error.
    Error,
    /// The caller dropped the wait (a cancelled task or promise, an interrupted thread).
    Cancelled,
}

const OUTCOMES: [&str; 4] = ["acquired", "not_acquired", "error", "cancelled"];

impl Outcome {
    /// The `outcome` label.
    pub(crate) fn word(self) -> &'static str {
        OUTCOMES[self as usize]
    }

    pub(crate) fn of<T>(r: &crate::Result<T>) -> Outcome {
        match r {
            Ok(_) => Outcome::Acquired,
            Err(e) if e.kind() == crate::ErrorKind::Timeout => Outcome::NotAcquired,
            Err(_) => Outcome::Error,
        }
    }
}

fn reason_index(r: LostReason) -> usize {
    LostReason::ALL.iter().position(|x| *x == r).unwrap_or(0)
}

#[derive(Default)]
struct Cells {
    wait: [Histogram; 4],
    hold: Histogram,
    holds: AtomicI64,
    waiters: AtomicI64,
    reentries: AtomicU64,
    losses: [AtomicU64; LostReason::ALL.len()],
}

/// The series of one opted-in name.
pub(crate) struct NameCells {
    name: Arc<str>,
    prim: Prim,
    acquires: [AtomicU64; 4],
    wait_ns: AtomicU64,
    holds: AtomicI64,
    waiters: AtomicI64,
    token: AtomicU64,
}

/// One client's metrics (the closed clients of a backend add up in one more).
pub(crate) struct Metrics {
    backend: &'static str,
    patterns: Vec<String>,
    cells: [Cells; PRIMS.len()],
    renew_ok: AtomicU64,
    renew_failed: AtomicU64,
    renew_latency: Histogram,
    named: Mutex<NamedMap>,
    /// The log said that `named` is full (once per client, and once per backend for the counts
    /// of closed clients).
    named_full_told: AtomicBool,
    /// Where this client's counts go when it is dropped; `false` for that total itself.
    retires: bool,
    /// False for a client made with `metrics: false`: nothing is recorded.
    enabled: bool,
}

/// The series of the opted-in names, by name and kind.
type NamedMap = HashMap<(Arc<str>, Prim), Arc<NameCells>>;

struct Registry {
    live: Vec<Weak<Metrics>>,
    retired: BTreeMap<&'static str, Arc<Metrics>>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        Mutex::new(Registry {
            live: Vec::new(),
            retired: BTreeMap::new(),
        })
    })
}

impl Metrics {
    fn empty(backend: &'static str, patterns: Vec<String>, retires: bool) -> Metrics {
        Metrics {
            backend,
            patterns,
            cells: Default::default(),
            renew_ok: AtomicU64::new(0),
            renew_failed: AtomicU64::new(0),
            renew_latency: Histogram::default(),
            named: Mutex::new(HashMap::default()),
            named_full_told: AtomicBool::new(false),
            retires,
            enabled: true,
        }
    }

    /// A new client's metrics, counted in the process's [`snapshot`] from now on.
    #[cfg(test)]
    pub(crate) fn register(backend: &'static str, patterns: Vec<String>) -> Arc<Metrics> {
        Metrics::register_if(true, backend, patterns)
    }

    /// A new client's metrics; with `enabled` false, a client that records nothing.
    pub(crate) fn register_if(
        enabled: bool,
        backend: &'static str,
        patterns: Vec<String>,
    ) -> Arc<Metrics> {
        let mut m = Metrics::empty(backend, patterns, enabled);
        m.enabled = enabled;
        let m = Arc::new(m);
        if !enabled {
            return m;
        }
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        reg.live.retain(|w| w.strong_count() > 0);
        reg.live.push(Arc::downgrade(&m));
        m
    }

    fn cells(&self, p: Prim) -> &Cells {
        &self.cells[p as usize]
    }

    /// What a primitive handle of `name` records into.
    pub(crate) fn track(self: &Arc<Metrics>, prim: Prim, name: &Arc<str>) -> Track {
        let named = (self.enabled
            && !self.patterns.is_empty()
            && self.patterns.iter().any(|p| glob_match(p, name)))
        .then(|| self.named_cells(prim, name))
        .flatten();
        Track {
            metrics: self.clone(),
            prim,
            named,
        }
    }

    fn named_cells(&self, prim: Prim, name: &Arc<str>) -> Option<Arc<NameCells>> {
        let mut map = self.named.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = map.get(&(name.clone(), prim)) {
            return Some(c.clone());
        }
        if map.len() >= MAX_NAMED {
            // Every later name comes here (each handle made, each closed client's names added to
            // the total): told once, not once per name.
            if !self.named_full_told.swap(true, Relaxed) {
                tracing::warn!(
                    "polylock metrics: {MAX_NAMED} names match the metric_names patterns; \
                     '{name}' and later names get no series of their own"
                );
            }
            return None;
        }
        let cells = Arc::new(NameCells {
            name: name.clone(),
            prim,
            acquires: Default::default(),
            wait_ns: AtomicU64::new(0),
            holds: AtomicI64::new(0),
            waiters: AtomicI64::new(0),
            token: AtomicU64::new(0),
        });
        map.insert((name.clone(), prim), cells.clone());
        Some(cells)
    }

    pub(crate) fn renewed(&self, ok: bool, took: Duration) {
        if !self.enabled {
            return;
        }
        if ok {
            self.renew_ok.fetch_add(1, Relaxed);
            self.renew_latency.observe(took);
        } else {
            self.renew_failed.fetch_add(1, Relaxed);
        }
    }

    /// Add this client's counters (not its gauges) into `into`.
    fn add_into(&self, into: &Metrics) {
        for (a, b) in self.cells.iter().zip(&into.cells) {
            for (x, y) in a.wait.iter().zip(&b.wait) {
                x.add_into(y);
            }
            a.hold.add_into(&b.hold);
            b.reentries.fetch_add(a.reentries.load(Relaxed), Relaxed);
            for (x, y) in a.losses.iter().zip(&b.losses) {
                y.fetch_add(x.load(Relaxed), Relaxed);
            }
        }
        into.renew_ok
            .fetch_add(self.renew_ok.load(Relaxed), Relaxed);
        into.renew_failed
            .fetch_add(self.renew_failed.load(Relaxed), Relaxed);
        self.renew_latency.add_into(&into.renew_latency);
        let mine = self.named.lock().unwrap_or_else(|e| e.into_inner());
        for (key, c) in mine.iter() {
            let Some(t) = into.named_cells(key.1, &key.0) else {
                continue;
            };
            for (x, y) in c.acquires.iter().zip(&t.acquires) {
                y.fetch_add(x.load(Relaxed), Relaxed);
            }
            t.wait_ns.fetch_add(c.wait_ns.load(Relaxed), Relaxed);
            t.token.fetch_max(c.token.load(Relaxed), Relaxed);
        }
    }

    fn collect(&self, acc: &mut Acc) {
        let b = self.backend;
        for p in PRIMS {
            let c = self.cells(p);
            let k = p.label();
            let used = c.wait.iter().any(|h| h.count() > 0)
                || c.holds.load(Relaxed) != 0
                || c.waiters.load(Relaxed) != 0
                || c.hold.count() > 0;
            if !used && !acc.include_zero {
                continue;
            }
            for (i, o) in OUTCOMES.iter().enumerate() {
                acc.histogram(
                    WAIT,
                    vec![
                        ("kind", k.into()),
                        ("backend", b.into()),
                        ("outcome", (*o).into()),
                    ],
                    c.wait[i].read(),
                );
            }
            let kb = || vec![("kind", k.to_string()), ("backend", b.to_string())];
            acc.histogram(HOLD, kb(), c.hold.read());
            acc.number(HOLDS, kb(), c.holds.load(Relaxed) as f64);
            acc.number(WAITERS, kb(), c.waiters.load(Relaxed) as f64);
            acc.number(REENTRIES, kb(), c.reentries.load(Relaxed) as f64);
            for (i, r) in LostReason::ALL.iter().enumerate() {
                let mut labels = kb();
                labels.push(("reason", r.name().to_ascii_lowercase()));
                acc.number(LOSSES, labels, c.losses[i].load(Relaxed) as f64);
            }
        }
        let (ok, failed) = (self.renew_ok.load(Relaxed), self.renew_failed.load(Relaxed));
        if ok + failed > 0 || acc.include_zero {
            for (o, v) in [("ok", ok), ("failed", failed)] {
                acc.number(
                    RENEWALS,
                    vec![("backend", b.into()), ("outcome", o.into())],
                    v as f64,
                );
            }
            acc.histogram(
                RENEWAL_SECONDS,
                vec![("backend", b.into())],
                self.renew_latency.read(),
            );
        }
        let named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        for c in named.values() {
            let nkb = || {
                vec![
                    ("name", c.name.to_string()),
                    ("kind", c.prim.label().to_string()),
                    ("backend", b.to_string()),
                ]
            };
            for (i, o) in OUTCOMES.iter().enumerate() {
                let mut labels = nkb();
                labels.push(("outcome", (*o).into()));
                acc.number(NAME_ACQUIRES, labels, c.acquires[i].load(Relaxed) as f64);
            }
            acc.number(NAME_WAIT, nkb(), c.wait_ns.load(Relaxed) as f64 / 1e9);
            acc.number(NAME_HOLDS, nkb(), c.holds.load(Relaxed) as f64);
            acc.number(NAME_WAITERS, nkb(), c.waiters.load(Relaxed) as f64);
            // The last grant's token: the newest of the clients' (a max, not a sum).
            acc.max(NAME_TOKEN, nkb(), c.token.load(Relaxed) as f64);
        }
    }
}

impl Drop for Metrics {
    fn drop(&mut self) {
        if !self.retires {
            return;
        }
        let total = {
            let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
            reg.retired
                .entry(self.backend)
                .or_insert_with(|| Arc::new(Metrics::empty(self.backend, Vec::new(), false)))
                .clone()
        };
        self.add_into(&total);
    }
}

/// What one primitive handle records into: its kind's series, and its name's if opted in.
#[derive(Clone)]
pub(crate) struct Track {
    metrics: Arc<Metrics>,
    prim: Prim,
    named: Option<Arc<NameCells>>,
}

impl Track {
    /// An acquire (or a latch's wait) begins: a waiter until [`Waiting::done`] or its drop.
    pub(crate) fn waiting(&self) -> Waiting<'_> {
        if !self.metrics.enabled {
            return Waiting {
                track: self,
                since: None,
                done: true,
            };
        }
        self.metrics.cells(self.prim).waiters.fetch_add(1, Relaxed);
        if let Some(n) = &self.named {
            n.waiters.fetch_add(1, Relaxed);
        }
        Waiting {
            track: self,
            since: Some(Instant::now()),
            done: false,
        }
    }

    /// A hold begins (a hold of the holds registry; dropping the returned value ends it).
    pub(crate) fn hold(&self, token: u64) -> HoldTrack {
        if !self.metrics.enabled {
            return HoldTrack {
                track: self.clone(),
                since: None,
            };
        }
        self.metrics.cells(self.prim).holds.fetch_add(1, Relaxed);
        if let Some(n) = &self.named {
            n.holds.fetch_add(1, Relaxed);
            n.token.store(token, Relaxed);
        }
        HoldTrack {
            track: self.clone(),
            since: Some(Instant::now()),
        }
    }

    pub(crate) fn reentered(&self) {
        if !self.metrics.enabled {
            return;
        }
        self.metrics
            .cells(self.prim)
            .reentries
            .fetch_add(1, Relaxed);
    }

    /// The token of a grant that made no new hold (a re-entry told by the server).
    pub(crate) fn granted_token(&self, token: u64) {
        if let Some(n) = &self.named {
            n.token.store(token, Relaxed);
        }
    }
}

/// An acquire under way (see [`Track::waiting`]); dropped without [`done`](Waiting::done), it
/// counts as cancelled.
pub(crate) struct Waiting<'a> {
    track: &'a Track,
    /// `None` where nothing is recorded.
    since: Option<Instant>,
    done: bool,
}

impl Waiting<'_> {
    /// End it without recording an outcome (a binding's first try before the wait it records).
    pub(crate) fn forget(mut self) {
        self.done = true;
        if self.since.is_none() {
            return;
        }
        self.track
            .metrics
            .cells(self.track.prim)
            .waiters
            .fetch_sub(1, Relaxed);
        if let Some(n) = &self.track.named {
            n.waiters.fetch_sub(1, Relaxed);
        }
    }

    /// Record how it ended; the time it waited.
    pub(crate) fn done(mut self, outcome: Outcome) -> Duration {
        self.record(outcome)
    }

    fn record(&mut self, outcome: Outcome) -> Duration {
        self.done = true;
        let Some(since) = self.since else {
            return Duration::ZERO;
        };
        let took = since.elapsed();
        let cells = self.track.metrics.cells(self.track.prim);
        cells.waiters.fetch_sub(1, Relaxed);
        cells.wait[outcome as usize].observe(took);
        if let Some(n) = &self.track.named {
            n.waiters.fetch_sub(1, Relaxed);
            n.acquires[outcome as usize].fetch_add(1, Relaxed);
            n.wait_ns
                .fetch_add(took.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
        }
        took
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.record(Outcome::Cancelled);
        }
    }
}

/// A hold in the client's registry; its drop ends it (hold time observed).
pub(crate) struct HoldTrack {
    track: Track,
    /// `None` where nothing is recorded.
    since: Option<Instant>,
}

impl HoldTrack {
    pub(crate) fn lost(&self, reason: LostReason) {
        if self.since.is_none() {
            return;
        }
        self.track.metrics.cells(self.track.prim).losses[reason_index(reason)]
            .fetch_add(1, Relaxed);
    }
}

impl Drop for HoldTrack {
    fn drop(&mut self) {
        let Some(since) = self.since else {
            return;
        };
        let cells = self.track.metrics.cells(self.track.prim);
        cells.holds.fetch_sub(1, Relaxed);
        cells.hold.observe(since.elapsed());
        if let Some(n) = &self.track.named {
            n.holds.fetch_sub(1, Relaxed);
        }
    }
}

pub use crate::model::names::glob_match;

// ---- The snapshot ----

/// A metric's type, as Prometheus and OpenMetrics name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Only goes up (names end in `_total`).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations counted in buckets.
    Histogram,
}

impl MetricType {
    /// `counter`, `gauge` or `histogram`, as Prometheus writes the type.
    pub fn name(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
        }
    }
}

/// A histogram's value: cumulative counts per upper bound (without `+Inf`, which is `count`).
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramValue {
    /// (upper bound in seconds, observations at or below it).
    pub buckets: Vec<(f64, u64)>,
    /// Every observation (the `+Inf` bucket).
    pub count: u64,
    /// The sum of the observations, in seconds.
    pub sum: f64,
}

/// One series of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label names and values, in the family's order.
    pub labels: Vec<(&'static str, String)>,
    /// Its value.
    pub value: SampleValue,
}

/// A series' value.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleValue {
    /// A counter's or gauge's.
    Number(f64),
    /// A histogram's.
    Histogram(HistogramValue),
}

/// A metric and its series. Counter names end in `_total` (the Prometheus text uses them as
/// they are; OpenTelemetry and Micrometer drop the suffix where they add their own).
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The metric's name (`polylock_acquire_wait_seconds`).
    pub name: &'static str,
    /// What it measures.
    pub help: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricType,
    /// Its series.
    pub samples: Vec<Sample>,
}

struct Def(&'static str, &'static str, MetricType);

const WAIT: Def = Def(
    "polylock_acquire_wait_seconds",
    "Time from asking for a lock, permit or latch until it was granted, refused, failed or cancelled.",
    MetricType::Histogram,
);
const HOLD: Def = Def(
    "polylock_hold_seconds",
    "Time from a grant until its release or loss.",
    MetricType::Histogram,
);
const HOLDS: Def = Def(
    "polylock_holds",
    "Holds this process has now (locks, leases of permits).",
    MetricType::Gauge,
);
const WAITERS: Def = Def(
    "polylock_waiters",
    "Acquires and latch waits of this process under way now.",
    MetricType::Gauge,
);
const REENTRIES: Def = Def(
    "polylock_reentries_total",
    "Acquires by an owner that already held the lock.",
    MetricType::Counter,
);
const LOSSES: Def = Def(
    "polylock_losses_total",
    "Holds lost before their release, by reason.",
    MetricType::Counter,
);
const RENEWALS: Def = Def(
    "polylock_renewals_total",
    "Watchdog renewal calls (a call renews a batch of holds), by outcome.",
    MetricType::Counter,
);
const RENEWAL_SECONDS: Def = Def(
    "polylock_renewal_seconds",
    "Latency of the watchdog's renewal calls that succeeded.",
    MetricType::Histogram,
);
const NAME_ACQUIRES: Def = Def(
    "polylock_name_acquires_total",
    "Acquires of an opted-in name, by outcome.",
    MetricType::Counter,
);
const NAME_WAIT: Def = Def(
    "polylock_name_acquire_wait_seconds_total",
    "Total time acquires of an opted-in name waited.",
    MetricType::Counter,
);
const NAME_HOLDS: Def = Def(
    "polylock_name_holds",
    "Holds of an opted-in name this process has now.",
    MetricType::Gauge,
);
const NAME_WAITERS: Def = Def(
    "polylock_name_waiters",
    "Acquires of an opted-in name under way now.",
    MetricType::Gauge,
);
const NAME_TOKEN: Def = Def(
    "polylock_name_fencing_token",
    "Fencing token of the last grant of an opted-in name in this process.",
    MetricType::Gauge,
);

const ORDER: [&Def; 13] = [
    &WAIT,
    &HOLD,
    &HOLDS,
    &WAITERS,
    &REENTRIES,
    &LOSSES,
    &RENEWALS,
    &RENEWAL_SECONDS,
    &NAME_ACQUIRES,
    &NAME_WAIT,
    &NAME_HOLDS,
    &NAME_WAITERS,
    &NAME_TOKEN,
];

/// Every family polylock records: name, help and type, in the order snapshots list them (for
/// libraries that declare their metrics before the first read).
pub fn families() -> Vec<(&'static str, &'static str, MetricType)> {
    ORDER.iter().map(|d| (d.0, d.1, d.2)).collect()
}

type Labels = Vec<(&'static str, String)>;

/// Series added up over clients.
struct Acc {
    include_zero: bool,
    series: BTreeMap<(&'static str, Labels), SampleValue>,
}

impl Acc {
    fn number(&mut self, def: Def, labels: Labels, v: f64) {
        let e = self
            .series
            .entry((def.0, labels))
            .or_insert(SampleValue::Number(0.0));
        if let SampleValue::Number(x) = e {
            *x += v;
        }
    }

    fn max(&mut self, def: Def, labels: Labels, v: f64) {
        let e = self
            .series
            .entry((def.0, labels))
            .or_insert(SampleValue::Number(0.0));
        if let SampleValue::Number(x) = e {
            *x = x.max(v);
        }
    }

    fn histogram(&mut self, def: Def, labels: Labels, h: HistogramValue) {
        match self.series.entry((def.0, labels)) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(SampleValue::Histogram(h));
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                if let SampleValue::Histogram(x) = o.get_mut() {
                    for (a, b) in x.buckets.iter_mut().zip(&h.buckets) {
                        a.1 += b.1;
                    }
                    x.count += h.count;
                    x.sum += h.sum;
                }
            }
        }
    }

    fn families(self) -> Vec<Family> {
        let mut out: Vec<Family> = ORDER
            .iter()
            .map(|d| Family {
                name: d.0,
                help: d.1,
                kind: d.2,
                samples: Vec::new(),
            })
            .collect();
        for ((name, labels), value) in self.series {
            if let Some(f) = out.iter_mut().find(|f| f.name == name) {
                f.samples.push(Sample { labels, value });
            }
        }
        out.retain(|f| !f.samples.is_empty());
        out
    }
}

fn collect_all(clients: &[Arc<Metrics>], include_zero: bool) -> Vec<Family> {
    let mut acc = Acc {
        include_zero,
        series: BTreeMap::new(),
    };
    for m in clients {
        m.collect(&mut acc);
    }
    acc.families()
}

/// Every client of this process added up, closed clients included. `include_zero` lists every
/// kind and outcome of each backend in use even where nothing happened yet (for libraries that
/// register their series once).
pub fn snapshot(include_zero: bool) -> Vec<Family> {
    // Upgraded under the registry's lock, read and dropped after it: a client dropped here must
    // be able to take the lock to retire its counts.
    let clients: Vec<Arc<Metrics>> = {
        let reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        reg.live
            .iter()
            .filter_map(Weak::upgrade)
            .chain(reg.retired.values().cloned())
            .collect()
    };
    collect_all(&clients, include_zero)
}

/// One client's metrics alone.
pub(crate) fn client_snapshot(m: &Arc<Metrics>) -> Vec<Family> {
    collect_all(std::slice::from_ref(m), false)
}

/// The Prometheus text format (version 0.0.4) of these families.
pub fn to_prometheus_text(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let kind = f.kind.name();
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        for s in &f.samples {
            match &s.value {
                SampleValue::Number(v) => {
                    let _ = writeln!(out, "{}{} {}", f.name, labels(&s.labels, None), num(*v));
                }
                SampleValue::Histogram(h) => {
                    for (le, c) in &h.buckets {
                        let _ = writeln!(
                            out,
                            "{}_bucket{} {c}",
                            f.name,
                            labels(&s.labels, Some(&num(*le)))
                        );
                    }
                    let _ = writeln!(
                        out,
                        "{}_bucket{} {}",
                        f.name,
                        labels(&s.labels, Some("+Inf")),
                        h.count
                    );
                    let _ = writeln!(
                        out,
                        "{}_sum{} {}",
                        f.name,
                        labels(&s.labels, None),
                        num(h.sum)
                    );
                    let _ = writeln!(
                        out,
                        "{}_count{} {}",
                        f.name,
                        labels(&s.labels, None),
                        h.count
                    );
                }
            }
        }
    }
    out
}

/// Every client of this process in the Prometheus text format.
pub fn prometheus_text() -> String {
    to_prometheus_text(&snapshot(false))
}

fn num(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// `{a="x",b="y"}` with the text format's escapes; `le` last for a bucket.
pub fn labels(labels: &[(&'static str, String)], le: Option<&str>) -> String {
    if labels.is_empty() && le.is_none() {
        return String::new();
    }
    let mut out = String::from("{");
    let mut first = true;
    let extra = le.map(|l| ("le", l.to_string()));
    for (k, v) in labels.iter().cloned().chain(extra) {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(k);
        out.push_str("=\"");
        for ch in v.chars() {
            match ch {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_redis() {
        assert!(glob_match("orders:*", "orders:42"));
        assert!(glob_match("orders:*", "orders:"));
        assert!(!glob_match("orders:*", "order:42"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("*:*:x", "a:b:c:x"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("", "a"));
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(100));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(100));
        let v = h.read();
        assert_eq!(v.count, 3);
        assert_eq!(v.buckets[0], (0.0005, 1));
        assert_eq!(v.buckets[3], (0.005, 2));
        assert_eq!(v.buckets.last().unwrap().1, 2);
        assert!((v.sum - 100.0031).abs() < 1e-6);
    }

    #[test]
    fn text_escapes_label_values() {
        let l = labels(&[("name", "a\"b\\c\nd".to_string())], Some("+Inf"));
        assert_eq!(l, r#"{name="a\"b\\c\nd",le="+Inf"}"#);
    }

    #[test]
    fn names_past_the_cap_are_told_once_per_client() {
        let told = Arc::new(Mutex::new(0));
        let count = told.clone();
        let sub = crate::log::test_subscriber(move |r| {
            if r.message.contains("match the metric_names patterns") {
                *count.lock().unwrap() += 1;
            }
        });
        let m = Metrics::register("cap-test", vec!["cap:*".into()]);
        let other = Metrics::register("cap-test", vec!["cap:*".into()]);
        tracing::subscriber::with_default(sub, || {
            for i in 0..MAX_NAMED + 50 {
                let name: Arc<str> = Arc::from(format!("cap:{i}"));
                drop(m.track(Prim::Lock, &name));
                drop(m.track(Prim::Lock, &name));
            }
            for i in 0..MAX_NAMED + 1 {
                drop(other.track(Prim::Lock, &Arc::from(format!("cap:{i}"))));
            }
        });
        assert_eq!(*told.lock().unwrap(), 2, "once for each client");
        assert_eq!(m.named.lock().unwrap().len(), MAX_NAMED);
    }

    #[test]
    fn a_dropped_client_keeps_its_counts_in_the_total() {
        let m = Metrics::register("metrics-test", vec!["n:*".into()]);
        let name: Arc<str> = Arc::from("n:1");
        let t = m.track(Prim::Lock, &name);
        t.waiting().done(Outcome::Acquired);
        drop(t.waiting()); // cancelled
        let h = t.hold(7);
        let text = to_prometheus_text(&client_snapshot(&m));
        assert!(
            text.contains(r#"polylock_holds{kind="lock",backend="metrics-test"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"polylock_name_fencing_token{name="n:1",kind="lock",backend="metrics-test"} 7"#
            ),
            "{text}"
        );
        drop(h);
        drop(t);
        drop(m);
        let all = prometheus_text();
        assert!(all.contains(
            r#"polylock_acquire_wait_seconds_count{kind="lock",backend="metrics-test",outcome="acquired"} 1"#
        ), "{all}");
        assert!(all.contains(
            r#"polylock_acquire_wait_seconds_count{kind="lock",backend="metrics-test",outcome="cancelled"} 1"#
        ), "{all}");
        assert!(
            all.contains(r#"polylock_hold_seconds_count{kind="lock",backend="metrics-test"} 1"#),
            "{all}"
        );
    }
}
