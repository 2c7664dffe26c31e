//! One owner, two first acquires at once, on every backend: they end with hold count 2 (the
//! second waits for the first's outcome and re-enters), so one release leaves the lock held and
//! only the second frees it. Before the client serialized them, both callers believed they held
//! with count 1 on Redis (one release freed the lock while the other section ran), and on
//! ZooKeeper the second waited behind its own owner's node until it timed out.

mod common;

use std::time::{Duration, Instant};

use polylock::{AcquireOptions, Client, Released};

const ROUNDS: usize = 1000;

async fn two_first_acquires_end_with_count_2(url: &str, name: &str, rounds: usize) {
    let client = Client::connect(url).await.expect("connect");
    let other = Client::connect(url).await.expect("connect a second client");
    let lock = client.lock(name).unwrap();
    let theirs = other.lock(name).unwrap();
    let owner = polylock::owner::fresh();
    let stranger = polylock::owner::fresh();
    let started = Instant::now();
    for round in 0..rounds {
        let acquire = |lock: polylock::Lock| {
            tokio::spawn(async move {
                lock.acquire(owner, AcquireOptions::wait_for(Duration::from_secs(10)))
                    .await
            })
        };
        let (a, b) = tokio::join!(acquire(lock.clone()), acquire(lock.clone()));
        let (a, b) = (a.unwrap(), b.unwrap());
        let (a, b) = (
            a.unwrap_or_else(|e| panic!("{url} round {round}: first acquire: {e}")),
            b.unwrap_or_else(|e| panic!("{url} round {round}: second acquire: {e}")),
        );
        let mut counts = [a.hold_count, b.hold_count];
        counts.sort();
        assert_eq!(
            counts,
            [1, 2],
            "{url} round {round}: the two acquires' counts"
        );
        assert_eq!(
            a.fencing_token, b.fencing_token,
            "{url} round {round}: one ownership"
        );
        assert_eq!(
            lock.hold_count(owner).await.unwrap(),
            2,
            "{url} round {round}"
        );
        assert_eq!(
            lock.release(owner).await.unwrap(),
            Released::StillHeld(1),
            "{url} round {round}: the first release"
        );
        assert!(
            theirs.try_acquire(stranger, None).await.unwrap().is_none(),
            "{url} round {round}: another owner got the lock after one of two releases"
        );
        assert_eq!(
            lock.release(owner).await.unwrap(),
            Released::Freed,
            "{url} round {round}"
        );
        assert!(
            theirs.try_acquire(stranger, None).await.unwrap().is_some(),
            "{url} round {round}: the lock is not free after both releases"
        );
        theirs.release(stranger).await.unwrap();
    }
    eprintln!("{url}: {rounds} rounds in {:?}", started.elapsed());
    client.close().await.unwrap();
    other.close().await.unwrap();
}

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    let name = format!("polylock-test:same-owner:{}", unique());
    two_first_acquires_end_with_count_2(&common::url(), &name, ROUNDS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper() {
    let name = format!("/polylock-test/same-owner-{}", unique());
    two_first_acquires_end_with_count_2(&common::zk_url(), &name, ROUNDS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql() {
    let url = std::env::var("POLYLOCK_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock".into());
    two_first_acquires_end_with_count_2(&url, &format!("same-owner-{}", unique()), ROUNDS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    let url = std::env::var("POLYLOCK_PG_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock".into());
    two_first_acquires_end_with_count_2(&url, &format!("same-owner-{}", unique()), ROUNDS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd() {
    let url = std::env::var("POLYLOCK_ETCD_URL").unwrap_or_else(|_| "etcd://127.0.0.1:2379".into());
    two_first_acquires_end_with_count_2(&url, &format!("same-owner-{}", unique()), ROUNDS).await;
}
