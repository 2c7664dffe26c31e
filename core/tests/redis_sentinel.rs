//! Redis Sentinel: a master with two replicas and three sentinels of the test's own. The client
//! finds the master through the sentinels and follows it through a failover; holds the new master
//! has are kept, holds it never got are lost (and their holders told); replicas' acknowledgement
//! (`wait_replicas`) refuses an acquire that too few replicas have.

mod common;

use std::time::{Duration, Instant};

use common::ha::{cli, Sentinels};
use common::*;
use polylock::{AcquireOptions, Client, ClientOptions, ErrorKind, HoldState, LostReason};

async fn start() -> Sentinels {
    tokio::task::spawn_blocking(Sentinels::start).await.unwrap()
}

fn fields(port: u16, name: &str) -> String {
    cli(port, &["HGETALL", name])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_is_found_and_followed_through_a_failover() {
    let ha = start().await;
    let opts = ClientOptions {
        watchdog_timeout: Duration::from_millis(6000),
        ..ClientOptions::default()
    };
    let c = Client::connect_with(&ha.url(), opts.clone()).await.unwrap();
    let other = Client::connect_with(&ha.url(), opts).await.unwrap();
    let first = ha.master_port();

    let name = unique("sentinel-kept");
    let lock = c.lock(&name).unwrap();
    let held = lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    assert!(fields(first, &name).contains(&format!("{}:1", c.id())));
    // Replicated before the failover: the new master has it.
    assert_eq!(cli(first, &["WAIT", "2", "2000"]), "2");
    let waiting = {
        let l = other.lock(&name).unwrap();
        tokio::spawn(async move {
            loop {
                match l.acquire(2, AcquireOptions::forever()).await {
                    Ok(_) => return Instant::now(),
                    Err(e) if e.kind() == ErrorKind::Connection => {
                        tokio::time::sleep(Duration::from_millis(100)).await
                    }
                    Err(e) => panic!("waiter: {e}"),
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished());

    let started = Instant::now();
    let second = ha.failover();
    assert_ne!(first, second);
    println!(
        "the sentinels named a new master {:?} after the request",
        started.elapsed()
    );

    // The client follows the new master: an acquire made after that lands there. (One made in
    // the moment before it noticed may still land on the old master, whose data the failover
    // then drops: such a hold is lost at its next renewal, as the next test shows.)
    let fresh = unique("sentinel-after");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let l = c.lock(&fresh).unwrap();
        if let Ok(Some(_)) = l.try_acquire(3, None).await {
            if fields(second, &fresh).contains(&format!("{}:3", c.id())) {
                break;
            }
            let _ = l.release(3).await;
        }
        assert!(
            Instant::now() < deadline,
            "the client never followed the new master"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "the client locked on the new master {:?} after the request",
        started.elapsed()
    );
    // The hold the new master had is kept: renewed there past several leases.
    tokio::time::sleep(Duration::from_millis(12_500)).await;
    assert_eq!(
        held.lost.state(),
        HoldState::Held,
        "kept across the failover"
    );
    let pttl: i64 = cli(second, &["PTTL", &name]).parse().unwrap();
    assert!(pttl > 2000, "renewed on the new master: {pttl}");
    lock.release(1).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the waiter gets the lock on the new master")
        .unwrap();
    let _ = got;
    other.lock(&name).unwrap().release(2).await.unwrap();
    c.lock(&fresh).unwrap().release(3).await.unwrap();
    c.close().await.unwrap();
    other.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_the_new_master_never_had_is_lost() {
    let mut ha = start().await;
    let opts = ClientOptions {
        watchdog_timeout: Duration::from_millis(3000),
        ..ClientOptions::default()
    };
    let c = Client::connect_with(&ha.url(), opts).await.unwrap();
    let old = ha.master_port();
    // The replicas stop and the master drops their links before the acquire, so that neither
    // receives it (a stopped replica would still read what its socket had buffered); then the
    // master dies.
    ha.servers[1].signal("-STOP");
    ha.servers[2].signal("-STOP");
    cli(old, &["CLIENT", "KILL", "TYPE", "replica"]);
    let name = unique("sentinel-unreplicated");
    let held = c
        .lock(&name)
        .unwrap()
        .acquire(1, AcquireOptions::forever())
        .await
        .unwrap();
    let m = ha.index_of(old);
    ha.servers[m].stop();
    ha.servers[1].signal("-CONT");
    ha.servers[2].signal("-CONT");
    let killed = Instant::now();
    let new = ha.wait_new_master(old);
    println!(
        "new master {new} {:?} after the old one died",
        killed.elapsed()
    );
    let reason = tokio::time::timeout(Duration::from_secs(20), held.lost.wait())
        .await
        .expect("the holder hears that its hold is gone")
        .unwrap();
    println!(
        "the holder heard {reason:?} {:?} after the old master died",
        killed.elapsed()
    );
    assert!(
        matches!(reason, LostReason::Deleted | LostReason::RenewalFailed),
        "{reason:?}"
    );
    let err = c.lock(&name).unwrap().release(1).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    // And the lock is free on the new master for anybody.
    assert!(c
        .lock(&name)
        .unwrap()
        .acquire(2, AcquireOptions::wait_for(Duration::from_secs(10)))
        .await
        .is_ok());
    c.close().await.unwrap();
}

/// `?wait_replicas=2`: an acquire both replicas acknowledge succeeds; with one replica stopped it
/// fails with NotReplicated and leaves nothing on the master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_replicas_refuses_an_acquire_too_few_replicas_have() {
    let ha = start().await;
    let master = ha.master_port();
    for url in [
        format!("{}?wait_replicas=2&wait_timeout=200ms", ha.url()),
        format!("redis://127.0.0.1:{master}?wait_replicas=2&wait_timeout=200ms"),
    ] {
        let c = Client::connect(&url).await.unwrap();
        let name = unique("acked");
        let lock = c.lock(&name).unwrap();
        lock.acquire(1, AcquireOptions::forever()).await.unwrap();
        lock.release(1).await.unwrap();

        let stopped = ha
            .servers
            .iter()
            .find(|s| s.port != master)
            .expect("a replica");
        stopped.signal("-STOP");
        let started = Instant::now();
        let err = lock
            .acquire(1, AcquireOptions::forever())
            .await
            .unwrap_err();
        stopped.signal("-CONT");
        assert_eq!(err.kind(), ErrorKind::NotReplicated, "{err}");
        // At wait_timeout (200 ms), with room for a loaded machine; the acquire has no deadline.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(fields(master, &name), "", "given back: {url}");
        assert!(!lock.is_held_locally());
        // Back in sync, acquires are acknowledged again.
        common::ha::wait_until("the replica caught up", 20, || {
            cli(master, &["WAIT", "2", "100"]) == "2"
        });
        lock.acquire(1, AcquireOptions::forever()).await.unwrap();
        lock.release(1).await.unwrap();
        c.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sentinel_urls_and_unknown_masters_get_typed_errors() {
    let ha = start().await;
    let unknown = ha.url().replace("/mymaster", "/nosuchmaster");
    let err = Client::connect(&unknown).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("nosuchmaster"), "{err}");
    let err = Client::connect("redis+sentinel://127.0.0.1:1/mymaster")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    let err = Client::connect("redis+sentinel://127.0.0.1:26379")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}
