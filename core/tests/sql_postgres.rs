//! PostgreSQL: session advisory locks (exclusive and shared) and the ShedLock lease table with
//! LISTEN/NOTIFY, on the PostgreSQL of scripts/servers.sh.

mod sql_common;

use std::time::Duration;

use polylock::{AcquireOptions, ErrorKind, Released};
use sql_common::cases::{self, Server};
use sql_common::{client, pg_raw, pg_url, take_and_give_back, unique, with};

fn server() -> Server {
    Server {
        waiters: || Box::pin(sql_common::pg_waiters()),
        alive: |id| Box::pin(sql_common::pg_alive(id)),
        kill: |pid| {
            Box::pin(async move {
                let c = pg_raw().await;
                let pid = pid as i32;
                c.execute("SELECT pg_terminate_backend($1)", &[&pid])
                    .await
                    .unwrap();
            })
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusion_with_a_counter() {
    cases::exclusion(&pg_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_none_locks_without_tokens() {
    cases::no_fencing(&pg_url(), &server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrancy() {
    cases::reentrancy(&pg_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_and_timeout() {
    cases::wait_and_timeout(&pg_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_wait_leaves_no_waiter_in_pg_locks() {
    cases::cancelled_wait_leaves_no_waiter(&pg_url(), &server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connection_fires_the_lost_signal() {
    cases::killed_connection_is_lost(&pg_url(), &server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_and_non_ascii_names() {
    cases::long_and_non_ascii_names(&pg_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_connect_errors() {
    cases::typed_connect_errors(&pg_url(), "postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairs_leave_no_task_behind() {
    cases::pairs_leave_no_task_behind(&pg_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cap_and_close() {
    cases::connection_cap_and_close(&pg_url(), &server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cap_from_client_options() {
    cases::connection_cap_from_options(&pg_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_lease_on_session_locks() {
    cases::no_lease_on_session_locks(&pg_url()).await;
}

/// A wait's deadline holds even when its cancel reaches the server before the statement does
/// (the server drops a cancel that finds nothing running, and the statement would then wait
/// with no deadline): waits of 1 to 8 ms, on new connections, eight at once,
/// all time out. Before the cancel was sent again, 3 conformance runs in 40 hung here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_waits_time_out_even_when_the_cancel_lands_first() {
    let holder = client(&pg_url()).await;
    let name = unique("cancel-race");
    let lock = holder.lock(&name).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let mut slowest = Duration::ZERO;
    for _round in 0..6 {
        let waiters: Vec<_> = (0..8u64)
            .map(|i| {
                let name = name.clone();
                tokio::spawn(async move {
                    let c = client(&pg_url()).await;
                    let l = c.lock(&name).unwrap();
                    let wait = AcquireOptions::wait_for(Duration::from_millis(1 + i));
                    // The holder keeps the lock to the end: only the deadline ends this wait.
                    let started = std::time::Instant::now();
                    let r = tokio::time::timeout(Duration::from_secs(20), l.acquire(2, wait)).await;
                    let took = started.elapsed();
                    c.close().await.unwrap();
                    r.map(|r| (r, took))
                })
            })
            .collect();
        for w in waiters {
            let (r, took) = w
                .await
                .unwrap()
                .expect("a timed wait went on for 20 s: its cancel was dropped");
            assert_eq!(r.unwrap_err().kind(), ErrorKind::Timeout);
            slowest = slowest.max(took);
        }
    }
    println!("the slowest of 48 waits of 1 to 8 ms answered in {slowest:?}");
    assert!(lock.is_held_by(1).await.unwrap());
    lock.release(1).await.unwrap();
    holder.close().await.unwrap();
}

/// The server holds DistributedLock's key: `polylock` is the pair (-507549795, -1678644353) in
/// pg_locks, and a 16-hex-digit name is the bigint a plain pg_advisory_lock(bigint) user locks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_keys_and_plain_advisory_sessions() {
    let c = client(&pg_url()).await;
    let raw = pg_raw().await;
    let lock = c.lock("polylock").unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let free: bool = raw
        .query_one("SELECT pg_try_advisory_lock(-507549795, -1678644353)", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!free, "not held under DistributedLock's key");
    let row = raw
        .query_one(
            "SELECT classid::int8, objid::int8, objsubid::int8 FROM pg_locks WHERE locktype = \
             'advisory' AND granted AND mode = 'ExclusiveLock' AND classid::int8 = $1",
            &[&(-507549795i32 as u32 as i64)],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(1), -1678644353i32 as u32 as i64);
    assert_eq!(row.get::<_, i64>(2), 2);
    lock.release(1).await.unwrap();
    // A service that already calls pg_advisory_lock(bigint) with its own key.
    let key: i64 = rand_key();
    let name = format!("{:016x}", key as u64);
    let got: bool = raw
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
        .await
        .unwrap()
        .get(0);
    assert!(got);
    assert!(c
        .lock(&name)
        .unwrap()
        .try_acquire(1, None)
        .await
        .unwrap()
        .is_none());
    raw.execute("SELECT pg_advisory_unlock($1)", &[&key])
        .await
        .unwrap();
    c.lock(&name)
        .unwrap()
        .acquire(1, AcquireOptions::try_once())
        .await
        .unwrap();
    let got: bool = raw
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
        .await
        .unwrap()
        .get(0);
    assert!(!got, "polylock's hold does not exclude the bigint user");
    c.lock(&name).unwrap().release(1).await.unwrap();
    c.close().await.unwrap();
}

fn rand_key() -> i64 {
    let u = uuid::Uuid::new_v4();
    i64::from_le_bytes(u.as_bytes()[..8].try_into().unwrap())
}

/// Read-write locks on pg_advisory_lock_shared: readers share, a writer waits for them and
/// excludes them, and a writer may downgrade.
/// Fencing tokens come from the shared sequence by default (a value drawn from it by hand lies
/// between two holders' tokens, and no counter row is written), and from a counter row per key
/// with fencing=table (1, 2, ... and the row says the last).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_from_the_sequence_or_a_counter_row() {
    let raw = pg_raw().await;
    // Only session locks with fencing=table write rows named advisory:<key>, and only this test
    // makes them.
    let counter_rows = || async {
        raw.query_one(
            "SELECT COUNT(*) FROM polylock_fencing WHERE name LIKE 'advisory:%'",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0)
    };
    let before = counter_rows().await;
    let c = client(&pg_url()).await;
    let name = unique("fence");
    let t1 = take_and_give_back(&c, &name).await;
    let mid: i64 = raw
        .query_one("SELECT nextval('polylock_fencing_seq')", &[])
        .await
        .unwrap()
        .get(0);
    let t2 = take_and_give_back(&c, &name).await;
    assert!(t1 < mid as u64 && (mid as u64) < t2, "{t1} < {mid} < {t2}");
    assert_eq!(counter_rows().await, before, "the sequence writes no row");
    c.close().await.unwrap();
    let t = client(&with(&pg_url(), "fencing=table")).await;
    let name = unique("fence-table");
    assert_eq!(take_and_give_back(&t, &name).await, 1);
    assert_eq!(take_and_give_back(&t, &name).await, 2);
    t.close().await.unwrap();
    assert_eq!(
        counter_rows().await,
        before + 1,
        "one row for the table client's lock"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_locks_share_readers() {
    let (a, b) = (client(&pg_url()).await, client(&pg_url()).await);
    let name = unique("rw");
    let (ra, rb) = (
        a.read_write_lock(&name).unwrap(),
        b.read_write_lock(&name).unwrap(),
    );
    let t1 = ra
        .read_lock()
        .acquire(1, AcquireOptions::forever())
        .await
        .unwrap();
    let t2 = rb
        .read_lock()
        .acquire(2, AcquireOptions::forever())
        .await
        .unwrap();
    assert_ne!(t1.fencing_token, t2.fencing_token);
    assert!(rb
        .write_lock()
        .try_acquire(3, None)
        .await
        .unwrap()
        .is_none());
    assert!(ra.read_lock().is_locked().await.unwrap());
    assert!(!ra.write_lock().is_locked().await.unwrap());
    // An upgrade is refused at once.
    assert_eq!(
        ra.write_lock()
            .acquire(1, AcquireOptions::forever())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::UpgradeNotSupported
    );
    ra.read_lock().release(1).await.unwrap();
    rb.read_lock().release(2).await.unwrap();
    // The writer excludes readers; it may take the read lock too and keep it (a downgrade).
    let w = rb
        .write_lock()
        .acquire(3, AcquireOptions::forever())
        .await
        .unwrap();
    assert!(ra.read_lock().try_acquire(1, None).await.unwrap().is_none());
    let down = rb
        .read_lock()
        .acquire(3, AcquireOptions::try_once())
        .await
        .unwrap();
    assert!(down.fencing_token > w.fencing_token);
    assert_eq!(rb.write_lock().release(3).await.unwrap(), Released::Freed);
    assert!(ra.read_lock().try_acquire(1, None).await.unwrap().is_some());
    assert!(!ra.write_lock().is_locked().await.unwrap());
    rb.read_lock().release(3).await.unwrap();
    ra.read_lock().release(1).await.unwrap();
    // A plain lock of the same name is the write half's key.
    let l = a.lock(&name).unwrap();
    l.acquire(1, AcquireOptions::forever()).await.unwrap();
    assert!(rb.read_lock().try_acquire(2, None).await.unwrap().is_none());
    l.release(1).await.unwrap();
    a.close().await.unwrap();
    b.close().await.unwrap();
}

/// The lease table in ShedLock's layout: a ShedLock holder's row keeps polylock out until its
/// lock_until, and ShedLock's insert-or-update cannot take a row polylock holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_table_in_shedlocks_layout() {
    let (a, b) = cases::table_basics(&pg_url()).await;
    let raw = pg_raw().await;
    let name = unique("shed");
    let la = a.lock(&name).unwrap();
    la.acquire(7, AcquireOptions::forever()).await.unwrap();
    let row = raw
        .query_one(
            "SELECT locked_by, lock_until > timezone('utc', CURRENT_TIMESTAMP) FROM shedlock \
             WHERE name = $1",
            &[&name],
        )
        .await
        .unwrap();
    let by: String = row.get(0);
    assert!(by.ends_with(&format!(":{}:7", a.id())), "{by}");
    assert!(row.get::<_, bool>(1));
    // ShedLock's statement (PostgresSqlServerTimeStatementsSource) takes nothing.
    let shedlock_take =
        "INSERT INTO shedlock (name, lock_until, locked_at, locked_by) VALUES ($1, \
         timezone('utc', CURRENT_TIMESTAMP) + interval '1500 milliseconds', timezone('utc', \
         CURRENT_TIMESTAMP), 'shedlock-host') ON CONFLICT (name) DO UPDATE SET lock_until = \
         EXCLUDED.lock_until, locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by \
         WHERE shedlock.lock_until <= timezone('utc', CURRENT_TIMESTAMP)";
    assert_eq!(raw.execute(shedlock_take, &[&name]).await.unwrap(), 0);
    la.release(7).await.unwrap();
    assert_eq!(raw.execute(shedlock_take, &[&name]).await.unwrap(), 1);
    let lb = b.lock(&name).unwrap();
    assert!(lb.try_acquire(2, None).await.unwrap().is_none());
    let start = std::time::Instant::now();
    lb.acquire(2, AcquireOptions::wait_for(Duration::from_secs(5)))
        .await
        .unwrap();
    let waited = start.elapsed();
    assert!(
        // At ShedLock's lease end (1.5 s), before the 5 s wait's.
        waited > Duration::from_millis(1000) && waited < Duration::from_millis(4500),
        "{waited:?}"
    );
    lb.release(2).await.unwrap();
    a.close().await.unwrap();
    b.close().await.unwrap();
}

/// ShedLock's unlock notifies nobody: a waiter behind a ShedLock holder backs off (at most 1 s
/// between looks) instead of sleeping to the end of ShedLock's lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shedlock_unlock_is_seen_within_the_back_off() {
    // The default 30 s watchdog: no short lease bounds the waiter's pauses here.
    let b = client(&with(&pg_url(), "mode=table")).await;
    let raw = pg_raw().await;
    let name = unique("shed-unlock");
    // polylock creates the table on its first use; on a fresh database this test may run first.
    let first = b.lock(&unique("shed-unlock-table")).unwrap();
    first.acquire(3, AcquireOptions::default()).await.unwrap();
    first.release(3).await.unwrap();
    // ShedLock takes the row for 20 s (its statement), then unlocks after 600 ms (its unlock
    // statement sets lock_until to now).
    raw.execute(
        "INSERT INTO shedlock (name, lock_until, locked_at, locked_by) VALUES ($1, \
         timezone('utc', CURRENT_TIMESTAMP) + interval '20 seconds', timezone('utc', \
         CURRENT_TIMESTAMP), 'shedlock-host')",
        &[&name],
    )
    .await
    .unwrap();
    let lb = b.lock(&name).unwrap();
    let waiting = tokio::spawn(async move {
        lb.acquire(3, AcquireOptions::wait_for(Duration::from_secs(15)))
            .await
            .map(|_| std::time::Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    raw.execute(
        "UPDATE shedlock SET lock_until = timezone('utc', CURRENT_TIMESTAMP) WHERE name = $1 \
         AND locked_by = 'shedlock-host'",
        &[&name],
    )
    .await
    .unwrap();
    let unlocked = std::time::Instant::now();
    let got = waiting.await.unwrap().unwrap();
    let after = got.saturating_duration_since(unlocked);
    // Its lease had 19 s left: a waiter that got in by it would take about that long.
    println!("the waiter got in {after:?} after ShedLock's unlock");
    assert!(
        after < Duration::from_secs(9),
        "the waiter got in {after:?} after ShedLock's unlock (its lease had 19 s left)"
    );
    b.lock(&name).unwrap().release(3).await.unwrap();
    b.close().await.unwrap();
}

/// A waiter with a 30 s lease ahead of it is woken by the release's NOTIFY, not by a pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_table_waiters_wake_by_notify() {
    let woke = cases::table_wakeup(&pg_url()).await;
    // A waiter that missed the NOTIFY would sleep to its 20 s deadline (the lease is 30 s): the
    // bound is below half of that.
    println!("woke {woke:?} after the release");
    assert!(
        woke < Duration::from_secs(9),
        "woke {woke:?} after the release"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_table_exclusion() {
    cases::exclusion(&with(&pg_url(), "mode=table")).await;
}

/// TLS through polylock's rustls connector ([`cases::tls`]): servers.sh gives PostgreSQL a
/// certificate signed by a test CA and a role its pg_hba.conf refuses without TLS. The refusal
/// against the public roots names the cause and the `sslrootcert` hint; an unknown sslmode is
/// typed `InvalidArgument`; with the CA alone, the server's `pg_stat_ssl` shows every one of the
/// client's connections encrypted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_servers_own_ca() {
    let (url, ca) = sql_common::tls_env("PG");
    let (c, lock) = cases::tls(
        &url,
        cases::Tls {
            unverified: &["sslmode=require", "sslmode=verify-full"],
            named: &["UnknownIssuer", "sslrootcert"],
            invalid: &[
                "sslmode=require&sslrootcert=/nonexistent/ca.pem",
                "sslmode=on",
            ],
            verified: &format!("sslmode=verify-full&sslrootcert={ca}"),
            ca_alone: &format!("sslrootcert={ca}"),
        },
    )
    .await;
    // The server sees each of the client's connections (the query connection and the held
    // lock's) encrypted.
    // polylock's connections name themselves `service@host/pid` (this process's pid).
    let ours = format!("%@%/{}", std::process::id());
    let rows = pg_raw()
        .await
        .query(
            "SELECT s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid \
             WHERE a.usename = 'polylock_tls' AND a.application_name LIKE $1",
            &[&ours],
        )
        .await
        .unwrap();
    let encrypted: Vec<bool> = rows.iter().map(|r| r.get(0)).collect();
    assert!(encrypted.len() >= 2, "{encrypted:?}");
    assert!(encrypted.iter().all(|&e| e), "{encrypted:?}");
    lock.release(1).await.unwrap();
    c.close().await.unwrap();
}

#[test]
fn connections_outlive_the_callers_runtime() {
    cases::connections_outlive_the_callers_runtime(&pg_url());
}

/// A holder shows as its connection's application name, which polylock sets to
/// `service@host/pid`: read back through pg_locks and pg_stat_activity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_shows_its_service_host_and_pid() {
    let url = pg_url();
    let sep = if url.contains('?') { '&' } else { '?' };
    let c = client(&format!("{url}{sep}service=pg-billing")).await;
    let lock = c.lock(&unique("who")).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let st = lock.status().await.unwrap();
    assert_eq!(st.holders.len(), 1, "{st:?}");
    let expected = format!(
        "pg-billing@{}/{}",
        polylock::host_name(),
        std::process::id()
    );
    assert_eq!(
        st.holders[0].identity.as_deref(),
        Some(&expected[..expected.len().min(63)])
    );
    lock.release(1).await.unwrap();
    c.close().await.unwrap();
}

/// A service name no other test uses, to find one client's connections on the server.
fn service(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// `sslmode=prefer` is libpq's: TLS first where the server offers it (always verified: against
/// public roots only, this server's certificate fails the connect rather than going plain), and
/// plain where the server offers no TLS (PgBouncer here has none); `require` there is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_prefer_uses_tls_where_the_server_offers_it() {
    let (_, ca) = sql_common::tls_env("PG");
    let svc = service("prefer");
    let c = client(&with(
        &pg_url(),
        &format!("sslmode=prefer&sslrootcert={ca}&service={svc}"),
    ))
    .await;
    let lock = c.lock(&unique("prefer")).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let encrypted = sql_common::pg_ssl_of(&svc).await;
    assert!(encrypted.len() >= 2, "{encrypted:?}");
    assert!(
        encrypted.iter().all(|&e| e),
        "prefer went plain: {encrypted:?}"
    );
    lock.release(1).await.unwrap();
    c.close().await.unwrap();
    // Stricter than libpq: a certificate that does not verify fails, it is no reason to go plain.
    let e = polylock::Client::connect(&with(&pg_url(), "sslmode=prefer"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{}", e.message());
    assert!(e.message().contains("UnknownIssuer"), "{}", e.message());
    assert!(e.message().contains("sslrootcert"), "{}", e.message());
    // A server without TLS: prefer connects plain, require is refused.
    let plain = client(&with(
        &sql_common::pgbouncer_session_url(),
        "sslmode=prefer",
    ))
    .await;
    let lock = plain.lock(&unique("prefer-plain")).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    lock.release(1).await.unwrap();
    plain.close().await.unwrap();
    let e = polylock::Client::connect(&with(
        &sql_common::pgbouncer_session_url(),
        &format!("sslmode=require&sslrootcert={ca}"),
    ))
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{}", e.message());
}

/// `sslmode=allow` is libpq's: plain first, TLS when the server refuses plain. The TLS-only role
/// (refused without TLS by pg_hba.conf) gets in over TLS, the plain role stays plain; the TLS
/// try verifies the certificate like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_allow_tries_plain_then_tls() {
    let (tls_url, ca) = sql_common::tls_env("PG");
    let svc = service("allow-tls");
    let c = client(&with(
        &tls_url,
        &format!("sslmode=allow&sslrootcert={ca}&service={svc}"),
    ))
    .await;
    let lock = c.lock(&unique("allow")).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let encrypted = sql_common::pg_ssl_of(&svc).await;
    assert!(encrypted.len() >= 2, "{encrypted:?}");
    assert!(encrypted.iter().all(|&e| e), "{encrypted:?}");
    lock.release(1).await.unwrap();
    c.close().await.unwrap();
    let svc = service("allow-plain");
    let c = client(&with(
        &pg_url(),
        &format!("sslmode=allow&sslrootcert={ca}&service={svc}"),
    ))
    .await;
    let lock = c.lock(&unique("allow")).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let encrypted = sql_common::pg_ssl_of(&svc).await;
    assert!(encrypted.len() >= 2, "{encrypted:?}");
    assert!(encrypted.iter().all(|&e| !e), "{encrypted:?}");
    lock.release(1).await.unwrap();
    c.close().await.unwrap();
    let e = polylock::Client::connect(&with(&tls_url, "sslmode=allow"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{}", e.message());
    assert!(e.message().contains("UnknownIssuer"), "{}", e.message());
    assert!(!e.message().contains("polylock-pw"), "{}", e.message());
}

/// PgBouncer in session pooling: a client keeps its server connection, and advisory locks
/// exclude as they do directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbouncer_session_pooling_keeps_advisory_locks() {
    cases::exclusion(&sql_common::pgbouncer_session_url()).await;
}

/// PgBouncer in transaction pooling: a session advisory lock would be taken on one server
/// connection and released on another (a false "held"). The connect finds the pool and refuses,
/// typed, naming both ways out; the same URL with the lease table works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbouncer_transaction_pooling_refuses_advisory_locks() {
    let url = sql_common::pgbouncer_tx_url();
    let e = polylock::Client::connect(&url).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{}", e.message());
    assert!(e.message().contains("session"), "{}", e.message());
    assert!(e.message().contains("mode=table"), "{}", e.message());
    assert!(!e.message().contains("polylock-pw"), "{}", e.message());
    // Directly and through session pooling, nothing is refused.
    for url in [pg_url(), sql_common::pgbouncer_session_url()] {
        let c = client(&url).await;
        take_and_give_back(&c, &unique("no-pool")).await;
        c.close().await.unwrap();
    }
}

/// The lease table through transaction pooling: statements go unnamed (a prepared statement
/// would be executed on a server connection that never prepared it: here another client pins
/// the server connection the first statements ran on), exclusion holds, and a waiter, which
/// cannot LISTEN through the pool, gets the lock within its back-off of the release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbouncer_transaction_pooling_runs_the_lease_table() {
    let url = with(&sql_common::pgbouncer_tx_url(), "mode=table");
    let a = client(&url).await;
    let name = unique("pgb-table");
    take_and_give_back(&a, &name).await;
    // Another client of the pool keeps a transaction open: the server connection polylock's
    // statements ran on is pinned to it (PgBouncer hands out the connection used last).
    let (raw, conn) =
        tokio_postgres::connect(&sql_common::pgbouncer_tx_url(), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(conn);
    raw.simple_query("BEGIN").await.unwrap();
    raw.simple_query("SELECT 1").await.unwrap();
    take_and_give_back(&a, &name).await;
    let lock = a.lock(&name).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let b = client(&url).await;
    let lb = b.lock(&name).unwrap();
    assert!(
        lb.try_acquire(2, None).await.unwrap().is_none(),
        "two holders"
    );
    let waiting = tokio::spawn(async move {
        lb.acquire(2, AcquireOptions::wait_for(Duration::from_secs(20)))
            .await
            .map(|_| std::time::Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    raw.simple_query("ROLLBACK").await.unwrap();
    assert_eq!(lock.release(1).await.unwrap(), Released::Freed);
    let released = std::time::Instant::now();
    // The waiter gets in by its back-off (longest pause 1 s). One that waited for a notification
    // would sleep to the end of its 20 s: the bound is half of that, far from both.
    let got = waiting.await.unwrap().unwrap();
    let after = got.saturating_duration_since(released);
    println!("the waiter got in {after:?} after the release");
    assert!(
        after < Duration::from_secs(10),
        "the waiter got in {after:?} after the release"
    );
    assert_eq!(
        b.lock(&name).unwrap().release(2).await.unwrap(),
        Released::Freed
    );
    cases::exclusion(&url).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}
