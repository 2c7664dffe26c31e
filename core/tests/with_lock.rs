//! `Client::with_lock`: a closure run under a lock, against the real Redis and ZooKeeper.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use polylock::{AcquireOptions, ErrorKind};
use redis::AsyncCommands;

async fn eventually_free(name: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let exists: bool = raw().await.exists(name).await.unwrap();
        if !exists {
            return;
        }
        assert!(Instant::now() < deadline, "{name} was never released");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_with_one_key_exclude_each_other_and_tokens_rise() {
    let c = client().await;
    let name = unique("with-lock");
    let inside = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (c, name, inside, tokens) = (c.clone(), name.clone(), inside.clone(), tokens.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let (inside, tokens) = (inside.clone(), tokens.clone());
                c.with_lock(&name, AcquireOptions::forever(), |hold| async move {
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two inside");
                    tokens.lock().unwrap().push(hold.fencing_token);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), 30);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens rise: {tokens:?}"
    );
    let exists: bool = raw().await.exists(&name).await.unwrap();
    assert!(!exists, "released after the last call");
    // A different key is not excluded while one is held.
    let other = unique("with-lock-other");
    let out = c
        .with_lock(&name, AcquireOptions::forever(), |_| async {
            c.with_lock(&other, AcquireOptions::try_once(), |_| async { 7 })
                .await
        })
        .await
        .unwrap();
    assert_eq!(out.unwrap(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_fails_the_call_and_a_bounded_wait_times_out() {
    let c = client_with(Duration::from_millis(600)).await;
    let name = unique("with-lock-lost");
    let key = name.clone();
    let e = c
        .with_lock(&name, AcquireOptions::forever(), |hold| async move {
            let _: () = raw().await.del(&key).await.unwrap();
            tokio::time::timeout(Duration::from_secs(3), hold.lost.wait())
                .await
                .expect("the lost signal reaches the closure")
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost);
    // Held elsewhere: a bounded wait ends with Timeout and runs nothing.
    let other = client().await;
    let held = other.lock(&name).unwrap();
    held.acquire(1, AcquireOptions::forever()).await.unwrap();
    let ran = AtomicUsize::new(0);
    let e = c
        .with_lock(
            &name,
            AcquireOptions::wait_for(Duration::from_millis(100)),
            |_| async {
                ran.fetch_add(1, Ordering::SeqCst);
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    held.release(1).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_or_a_dropped_call_releases_the_lock() {
    let c = client().await;
    let name = unique("with-lock-panic");
    let (c2, n2) = (c.clone(), name.clone());
    let panicked = tokio::spawn(async move {
        c2.with_lock(&n2, AcquireOptions::forever(), |_| async {
            panic!("inside the lock");
        })
        .await
    })
    .await;
    assert!(panicked.is_err(), "the panic reached the caller");
    eventually_free(&name).await;
    // Dropped while the closure runs.
    let (c3, n3) = (c.clone(), name.clone());
    let running = tokio::spawn(async move {
        c3.with_lock(&n3, AcquireOptions::forever(), |_| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
        })
        .await
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let exists: bool = raw().await.exists(&name).await.unwrap();
        if exists {
            break;
        }
        assert!(Instant::now() < deadline, "never held");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    running.abort();
    let _ = running.await;
    eventually_free(&name).await;
}
