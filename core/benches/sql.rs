//! The SQL session locks beside their floor, measured in the same run in alternating rounds:
//! a polylock acquire+release pair (the lock statement also draws the fencing token) beside a
//! bare `GET_LOCK`+`RELEASE_LOCK` (`pg_advisory_lock`+`pg_advisory_unlock`) loop on one
//! connection through the same driver, with prepared statements.
//!
//!     cargo bench --bench sql                       # the servers of scripts/servers.sh
//!     cargo bench --bench sql -- --pairs 2000 --rounds 6

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

async fn polylock_round(client: &Client, name: &str, n: usize, out: &mut Vec<Duration>) {
    let lock = client.lock(name).unwrap();
    let me = owner::fresh();
    for _ in 0..n {
        let t = Instant::now();
        lock.acquire(me, AcquireOptions::forever()).await.unwrap();
        lock.release(me).await.unwrap();
        out.push(t.elapsed());
    }
}

async fn mysql_floor(conn: &mut mysql_async::Conn, name: &str, n: usize, out: &mut Vec<Duration>) {
    for _ in 0..n {
        let t = Instant::now();
        let got: Option<i64> = conn
            .exec_first("SELECT GET_LOCK(?, 31536000)", (name,))
            .await
            .unwrap();
        assert_eq!(got, Some(1));
        let _: Option<i64> = conn
            .exec_first("SELECT RELEASE_LOCK(?)", (name,))
            .await
            .unwrap();
        out.push(t.elapsed());
    }
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
        let token: Option<i64> = conn
            .exec_first(
                "SELECT NEXTVAL(polylock_fencing_seq) FROM DUAL WHERE GET_LOCK(?, ?) = 1",
                (name, 31536000),
            )
            .await
            .unwrap();
        assert!(token.is_some());
        let _: Option<i64> = conn
            .exec_first("SELECT RELEASE_LOCK(?)", (name,))
            .await
            .unwrap();
        out.push(t.elapsed());
    }
}

async fn pg_statements(conn: &tokio_postgres::Client, key: i64, n: usize, out: &mut Vec<Duration>) {
    let lock = conn
        .prepare(
            "WITH l AS MATERIALIZED (SELECT pg_advisory_lock($1::int8)) \
             SELECT nextval('polylock_fencing_seq') FROM l",
        )
        .await
        .unwrap();
    let unlock = conn
        .prepare("SELECT pg_advisory_unlock($1::int8)")
        .await
        .unwrap();
    for _ in 0..n {
        let t = Instant::now();
        conn.query_one(&lock, &[&key]).await.unwrap();
        conn.query_one(&unlock, &[&key]).await.unwrap();
        out.push(t.elapsed());
    }
}

async fn pg_floor(conn: &tokio_postgres::Client, key: i64, n: usize, out: &mut Vec<Duration>) {
    let lock = conn.prepare("SELECT pg_advisory_lock($1)").await.unwrap();
    let unlock = conn.prepare("SELECT pg_advisory_unlock($1)").await.unwrap();
    for _ in 0..n {
        let t = Instant::now();
        conn.query_one(&lock, &[&key]).await.unwrap();
        conn.query_one(&unlock, &[&key]).await.unwrap();
        out.push(t.elapsed());
    }
}

fn report(
    what: &str,
    mut ours: Vec<Duration>,
    mut floor: Vec<Duration>,
    floor_name: &str,
    mut statements: Vec<Duration>,
) {
    let (a, b, c) = (p50(&mut ours), p50(&mut floor), p50(&mut statements));
    println!(
        "{what}: polylock pair p50 {:.1} us ({:.0} pairs/s) | {floor_name} p50 {:.1} us ({:.0} pairs/s) | ratio {:.2}x (target <= 1.10x)",
        us(a),
        1e6 / us(a),
        us(b),
        1e6 / us(b),
        us(a) / us(b)
    );
    println!(
        "  polylock's two statements on a bare connection: p50 {:.1} us ({:.2}x the floor; polylock's client adds {:.1} us)",
        us(c),
        us(c) / us(b),
        us(a) - us(c)
    );
}

fn main() {
    let pairs = arg("--pairs", 1000);
    let rounds = arg("--rounds", 6);
    let mysql = std::env::var("POLYLOCK_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock".into());
    let pg = std::env::var("POLYLOCK_PG_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock".into());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        println!("{rounds} alternating rounds of {pairs} uncontended pairs each");
        // MySQL / MariaDB.
        let client = Client::connect(&mysql).await.unwrap();
        let mut raw = mysql_async::Conn::from_url(&mysql).await.unwrap();
        let (name, bare) = ("bench-sql-polylock", "bench-sql-bare");
        let (mut ours, mut floor, mut stmts) = (Vec::new(), Vec::new(), Vec::new());
        polylock_round(&client, name, pairs / 10, &mut Vec::new()).await; // warm up
        mysql_floor(&mut raw, bare, pairs / 10, &mut Vec::new()).await;
        mysql_statements(&mut raw, bare, pairs / 10, &mut Vec::new()).await;
        for _ in 0..rounds {
            polylock_round(&client, name, pairs, &mut ours).await;
            mysql_floor(&mut raw, bare, pairs, &mut floor).await;
            mysql_statements(&mut raw, bare, pairs, &mut stmts).await;
        }
        report(
            "MariaDB GET_LOCK",
            ours,
            floor,
            "bare GET_LOCK+RELEASE_LOCK",
            stmts,
        );
        client.close().await.unwrap();
        // PostgreSQL.
        let client = Client::connect(&pg).await.unwrap();
        let (raw, conn) = tokio_postgres::connect(&pg, tokio_postgres::NoTls)
            .await
            .unwrap();
        if std::env::var_os("XSPAWNPL").is_some() {
            polylock::runtime::handle().spawn(conn);
        } else {
            tokio::spawn(conn);
        }
        let (mut ours, mut floor, mut stmts) = (Vec::new(), Vec::new(), Vec::new());
        polylock_round(&client, name, pairs / 10, &mut Vec::new()).await;
        pg_floor(&raw, 4242, pairs / 10, &mut Vec::new()).await;
        pg_statements(&raw, 4242, pairs / 10, &mut Vec::new()).await;
        for _ in 0..rounds {
            polylock_round(&client, name, pairs, &mut ours).await;
            pg_floor(&raw, 4242, pairs, &mut floor).await;
            pg_statements(&raw, 4242, pairs, &mut stmts).await;
        }
        report(
            "PostgreSQL advisory",
            ours,
            floor,
            "bare pg_advisory_lock+unlock",
            stmts,
        );
        client.close().await.unwrap();
    });
}
