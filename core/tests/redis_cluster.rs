//! Redis Cluster: six nodes of the test's own (three masters with a replica each). Every key of a
//! lock lives in one slot, waiters wake on sharded channels (SSUBSCRIBE/SPUBLISH), renewals never
//! span two slots, and a master failover is followed.

mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::ha::{cli, Cluster};
use common::*;
use polylock::{AcquireOptions, Client, ClientOptions, HoldState, Released, Wait};

async fn start() -> Cluster {
    tokio::task::spawn_blocking(Cluster::start).await.unwrap()
}

async fn client(cluster: &Cluster, watchdog: Duration) -> Client {
    let opts = ClientOptions {
        watchdog_timeout: watchdog,
        ..ClientOptions::default()
    };
    Client::connect_with(&cluster.url(), opts).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_exclude_and_waiters_wake_on_sharded_channels() {
    let cluster = start().await;
    let (a, b) = (
        client(&cluster, Duration::from_secs(30)).await,
        client(&cluster, Duration::from_secs(30)).await,
    );
    // Two names on each of the three masters (random names are drawn until each has two).
    let mut per_master = std::collections::BTreeMap::<u16, Vec<String>>::new();
    for i in 0..200 {
        if per_master.len() == 3 && per_master.values().all(|v| v.len() >= 2) {
            break;
        }
        let name = unique(&format!("cluster-{i}"));
        let slot = per_master.entry(cluster.master_of(&name)).or_default();
        if slot.len() < 2 {
            slot.push(name);
        }
    }
    assert_eq!(per_master.len(), 3, "the names cover every master");
    let names: Vec<String> = per_master.into_values().flatten().collect();
    assert_eq!(names.len(), 6, "two names on each master");
    let counter = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (i, name) in names.iter().enumerate() {
        // One counter of sections inside per name: never more than one.
        let inside = Arc::new(AtomicUsize::new(0));
        for c in [&a, &b] {
            let (lock, counter, inside) = (c.lock(name).unwrap(), counter.clone(), inside.clone());
            let me = i as u64 * 10 + 1 + (c.id() == b.id()) as u64;
            tasks.push(tokio::spawn(async move {
                for _ in 0..10 {
                    lock.acquire(me, AcquireOptions::wait_for(Duration::from_secs(20)))
                        .await
                        .unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two inside");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    counter.fetch_add(1, Ordering::SeqCst);
                    inside.fetch_sub(1, Ordering::SeqCst);
                    lock.release(me).await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(counter.load(Ordering::SeqCst), 120, "every section ran");

    // A waiter wakes by the release's sharded message, not by the 30 s lease.
    let name = &names[0];
    let master = cluster.master_of(name);
    let held = a.lock(name).unwrap();
    held.acquire(1, AcquireOptions::forever()).await.unwrap();
    let waiting = {
        let l = b.lock(name).unwrap();
        tokio::spawn(async move {
            l.acquire(2, AcquireOptions::forever()).await.unwrap();
            Instant::now()
        })
    };
    let channel = format!("redisson_lock__channel:{{{name}}}");
    common::ha::wait_until("the waiter subscribed on its slot's master", 10, || {
        cli(master, &["PUBSUB", "SHARDNUMSUB", &channel]).ends_with("\n1")
    });
    let released = Instant::now();
    held.release(1).await.unwrap();
    // Woken by the message, not by the lease: the holder's watchdog lease is 30 s, and the bound
    // is half of it (a timed bound tighter than that flakes on a loaded machine).
    let woke = tokio::time::timeout(Duration::from_secs(15), waiting)
        .await
        .expect("woken by the release's sharded message, not by the 30 s lease")
        .unwrap();
    println!("woken {:?} after the release", woke - released);
    b.lock(name).unwrap().release(2).await.unwrap();
    assert_no_channels_left(&b).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

/// One client holds 40 locks over many slots: renewals, grouped by slot, keep every one of them
/// (a script over two slots would fail with CROSSSLOT at the first round and lose them). The
/// check waits for the renewals themselves, not for a time: every key's PTTL and the expiring
/// permit's deadline are seen to move up (a renewal) before the holds are checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_never_span_two_slots() {
    let cluster = start().await;
    let lease = Duration::from_secs(6);
    let c = client(&cluster, lease).await;
    let mut held = Vec::new();
    for i in 0..40 {
        let name = unique(&format!("renew-{i}"));
        let a = c
            .lock(&name)
            .unwrap()
            .acquire(1, AcquireOptions::forever())
            .await
            .unwrap();
        let master = cluster.master_of(&name);
        held.push((name, master, a));
    }
    let sem = unique("renew-exp");
    let p = c.permit_expirable_semaphore(&sem).unwrap();
    p.try_set_permits(2).await.unwrap();
    let permit = p.acquire(None, Wait::Forever).await.unwrap();
    let (sem_master, timeouts) = (cluster.master_of(&sem), format!("{{{sem}}}:timeout"));
    let permit_deadline = || -> i64 {
        // The member is 16 raw bytes (a newline among them would split redis-cli's lines).
        let script = "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')[2]";
        let score = cli(sem_master, &["EVAL", script, "1", &timeouts]);
        score.parse().unwrap_or_else(|_| panic!("{score:?}"))
    };
    // A key's PTTL only falls between renewals; a renewal sets it back to the lease.
    let mut last: Vec<Option<i64>> = vec![None; held.len()];
    let mut renewed = vec![false; held.len()];
    let first_deadline = permit_deadline();
    let deadline = Instant::now() + Duration::from_secs(90);
    while renewed.iter().any(|r| !r) || permit_deadline() <= first_deadline {
        assert!(Instant::now() < deadline, "no renewal seen: {renewed:?}");
        for (i, (name, master, _)) in held.iter().enumerate() {
            if renewed[i] {
                continue;
            }
            let pttl: i64 = cli(*master, &["PTTL", name]).parse().unwrap();
            assert!(pttl > 0, "{name} was not renewed: PTTL {pttl}");
            renewed[i] = last[i].is_some_and(|before| pttl > before);
            last[i] = Some(pttl);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (name, _, a) in &held {
        assert_eq!(a.lost.state(), HoldState::Held, "{name}");
    }
    assert!(!permit.lost.is_lost(), "the expiring permit was renewed");
    for (name, _, _) in &held {
        assert_eq!(
            c.lock(name).unwrap().release(1).await.unwrap(),
            Released::Freed
        );
    }
    p.release(&permit.id).await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_primitive_works_in_a_cluster() {
    let cluster = start().await;
    let (a, b) = (
        client(&cluster, Duration::from_secs(30)).await,
        client(&cluster, Duration::from_secs(30)).await,
    );
    let name = unique("rw");
    common::rw::readers_share_and_a_writer_excludes(&a, &b, &name).await;
    let fair = a.fair_lock(&unique("fair")).unwrap();
    fair.acquire(1, AcquireOptions::forever()).await.unwrap();
    fair.release(1).await.unwrap();
    common::sem::n_permits_bound_16_workers(&a, &b, &unique("sem")).await;
    common::sem::latch_wakes_all_waiters_at_zero(&a, &b, &unique("latch")).await;
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_failover_is_followed() {
    let cluster = start().await;
    let c = client(&cluster, Duration::from_millis(3000)).await;
    let other = client(&cluster, Duration::from_secs(30)).await;
    let name = unique("failover");
    let lock = c.lock(&name).unwrap();
    let held = lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let old = cluster.master_of(&name);
    tokio::task::block_in_place(|| cluster.wait_replicated(old));
    let started = Instant::now();
    let new = cluster.failover(&name);
    println!(
        "the replica {new} took over from {old} in {:?}",
        started.elapsed()
    );
    // New acquires in that slot follow the MOVED redirect to the new master.
    let fresh = format!("{{{name}}}:after");
    other
        .lock(&fresh)
        .unwrap()
        .acquire(1, AcquireOptions::wait_for(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(cluster.master_of(&fresh), new);
    assert!(cli(new, &["HGETALL", &fresh]).contains(other.id()));
    // The hold the replica had is kept and renewed there.
    tokio::time::sleep(Duration::from_millis(6500)).await;
    assert_eq!(held.lost.state(), HoldState::Held);
    let pttl: i64 = cli(new, &["PTTL", &name]).parse().unwrap();
    assert!(pttl > 0, "renewed on the new master: {pttl}");
    assert_eq!(lock.release(1).await.unwrap(), Released::Freed);
    other.lock(&fresh).unwrap().release(1).await.unwrap();
    c.close().await.unwrap();
    other.close().await.unwrap();
}

/// Fenced writes in a Cluster: keys with the name's hash tag run on the fence's node, and a
/// stale token is refused there; a key of another slot is a clear INVALID_ARGUMENT naming the tag
/// (Redis refuses it before anything runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_writes_stay_in_the_fences_slot() {
    let cluster = start().await;
    let c = client(&cluster, Duration::from_secs(30)).await;
    let name = unique("cluster-fence");
    let stock = format!("{{{name}}}:stock");
    let lock = c.lock(&name).unwrap();
    let held = lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    let cmd = |args: &[&str]| {
        args.iter()
            .map(|a| a.as_bytes().to_vec())
            .collect::<Vec<_>>()
    };
    let newer = held.fencing_token + 1; // as a later holder's would be
    let r = c
        .fenced_write(&name, newer, &[cmd(&["INCRBY", &stock, "5"])])
        .await
        .unwrap();
    assert_eq!(r, vec![polylock::Reply::Int(5)]);
    let stale = c
        .fenced_write(&name, held.fencing_token, &[cmd(&["INCRBY", &stock, "5"])])
        .await;
    assert_eq!(stale.unwrap_err().kind(), polylock::ErrorKind::StaleToken);
    // A key of another slot than the fence's (every other name but a few lands elsewhere).
    let elsewhere = (0..100)
        .map(|i| format!("other-{i}"))
        .find(|k| cluster.master_of(k) != cluster.master_of(&name))
        .expect("a key on another master");
    let err = c
        .fenced_write(&name, newer, &[cmd(&["SET", &elsewhere, "x"])])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), polylock::ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("hash tag"), "{err}");
    assert_eq!(
        cli(cluster.master_of(&elsewhere), &["EXISTS", &elsewhere]),
        "0"
    );
    lock.release(1).await.unwrap();
    c.close().await.unwrap();
}
