//! MySQL/MariaDB: GET_LOCK session locks and the ShedLock lease table, on the MariaDB of
//! scripts/servers.sh.

mod sql_common;

use std::time::Duration;

use mysql_async::prelude::Queryable;
use polylock::{AcquireOptions, ErrorKind};
use sql_common::cases::{self, Server};
use sql_common::{client, my_raw, mysql_url, take_and_give_back, unique, with};

fn server() -> Server {
    Server {
        waiters: || Box::pin(sql_common::my_all_waiters()),
        alive: |id| Box::pin(sql_common::my_alive(id)),
        kill: |id| {
            Box::pin(async move {
                let mut c = my_raw().await;
                c.query_drop(format!("KILL {id}")).await.unwrap();
                let _ = c.disconnect().await;
            })
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusion_with_a_counter() {
    cases::exclusion(&mysql_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_none_locks_without_tokens() {
    cases::no_fencing(&mysql_url(), &server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrancy() {
    cases::reentrancy(&mysql_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_and_timeout() {
    cases::wait_and_timeout(&mysql_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_wait_leaves_no_waiter_in_processlist() {
    cases::cancelled_wait_leaves_no_waiter(&mysql_url(), &server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connection_fires_the_lost_signal() {
    cases::killed_connection_is_lost(&mysql_url(), &server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_and_non_ascii_names() {
    cases::long_and_non_ascii_names(&mysql_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_connect_errors() {
    cases::typed_connect_errors(&mysql_url(), "mysql").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairs_leave_no_task_behind() {
    cases::pairs_leave_no_task_behind(&mysql_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cap_and_close() {
    cases::connection_cap_and_close(&mysql_url(), &server()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cap_from_client_options() {
    cases::connection_cap_from_options(&mysql_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_lease_and_no_read_write_lock() {
    cases::no_lease_on_session_locks(&mysql_url()).await;
    let c = client(&mysql_url()).await;
    assert_eq!(
        c.read_write_lock("rw").unwrap_err().kind(),
        ErrorKind::Unsupported
    );
    c.close().await.unwrap();
}

/// The server holds DistributedLock's name: `ABC` is locked as
/// `abczj4qr6tvn4a3kmgq4bukhowqyfrlxsb3`, and a plain GET_LOCK session on that name excludes
/// polylock and is excluded by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_names_and_plain_get_lock_sessions() {
    let c = client(&mysql_url()).await;
    let mut raw = my_raw().await;
    let lock = c.lock("ABC").unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let holder: Option<Option<u64>> = raw
        .query_first("SELECT IS_USED_LOCK('abczj4qr6tvn4a3kmgq4bukhowqyfrlxsb3')")
        .await
        .unwrap();
    assert!(
        holder.flatten().is_some(),
        "not held under DistributedLock's name"
    );
    let got: Option<Option<i64>> = raw
        .query_first("SELECT GET_LOCK('abczj4qr6tvn4a3kmgq4bukhowqyfrlxsb3', 0)")
        .await
        .unwrap();
    assert_eq!(got.flatten(), Some(0));
    lock.release(1).await.unwrap();
    // A lower-case name is used as it is.
    let name = unique("plain");
    let got: Option<Option<i64>> = raw
        .exec_first("SELECT GET_LOCK(?, 0)", (&name,))
        .await
        .unwrap();
    assert_eq!(got.flatten(), Some(1));
    assert!(c
        .lock(&name)
        .unwrap()
        .try_acquire(1, None)
        .await
        .unwrap()
        .is_none());
    raw.exec_drop("DO RELEASE_LOCK(?)", (&name,)).await.unwrap();
    assert!(c
        .lock(&name)
        .unwrap()
        .try_acquire(1, None)
        .await
        .unwrap()
        .is_some());
    assert!(c.lock(&name).unwrap().fencing_token(1).is_some());
    c.lock(&name).unwrap().release(1).await.unwrap();
    let _ = raw.disconnect().await;
    c.close().await.unwrap();
}

/// Fencing tokens come from the shared sequence on MariaDB (a value drawn from it by hand lies
/// between two holders' tokens, and no counter row is written), and from a counter row per lock
/// with fencing=table (1, 2, ... and the row says the last).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_from_the_sequence_or_a_counter_row() {
    let mut raw = my_raw().await;
    let c = client(&mysql_url()).await;
    let name = unique("fence");
    let t1 = take_and_give_back(&c, &name).await;
    let mid: Option<i64> = raw
        .query_first("SELECT NEXTVAL(polylock_fencing_seq)")
        .await
        .unwrap();
    let t2 = take_and_give_back(&c, &name).await;
    let mid = mid.unwrap() as u64;
    assert!(t1 < mid && mid < t2, "{t1} < {mid} < {t2}");
    assert_eq!(counter_row(&mut raw, &name).await, None);
    c.close().await.unwrap();
    let t = client(&with(&mysql_url(), "fencing=table")).await;
    let name = unique("fence-table");
    assert_eq!(take_and_give_back(&t, &name).await, 1);
    assert_eq!(take_and_give_back(&t, &name).await, 2);
    assert_eq!(counter_row(&mut raw, &name).await, Some(2));
    t.close().await.unwrap();
    let _ = raw.disconnect().await;
}

/// The counter row of polylock_fencing for the lock `name` (fencing=table), if there is one.
async fn counter_row(raw: &mut mysql_async::Conn, name: &str) -> Option<i64> {
    raw.exec_first(
        "SELECT token FROM polylock_fencing WHERE name = ?",
        (format!("get_lock:{name}"),),
    )
    .await
    .unwrap()
}

/// The lease table in ShedLock's layout: what polylock writes, a ShedLock holder's row keeps
/// polylock out until its lock_until, and ShedLock's own conditional update cannot take a row
/// polylock holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_table_in_shedlocks_layout() {
    let (a, b) = cases::table_basics(&mysql_url()).await;
    let mut raw = my_raw().await;
    let name = unique("shed");
    let la = a.lock(&name).unwrap();
    la.acquire(7, AcquireOptions::forever()).await.unwrap();
    let (by, left): (String, i64) = raw
        .exec_first(
            "SELECT locked_by, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lock_until) FROM \
             shedlock WHERE name = ?",
            (&name,),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(by.ends_with(&format!(":{}:7", a.id())), "{by}");
    assert!(left > 0);
    // ShedLock's update (database time) finds no free row.
    raw.exec_drop(
        "UPDATE shedlock SET lock_until = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL 10 SECOND), \
         locked_at = UTC_TIMESTAMP(3), locked_by = 'shedlock-host' WHERE name = ? AND \
         lock_until <= UTC_TIMESTAMP(3)",
        (&name,),
    )
    .await
    .unwrap();
    assert_eq!(raw.affected_rows(), 0);
    la.release(7).await.unwrap();
    // Now ShedLock takes it for 1.5 s: polylock waits for the lease to end.
    raw.exec_drop(
        "UPDATE shedlock SET lock_until = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL 1500000 \
         MICROSECOND), locked_at = UTC_TIMESTAMP(3), locked_by = 'shedlock-host' WHERE name = ? \
         AND lock_until <= UTC_TIMESTAMP(3)",
        (&name,),
    )
    .await
    .unwrap();
    assert_eq!(raw.affected_rows(), 1);
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
    let _ = raw.disconnect().await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_table_waiters_back_off_briefly() {
    let woke = cases::table_wakeup(&mysql_url()).await;
    // No notification on MySQL: the backoff doubles up to 1 s. A waiter without it would sleep
    // to its 20 s deadline (the holder's lease is 30 s): the bound is below half of that.
    println!("woke {woke:?} after the release");
    assert!(
        woke < Duration::from_secs(9),
        "woke {woke:?} after the release"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_table_exclusion() {
    cases::exclusion(&with(&mysql_url(), "mode=table")).await;
}

/// TLS through mysql_async's rustls ([`cases::tls`]): servers.sh gives MariaDB a certificate
/// signed by a test CA and a user it admits over TLS only (`REQUIRE SSL`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_servers_own_ca() {
    let (url, ca) = sql_common::tls_env("MYSQL");
    let (c, lock) = cases::tls(
        &url,
        cases::Tls {
            unverified: &["require_ssl=true"],
            named: &[],
            invalid: &["require_ssl=true&sslrootcert=/nonexistent/ca.pem"],
            verified: &format!("require_ssl=true&sslrootcert={ca}"),
            ca_alone: &format!("sslrootcert={ca}"),
        },
    )
    .await;
    lock.release(1).await.unwrap();
    c.close().await.unwrap();
}

#[test]
fn connections_outlive_the_callers_runtime() {
    cases::connections_outlive_the_callers_runtime(&mysql_url());
}

/// A try on a free lock while the server is slow to run the statement (here: its fencing
/// sequence is locked by another session for 700 ms, as a busy server would queue it) is
/// acquired once the server answers, not killed after a quarter second and called "not
/// acquired" (seen as a flaky try in the conformance suite with six runtimes side by side).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_on_a_slow_server_is_answered_not_killed() {
    let c = client(&mysql_url()).await;
    let lock = c.lock(&unique("slow-try")).unwrap();
    let me = polylock::owner::fresh();
    // The pool's connection and the sequence exist before the server is made slow.
    lock.acquire(me, AcquireOptions::try_once()).await.unwrap();
    lock.release(me).await.unwrap();
    let mut blocker = my_raw().await;
    blocker
        .query_drop("LOCK TABLES polylock_fencing_seq WRITE")
        .await
        .unwrap();
    let unblock = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        blocker.query_drop("UNLOCK TABLES").await.unwrap();
        let _ = blocker.disconnect().await;
    });
    let started = std::time::Instant::now();
    let got = lock
        .acquire(me, AcquireOptions::try_once())
        .await
        .map(|a| a.hold_count);
    println!("try answered after {:?}", started.elapsed());
    unblock.await.unwrap();
    match got {
        Ok(count) => assert_eq!(count, 1),
        Err(e) => panic!("a free lock on a slow server is acquired, not: {e}"),
    }
    lock.release(me).await.unwrap();
    c.close().await.unwrap();
}
