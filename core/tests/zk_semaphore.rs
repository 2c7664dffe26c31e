//! Curator's InterProcessSemaphoreV2 (leases, SharedCount) and a SharedCount latch on a real
//! ZooKeeper.

mod common;

use std::time::Duration;

use common::sem;
use common::*;
use polylock::{Client, ClientOptions, ErrorKind, LostReason, Wait};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_permits_bound_16_workers() {
    let path = zk_path("sem-16");
    sem::n_permits_bound_16_workers(&zk_client().await, &zk_client().await, &path).await;
    zk_children_until(&format!("{path}/leases"), |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_acquires_of_every_permit_take_turns() {
    let path = zk_path("sem-all");
    sem::two_acquires_of_every_permit_take_turns(&zk_client().await, &zk_client().await, &path)
        .await;
    zk_children_until(&format!("{path}/leases"), |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_wakeups_and_bad_input() {
    let path = zk_path("sem-wait");
    sem::timeouts_wakeups_and_bad_input(&zk_client().await, &zk_client().await, &path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_wakes_all_waiters_at_zero() {
    let path = zk_path("latch");
    sem::latch_wakes_all_waiters_at_zero(&zk_client().await, &zk_client().await, &path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_and_count_are_curators_nodes() {
    let c = zk_client().await;
    let path = zk_path("sem-format");
    let s = c.semaphore(&path).unwrap();
    assert!(s.holds_permits());
    s.try_set_permits(4).await.unwrap();
    let (data, _) = zk_raw()
        .await
        .get_data(&format!("{path}/count"))
        .await
        .unwrap();
    assert_eq!(
        data,
        4i32.to_be_bytes(),
        "a SharedCount: 4 bytes big-endian"
    );
    let p = s.acquire(2, Wait::Never).await.unwrap();
    let leases = zk_children(&format!("{path}/leases")).await;
    assert_eq!(leases.len(), 2);
    assert!(
        leases
            .iter()
            .all(|l| l.starts_with("_c_") && l.contains("-lease-")),
        "{leases:?}"
    );
    assert_eq!(s.held_permits(), 2);
    let st = s.status().await.unwrap();
    assert_eq!(
        (st.available, st.permits, st.holders.len()),
        (2, Some(4), 2)
    );
    // This client holds 2: it cannot give back 3.
    assert_eq!(s.release(3).await.unwrap_err().kind(), ErrorKind::NotOwner);
    let other = zk_client().await.semaphore(&path).unwrap();
    assert_eq!(
        other.release(1).await.unwrap_err().kind(),
        ErrorKind::NotOwner
    );
    p.release(&s).await.unwrap();
    zk_children_until(&format!("{path}/leases"), |c| c.is_empty()).await;
    assert_eq!(s.held_permits(), 0);
    // More permits wake a waiter (it watches the count too).
    s.acquire(4, Wait::Never).await.unwrap();
    let waiter = other.clone();
    let waiting =
        tokio::spawn(async move { waiter.acquire(1, Wait::For(Duration::from_secs(10))).await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(!waiting.is_finished());
    s.add_permits(1).await.unwrap();
    waiting.await.unwrap().unwrap();
    s.release(4).await.unwrap();
    other.release(1).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_session_frees_the_leases_and_tells_the_holder() {
    let opts = ClientOptions {
        session_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    let c = Client::connect_with(&zk_url(), opts).await.unwrap();
    let path = zk_path("sem-expiry");
    let s = c.semaphore(&path).unwrap();
    s.try_set_permits(1).await.unwrap();
    let p = s.acquire(1, Wait::Never).await.unwrap();
    c.debug_close_zk_session().await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(10), p.lost.clone().unwrap().wait())
        .await
        .expect("lost in time");
    assert_eq!(reason, Some(LostReason::SessionExpired));
    let other = zk_client().await.semaphore(&path).unwrap();
    let q = other
        .acquire(1, Wait::For(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(p.release(&s).await.unwrap_err().kind(), ErrorKind::LockLost);
    q.release(&other).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiring_permits_are_unsupported_and_timeouts_leave_no_lease() {
    let c = zk_client().await;
    let path = zk_path("sem-unsupported");
    assert_eq!(
        c.permit_expirable_semaphore(&path).unwrap_err().kind(),
        ErrorKind::Unsupported
    );
    let s = c.semaphore(&path).unwrap();
    s.try_set_permits(1).await.unwrap();
    let p = s.acquire(1, Wait::Never).await.unwrap();
    let err = s
        .acquire(1, Wait::For(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    // The timed-out wait deleted its lease and let the internal mutex go before returning.
    assert_eq!(zk_children(&format!("{path}/leases")).await.len(), 1);
    assert!(zk_children(&format!("{path}/locks")).await.is_empty());
    p.release(&s).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_acquires_keep_nothing() {
    let (a, b) = (zk_client().await, zk_client().await);
    for want in [1, 2] {
        let path = zk_path("sem-cancel");
        sem::cancelled_acquires_keep_nothing(&a, &b, &path, want, 20_000).await;
        // No lease node is left on the server.
        let leases = zk_children_until(&format!("{path}/leases"), |c| c.is_empty()).await;
        assert!(leases.is_empty(), "{leases:?}");
    }
}

/// Releases of one permit each from many threads at once give back as many different leases:
/// the pick of a lease and its removal from the client's registry are one step, so two releases
/// never pick the same lease (which would leave another one held for the session's life).
#[test]
fn concurrent_releases_give_back_different_leases() {
    const N: usize = 8;
    let path = zk_path("sem-release-race");
    let c = polylock::runtime::block_on(zk_client()).unwrap();
    let s = c.semaphore(&path).unwrap();
    let t = s.clone();
    polylock::runtime::block_on(async move { t.try_set_permits(N as u32).await })
        .unwrap()
        .unwrap();
    for round in 0..40 {
        let t = s.clone();
        polylock::runtime::block_on(async move { t.acquire(N as u32, Wait::Never).await })
            .unwrap()
            .unwrap();
        assert_eq!(s.held_permits(), N as u32);
        let start = std::sync::Barrier::new(N);
        let results: Vec<_> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..N)
                .map(|_| {
                    let (t, start) = (s.clone(), &start);
                    scope.spawn(move || {
                        start.wait();
                        polylock::runtime::block_on(async move { t.release(1).await }).unwrap()
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for r in results {
            r.unwrap();
        }
        assert_eq!(s.held_permits(), 0, "round {round}: a lease is still held");
        let t = s.clone();
        let free = polylock::runtime::block_on(async move { t.available_permits().await })
            .unwrap()
            .unwrap();
        assert_eq!(
            free, N as i64,
            "round {round}: lease nodes left on the server"
        );
    }
    polylock::runtime::block_on(async move { c.close().await })
        .unwrap()
        .unwrap();
}

/// A release whose delete fails keeps the lease: it stays registered as this client's (held,
/// releasable later) and its node stays on the server, so nothing is forgotten. Before, the lease
/// left the registry before the server deleted it, and a failed delete left its node for the
/// session's life with nobody knowing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_release_keeps_the_lease() {
    let server = zk_url()
        .trim_start_matches("zk://")
        .split(',')
        .next()
        .unwrap()
        .to_string();
    let proxy = proxy::Proxy::start(&server).await;
    let options = ClientOptions {
        command_timeout: Duration::from_millis(500),
        session_timeout: Duration::from_secs(30),
        ..ClientOptions::default()
    };
    let c = Client::connect_with(&format!("zk://127.0.0.1:{}", proxy.port), options)
        .await
        .unwrap();
    let path = zk_path("sem-failed-release");
    let s = c.semaphore(&path).unwrap();
    s.try_set_permits(3).await.unwrap();
    let _p = s.acquire(2, Wait::Never).await.unwrap();
    assert_eq!(zk_children(&format!("{path}/leases")).await.len(), 2);
    // The connection stops delivering: the delete cannot reach the server.
    proxy.freeze();
    let failed = tokio::time::timeout(Duration::from_secs(60), s.release(1))
        .await
        .expect("the release ends");
    assert!(
        failed.is_err(),
        "a release through a dead connection: {failed:?}"
    );
    assert_eq!(
        s.held_permits(),
        2,
        "the lease whose delete failed is still ours"
    );
    proxy.thaw();
    // Once the client is through again, both leases are still there and can be given back.
    let mut released = s.release(2).await;
    for _ in 0..100 {
        if released.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        released = s.release(2).await;
    }
    released.expect("both leases are given back after the connection came back");
    assert_eq!(s.held_permits(), 0);
    zk_children_until(&format!("{path}/leases"), |l| l.is_empty()).await;
    c.close().await.unwrap();
}
