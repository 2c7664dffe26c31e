//! What core adds for the contract every runtime shares (docs/src/contract.md): the remaining
//! lease's three answers, a fixed lease's extension, and the lost reasons' stable names. The
//! conformance suite (conformance/) runs the same things from every runtime; these are core's own
//! checks, against the real Redis and ZooKeeper of scripts/servers.sh.

mod common;

use std::time::Duration;

use common::*;
use polylock::{
    owner, AcquireOptions, ErrorKind, HoldState, LeaseChange, LostReason, MultiLock, RemainingLease,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remaining_lease_tells_not_held_from_no_expiry_from_time_left() {
    let c = client().await;
    let lock = c.lock(&unique("lease-three")).unwrap();
    let me = owner::fresh();
    assert_eq!(
        lock.remaining_lease().await.unwrap(),
        RemainingLease::NotHeld
    );
    lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    let left = lock.remaining_lease().await.unwrap();
    assert!(
        matches!(left, RemainingLease::Expires(d) if d > Duration::ZERO && d <= Duration::from_secs(30)),
        "{left:?}"
    );
    assert_eq!(
        left.as_millis_code(),
        left.duration().unwrap().as_millis() as i64
    );
    lock.release(me).await.unwrap();
    assert_eq!(lock.remaining_lease().await.unwrap().as_millis_code(), -2);

    // A key held with no expiry (written by hand, as a Redisson client with no TTL would): -1.
    let mut raw = raw().await;
    let name = unique("lease-no-expiry");
    let _: () = redis::cmd("HSET")
        .arg(&name)
        .arg("someone:1")
        .arg(1)
        .query_async(&mut raw)
        .await
        .unwrap();
    let held = c.lock(&name).unwrap().remaining_lease().await.unwrap();
    assert_eq!(held, RemainingLease::NoExpiry);
    assert!(held.is_held() && held.duration().is_none());
    assert_eq!(held.as_millis_code(), -1);
    let _: () = redis::cmd("DEL")
        .arg(&name)
        .query_async(&mut raw)
        .await
        .unwrap();

    // On ZooKeeper a hold lasts with its session: no expiry while held.
    let zk = zk_client().await;
    let zl = zk.lock(&zk_path("lease-three")).unwrap();
    assert_eq!(zl.remaining_lease().await.unwrap(), RemainingLease::NotHeld);
    zl.acquire(me, AcquireOptions::forever()).await.unwrap();
    assert_eq!(
        zl.remaining_lease().await.unwrap(),
        RemainingLease::NoExpiry
    );

    // A multi-lock is held when every member is; its lease ends with its first member's.
    let multi = MultiLock::new(vec![c.lock(&unique("lease-m")).unwrap(), zl.clone()]).unwrap();
    assert_eq!(
        multi.remaining_lease().await.unwrap(),
        RemainingLease::NotHeld
    );
    zl.release(me).await.unwrap();
    multi.acquire(me, AcquireOptions::forever()).await.unwrap();
    assert!(matches!(
        multi.remaining_lease().await.unwrap(),
        RemainingLease::Expires(_)
    ));
    multi.release(me).await.unwrap();
    c.close().await.unwrap();
    zk.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_lease_is_extended_set_and_reset() {
    let c = client().await;
    let lock = c.lock(&unique("extend")).unwrap();
    let me = owner::fresh();
    let other = owner::fresh();
    // Nothing to extend without a hold, nor for a hold the watchdog keeps.
    let e = lock
        .extend_lease(me, LeaseChange::Set(Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotOwner, "{e}");
    lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    let e = lock
        .extend_lease(me, LeaseChange::Add(Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState, "{e}");
    lock.release(me).await.unwrap();

    let held = lock
        .acquire(
            me,
            AcquireOptions::try_once().with_lease(Duration::from_millis(500)),
        )
        .await
        .unwrap();
    // Set: the lease ends this long from now, on the server too.
    let d = lock
        .extend_lease(me, LeaseChange::Set(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(d, Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(held.lost.state(), HoldState::Held);
    assert!(lock.try_acquire(other, None).await.unwrap().is_none());
    let left = lock.remaining_lease().await.unwrap().duration().unwrap();
    assert!(left > Duration::from_secs(3), "{left:?}");
    // Add: what is left plus more.
    let d = lock
        .extend_lease(me, LeaseChange::Add(Duration::from_secs(2)))
        .await
        .unwrap();
    assert!(
        d > Duration::from_secs(5) && d <= Duration::from_secs(7),
        "{d:?}"
    );
    // Reset: the original length again (500 ms), and then it runs out as a fixed lease does.
    let d = lock.extend_lease(me, LeaseChange::Reset).await.unwrap();
    assert_eq!(d, Duration::from_millis(500));
    let reason = tokio::time::timeout(Duration::from_secs(3), held.lost.wait())
        .await
        .unwrap();
    assert_eq!(reason, Some(LostReason::Expired));
    let e = lock.extend_lease(me, LeaseChange::Reset).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    // The lost hold stays until its owner releases it (LOCK_LOST), as for any loss.
    assert_eq!(
        lock.release(me).await.unwrap_err().kind(),
        ErrorKind::LockLost
    );
    assert_eq!(
        lock.release(me).await.unwrap_err().kind(),
        ErrorKind::NotOwner
    );

    // A lease taken away on the server is found lost by the extension itself.
    lock.acquire(
        me,
        AcquireOptions::try_once().with_lease(Duration::from_secs(5)),
    )
    .await
    .unwrap();
    let other_client = client().await;
    assert!(other_client
        .lock(lock.name())
        .unwrap()
        .force_unlock()
        .await
        .unwrap());
    let e = lock
        .extend_lease(me, LeaseChange::Set(Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert_eq!(
        lock.lost_signal(me).unwrap().state(),
        HoldState::Lost(LostReason::Deleted)
    );
    let _ = lock.release(me).await;
    c.close().await.unwrap();
    other_client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_hold_has_no_lease_to_extend() {
    let zk = zk_client().await;
    let lock = zk.lock(&zk_path("extend")).unwrap();
    let me = owner::fresh();
    lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    let e = lock
        .extend_lease(me, LeaseChange::Set(Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState, "{e}");
    assert!(e.message().contains("session"), "{e}");
    lock.release(me).await.unwrap();
    zk.close().await.unwrap();
}

#[test]
fn lost_reasons_have_stable_names_and_numbers() {
    let names: Vec<&str> = LostReason::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(
        names,
        [
            "EXPIRED",
            "DELETED",
            "RENEWAL_FAILED",
            "SESSION_EXPIRED",
            "CLIENT_CLOSED"
        ]
    );
    for (i, r) in LostReason::ALL.iter().enumerate() {
        assert_eq!(r.number(), i as u32 + 1);
    }
}

#[test]
fn the_malformed_url_error_points_to_the_url_table() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for url in ["nosuch://127.0.0.1:1", "127.0.0.1:6379"] {
        let e = rt.block_on(polylock::Client::connect(url)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("docs/src/contract.md#urls"), "{e}");
        assert!(e.message().contains("redis+sentinel://"), "{e}");
    }
}

/// What is left of a bounded wait can fall under the 1 ms resolution of waits (a multi-lock's
/// second member, a ZooKeeper semaphore's lease after its internal mutex): that is one more try,
/// never `INVALID_ARGUMENT` (`polylock run --wait 1ms --name a --name b` once exited 64).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_millisecond_wait_is_a_try_never_an_invalid_wait() {
    let c = client().await;
    let zk = zk_client().await;
    let me = owner::fresh();
    let multi = MultiLock::new(vec![
        c.lock(&unique("ms-a")).unwrap(),
        zk.lock(&zk_path("ms-b")).unwrap(),
    ])
    .unwrap();
    let sem = zk.semaphore(&zk_path("ms-sem")).unwrap();
    sem.try_set_permits(1).await.unwrap();
    for _ in 0..20 {
        match multi
            .acquire(me, AcquireOptions::wait_for(Duration::from_millis(1)))
            .await
        {
            Ok(_) => {
                multi.release(me).await.unwrap();
            }
            Err(e) => assert_eq!(e.kind(), ErrorKind::Timeout, "{e}"),
        }
        match sem
            .acquire(1, polylock::Wait::For(Duration::from_millis(1)))
            .await
        {
            Ok(_) => sem.release(1).await.unwrap(),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Timeout, "{e}"),
        }
    }
    c.close().await.unwrap();
    zk.close().await.unwrap();
}
