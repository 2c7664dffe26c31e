//! Redisson's RSemaphore, RPermitExpirableSemaphore and RCountDownLatch formats on a real Redis.

mod common;

use std::time::{Duration, Instant};

use common::sem;
use common::*;
use polylock::{ErrorKind, LostReason, Wait};
use redis::AsyncCommands;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_permits_bound_16_workers() {
    sem::n_permits_bound_16_workers(&client().await, &client().await, &unique("sem-16")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_acquires_of_every_permit_take_turns() {
    sem::two_acquires_of_every_permit_take_turns(
        &client().await,
        &client().await,
        &unique("sem-all"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_wakeups_and_bad_input() {
    sem::timeouts_wakeups_and_bad_input(&client().await, &client().await, &unique("sem-wait"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_wakes_all_waiters_at_zero() {
    sem::latch_wakes_all_waiters_at_zero(&client().await, &client().await, &unique("latch")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_is_redissons_rsemaphore_and_rcountdownlatch_format() {
    let c = client().await;
    let name = unique("sem-format");
    let mut r = raw().await;
    let mut sub = redis::Client::open(url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    sub.subscribe(format!("redisson_sc:{{{name}}}"))
        .await
        .unwrap();
    let mut messages = sub.on_message();
    let s = c.semaphore(&name).unwrap();
    assert!(s.try_set_permits(5).await.unwrap());
    let v: String = r.get(&name).await.unwrap();
    assert_eq!(v, "5", "the free permits as a string integer");
    let p = s.acquire(2, Wait::Never).await.unwrap();
    let v: String = r.get(&name).await.unwrap();
    assert_eq!(v, "3");
    p.release(&s).await.unwrap();
    use futures_util::StreamExt;
    let mut payloads = Vec::new();
    for _ in 0..2 {
        let m = tokio::time::timeout(Duration::from_secs(2), messages.next())
            .await
            .unwrap()
            .unwrap();
        payloads.push(m.get_payload::<String>().unwrap());
    }
    assert_eq!(
        payloads,
        ["5", "5"],
        "trySetPermits and release announce the count"
    );
    // A Redisson client's release (INCRBY + PUBLISH) wakes our waiter.
    let _: () = r.set(&name, 0).await.unwrap();
    let waiter = s.clone();
    let waiting =
        tokio::spawn(async move { waiter.acquire(1, Wait::For(Duration::from_secs(10))).await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let released = Instant::now();
    let _: () = r.incr(&name, 1).await.unwrap();
    let _: () = r
        .publish(format!("redisson_sc:{{{name}}}"), "1")
        .await
        .unwrap();
    waiting.await.unwrap().unwrap();
    // Woken by the message, not at the end of its 10 s wait.
    assert!(released.elapsed() < Duration::from_secs(5));

    let latch_name = unique("latch-format");
    let latch = c.count_down_latch(&latch_name).unwrap();
    let mut sub = redis::Client::open(url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    sub.subscribe(format!(
        "redisson_countdownlatch__channel__{{{latch_name}}}"
    ))
    .await
    .unwrap();
    let mut messages = sub.on_message();
    latch.try_set_count(2).await.unwrap();
    let v: String = r.get(&latch_name).await.unwrap();
    assert_eq!(v, "2");
    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
    let exists: bool = r.exists(&latch_name).await.unwrap();
    assert!(!exists, "at zero the key goes");
    let mut payloads = Vec::new();
    for _ in 0..2 {
        let m = tokio::time::timeout(Duration::from_secs(2), messages.next())
            .await
            .unwrap()
            .unwrap();
        payloads.push(m.get_payload::<String>().unwrap());
    }
    assert_eq!(
        payloads,
        ["1", "0"],
        "'1' when set, '0' when it reached zero"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiring_permits_have_ids_and_leases_in_redissons_zset() {
    let c = client().await;
    let name = unique("permits");
    let s = c.permit_expirable_semaphore(&name).unwrap();
    assert!(s.try_set_permits(2).await.unwrap());
    let p = s
        .acquire(Some(Duration::from_secs(20)), Wait::Never)
        .await
        .unwrap();
    assert_eq!(p.id.len(), 32);
    assert!(p.id.bytes().all(|b| b.is_ascii_hexdigit()));
    let mut r = raw().await;
    let members: Vec<(Vec<u8>, f64)> = r
        .zrange_withscores(format!("{{{name}}}:timeout"), 0, -1)
        .await
        .unwrap();
    assert_eq!(members.len(), 1);
    let stored: String = members[0].0.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(stored, p.id, "16 raw bytes, shown as 32 hex characters");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64;
    assert!(
        (members[0].1 - now - 20_000.0).abs() < 2_000.0,
        "score = expiry in epoch ms"
    );
    assert_eq!(s.available_permits().await.unwrap(), 1);
    let st = s.status().await.unwrap();
    assert_eq!(
        (st.available, st.permits, st.holders.len()),
        (1, Some(2), 1)
    );
    s.release(&p.id).await.unwrap();
    assert_eq!(
        s.release(&p.id).await.unwrap_err().kind(),
        ErrorKind::NotOwner,
        "twice"
    );
    assert_eq!(
        s.release(&"ab".repeat(16)).await.unwrap_err().kind(),
        ErrorKind::NotOwner,
        "an unknown id"
    );
    assert_eq!(
        s.release("nope").await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert!(!s.try_release(&p.id).await.unwrap());
    assert_eq!(s.available_permits().await.unwrap(), 2);
    let two = s.acquire_many(2, None, Wait::Never).await.unwrap();
    assert_eq!(two.len(), 2);
    assert_ne!(two[0].id, two[1].id);
    let err = s
        .acquire(None, Wait::For(Duration::from_millis(150)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    for p in two {
        s.release(&p.id).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_keeps_a_permit_and_a_fixed_lease_expires_with_the_lost_signal() {
    let c = client_with(Duration::from_millis(600)).await;
    let name = unique("permits-watchdog");
    let s = c.permit_expirable_semaphore(&name).unwrap();
    s.try_set_permits(1).await.unwrap();
    let kept = s.acquire(None, Wait::Never).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1900)).await;
    assert!(!kept.lost.is_lost());
    assert_eq!(
        s.available_permits().await.unwrap(),
        0,
        "still taken past three leases"
    );
    s.release(&kept.id).await.unwrap();
    let leased = s
        .acquire(Some(Duration::from_millis(300)), Wait::Never)
        .await
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(2), leased.lost.wait())
        .await
        .unwrap();
    assert_eq!(reason, Some(LostReason::Expired));
    assert_eq!(
        s.available_permits().await.unwrap(),
        1,
        "the expired permit came back"
    );
    // Deleted behind the holder's back: the next renewal finds it gone.
    let held = s.acquire(None, Wait::Never).await.unwrap();
    let _: () = raw()
        .await
        .del(format!("{{{name}}}:timeout"))
        .await
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(3), held.lost.wait())
        .await
        .unwrap();
    assert_eq!(reason, Some(LostReason::Deleted));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_holders_permit_comes_back_within_its_lease() {
    let name = unique("permits-crash");
    let holder = client_with(Duration::from_millis(800)).await;
    let s = holder.permit_expirable_semaphore(&name).unwrap();
    s.try_set_permits(1).await.unwrap();
    s.acquire(None, Wait::Never).await.unwrap();
    // A crash: no close, no more renewals.
    drop(s);
    drop(holder);
    let other = client().await.permit_expirable_semaphore(&name).unwrap();
    let started = Instant::now();
    let p = other
        .acquire(
            Some(Duration::from_secs(5)),
            Wait::For(Duration::from_secs(5)),
        )
        .await
        .unwrap();
    assert!(
        // Back at the 800 ms lease's end, not at the 5 s wait's.
        started.elapsed() < Duration::from_secs(4),
        "back within the 800 ms lease: {:?}",
        started.elapsed()
    );
    other.release(&p.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_client_gives_its_expiring_permits_back() {
    let c = client().await;
    let name = unique("permits-close");
    let s = c.permit_expirable_semaphore(&name).unwrap();
    s.try_set_permits(2).await.unwrap();
    let p = s.acquire(None, Wait::Never).await.unwrap();
    c.close().await.unwrap();
    assert_eq!(p.lost.wait().await, Some(LostReason::ClientClosed));
    let other = client().await.permit_expirable_semaphore(&name).unwrap();
    assert_eq!(other.available_permits().await.unwrap(), 2);
}

/// An expiring permit granted after a wait longer than its lease keeps its whole lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_lease_starts_when_granted() {
    let c = client().await;
    let name = unique("permit-after-wait");
    let s = c.permit_expirable_semaphore(&name).unwrap();
    assert!(s.try_set_permits(1).await.unwrap());
    let first = s.acquire(None, Wait::Forever).await.unwrap();
    let release_later = {
        let s = s.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1200)).await;
            s.release(&first.id).await.unwrap();
        })
    };
    let p = s
        .acquire(
            Some(Duration::from_millis(800)),
            Wait::For(Duration::from_secs(5)),
        )
        .await
        .unwrap();
    release_later.await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!p.lost.is_lost(), "lost right after a long wait");
    s.release(&p.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_acquires_keep_nothing() {
    let (a, b) = (client().await, client().await);
    sem::cancelled_acquires_keep_nothing(&a, &b, &unique("sem-cancel-1"), 1, 1500).await;
    sem::cancelled_acquires_keep_nothing(&a, &b, &unique("sem-cancel-2"), 2, 1500).await;
}

/// Expiring permits: acquires cancelled at every moment keep nothing (asked of the server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_permit_acquires_keep_nothing() {
    let c = client().await;
    let s = c
        .permit_expirable_semaphore(&unique("permit-cancel"))
        .unwrap();
    assert!(s.try_set_permits(1).await.unwrap());
    let mut granted = 0;
    for i in 0..150u64 {
        let busy = if i % 2 == 1 {
            Some(
                s.acquire(None, Wait::For(Duration::from_secs(10)))
                    .await
                    .expect("a permit leaked"),
            )
        } else {
            None
        };
        let task = {
            let s = s.clone();
            tokio::spawn(async move { s.acquire(None, Wait::Forever).await })
        };
        if let Some(p) = busy {
            let s = s.clone();
            tokio::spawn(async move { s.release(&p.id).await.unwrap() });
        }
        let until = Instant::now() + Duration::from_micros((i * 53) % 1500);
        while Instant::now() < until {
            tokio::task::yield_now().await;
        }
        task.abort();
        if let Ok(Ok(p)) = task.await {
            granted += 1;
            s.release(&p.id).await.unwrap();
        }
    }
    println!("{granted} of 150 cancelled acquires were granted first");
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.available_permits().await.unwrap() != 1 {
        assert!(
            Instant::now() < deadline,
            "a cancelled acquire kept its permit"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(s.status().await.unwrap().holders.is_empty());
}

/// Releasing an expired permit that another call already counted back says LockLost, not
/// NotOwner: the client knows it held it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_permit_counted_back_by_another_call_is_lost() {
    let c = client().await;
    let s = c
        .permit_expirable_semaphore(&unique("permit-reclaimed"))
        .unwrap();
    assert!(s.try_set_permits(1).await.unwrap());
    let p = s
        .acquire(Some(Duration::from_millis(200)), Wait::Never)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(s.available_permits().await.unwrap(), 1, "reclaimed");
    let err = s.release(&p.id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    let err = s.release(&p.id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwner, "a second release: {err}");
}

/// The status of an expiring semaphore is one read: while permits are taken and given back
/// beside it, free permits and leases always add up to the semaphore's size (read with two
/// commands, a permit taken between them was counted twice: 3 of 2, seen in the CLI's test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_is_one_consistent_read_while_permits_churn() {
    let c = client().await;
    let name = unique("permits-status");
    let s = std::sync::Arc::new(c.permit_expirable_semaphore(&name).unwrap());
    assert!(s.try_set_permits(2).await.unwrap());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn: Vec<_> = (0..2)
        .map(|_| {
            let (s, stop) = (s.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let p = s
                        .acquire(Some(Duration::from_secs(20)), Wait::Never)
                        .await
                        .unwrap();
                    s.release(&p.id).await.unwrap();
                }
            })
        })
        .collect();
    for _ in 0..500 {
        let st = s.status().await.unwrap();
        assert_eq!(
            st.available + st.holders.len() as i64,
            2,
            "free {} + leased {}",
            st.available,
            st.holders.len()
        );
        assert_eq!(st.permits, Some(2));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in churn {
        t.await.unwrap();
    }
    assert_eq!(s.available_permits().await.unwrap(), 2);
}

/// Permits taken with a fixed lease and never given back end with their lease: each loss is
/// told once, the client keeps no hold of them (three rounds of 100), and a late release of
/// one still says LockLost once, then NotOwner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_lease_permits_never_released_leave_no_hold_behind() {
    let c = client().await;
    let s = c
        .permit_expirable_semaphore(&unique("permits-ended"))
        .unwrap();
    assert!(s.try_set_permits(100).await.unwrap());
    let mut events = c.lost_events();
    let mut last = None;
    for round in 0..3 {
        let taken = s
            .acquire_many(
                100,
                Some(Duration::from_millis(200)),
                Wait::For(Duration::from_secs(2)),
            )
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(
            until_no_holds(&c, "expiring_semaphore", Duration::from_secs(3)).await,
            0.0,
            "round {round}: no hold left"
        );
        let told = std::iter::from_fn(|| events.try_recv().ok()).count();
        assert_eq!(told, 100, "round {round}: each loss told once");
        last = taken.into_iter().next();
    }
    let p = last.unwrap();
    assert!(p.lost.is_lost());
    let err = s.release(&p.id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    let err = s.release(&p.id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwner, "a second release: {err}");
}
