//! Semaphore and latch behaviour shared by the Redis, ZooKeeper and etcd suites.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use polylock::{Client, ErrorKind, Wait};

fn within(ms: u64) -> Wait {
    Wait::For(Duration::from_millis(ms))
}

/// With N permits and 16 workers on two clients, at most N are inside at once, exactly N at the
/// busiest moment, and every worker finishes.
pub async fn n_permits_bound_16_workers(a: &Client, b: &Client, name: &str) {
    let permits = 3;
    assert!(a
        .semaphore(name)
        .unwrap()
        .try_set_permits(permits)
        .await
        .unwrap());
    assert!(
        !b.semaphore(name).unwrap().try_set_permits(9).await.unwrap(),
        "set once"
    );
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let sem = if i % 2 == 0 { a } else { b }.semaphore(name).unwrap();
        let (inside, most) = (inside.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..4 {
                let p = sem
                    .acquire(1, Wait::For(Duration::from_secs(30)))
                    .await
                    .unwrap();
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                // Until all the permits have been seen held at once, stay up to 2 s for the others:
                // a slow acquire (several round trips on ZooKeeper, on a loaded machine) must not
                // pass for a semaphore that admits fewer than its permits.
                let stay_until = Instant::now() + Duration::from_secs(2);
                while most.load(Ordering::SeqCst) < permits as usize && Instant::now() < stay_until
                {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                tokio::time::sleep(Duration::from_millis(15)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                p.release(&sem).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(
        most.load(Ordering::SeqCst),
        permits as usize,
        "the largest number inside at once"
    );
    assert_eq!(
        a.semaphore(name)
            .unwrap()
            .available_permits()
            .await
            .unwrap(),
        permits as i64
    );
}

/// A wait times out with `Timeout` (and `try_acquire` says `None`), a release wakes a waiter at
/// once, bad input is refused.
pub async fn timeouts_wakeups_and_bad_input(c: &Client, other: &Client, name: &str) {
    let sem = c.semaphore(name).unwrap();
    sem.try_set_permits(1).await.unwrap();
    let held = sem.acquire(1, Wait::Never).await.unwrap();
    assert_eq!(held.count, 1);
    let started = Instant::now();
    let err = other
        .semaphore(name)
        .unwrap()
        .acquire(1, within(200))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() >= Duration::from_millis(190));
    assert!(other
        .semaphore(name)
        .unwrap()
        .try_acquire(1, Wait::Never)
        .await
        .unwrap()
        .is_none());
    let waiter = other.semaphore(name).unwrap();
    let waiting = tokio::spawn(async move {
        let p = waiter
            .acquire(1, Wait::For(Duration::from_secs(10)))
            .await
            .unwrap();
        (Instant::now(), p, waiter)
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let released = Instant::now();
    held.release(&sem).await.unwrap();
    let (got, p, waiter) = waiting.await.unwrap();
    assert!(
        got.duration_since(released) < Duration::from_millis(500),
        "woken by the release: {:?}",
        got.duration_since(released)
    );
    p.release(&waiter).await.unwrap();
    for r in [
        sem.acquire(0, Wait::Never).await.err(),
        sem.release(0).await.err(),
    ] {
        assert_eq!(r.unwrap().kind(), ErrorKind::InvalidArgument);
    }
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    sem.add_permits(2).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 3);
    sem.add_permits(-1).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 2);
    let p = sem.acquire(2, Wait::Never).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 0);
    p.release(&sem).await.unwrap();
    assert_eq!(sem.drain_permits().await.unwrap(), 2);
    assert_eq!(sem.available_permits().await.unwrap(), 0);
    sem.release(2).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 2);
}

/// Waiters all wake when the count reaches zero; a wait times out otherwise; bad input refused.
pub async fn latch_wakes_all_waiters_at_zero(c: &Client, other: &Client, name: &str) {
    let latch = c.count_down_latch(name).unwrap();
    assert_eq!(latch.count().await.unwrap(), 0);
    assert!(
        latch.wait(Wait::Never).await.unwrap(),
        "an unset latch is open"
    );
    assert_eq!(
        latch.try_set_count(0).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert!(latch.try_set_count(3).await.unwrap());
    assert!(!other
        .count_down_latch(name)
        .unwrap()
        .try_set_count(5)
        .await
        .unwrap());
    assert_eq!(latch.count().await.unwrap(), 3);
    assert!(
        !latch.wait(within(200)).await.unwrap(),
        "not open yet: timed out"
    );
    let mut waiters = Vec::new();
    for i in 0..4 {
        let l = if i % 2 == 0 { c } else { other }
            .count_down_latch(name)
            .unwrap();
        waiters.push(tokio::spawn(async move {
            let open = l.wait(Wait::For(Duration::from_secs(10))).await.unwrap();
            (open, Instant::now())
        }));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    latch.count_down().await.unwrap();
    other
        .count_down_latch(name)
        .unwrap()
        .count_down()
        .await
        .unwrap();
    assert_eq!(latch.count().await.unwrap(), 1);
    assert!(waiters.iter().all(|w| !w.is_finished()));
    let opened = Instant::now();
    latch.count_down().await.unwrap();
    for w in waiters {
        let (open, at) = w.await.unwrap();
        assert!(open);
        assert!(
            at.duration_since(opened) < Duration::from_millis(500),
            "woken at once"
        );
    }
    assert_eq!(latch.count().await.unwrap(), 0);
    latch.count_down().await.unwrap(); // open: nothing happens
    assert_eq!(latch.count().await.unwrap(), 0);
    assert!(
        latch.try_set_count(1).await.unwrap(),
        "an open latch can count again"
    );
    assert!(latch.delete().await.unwrap());
    assert!(latch.wait(Wait::Never).await.unwrap());
}

/// Wait about `us` microseconds by yielding (tokio's timer is millisecond-grained).
async fn spin_for(us: u64) {
    let until = std::time::Instant::now() + Duration::from_micros(us);
    while std::time::Instant::now() < until {
        tokio::task::yield_now().await;
    }
}

/// Acquires of `want` permits (one at a time, racing a release by another client) cancelled
/// at every moment from before their first request to after their grant never keep a permit:
/// afterwards all `total` are free again (asked of the server).
/// The cancels come from 0 to `max_us` microseconds after the acquire starts.
pub async fn cancelled_acquires_keep_nothing(
    c: &Client,
    other: &Client,
    name: &str,
    want: u32,
    max_us: u64,
) {
    let total = 2u32;
    let s = c.semaphore(name).unwrap();
    assert!(s.try_set_permits(total).await.unwrap());
    let blocker = other.semaphore(name).unwrap();
    let mut granted = 0;
    for i in 0..150u64 {
        // Every other round the permits are busy and freed while the acquire waits.
        let busy = i % 2 == 1;
        let held = if busy {
            Some(
                blocker
                    .acquire(total, within(10_000))
                    .await
                    .expect("a cancelled acquire kept a permit"),
            )
        } else {
            None
        };
        let task = {
            let s = s.clone();
            tokio::spawn(async move { s.acquire(want, Wait::Forever).await })
        };
        if let Some(p) = held {
            let blocker = blocker.clone();
            tokio::spawn(async move { p.release(&blocker).await.unwrap() });
        }
        spin_for((i * 53 * max_us / 1500) % max_us).await;
        task.abort();
        if let Ok(Ok(p)) = task.await {
            granted += 1;
            p.release(&s).await.unwrap();
        }
    }
    println!("{granted} of 150 cancelled acquires were granted first");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let free = s.available_permits().await.unwrap();
        if free == total as i64 && s.held_permits() == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{free} of {total} permits free after the cancelled acquires"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two clients that each need every permit, 30 rounds: one takes them all, then the other. An
/// acquire that took its permits one at a time could hold one while the other acquire held the
/// rest, both waiting for each other until they timed out.
pub async fn two_acquires_of_every_permit_take_turns(a: &Client, b: &Client, name: &str) {
    let (sa, sb) = (a.semaphore(name).unwrap(), b.semaphore(name).unwrap());
    assert!(sa.try_set_permits(2).await.unwrap());
    for round in 0..30 {
        let both = [sa.clone(), sb.clone()].map(|s| {
            tokio::spawn(async move {
                s.acquire(2, within(5000)).await?;
                tokio::time::sleep(Duration::from_millis(2)).await;
                s.release(2).await
            })
        });
        for (i, h) in both.into_iter().enumerate() {
            let r = h.await.unwrap();
            assert!(r.is_ok(), "round {round}: client {i}: {r:?}");
        }
    }
    assert_eq!(sa.available_permits().await.unwrap(), 2);
}
