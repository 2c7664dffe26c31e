//! Helpers of the SQL suites. They talk to the MariaDB and PostgreSQL of scripts/servers.sh
//! (POLYLOCK_MYSQL_URL, POLYLOCK_PG_URL); a server that cannot be reached fails the test.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use polylock::{Client, ClientOptions};

pub fn mysql_url() -> String {
    std::env::var("POLYLOCK_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock".into())
}

pub fn pg_url() -> String {
    std::env::var("POLYLOCK_PG_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock".into())
}

/// The PostgreSQL of [`pg_url`] through PgBouncer in session pooling (scripts/servers.sh).
pub fn pgbouncer_session_url() -> String {
    std::env::var("POLYLOCK_PGBOUNCER_SESSION_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock-pw@127.0.0.1:6433/polylock".into())
}

/// The PostgreSQL of [`pg_url`] through PgBouncer in transaction pooling (scripts/servers.sh).
pub fn pgbouncer_tx_url() -> String {
    std::env::var("POLYLOCK_PGBOUNCER_TX_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock-pw@127.0.0.1:6434/polylock".into())
}

/// Whether each PostgreSQL connection of this process's clients named `service` (their
/// application_name is `service@host/pid`) is encrypted, as the server sees them.
pub async fn pg_ssl_of(service: &str) -> Vec<bool> {
    let ours = format!("{service}@%/{}", std::process::id());
    pg_raw()
        .await
        .query(
            "SELECT s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid WHERE \
             a.application_name LIKE $1",
            &[&ours],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The URL of the TLS-only user of `server` (MYSQL, PG) and the CA file of its certificate.
pub fn tls_env(server: &str) -> (String, String) {
    let var = |name: String| {
        std::env::var(&name).unwrap_or_else(|_| {
            panic!("{name} is set by `bash scripts/servers.sh env` (start the servers with servers.sh)")
        })
    };
    (
        var(format!("POLYLOCK_{server}_TLS_URL")),
        var(format!("POLYLOCK_{server}_TLS_CA")),
    )
}

/// `url` with a query option added.
pub fn with(url: &str, option: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{option}")
}

/// A lock name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    format!(
        "t-{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

pub async fn client(url: &str) -> Client {
    Client::connect(url)
        .await
        .expect("connect to the test database (scripts/servers.sh start)")
}

pub async fn client_with(url: &str, watchdog: Duration) -> Client {
    let opts = ClientOptions {
        watchdog_timeout: watchdog,
        ..ClientOptions::default()
    };
    Client::connect_with(url, opts).await.expect("connect")
}

/// A plain MySQL connection, to look at the server.
pub async fn my_raw() -> mysql_async::Conn {
    mysql_async::Conn::from_url(mysql_url())
        .await
        .expect("raw MySQL connection")
}

/// A plain PostgreSQL connection, to look at the server.
pub async fn pg_raw() -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&pg_url(), tokio_postgres::NoTls)
        .await
        .expect("raw PostgreSQL connection");
    tokio::spawn(conn);
    client
}

/// Sessions of the MySQL server waiting in GET_LOCK for `key` (processlist).
pub async fn my_waiters(key: &str) -> i64 {
    let mut c = my_raw().await;
    let n: Option<i64> = c
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE INFO LIKE \
             CONCAT('%GET_LOCK%') AND ID <> CONNECTION_ID() AND STATE LIKE '%lock%' AND \
             INFO LIKE CONCAT('%', ?, '%')",
            (key,),
        )
        .await
        .unwrap();
    let _ = c.disconnect().await;
    n.unwrap_or(0)
}

/// Any session of the MySQL server waiting in GET_LOCK (processlist).
pub async fn my_all_waiters() -> i64 {
    let mut c = my_raw().await;
    let n: Option<i64> = c
        .query_first(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE ID <> CONNECTION_ID() \
             AND INFO LIKE '%GET_LOCK%'",
        )
        .await
        .unwrap();
    let _ = c.disconnect().await;
    n.unwrap_or(0)
}

/// Whether the MySQL connection `id` is open (processlist).
pub async fn my_alive(id: u64) -> bool {
    let mut c = my_raw().await;
    let n: Option<i64> = c
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE ID = ?",
            (id,),
        )
        .await
        .unwrap();
    let _ = c.disconnect().await;
    n.unwrap_or(0) > 0
}

/// Advisory locks of the test database not granted (waiters), from pg_locks.
pub async fn pg_waiters() -> i64 {
    let c = pg_raw().await;
    c.query_one(
        "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Whether the PostgreSQL backend `pid` is alive (pg_stat_activity).
pub async fn pg_alive(pid: u64) -> bool {
    let c = pg_raw().await;
    let pid = pid as i32;
    let n: i64 = c
        .query_one(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1",
            &[&pid],
        )
        .await
        .unwrap()
        .get(0);
    n > 0
}

/// Take `name` and give it back; the fencing token it had.
pub async fn take_and_give_back(c: &Client, name: &str) -> u64 {
    let lock = c.lock(name).unwrap();
    let held = lock.try_acquire(1, None).await.unwrap().expect("free");
    assert_eq!(lock.release(1).await.unwrap(), polylock::Released::Freed);
    held.fencing_token
}

/// Poll `f` until it returns true, up to `limit`; the time it took.
pub async fn eventually<F, Fut>(limit: Duration, mut f: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() < limit {
        if f().await {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

pub mod cases;

/// Wait (up to 60 s) until the PostgreSQL session `pid` waits for a lock.
pub async fn wait_for_pg_lock_waiter(watcher: &tokio_postgres::Client, pid: i32) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let waiting: bool = watcher
            .query_one(
                "SELECT coalesce(bool_or(wait_event_type = 'Lock'), false) FROM pg_stat_activity \
                 WHERE pid = $1",
                &[&pid],
            )
            .await
            .unwrap()
            .get(0);
        if waiting {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("PostgreSQL session {pid} never waited for a lock");
}

/// Wait (up to 60 s) until the MySQL connection `id` is in a statement on the fence table (one
/// that waits for its row: the processlist, which a user sees of its own sessions without the
/// PROCESS privilege that InnoDB's lock tables need).
pub async fn wait_for_my_lock_waiter(id: u32) {
    let mut c = my_raw().await;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let n: Option<i64> = c
            .exec_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? \
                 AND INFO LIKE '%polylock_fence%'",
                (id,),
            )
            .await
            .unwrap();
        if n.unwrap_or(0) > 0 {
            let _ = c.disconnect().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("MySQL connection {id} never reached the fence's row");
}
