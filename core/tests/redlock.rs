//! RedLock against 3 and 5 redis-servers of the test's own, each on its own port: exclusion,
//! servers stopped and restarted empty while the lock is held, and nothing left behind.

mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use polylock::{owner, AcquireOptions, Client, ClientOptions, ErrorKind, HoldState, LostReason};
use redis::AsyncCommands;

fn masters(n: usize) -> Vec<OwnRedis> {
    (0..n).map(|_| OwnRedis::start(&[])).collect()
}

fn urls(servers: &[OwnRedis]) -> Vec<String> {
    servers.iter().map(|s| s.url()).collect()
}

async fn redlock(servers: &[OwnRedis]) -> Client {
    Client::connect_redlock(&urls(servers)).await.unwrap()
}

async fn redlock_with(servers: &[OwnRedis], watchdog: Duration) -> Client {
    let options = ClientOptions {
        watchdog_timeout: watchdog,
        ..ClientOptions::default()
    };
    Client::connect_redlock_with(&urls(servers), options)
        .await
        .unwrap()
}

/// The fields of the lock's hash on one server.
async fn fields_on(server: &OwnRedis, name: &str) -> Vec<(String, String)> {
    let mut raw = raw_at(&server.url()).await;
    raw.hgetall(name).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_master_stores_an_rlock_and_reentry_stays_in_the_client() {
    let servers = masters(3);
    let c = redlock(&servers).await;
    let name = unique("redlock-format");
    let lock = c.lock(&name).unwrap();
    let me = owner::fresh();
    let a = lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    let b = lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    assert_eq!((a.hold_count, b.hold_count), (1, 2));
    let field = format!("{}:{me}", c.id());
    let mut tokens = Vec::new();
    for s in &servers {
        assert_eq!(
            fields_on(s, &name).await,
            vec![(field.clone(), "1".to_string())],
            "each master holds Redisson's RLock hash with one hold"
        );
        let mut raw = raw_at(&s.url()).await;
        let pttl: i64 = raw.pttl(&name).await.unwrap();
        assert!(pttl > 20_000, "the watchdog lease is set: {pttl}");
        let t: u64 = raw
            .get(format!("redisson_lock_token:{{{name}}}"))
            .await
            .unwrap();
        tokens.push(t);
    }
    assert_eq!(a.fencing_token, *tokens.iter().max().unwrap());
    let status = lock.status().await.unwrap();
    assert!(status.locked);
    assert_eq!(status.holders.len(), 1);
    assert_eq!(status.holders[0].owner, field);
    assert!(lock.is_locked().await.unwrap());
    lock.release(me).await.unwrap();
    assert!(lock.is_locked().await.unwrap(), "one hold left");
    lock.release(me).await.unwrap();
    for s in &servers {
        assert!(fields_on(s, &name).await.is_empty(), "released everywhere");
    }
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(
        lock.release(me).await.unwrap_err().kind(),
        ErrorKind::NotOwner
    );
    c.close().await.unwrap();
}

/// Clients on the same masters keep a read-modify-write counter exact.
async fn counter_stays_exact(n: usize, clients: usize, tasks: usize, rounds: u64) {
    let servers = masters(n);
    let name = unique("redlock-counter");
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicUsize::new(0));
    let mut joins = Vec::new();
    let mut all = Vec::new();
    for _ in 0..clients {
        let c = redlock(&servers).await;
        all.push(c.clone());
        for _ in 0..tasks {
            let (c, name, counter, inside) =
                (c.clone(), name.clone(), counter.clone(), inside.clone());
            joins.push(tokio::spawn(async move {
                let lock = c.lock(&name).unwrap();
                let me = owner::fresh();
                for _ in 0..rounds {
                    lock.acquire(me, AcquireOptions::wait_for(Duration::from_secs(20)))
                        .await
                        .unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two inside");
                    let v = counter.load(Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    counter.store(v + 1, Ordering::SeqCst);
                    inside.fetch_sub(1, Ordering::SeqCst);
                    lock.release(me).await.unwrap();
                }
            }));
        }
    }
    let started = Instant::now();
    for j in joins {
        j.await.unwrap();
    }
    let total = (clients * tasks) as u64 * rounds;
    println!(
        "{n} masters: {total} increments by {} owners in {:?}",
        clients * tasks,
        started.elapsed()
    );
    assert_eq!(counter.load(Ordering::SeqCst), total);
    for s in &servers {
        assert!(fields_on(s, &name).await.is_empty(), "nothing left held");
    }
    for c in all {
        assert_no_channels_left(&c).await;
        c.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_stays_exact_on_three_masters() {
    counter_stays_exact(3, 3, 3, 15).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_stays_exact_on_five_masters() {
    counter_stays_exact(5, 2, 3, 10).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minority_of_masters_down_changes_nothing() {
    let mut servers = masters(5);
    let c = redlock(&servers).await;
    let other = redlock(&servers).await;
    servers[1].stop();
    servers[3].stop();
    let name = unique("redlock-minority");
    let lock = c.lock(&name).unwrap();
    let me = owner::fresh();
    lock.acquire(me, AcquireOptions::wait_for(Duration::from_secs(5)))
        .await
        .unwrap();
    for i in [0, 2, 4] {
        assert_eq!(fields_on(&servers[i], &name).await.len(), 1);
    }
    let err = other
        .lock(&name)
        .unwrap()
        .acquire(
            owner::fresh(),
            AcquireOptions::wait_for(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    lock.release(me).await.unwrap();
    let second = other
        .lock(&name)
        .unwrap()
        .acquire(
            owner::fresh(),
            AcquireOptions::wait_for(Duration::from_secs(5)),
        )
        .await
        .unwrap();
    assert_eq!(second.lost.state(), HoldState::Held);
    other.close().await.unwrap();
    for i in [0, 2, 4] {
        assert!(fields_on(&servers[i], &name).await.is_empty());
    }
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_majority_down_while_held_fires_the_lost_signal() {
    let mut servers = masters(3);
    let watchdog = Duration::from_millis(1500);
    let c = redlock_with(&servers, watchdog).await;
    let name = unique("redlock-majority-down");
    let lock = c.lock(&name).unwrap();
    let me = owner::fresh();
    let held = lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    servers[0].stop();
    servers[2].stop();
    let stopped = Instant::now();
    let reason = tokio::time::timeout(Duration::from_secs(5), held.lost.wait())
        .await
        .expect("the lost signal fires once no majority renews")
        .expect("lost, not released");
    let after = stopped.elapsed();
    println!("lost {after:?} after 2 of 3 masters stopped ({reason:?})");
    assert_eq!(reason, LostReason::RenewalFailed);
    assert!(after <= watchdog + Duration::from_millis(700), "{after:?}");
    let err = lock.release(me).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    // With no majority to ask, a new acquire fails at once with a connection error.
    let err = lock
        .acquire(me, AcquireOptions::wait_for(Duration::from_secs(2)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("majority"), "{err}");
    c.close().await.unwrap();
}

/// The documented behaviour of a master restarted empty (no persistence) while the lock is held:
/// the lock rests on the others. One such restart changes nothing for others (they cannot get a
/// majority); a second within the lease lets a contender in while the holder still believes it
/// holds the lock, until its next renewal (a third of the lease) tells it the hold is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_restarted_empty_while_held() {
    let mut servers = masters(3);
    let watchdog = Duration::from_millis(1500);
    let c = redlock_with(&servers, watchdog).await;
    let other = redlock(&servers).await;
    let name = unique("redlock-restart");
    let lock = c.lock(&name).unwrap();
    let me = owner::fresh();
    let held = lock.acquire(me, AcquireOptions::forever()).await.unwrap();

    servers[2].restart();
    assert!(
        fields_on(&servers[2], &name).await.is_empty(),
        "restarted empty"
    );
    let err = other
        .lock(&name)
        .unwrap()
        .acquire(
            owner::fresh(),
            AcquireOptions::wait_for(Duration::from_millis(500)),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Timeout,
        "still held by a majority: {err}"
    );
    tokio::time::sleep(watchdog * 2).await;
    assert_eq!(
        held.lost.state(),
        HoldState::Held,
        "renewed on the other two"
    );
    assert!(
        fields_on(&servers[2], &name).await.is_empty(),
        "renewal does not write the lock back onto the restarted master"
    );

    // A second master restarted empty within the lease: a contender gets a majority at once.
    servers[0].restart();
    let contender = owner::fresh();
    let second = other
        .lock(&name)
        .unwrap()
        .acquire(contender, AcquireOptions::wait_for(Duration::from_secs(5)))
        .await
        .expect("two masters forgot the lock: the contender gets a majority");
    let granted = Instant::now();
    let reason = tokio::time::timeout(watchdog * 3, held.lost.wait())
        .await
        .expect("the holder learns at its next renewal")
        .unwrap();
    println!(
        "the first holder learnt it lost the lock {:?} after the contender got it",
        granted.elapsed()
    );
    // Found by a renewal (every watchdog / 3): the end of its lease would say Expired.
    assert_eq!(reason, LostReason::Deleted);
    // The contender's fencing token comes from counters that restarted at zero: whether it is
    // larger than the first holder's depends on how many votes those counters handed out since.
    // A resource that must refuse stale holders keeps its own (see the README).
    println!(
        "fencing tokens: first holder {}, contender {}",
        held.fencing_token, second.fencing_token
    );
    other.lock(&name).unwrap().release(contender).await.unwrap();
    let _ = lock.release(me).await;
    c.close().await.unwrap();
    other.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_and_cancelled_waits_leave_nothing_behind() {
    let servers = masters(3);
    let c = redlock(&servers).await;
    let w = redlock(&servers).await;
    let name = unique("redlock-timeout");
    let lock = c.lock(&name).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let started = Instant::now();
    let err = w
        .lock(&name)
        .unwrap()
        .acquire(2, AcquireOptions::wait_for(Duration::from_millis(400)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    // The 400 ms deadline, with room for a loaded machine (the lock is held forever).
    assert!(started.elapsed() < Duration::from_secs(5));
    let waiting = {
        let l = w.lock(&name).unwrap();
        tokio::spawn(async move { l.acquire(3, AcquireOptions::forever()).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    for s in &servers {
        let fields = fields_on(s, &name).await;
        assert_eq!(fields.len(), 1, "only the holder: {fields:?}");
        assert!(fields[0].0.starts_with(c.id()));
    }
    // A release wakes a waiter on the other client by message, not by its TTL (30 s).
    let waiting = {
        let l = w.lock(&name).unwrap();
        tokio::spawn(async move { l.acquire(4, AcquireOptions::forever()).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let released = Instant::now();
    lock.release(1).await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), waiting)
        .await
        .expect("woken by the release")
        .unwrap()
        .unwrap();
    println!(
        "waiter got the RedLock {:?} after the release",
        released.elapsed()
    );
    w.lock(&name).unwrap().release(4).await.unwrap();
    assert_no_channels_left(&w).await;
    c.close().await.unwrap();
    w.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_redlock_input_gets_typed_errors() {
    let mut servers = masters(3);
    let u = urls(&servers);
    let err = Client::connect_redlock(&u[..2]).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = Client::connect_redlock(&[u[0].as_str(), u[1].as_str(), "zk://127.0.0.1:2181"])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = Client::connect_redlock(&[&u[0], &u[1], &u[0]])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("twice"), "{err}");
    let c = redlock(&servers).await;
    for err in [
        c.read_write_lock("x").unwrap_err(),
        c.fair_lock("x").unwrap_err(),
        c.semaphore("x").unwrap_err(),
        c.count_down_latch("x").unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    }
    assert_eq!(c.lock("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    c.close().await.unwrap();
    assert_eq!(c.lock("x").unwrap_err().kind(), ErrorKind::InvalidState);

    // A majority down at connect: a connection error. A minority: connected, and the missing
    // master joins when it comes back.
    servers[0].stop();
    servers[1].stop();
    let err = Client::connect_redlock(&u).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    servers[1].start_again();
    let c = redlock(&servers).await;
    servers[0].start_again();
    let name = unique("redlock-rejoin");
    let lock = c.lock(&name).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        lock.acquire(1, AcquireOptions::forever()).await.unwrap();
        let on_first = fields_on(&servers[0], &name).await.len();
        lock.release(1).await.unwrap();
        if on_first == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the master never rejoined");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    c.close().await.unwrap();

    // A wrong password on any master fails the connect, whatever the others say.
    let secured = OwnRedis::start(&["--requirepass", "s3cret"]);
    let with = |password: &str| {
        vec![
            format!("redis://:{password}@127.0.0.1:{}", secured.port),
            u[1].clone(),
            u[2].clone(),
        ]
    };
    let err = Client::connect_redlock(&with("wrong")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    let c = Client::connect_redlock(&with("s3cret")).await.unwrap();
    c.close().await.unwrap();
}

/// Make the masters behind `slow` answer 300 ms late (past a 2 s lease's 200 ms per vote), and on
/// time again after `d`; the proxies come back when they do.
fn late_for(slow: Vec<proxy::Proxy>, d: Duration) -> tokio::task::JoinHandle<Vec<proxy::Proxy>> {
    for p in &slow {
        p.delay_replies(Duration::from_millis(300));
    }
    tokio::spawn(async move {
        tokio::time::sleep(d).await;
        for p in &slow {
            p.delay_replies(Duration::ZERO);
        }
        slow
    })
}

/// Two of three masters that answer a vote too late for a while (a busy machine): an unbounded
/// acquire goes on with another round instead of failing on the first, and when the masters
/// stay that slow it fails with a connection error after the command timeout, not later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masters_that_answer_late_for_a_while_cost_rounds_not_an_error() {
    let servers = masters(3);
    let mut slow = Vec::new();
    for s in &servers[..2] {
        slow.push(proxy::Proxy::start(&format!("127.0.0.1:{}", s.port)).await);
    }
    let mut addresses: Vec<String> = slow
        .iter()
        .map(|p| format!("redis://127.0.0.1:{}", p.port))
        .collect();
    addresses.push(servers[2].url());
    // A 2 s lease gives each master 200 ms (a tenth) to answer a vote.
    let options = ClientOptions {
        watchdog_timeout: Duration::from_secs(2),
        command_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    let c = Client::connect_redlock_with(&addresses, options)
        .await
        .unwrap();
    let lock = c.lock(&unique("redlock-late")).unwrap();
    let me = owner::fresh();

    let fast_again = late_for(slow, Duration::from_millis(400));
    let started = Instant::now();
    let held = lock.acquire(me, AcquireOptions::forever()).await;
    println!("acquired after {:?} of late answers", started.elapsed());
    held.expect("late answers for 400 ms cost rounds, not an error");
    lock.release(me).await.unwrap();

    let slow = fast_again.await.unwrap();
    // A try with no wait, too: the late rounds say nothing about the lock, so they are no "not
    // acquired" and no error; the try answers once the masters do.
    let fast_again = late_for(slow, Duration::from_millis(400));
    let tried = lock.try_acquire(me, None).await;
    let held = tried.expect("a try during 400 ms of late answers costs rounds, not an error");
    assert!(
        held.is_some(),
        "a free lock, tried once the masters answer: acquired"
    );
    lock.release(me).await.unwrap();

    let slow = fast_again.await.unwrap();
    for p in &slow {
        p.delay_replies(Duration::from_millis(300));
    }
    let started = Instant::now();
    let err = lock
        .acquire(me, AcquireOptions::forever())
        .await
        .unwrap_err();
    let after = started.elapsed();
    println!("failed after {after:?} of late answers: {err}");
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("did not answer within"), "{err}");
    assert!(
        after >= Duration::from_secs(2) && after < Duration::from_secs(4),
        "{after:?}"
    );
    for p in &slow {
        p.delay_replies(Duration::ZERO);
    }
    c.close().await.unwrap();
}
