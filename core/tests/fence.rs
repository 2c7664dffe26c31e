//! Fencing at the resource: a write under an older token than one already accepted is refused by
//! the store itself (Redis's script, PostgreSQL's and MySQL's guard row), atomically with the
//! write, on the Redis, PostgreSQL and MariaDB of scripts/servers.sh.

mod common;
mod sql_common;

use mysql_async::prelude::Queryable;
use polylock::{AcquireOptions, ErrorKind, Reply};

fn cmd(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

async fn get(key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query_async(&mut common::raw().await)
        .await
        .unwrap()
}

/// The pause scenario on Redis: holder A's lease ends, B takes the lock and sells; A's late sale
/// under its old token is refused and the stock stays B's. A's own earlier writes, B's repeated
/// ones and the replies of each command come back as Redis gave them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_write_under_an_older_token_is_refused_and_nothing_runs() {
    let c = common::client().await;
    let name = common::unique("fence");
    let stock = format!("{{{name}}}:stock");
    let orders = format!("{{{name}}}:orders");
    let lock = c.lock(&name).unwrap();
    let a = lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let t1 = a.fencing_token;
    let replies = c
        .fenced_write(
            &name,
            t1,
            &[
                cmd(&["SET", &stock, "10"]),
                cmd(&["DECR", &stock]),
                cmd(&["RPUSH", &orders, "a-1"]),
                cmd(&["GET", &format!("{{{name}}}:missing")]),
                cmd(&["LRANGE", &orders, "0", "-1"]),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        replies,
        vec![
            Reply::Status("OK".into()),
            Reply::Int(9),
            Reply::Int(1),
            Reply::Nil,
            Reply::Array(vec![Reply::Bytes(b"a-1".to_vec())]),
        ]
    );
    let fence = c.fence(&name).unwrap();
    assert_eq!(fence.accepted().await.unwrap(), Some(t1));

    // A pauses past its lease: here its hold is force-unlocked, and B takes the lock.
    assert!(lock.force_unlock().await.unwrap());
    let b = lock.acquire(2, AcquireOptions::forever()).await.unwrap();
    let t2 = b.fencing_token;
    assert!(t2 > t1, "{t2} > {t1}");
    for _ in 0..2 {
        // The same token writes any number of times.
        let r = fence.write(t2, &[cmd(&["DECR", &stock])]).await.unwrap();
        assert!(matches!(r[..], [Reply::Int(_)]), "{r:?}");
    }
    assert_eq!(get(&stock).await.as_deref(), Some("7"));

    let late = c
        .fenced_write(
            &name,
            t1,
            &[cmd(&["DECR", &stock]), cmd(&["RPUSH", &orders, "a-2"])],
        )
        .await
        .unwrap_err();
    assert_eq!(late.kind(), ErrorKind::StaleToken, "{late}");
    assert!(
        late.to_string()
            .contains(&format!("already accepted token {t2}")),
        "{late}"
    );
    assert_eq!(
        get(&stock).await.as_deref(),
        Some("7"),
        "nothing of the late write ran"
    );
    let orders_now: Vec<String> = redis::cmd("LRANGE")
        .arg(&orders)
        .arg(0)
        .arg(-1)
        .query_async(&mut common::raw().await)
        .await
        .unwrap();
    assert_eq!(orders_now, vec!["a-1"]);
    assert_eq!(fence.accepted().await.unwrap(), Some(t2));
    lock.release(2).await.unwrap();

    let mut raw = common::raw().await;
    let _: () = redis::cmd("DEL")
        .arg(&stock)
        .arg(&orders)
        .arg(format!("polylock_fence:{{{name}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    c.close().await.unwrap();
}

/// Tokens in any order: a write runs exactly when its token is at least the largest one run
/// before it (a model of the fence, checked write by write against the store's count).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_runs_exactly_when_its_token_is_not_older_than_any_before() {
    let c = common::client().await;
    let name = common::unique("fence-order");
    let counter = format!("{{{name}}}:n");
    let fence = c.fence(&name).unwrap();
    // A fixed shuffle of 1..=40 with repeats (a generator of the multiplicative group mod 41).
    let tokens: Vec<u64> = (1..=60u64).map(|i| (i * 7) % 41 + 1).collect();
    let (mut top, mut ran) = (0u64, 0i64);
    for t in tokens {
        let r = fence.write(t, &[cmd(&["INCR", &counter])]).await;
        if t >= top {
            top = t;
            ran += 1;
            assert_eq!(r.unwrap(), vec![Reply::Int(ran)], "token {t}");
        } else {
            assert_eq!(
                r.unwrap_err().kind(),
                ErrorKind::StaleToken,
                "token {t} < {top}"
            );
        }
    }
    assert_eq!(get(&counter).await, Some(ran.to_string()));
    assert_eq!(fence.accepted().await.unwrap(), Some(top));
    let _: () = redis::cmd("DEL")
        .arg(&counter)
        .arg(format!("polylock_fence:{{{name}}}"))
        .query_async(&mut common::raw().await)
        .await
        .unwrap();
    c.close().await.unwrap();
}

/// Bad input is a typed error before anything reaches the server; a command the server refuses
/// is `Backend` after the commands before it ran (as in MULTI/EXEC); a fence on a backend that
/// keeps no data of the application's is `Unsupported`; a closed client is `InvalidState`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_writes_are_typed_errors() {
    let c = common::client().await;
    let name = common::unique("fence-bad");
    let key = format!("{{{name}}}:k");
    let fence = c.fence(&name).unwrap();
    let invalid = |r: polylock::Result<Vec<Reply>>| r.unwrap_err().kind();
    assert_eq!(
        invalid(fence.write(0, &[cmd(&["PING"])]).await),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        invalid(fence.write(u64::MAX, &[cmd(&["PING"])]).await),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        invalid(fence.write(1, &[]).await),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        invalid(fence.write(1, &[vec![]]).await),
        ErrorKind::InvalidArgument
    );
    assert_eq!(c.fence("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        fence.accepted().await.unwrap(),
        None,
        "nothing reached the server"
    );

    let err = fence
        .write(
            3,
            &[
                cmd(&["SET", &key, "text"]),
                cmd(&["INCR", &key]),
                cmd(&["SET", &key, "after"]),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Backend, "{err}");
    assert_eq!(
        get(&key).await.as_deref(),
        Some("text"),
        "the command before ran, the one after not"
    );
    let err = fence
        .write(3, &[cmd(&["NOSUCHCOMMAND"])])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Backend, "{err}");

    let sql = sql_common::client(&sql_common::pg_url()).await;
    assert_eq!(sql.fence(&name).unwrap_err().kind(), ErrorKind::Unsupported);
    sql.close().await.unwrap();

    let _: () = redis::cmd("DEL")
        .arg(&key)
        .arg(format!("polylock_fence:{{{name}}}"))
        .query_async(&mut common::raw().await)
        .await
        .unwrap();
    c.close().await.unwrap();
    assert_eq!(
        fence.write(4, &[cmd(&["PING"])]).await.unwrap_err().kind(),
        ErrorKind::InvalidState
    );
}

async fn pg() -> tokio_postgres::Client {
    sql_common::pg_raw().await
}

async fn pg_stock(c: &tokio_postgres::Client, item: &str) -> i64 {
    c.query_one(
        "SELECT left_ FROM fence_test_stock WHERE item = $1",
        &[&item],
    )
    .await
    .unwrap()
    .get(0)
}

/// PostgreSQL: the guard in the writer's own transaction. The newer holder's sale commits; the
/// older holder's is refused and rolled back; a refused or rolled-back token is not remembered;
/// a stale writer that reaches the row while the newer one's transaction is open waits for it
/// and is then refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_refuses_a_stale_writer_in_its_own_transaction() {
    let mut a = pg().await;
    let mut b = pg().await;
    polylock::fence::postgres_setup(&a).await.unwrap();
    polylock::fence::postgres_setup(&b).await.unwrap();
    a.batch_execute(
        "CREATE TABLE IF NOT EXISTS fence_test_stock (item TEXT PRIMARY KEY, left_ BIGINT NOT NULL)",
    )
    .await
    .ok();
    let name = sql_common::unique("fence-pg");
    a.execute("INSERT INTO fence_test_stock VALUES ($1, 10)", &[&name])
        .await
        .unwrap();
    let sell = "UPDATE fence_test_stock SET left_ = left_ - 1 WHERE item = $1";

    let tx = b.transaction().await.unwrap();
    polylock::fence::postgres(&tx, &name, 5).await.unwrap();
    tx.execute(sell, &[&name]).await.unwrap();
    tx.commit().await.unwrap();

    let tx = a.transaction().await.unwrap();
    let err = polylock::fence::postgres(&tx, &name, 4).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StaleToken, "{err}");
    assert!(
        err.to_string().contains("already accepted token 5"),
        "{err}"
    );
    drop(tx); // rolled back
    assert_eq!(pg_stock(&a, &name).await, 9);

    // A newer token that rolls back leaves the fence where it was.
    let tx = a.transaction().await.unwrap();
    polylock::fence::postgres(&tx, &name, 9).await.unwrap();
    tx.rollback().await.unwrap();
    let tx = a.transaction().await.unwrap();
    polylock::fence::postgres(&tx, &name, 6).await.unwrap();
    tx.execute(sell, &[&name]).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(pg_stock(&a, &name).await, 8);

    // B (token 7) holds the row in an open transaction; A (token 6, the older holder) reaches
    // it then, waits, and is refused once B commits.
    let tx_b = b.transaction().await.unwrap();
    polylock::fence::postgres(&tx_b, &name, 7).await.unwrap();
    tx_b.execute(sell, &[&name]).await.unwrap();
    let a_pid: i32 = a
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let late = tokio::spawn(async move {
        let r = {
            let tx = a.transaction().await.unwrap();
            let r = polylock::fence::postgres(&tx, &name, 6).await;
            if r.is_ok() {
                tx.execute(sell, &[&name]).await.unwrap();
                tx.commit().await.unwrap();
            }
            r
        };
        (r, a, name)
    });
    let watcher = pg().await;
    sql_common::wait_for_pg_lock_waiter(&watcher, a_pid).await;
    tx_b.commit().await.unwrap();
    let (r, a, name) = late.await.unwrap();
    assert_eq!(r.unwrap_err().kind(), ErrorKind::StaleToken);
    assert_eq!(
        pg_stock(&a, &name).await,
        7,
        "only the newer holder's sale committed"
    );

    let bad = polylock::fence::postgres(&a, &"x".repeat(256), 1)
        .await
        .unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidArgument, "{bad}");
    let bad = polylock::fence::postgres(&a, &name, 0).await.unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidArgument, "{bad}");
    a.execute("DELETE FROM polylock_fence WHERE name = $1", &[&name])
        .await
        .unwrap();
    a.execute("DELETE FROM fence_test_stock WHERE item = $1", &[&name])
        .await
        .unwrap();
}

/// MariaDB: the same guard over mysql_async, in the writer's own transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_refuses_a_stale_writer_in_its_own_transaction() {
    let mut a = sql_common::my_raw().await;
    let mut b = sql_common::my_raw().await;
    polylock::fence::mysql_setup(&mut a).await.unwrap();
    a.query_drop(
        "CREATE TABLE IF NOT EXISTS fence_test_stock (item VARCHAR(64) PRIMARY KEY, \
         left_ BIGINT NOT NULL) ENGINE=InnoDB",
    )
    .await
    .unwrap();
    let name = sql_common::unique("fence-my");
    a.exec_drop("INSERT INTO fence_test_stock VALUES (?, 10)", (&name,))
        .await
        .unwrap();
    let sell = "UPDATE fence_test_stock SET left_ = left_ - 1 WHERE item = ?";
    let stock = |left: Option<i64>| left.unwrap();

    let mut tx = b.start_transaction(Default::default()).await.unwrap();
    polylock::fence::mysql(&mut tx, &name, 5).await.unwrap();
    tx.exec_drop(sell, (&name,)).await.unwrap();
    tx.commit().await.unwrap();

    let mut tx = a.start_transaction(Default::default()).await.unwrap();
    let err = polylock::fence::mysql(&mut tx, &name, 4).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StaleToken, "{err}");
    tx.rollback().await.unwrap();

    let mut tx = a.start_transaction(Default::default()).await.unwrap();
    polylock::fence::mysql(&mut tx, &name, 9).await.unwrap();
    tx.rollback().await.unwrap();
    let mut tx = a.start_transaction(Default::default()).await.unwrap();
    polylock::fence::mysql(&mut tx, &name, 6).await.unwrap();
    tx.exec_drop(sell, (&name,)).await.unwrap();
    tx.commit().await.unwrap();

    let mut tx_b = b.start_transaction(Default::default()).await.unwrap();
    polylock::fence::mysql(&mut tx_b, &name, 7).await.unwrap();
    tx_b.exec_drop(sell, (&name,)).await.unwrap();
    let a_id = a.id();
    let late = tokio::spawn(async move {
        let mut tx = a.start_transaction(Default::default()).await.unwrap();
        let r = polylock::fence::mysql(&mut tx, &name, 6).await;
        if r.is_ok() {
            tx.exec_drop(sell, (&name,)).await.unwrap();
            tx.commit().await.unwrap();
        } else {
            tx.rollback().await.unwrap();
        }
        (r, a, name)
    });
    sql_common::wait_for_my_lock_waiter(a_id).await;
    tx_b.commit().await.unwrap();
    let (r, mut a, name) = late.await.unwrap();
    assert_eq!(r.unwrap_err().kind(), ErrorKind::StaleToken);
    let left: Option<i64> = a
        .exec_first(
            "SELECT left_ FROM fence_test_stock WHERE item = ?",
            (&name,),
        )
        .await
        .unwrap();
    assert_eq!(stock(left), 7, "only the newer holder's sale committed");

    a.exec_drop("DELETE FROM polylock_fence WHERE name = ?", (&name,))
        .await
        .unwrap();
    a.exec_drop("DELETE FROM fence_test_stock WHERE item = ?", (&name,))
        .await
        .unwrap();
    a.disconnect().await.unwrap();
    b.disconnect().await.unwrap();
}
