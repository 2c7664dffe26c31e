//! The fair lock on Redis (Redisson's RFairLock format), against a real redis-server.

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use polylock::{owner, AcquireOptions, Client, ClientOptions, ErrorKind, Released};
use redis::AsyncCommands;

async fn queue(name: &str) -> Vec<String> {
    raw()
        .await
        .lrange(format!("redisson_lock_queue:{{{name}}}"), 0, -1)
        .await
        .unwrap()
}

async fn queue_until(name: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while queue(name).await.len() != n {
        assert!(Instant::now() < deadline, "the queue never had {n} waiters");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_waiters_get_the_lock_in_the_order_they_asked() {
    let (a, b) = (client().await, client().await);
    let name = unique("fair-order");
    let holder = a.fair_lock(&name).unwrap();
    holder.acquire(0, AcquireOptions::forever()).await.unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 1..=8u64 {
        let lock = if i % 2 == 0 { &a } else { &b }.fair_lock(&name).unwrap();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let me = owner::fresh();
            lock.acquire(me, AcquireOptions::wait_for(Duration::from_secs(20)))
                .await
                .unwrap();
            order.lock().unwrap().push(i);
            tokio::time::sleep(Duration::from_millis(5)).await;
            lock.release(me).await.unwrap();
        }));
        queue_until(&name, i as usize).await;
    }
    // Redisson's layout: the queue in asking order, a deadline per waiter.
    let q = queue(&name).await;
    let deadlines: Vec<(String, f64)> = raw()
        .await
        .zrange_withscores(format!("redisson_lock_timeout:{{{name}}}"), 0, -1)
        .await
        .unwrap();
    assert_eq!(deadlines.len(), 8);
    assert!(q.iter().all(|w| deadlines.iter().any(|(d, _)| d == w)));
    let st = holder.status().await.unwrap();
    assert_eq!(st.waiters, q, "status lists the queue in order");
    holder.release(0).await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (1..=8).collect::<Vec<_>>());
    assert!(queue(&name).await.is_empty());
    let left: i64 = raw()
        .await
        .zcard(format!("redisson_lock_timeout:{{{name}}}"))
        .await
        .unwrap();
    assert_eq!(left, 0);
    let beats: i64 = raw()
        .await
        .zcard(format!("polylock_lock_alive:{{{name}}}"))
        .await
        .unwrap();
    assert_eq!(beats, 0, "no heartbeat left behind");
}

/// What Redisson's scripts do to the queue, played with plain commands: a Redisson waiter joins
/// (its deadline is the last one's plus 300 s), is granted (every other deadline loses 300 s), or
/// gives up (everyone behind it loses 300 s).
mod redisson {
    use super::*;
    pub const WAIT: f64 = 300_000.0;

    pub fn keys(name: &str) -> (String, String) {
        (
            format!("redisson_lock_queue:{{{name}}}"),
            format!("redisson_lock_timeout:{{{name}}}"),
        )
    }

    pub async fn join(name: &str, who: &str) {
        let (q, t) = keys(name);
        let mut r = raw().await;
        let tail: Option<String> = r.lindex(&q, -1).await.unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as f64;
        let before = match tail {
            Some(t2) => r.zscore(&t, t2).await.unwrap(),
            None => None,
        };
        let pttl: i64 = r.pttl(name).await.unwrap();
        let score = before.unwrap_or(now + pttl.max(0) as f64) + WAIT;
        let _: () = r.zadd(&t, who, score).await.unwrap();
        let _: () = r.rpush(&q, who).await.unwrap();
    }

    pub async fn take_off_everyone(name: &str, behind: Option<&str>) {
        let (q, t) = keys(name);
        let mut r = raw().await;
        let queue: Vec<String> = r.lrange(&q, 0, -1).await.unwrap();
        let from = behind.map_or(0, |b| queue.iter().position(|w| w == b).unwrap() + 1);
        for w in &queue[from..] {
            let _: f64 = r.zincr(&t, w, -WAIT).await.unwrap();
        }
    }

    pub async fn granted_at_head(name: &str, who: &str) {
        let (q, t) = keys(name);
        let mut r = raw().await;
        let head: String = r.lpop(&q, None).await.unwrap();
        assert_eq!(head, who);
        let _: () = r.zrem(&t, who).await.unwrap();
        take_off_everyone(name, None).await;
    }

    pub async fn gives_up(name: &str, who: &str) {
        let (q, t) = keys(name);
        take_off_everyone(name, Some(who)).await;
        let mut r = raw().await;
        let _: () = r.lrem(&q, 1, who).await.unwrap();
        let _: () = r.zrem(&t, who).await.unwrap();
    }
}

/// Waits until each of `waiters` has tried twice since now: its heartbeat deadline (renewed at
/// every try, a third of the default 5 s heartbeat timeout apart) moved on twice.
async fn tried_twice_since(name: &str, waiters: &[String]) {
    let beats = format!("polylock_lock_alive:{{{name}}}");
    let mut r = raw().await;
    let mut seen = Vec::new();
    for w in waiters {
        let s: f64 = r.zscore(&beats, w).await.unwrap();
        seen.push((s, 0));
    }
    // Two tries of each take 3.4 s; a waiter that has not tried twice in 20 s has stopped.
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.iter().any(|(_, moves)| *moves < 2) {
        assert!(
            Instant::now() < deadline,
            "a waiter stopped renewing: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        for (w, (last, moves)) in waiters.iter().zip(seen.iter_mut()) {
            let s: Option<f64> = r.zscore(&beats, w).await.unwrap();
            let s = s.unwrap_or_else(|| panic!("waiter {w} left the queue"));
            if s > *last {
                (*last, *moves) = (s, *moves + 1);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_waiters_keep_their_places_through_redissons_grants() {
    // Redisson's grant takes 300 s off every queued deadline: polylock waiters chained like
    // Redisson's must stay where they are through their own tries (each one evicts the dead and
    // renews the waiter's deadline). The heartbeat timeout is the default one (a try every third
    // of it): a shorter one lets a waiter on a busy machine miss its heartbeat and requeue.
    let c = client().await;
    let name = unique("fair-mixed");
    let holder = c.fair_lock(&name).unwrap();
    holder.acquire(0, AcquireOptions::forever()).await.unwrap();
    redisson::join(&name, "redisson:0").await;
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    let mut fields = Vec::new();
    for i in 1..=3u64 {
        let lock = c.fair_lock(&name).unwrap();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let me = owner::fresh();
            lock.acquire(me, AcquireOptions::wait_for(Duration::from_secs(20)))
                .await
                .unwrap();
            order.lock().unwrap().push(i);
            lock.release(me).await.unwrap();
        }));
        queue_until(&name, fields.len() + 2).await;
        fields.push(queue(&name).await.last().unwrap().clone());
        if i == 1 {
            redisson::join(&name, "redisson:2").await;
            fields.push("redisson:2".into());
        }
    }
    // The Redisson waiter at the head is granted, twice over for good measure.
    redisson::granted_at_head(&name, "redisson:0").await;
    redisson::take_off_everyone(&name, None).await;
    let ours: Vec<String> = fields
        .iter()
        .filter(|f| !f.starts_with("redisson:"))
        .cloned()
        .collect();
    tried_twice_since(&name, &ours).await;
    assert_eq!(queue(&name).await, fields, "every waiter kept its place");
    // The Redisson waiter gives up; the lock goes to the polylock waiters in order.
    redisson::gives_up(&name, "redisson:2").await;
    holder.release(0).await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [1, 2, 3]);
    assert!(queue(&name).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_gives_up_leaves_the_queue() {
    let c = client().await;
    let name = unique("fair-giveup");
    let lock = c.fair_lock(&name).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    // A single try never queues.
    let err = lock
        .acquire(2, AcquireOptions::try_once())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(queue(&name).await.is_empty());
    // A wait that runs out leaves before it returns.
    let err = lock
        .acquire(2, AcquireOptions::wait_for(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(queue(&name).await.is_empty());
    // A cancelled wait leaves in the background.
    let l = lock.clone();
    let waiting = tokio::spawn(async move { l.acquire(3, AcquireOptions::forever()).await });
    queue_until(&name, 1).await;
    waiting.abort();
    let _ = waiting.await;
    queue_until(&name, 0).await;
    // Reentrant, with a fencing token, like the plain lock.
    let a = lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    assert_eq!(a.hold_count, 2);
    assert_eq!(lock.release(1).await.unwrap(), Released::StillHeld(1));
    assert_eq!(lock.release(1).await.unwrap(), Released::Freed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_waiter_expires_and_the_rest_keep_their_order() {
    // A holder and six queued waiters (polylock processes); SIGKILL the third: the other five
    // still run in order, all done within the holder's time plus 15 s.
    let name = unique("fair-kill");
    let opts = ClientOptions {
        fair_wait_timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    };
    let c = Client::connect_with(&url(), opts).await.unwrap();
    let holder = c.fair_lock(&name).unwrap();
    holder.acquire(0, AcquireOptions::forever()).await.unwrap();
    let log = std::env::temp_dir().join(format!("polylock-fair-{}", uuid::Uuid::new_v4().simple()));
    let mut waiters = Vec::new();
    for i in 1..=6 {
        let child = Command::new(env!("CARGO_BIN_EXE_polylock"))
            .args([
                "run",
                "--url",
                &url(),
                "--fair",
                "--name",
                &name,
                "--",
                "sh",
                "-c",
            ])
            .arg(format!("echo {i} >> {}", log.display()))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        waiters.push(child);
        queue_until(&name, i).await;
    }
    let started = Instant::now();
    let mut dead = waiters.remove(2);
    dead.kill().unwrap();
    let _ = dead.wait();
    tokio::time::sleep(Duration::from_millis(500)).await;
    holder.release(0).await.unwrap();
    for w in &mut waiters {
        let status = tokio::task::block_in_place(|| w.wait()).unwrap();
        assert!(status.success());
    }
    let took = started.elapsed();
    let order = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let order: Vec<u32> = order.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(
        order,
        [1, 2, 4, 5, 6],
        "the living waiters in the order they asked"
    );
    assert!(
        took < Duration::from_secs(15),
        "all done within 15 s of the release: {took:?}"
    );
    println!("the five living waiters were done {took:?} after the third was killed");
    assert!(queue(&name).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_fair_lock_is_the_ordinary_lock() {
    let z = zk_client().await;
    let path = zk_path("fair");
    let fair = z.fair_lock(&path).unwrap();
    let plain = z.lock(&path).unwrap();
    fair.acquire(1, AcquireOptions::forever()).await.unwrap();
    assert_eq!(plain.hold_count(1).await.unwrap(), 1, "the same hold");
    assert_eq!(fair.kind(), polylock::LockKind::Reentrant);
    plain.release(1).await.unwrap();
}

/// Calls of `command` on the server, from `INFO commandstats`.
async fn calls(conn: &mut redis::aio::MultiplexedConnection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_free_fair_lock_is_taken_without_a_subscription() {
    // A server of the test's own, so that other tests' commands do not count.
    let server = OwnRedis::start(&[]);
    let c = Client::connect(&server.url()).await.unwrap();
    let mut raw = raw_at(&server.url()).await;
    let name = unique("fair-fast");
    let lock = c.fair_lock(&name).unwrap();
    let me = owner::fresh();
    lock.acquire(me, AcquireOptions::forever()).await.unwrap(); // scripts loaded
    lock.release(me).await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut raw)
        .await
        .unwrap();
    for _ in 0..20 {
        lock.acquire(me, AcquireOptions::forever()).await.unwrap();
        assert_eq!(lock.release(me).await.unwrap(), Released::Freed);
    }
    assert_eq!(
        calls(&mut raw, "subscribe").await,
        0,
        "a free lock subscribed"
    );
    assert!(calls(&mut raw, "evalsha").await >= 40);
    // A waiter behind a holder does subscribe, and gets the lock when the holder lets go.
    let holder = owner::fresh();
    lock.acquire(holder, AcquireOptions::forever())
        .await
        .unwrap();
    let waiter = {
        let lock = c.fair_lock(&name).unwrap();
        tokio::spawn(async move {
            lock.acquire(me, AcquireOptions::wait_for(Duration::from_secs(10)))
                .await
                .map(|a| a.fencing_token)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while calls(&mut raw, "subscribe").await == 0 {
        assert!(Instant::now() < deadline, "the waiter never subscribed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    lock.release(holder).await.unwrap();
    waiter.await.unwrap().unwrap();
    assert_eq!(lock.release(me).await.unwrap(), Released::Freed);
    c.close().await.unwrap();
}
