//! The SQL session locks beside their floor, measured in the same run, the modes interleaved in
//! chunks of 20 pairs in an order shuffled for every turn, each mode on a connection of its own
//! (a burst of load on this machine then falls on every mode alike, and no mode always follows
//! the same one):
//! a polylock acquire+release pair (the lock statement also draws the fencing token), the same
//! pair on a client opened with `fencing=none` (no token: the same two statements as the floor)
//! beside a
//! bare `GET_LOCK`+`RELEASE_LOCK` (`pg_advisory_lock`+`pg_advisory_unlock`) loop on one
//! connection through the same driver, with prepared statements. On PostgreSQL the bare loop
//! runs twice: with the driver's connection half as a task of the caller's runtime (as its
//! documentation shows) and polled by the caller's own task (no hand-over between tasks, as
//! polylock does); the ratio is to the faster of the two. Each bare loop runs again polling for
//! its answer the way polylock's statements do by default (for up to 150 us before the task
//! sleeps, `POLYLOCK_SPIN_US`), so the fastest floor waits as polylock waits; run with
//! `POLYLOCK_SPIN_US=0` to see both sides without polling (the polling floors then poll anyway).
//! The polling floor runs twice more with 1 and 2 us of busy CPU before each of its statements,
//! which measures what client work between an answer and the next statement costs on the
//! machine of the run (a lock client's own work sits there: its registry of holds, its pool).
//!
//!     cargo bench --bench sql                       # the servers of scripts/servers.sh
//!     cargo bench --bench sql -- --pairs 2000 --rounds 6

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use polylock::{owner, AcquireOptions, Client};

fn arg(name: &str, default: usize) -> usize {
    let mut it = std::env::args();
    while let Some(a) = it.next() {
        if a == name {
            return it.next().and_then(|v| v.parse().ok()).unwrap_or(default);
        }
    }
    default
}

fn p50(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Pairs are timed in chunks of this many per mode, the modes taking turns.
const CHUNK: usize = 20;

/// The MariaDB modes, by their `--only` names, in the order of their figures.
const MYSQL_MODES: [&str; 7] = [
    "mysql-tokens",
    "mysql-none",
    "mysql-floor",
    "mysql-floor-polling",
    "mysql-statements",
    "mysql-floor-work1",
    "mysql-floor-work2",
];
/// The PostgreSQL modes, by their `--only` names, in the order of their figures.
const PG_MODES: [&str; 8] = [
    "pg-tokens",
    "pg-none",
    "pg-floor-task",
    "pg-floor-caller",
    "pg-floor-polling",
    "pg-statements",
    "pg-floor-work1",
    "pg-floor-work2",
];

/// The turns of `modes` that `--only` lets run, as (mode, pairs, kept): a warm-up of
/// `pairs / 10` pairs per mode (not kept), then `rounds` rounds of `pairs` pairs per mode in
/// chunks of [`CHUNK`], the modes of each turn in a new order (see [`Order`]).
fn schedule(modes: &[&str], pairs: usize, rounds: usize) -> Vec<(usize, usize, bool)> {
    let mut order = Order::default();
    let turns = rounds * pairs.div_ceil(CHUNK);
    std::iter::once((pairs / 10, false))
        .chain(std::iter::repeat_n((CHUNK, true), turns))
        .flat_map(|(n, keep)| {
            let next = order.next(modes.len());
            next.into_iter()
                .filter(|&m| runs(modes[m]))
                .map(move |m| (m, n, keep))
        })
        .collect()
}

/// The order the modes take their turns in: shuffled anew for every turn. In a fixed order a
/// mode always follows the same one, and that shows: the same polylock mode timed twice per
/// turn, once right after the bare loop on another connection, was 1-6 us slower in that place.
#[derive(Default)]
struct Order(u64);

impl Order {
    /// `0..n` in a new order (a Fisher-Yates shuffle on a fixed-seed LCG: runs are alike).
    fn next(&mut self, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        for j in (1..n).rev() {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(j, (self.0 >> 33) as usize % (j + 1));
        }
        order
    }
}

/// Whether mode `m` runs: all of them, unless `--only m` names one (to profile one mode alone,
/// e.g. under `perf stat` or `strace -c`).
fn runs(m: &str) -> bool {
    static ONLY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ONLY.get_or_init(|| {
        let mut it = std::env::args();
        while let Some(a) = it.next() {
            if a == "--only" {
                return it.next();
            }
        }
        None
    })
    .as_deref()
    .is_none_or(|o| o == m)
}

async fn polylock_round(lock: &polylock::Lock, n: usize, out: &mut Vec<Duration>) {
    let me = owner::fresh();
    for _ in 0..n {
        let t = Instant::now();
        lock.acquire(me, AcquireOptions::forever()).await.unwrap();
        lock.release(me).await.unwrap();
        out.push(t.elapsed());
    }
}

/// The busy CPU of a client's own work between an answer and its next statement.
fn work(d: Duration) {
    if d.is_zero() {
        return;
    }
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The client work that the `*-floor-work<n>` modes do before each statement, by mode.
const WORK: [Duration; 2] = [Duration::from_micros(1), Duration::from_micros(2)];

/// `n` bare pairs on `conn`, polling for answers when `poll`, with `busy` of client work before
/// each statement.
async fn mysql_floor(
    conn: &mut mysql_async::Conn,
    name: &str,
    n: usize,
    (poll, busy): (bool, Duration),
    out: &mut Vec<Duration>,
) {
    for _ in 0..n {
        let t = Instant::now();
        work(busy);
        let got: Option<i64> = polling(
            poll,
            conn.exec_first("SELECT GET_LOCK(?, 31536000)", (name,)),
        )
        .await
        .unwrap();
        assert_eq!(got, Some(1));
        work(busy);
        let _: Option<i64> = polling(poll, conn.exec_first("SELECT RELEASE_LOCK(?)", (name,)))
            .await
            .unwrap();
        out.push(t.elapsed());
    }
}

/// Notes a wake-up, then passes it on.
struct Flag {
    woken: std::sync::atomic::AtomicBool,
    inner: std::task::Waker,
}

impl std::task::Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.woken.store(true, std::sync::atomic::Ordering::Release);
        self.inner.wake_by_ref();
    }
}

/// Await `fut`; with `poll`, the first time it would sleep, wait up to 150 us for its wake-up
/// without giving the thread up, then poll it again (what polylock does for a statement alone).
async fn polling<T>(poll: bool, fut: impl Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    let mut first = poll;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        if !std::mem::take(&mut first) {
            return Poll::Pending;
        }
        let flag = std::sync::Arc::new(Flag {
            woken: false.into(),
            inner: cx.waker().clone(),
        });
        let waker = std::task::Waker::from(flag.clone());
        let mut flagged = std::task::Context::from_waker(&waker);
        if let Poll::Ready(v) = fut.as_mut().poll(&mut flagged) {
            return Poll::Ready(v);
        }
        let until = Instant::now() + Duration::from_micros(150);
        while !flag.woken.load(std::sync::atomic::Ordering::Acquire) && Instant::now() < until {
            std::thread::yield_now();
        }
        fut.as_mut().poll(&mut flagged)
    })
    .await
}

/// polylock's own two statements (the lock statement draws the token from the sequence) on a bare
/// connection: what the server costs, without polylock's client.
async fn mysql_statements(
    conn: &mut mysql_async::Conn,
    name: &str,
    n: usize,
    out: &mut Vec<Duration>,
) {
    for _ in 0..n {
        let t = Instant::now();
        let token: Option<i64> = polling(
            true,
            conn.exec_first(
                "SELECT NEXTVAL(polylock_fencing_seq) FROM DUAL WHERE GET_LOCK(?, ?) = 1",
                (name, 31536000),
            ),
        )
        .await
        .unwrap();
        assert!(token.is_some());
        let _: Option<i64> = polling(true, conn.exec_first("SELECT RELEASE_LOCK(?)", (name,)))
            .await
            .unwrap();
        out.push(t.elapsed());
    }
}

type PgConnection =
    tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>;

/// Await `fut`, polling the connection half meanwhile when the caller drives it (`Some`).
async fn on<T>(conn: &mut Option<PgConnection>, fut: impl Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        if let Some(c) = conn.as_mut() {
            assert!(Pin::new(c).poll(cx).is_pending(), "connection ended");
        }
        fut.as_mut().poll(cx)
    })
    .await
}

/// polylock's own two statements (the lock statement draws the token from the sequence).
const PG_STATEMENTS: [&str; 2] = [
    "SELECT CASE WHEN pg_advisory_lock($1::int8) IS NULL THEN nextval('polylock_fencing_seq') \
     ELSE nextval('polylock_fencing_seq') END",
    "SELECT pg_advisory_unlock($1::int8)",
];
/// The floor: the bare lock and unlock.
const PG_FLOOR: [&str; 2] = [
    "SELECT pg_advisory_lock($1)",
    "SELECT pg_advisory_unlock($1)",
];

/// The lock and unlock statements `sql`, prepared on `conn`.
async fn pg_prepare(
    conn: &tokio_postgres::Client,
    driven: &mut Option<PgConnection>,
    [lock, unlock]: [&str; 2],
) -> [tokio_postgres::Statement; 2] {
    [
        on(driven, conn.prepare(lock)).await.unwrap(),
        on(driven, conn.prepare(unlock)).await.unwrap(),
    ]
}

/// `n` pairs of the prepared lock and unlock statements on key `key`, on a bare connection,
/// polling for answers when `poll`, with `busy` of client work before each statement.
async fn pg_pairs(
    conn: &tokio_postgres::Client,
    driven: &mut Option<PgConnection>,
    ([lock, unlock], poll, busy): (&[tokio_postgres::Statement; 2], bool, Duration),
    n: usize,
    out: &mut Vec<Duration>,
) {
    let key = 4242i64;
    for _ in 0..n {
        let t = Instant::now();
        work(busy);
        polling(poll, on(driven, conn.query_one(lock, &[&key])))
            .await
            .unwrap();
        work(busy);
        polling(poll, on(driven, conn.query_one(unlock, &[&key])))
            .await
            .unwrap();
        out.push(t.elapsed());
    }
}

fn report(
    what: &str,
    ours: Vec<(&str, Vec<Duration>)>,
    floors: Vec<(&str, Vec<Duration>)>,
    mut statements: Vec<Duration>,
    worked: [Vec<Duration>; 2],
) {
    // With `--only`, some modes did not run: no figure is printed against one that did not.
    let mut best: Option<f64> = None;
    let mut polling_floor = None;
    let mut line = format!("{what}:");
    for (name, mut v) in floors.into_iter().filter(|(_, v)| !v.is_empty()) {
        let b = us(p50(&mut v));
        best = Some(best.map_or(b, |x| x.min(b)));
        polling_floor = Some(b); // the last floor is the polling one
        line += &format!(" | {name} p50 {b:.1} us ({:.0} pairs/s)", 1e6 / b);
    }
    println!("{line}");
    for (d, mut v) in WORK.into_iter().zip(worked).filter(|(_, v)| !v.is_empty()) {
        let w = us(p50(&mut v));
        println!(
            "  the polling floor with {} us of busy CPU before each statement: p50 {w:.1} us{}",
            d.as_micros(),
            polling_floor.map_or(String::new(), |f| format!(
                ", {:+.1} us per pair for {} us of work ({:.1}x its length)",
                w - f,
                2 * d.as_micros(),
                (w - f) / (2.0 * us(d))
            ))
        );
    }
    let ratio =
        |x: f64, to: &str| best.map_or(String::new(), |b| format!(", ratio {:.2}x {to}", x / b));
    let mut with_tokens = None;
    for (i, (name, mut v)) in ours.into_iter().enumerate() {
        if v.is_empty() {
            continue;
        }
        let a = us(p50(&mut v));
        if i == 0 {
            with_tokens = Some(a); // the first: the default, tokens drawn
        }
        println!(
            "  polylock pair, {name}: p50 {a:.1} us ({:.0} pairs/s){} (target <= 1.10x)",
            1e6 / a,
            ratio(a, "the fastest floor")
        );
    }
    if statements.is_empty() {
        return;
    }
    let c = us(p50(&mut statements));
    println!(
        "  polylock's two statements with the token on the fastest bare connection: p50 {c:.1} us{}{}",
        ratio(c, "the floor"),
        with_tokens.map_or(String::new(), |t| format!("; polylock's client adds {:.1} us to them", t - c))
    );
}

fn main() {
    let pairs = arg("--pairs", 1000);
    let rounds = arg("--rounds", 6);
    let mysql = std::env::var("POLYLOCK_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock".into());
    let pg = std::env::var("POLYLOCK_PG_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock".into());
    const ZERO: Duration = Duration::ZERO;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        println!(
            "{rounds} rounds of {pairs} uncontended pairs per mode, the modes taking turns every \
             {CHUNK} pairs"
        );
        // MySQL / MariaDB.
        let client = Client::connect(&mysql).await.unwrap();
        let client_none = Client::connect(&no_fencing(&mysql)).await.unwrap();
        // Each bare mode on a connection of its own, as each polylock mode has its own client.
        let mut raw = mysql_async::Conn::from_url(&mysql).await.unwrap();
        let mut raw_polling = mysql_async::Conn::from_url(&mysql).await.unwrap();
        let mut raw_statements = mysql_async::Conn::from_url(&mysql).await.unwrap();
        let mut raw_work = [
            mysql_async::Conn::from_url(&mysql).await.unwrap(),
            mysql_async::Conn::from_url(&mysql).await.unwrap(),
        ];
        let (name, bare) = ("bench-sql-polylock", "bench-sql-bare");
        let lock = client.lock(name).unwrap();
        let lock_none = client_none.lock(name).unwrap();
        let (mut kept, mut warm_up): ([Vec<Duration>; 7], _) = Default::default();
        for (m, n, keep) in schedule(&MYSQL_MODES, pairs, rounds) {
            let into = if keep { &mut kept[m] } else { &mut warm_up };
            match m {
                0 => polylock_round(&lock, n, into).await,
                1 => polylock_round(&lock_none, n, into).await,
                2 => mysql_floor(&mut raw, bare, n, (false, ZERO), into).await,
                3 => mysql_floor(&mut raw_polling, bare, n, (true, ZERO), into).await,
                4 => mysql_statements(&mut raw_statements, bare, n, into).await,
                _ => mysql_floor(&mut raw_work[m - 5], bare, n, (true, WORK[m - 5]), into).await,
            }
        }
        let [ours, ours_none, floor, floor_polling, stmts, work1, work2] = kept;
        report(
            "MariaDB GET_LOCK",
            vec![
                ("tokens from the sequence (the default)", ours),
                ("fencing=none", ours_none),
            ],
            vec![
                ("bare GET_LOCK+RELEASE_LOCK", floor),
                (
                    "the same, polling for answers as polylock does",
                    floor_polling,
                ),
            ],
            stmts,
            [work1, work2],
        );
        client.close().await.unwrap();
        client_none.close().await.unwrap();
        let [w1, w2] = raw_work;
        for c in [raw, raw_polling, raw_statements, w1, w2] {
            c.disconnect().await.unwrap();
        }
        // PostgreSQL.
        let client = Client::connect(&pg).await.unwrap();
        let client_none = Client::connect(&no_fencing(&pg)).await.unwrap();
        let lock_none = client_none.lock(name).unwrap();
        let (raw, conn) = tokio_postgres::connect(&pg, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        // The caller-polled modes, each on a connection of its own.
        let mut polled = Vec::new();
        for _ in 0..5 {
            let (c, conn) = tokio_postgres::connect(&pg, tokio_postgres::NoTls)
                .await
                .unwrap();
            polled.push((c, Some(conn)));
        }
        let [(caller, caller_conn), (polling, polling_conn), (ours_bare, ours_bare_conn), (w1, w1_conn), (w2, w2_conn)] =
            &mut polled[..]
        else {
            unreachable!()
        };
        let lock = client.lock(name).unwrap();
        // One pair first: on a new database, polylock makes the fencing sequence that the bare
        // token statements below are prepared against.
        polylock_round(&lock, 1, &mut Vec::new()).await;
        let floor_on_task = pg_prepare(&raw, &mut None, PG_FLOOR).await;
        let floor_caller = pg_prepare(caller, caller_conn, PG_FLOOR).await;
        let floor_polling = pg_prepare(polling, polling_conn, PG_FLOOR).await;
        let ours_polled = pg_prepare(ours_bare, ours_bare_conn, PG_STATEMENTS).await;
        let floor_w1 = pg_prepare(w1, w1_conn, PG_FLOOR).await;
        let floor_w2 = pg_prepare(w2, w2_conn, PG_FLOOR).await;
        let (mut kept, mut warm_up): ([Vec<Duration>; 8], _) = Default::default();
        for (m, n, keep) in schedule(&PG_MODES, pairs, rounds) {
            let into = if keep { &mut kept[m] } else { &mut warm_up };
            match m {
                0 => polylock_round(&lock, n, into).await,
                1 => polylock_round(&lock_none, n, into).await,
                2 => pg_pairs(&raw, &mut None, (&floor_on_task, false, ZERO), n, into).await,
                3 => pg_pairs(caller, caller_conn, (&floor_caller, false, ZERO), n, into).await,
                4 => pg_pairs(polling, polling_conn, (&floor_polling, true, ZERO), n, into).await,
                5 => pg_pairs(ours_bare, ours_bare_conn, (&ours_polled, true, ZERO), n, into).await,
                6 => pg_pairs(w1, w1_conn, (&floor_w1, true, WORK[0]), n, into).await,
                _ => pg_pairs(w2, w2_conn, (&floor_w2, true, WORK[1]), n, into).await,
            }
        }
        let [ours, ours_none, floor, floor_polled, floor_polling, stmts, work1, work2] = kept;
        report(
            "PostgreSQL advisory",
            vec![
                ("tokens from the sequence (the default)", ours),
                ("fencing=none", ours_none),
            ],
            vec![
                ("bare pg_advisory_lock+unlock (connection task)", floor),
                ("the same, connection polled by the caller", floor_polled),
                (
                    "the same, polling for answers as polylock does",
                    floor_polling,
                ),
            ],
            stmts,
            [work1, work2],
        );
        client.close().await.unwrap();
        client_none.close().await.unwrap();
        // Without its client, a connection half says goodbye to the server and ends.
        drop(raw);
        for (c, conn) in polled {
            drop(c);
            if let Some(conn) = conn {
                conn.await.unwrap();
            }
        }
    });
}

/// `url` opened with `fencing=none`.
fn no_fencing(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}fencing=none")
}
