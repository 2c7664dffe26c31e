//! The multi-lock over real servers: all or nothing, one canonical order, Redis and ZooKeeper
//! members together.

mod common;

use std::time::{Duration, Instant};

use common::*;
use polylock::{owner, AcquireOptions, ErrorKind, LostReason, MultiLock, Released};
use redis::AsyncCommands;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_under_a_timeout_leaves_nothing_behind() {
    let (c, other) = (client().await, client().await);
    let z = zk_client().await;
    let (a, b, p) = (unique("multi-a"), unique("multi-b"), zk_path("multi"));
    // b is held elsewhere.
    other
        .lock(&b)
        .unwrap()
        .acquire(9, AcquireOptions::forever())
        .await
        .unwrap();
    let multi = MultiLock::new(vec![
        c.lock(&a).unwrap(),
        z.lock(&p).unwrap(),
        c.lock(&b).unwrap(),
    ])
    .unwrap();
    assert!(multi.is_multi());
    assert_eq!(multi.members().len(), 3);
    let me = owner::fresh();
    let started = Instant::now();
    let err = multi
        .acquire(me, AcquireOptions::wait_for(Duration::from_millis(300)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        // The 300 ms deadline, with room for a loaded machine; a wait that ignored it would hang.
        started.elapsed() < Duration::from_secs(5),
        "one deadline for all"
    );
    // Nothing of ours is left on either server.
    let exists: bool = raw().await.exists(&a).await.unwrap();
    assert!(
        !exists,
        "the member taken before the timeout was given back"
    );
    zk_children_until(&p, |c| c.is_empty()).await;
    assert!(!multi.is_held_locally());
    // Once b is free the multi-lock takes all three, across Redis and ZooKeeper.
    other.lock(&b).unwrap().release(9).await.unwrap();
    let held = multi
        .acquire(me, AcquireOptions::wait_for(Duration::from_secs(2)))
        .await
        .unwrap();
    assert!(multi.is_locked().await.unwrap());
    assert_eq!(zk_children(&p).await.len(), 1);
    let tokens: Vec<u64> = multi
        .members()
        .iter()
        .map(|m| m.fencing_token(me).unwrap())
        .collect();
    assert_eq!(
        held.fencing_token,
        *tokens.iter().max().unwrap(),
        "the largest member token"
    );
    assert_eq!(multi.fencing_token(me), Some(held.fencing_token));
    // Reentrant per owner, like its members.
    let again = multi.acquire(me, AcquireOptions::try_once()).await.unwrap();
    assert_eq!(again.hold_count, 2);
    assert_eq!(multi.release(me).await.unwrap(), Released::StillHeld(1));
    assert_eq!(multi.release(me).await.unwrap(), Released::Freed);
    assert!(!multi.is_held_locally());
    zk_children_until(&p, |c| c.is_empty()).await;
    assert_eq!(
        multi.release(me).await.unwrap_err().kind(),
        ErrorKind::NotOwner
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_multi_locks_in_opposite_orders_never_deadlock() {
    let (c1, c2) = (client().await, client().await);
    let (a, b) = (unique("order-a"), unique("order-b"));
    let m1 = MultiLock::new(vec![c1.lock(&a).unwrap(), c1.lock(&b).unwrap()]).unwrap();
    let m2 = MultiLock::new(vec![c2.lock(&b).unwrap(), c2.lock(&a).unwrap()]).unwrap();
    assert_eq!(
        m1.name(),
        m2.name(),
        "one canonical order whatever the order given"
    );
    let started = Instant::now();
    let run = |m: polylock::Lock| {
        tokio::spawn(async move {
            let me = owner::fresh();
            for _ in 0..200 {
                m.acquire(me, AcquireOptions::wait_for(Duration::from_secs(10)))
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
                m.release(me).await.unwrap();
            }
        })
    };
    let (t1, t2) = (run(m1), run(m2));
    tokio::time::timeout(Duration::from_secs(60), async {
        t1.await.unwrap();
        t2.await.unwrap();
    })
    .await
    .expect("no deadlock");
    println!(
        "400 multi-lock sections in opposite orders took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_any_member_fires_the_multi_locks_lost_signal() {
    let c = client_with(Duration::from_millis(600)).await;
    let (a, b) = (unique("lost-a"), unique("lost-b"));
    let multi = MultiLock::new(vec![c.lock(&a).unwrap(), c.lock(&b).unwrap()]).unwrap();
    let me = owner::fresh();
    let held = multi.acquire(me, AcquireOptions::forever()).await.unwrap();
    let _: () = raw().await.del(&b).await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(3), held.lost.wait())
        .await
        .expect("lost in time");
    assert_eq!(reason, Some(LostReason::Deleted));
    // A signal asked for after the loss says so at once (no task has to catch up first).
    for _ in 0..3 {
        let again = multi.lost_signal(me).expect("a hold to follow");
        assert!(again.is_lost(), "lost at once");
    }
    assert_eq!(
        multi.release(me).await.unwrap_err().kind(),
        ErrorKind::LockLost
    );
    let exists: bool = raw().await.exists(&a).await.unwrap();
    assert!(!exists, "the member still held was released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_multi_locks_are_refused() {
    let c = client().await;
    assert_eq!(
        MultiLock::new(vec![]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let name = unique("twice");
    assert_eq!(
        MultiLock::new(vec![c.lock(&name).unwrap(), c.lock(&name).unwrap()])
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
}
