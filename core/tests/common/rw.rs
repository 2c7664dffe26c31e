//! Read-write lock behaviour shared by the Redis and ZooKeeper suites: the same cases, run
//! against both servers. Each takes a client factory and a fresh lock name.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use polylock::{owner, AcquireOptions, Client, ErrorKind, HoldState, Released};

fn once() -> AcquireOptions {
    AcquireOptions::try_once()
}

fn within(ms: u64) -> AcquireOptions {
    AcquireOptions::wait_for(Duration::from_millis(ms))
}

/// Three readers hold at once; a writer can take it only when all are gone; while it holds, no
/// reader and no other writer gets in.
pub async fn readers_share_and_a_writer_excludes(c: &Client, other: &Client, name: &str) {
    let rw = c.read_write_lock(name).unwrap();
    let rw2 = other.read_write_lock(name).unwrap();
    let (r1, r2, r3) = (owner::fresh(), owner::fresh(), owner::fresh());
    rw.read_lock().acquire(r1, once()).await.unwrap();
    rw.read_lock().acquire(r2, once()).await.unwrap();
    rw2.read_lock().acquire(r3, once()).await.unwrap();
    assert!(rw.read_lock().is_locked().await.unwrap());
    assert!(!rw.write_lock().is_locked().await.unwrap());
    let w = owner::fresh();
    let err = rw2.write_lock().acquire(w, once()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    // The writer waits for the last reader.
    let wl = rw2.write_lock();
    let waiting = tokio::spawn(async move { wl.acquire(w, within(10_000)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(rw.read_lock().release(r1).await.unwrap(), Released::Freed);
    assert_eq!(rw.read_lock().release(r2).await.unwrap(), Released::Freed);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "one reader still holds it");
    let released_at = Instant::now();
    rw2.read_lock().release(r3).await.unwrap();
    let held = waiting.await.unwrap().unwrap();
    assert!(
        released_at.elapsed() < Duration::from_secs(1),
        "woken by the release, not a timer: {:?}",
        released_at.elapsed()
    );
    assert!(rw.write_lock().is_locked().await.unwrap());
    // Nobody else gets in while the writer holds.
    let err = rw.read_lock().acquire(r1, once()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let err = rw.write_lock().acquire(r2, once()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(rw2.write_lock().release(w).await.unwrap(), Released::Freed);
    assert_eq!(held.lost.state(), HoldState::Released);
    assert!(!rw.write_lock().is_locked().await.unwrap());
    assert!(!rw.read_lock().is_locked().await.unwrap());
}

/// Both halves are reentrant per owner; releases count down; a stranger cannot release.
pub async fn both_halves_are_reentrant(c: &Client, name: &str) {
    let rw = c.read_write_lock(name).unwrap();
    let me = owner::fresh();
    let a = rw.read_lock().acquire(me, once()).await.unwrap();
    let b = rw.read_lock().acquire(me, once()).await.unwrap();
    assert_eq!((a.hold_count, b.hold_count), (1, 2));
    assert_eq!(
        a.fencing_token, b.fencing_token,
        "a re-entry keeps the token"
    );
    assert_eq!(rw.read_lock().hold_count(me).await.unwrap(), 2);
    let stranger = owner::fresh();
    assert_eq!(
        rw.read_lock().release(stranger).await.unwrap_err().kind(),
        ErrorKind::NotOwner
    );
    assert_eq!(
        rw.read_lock().release(me).await.unwrap(),
        Released::StillHeld(1)
    );
    assert_eq!(rw.read_lock().release(me).await.unwrap(), Released::Freed);
    assert_eq!(
        rw.read_lock().release(me).await.unwrap_err().kind(),
        ErrorKind::NotOwner,
        "double release"
    );
    let w1 = rw.write_lock().acquire(me, once()).await.unwrap();
    let w2 = rw.write_lock().acquire(me, once()).await.unwrap();
    assert_eq!((w1.hold_count, w2.hold_count), (1, 2));
    assert!(
        w1.fencing_token > a.fencing_token,
        "a new holder gets a larger token"
    );
    assert_eq!(rw.write_lock().hold_count(me).await.unwrap(), 2);
    assert_eq!(
        rw.write_lock().release(me).await.unwrap(),
        Released::StillHeld(1)
    );
    assert_eq!(rw.write_lock().release(me).await.unwrap(), Released::Freed);
    assert!(!rw.write_lock().is_locked().await.unwrap());
}

/// A writer takes the read lock too, releases the write lock and keeps reading: other readers
/// join then, a writer waits until the downgraded reader is gone.
pub async fn a_writer_downgrades(c: &Client, other: &Client, name: &str) {
    let rw = c.read_write_lock(name).unwrap();
    let rw2 = other.read_write_lock(name).unwrap();
    let me = owner::fresh();
    let w = rw.write_lock().acquire(me, once()).await.unwrap();
    let r = rw
        .read_lock()
        .acquire(me, once())
        .await
        .expect("the writer may take the read lock at once");
    assert!(r.fencing_token >= w.fencing_token);
    let reader = owner::fresh();
    assert_eq!(
        rw2.read_lock()
            .acquire(reader, once())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Timeout,
        "still write-locked"
    );
    assert_eq!(rw.write_lock().release(me).await.unwrap(), Released::Freed);
    assert_eq!(rw.read_lock().hold_count(me).await.unwrap(), 1);
    assert!(rw.read_lock().is_locked().await.unwrap());
    rw2.read_lock()
        .acquire(reader, within(2_000))
        .await
        .expect("after the downgrade other readers share it");
    let writer = owner::fresh();
    assert_eq!(
        rw2.write_lock()
            .acquire(writer, once())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Timeout
    );
    rw2.read_lock().release(reader).await.unwrap();
    assert_eq!(rw.read_lock().release(me).await.unwrap(), Released::Freed);
    rw2.write_lock()
        .acquire(writer, within(2_000))
        .await
        .expect("free once the downgraded reader left");
    rw2.write_lock().release(writer).await.unwrap();
}

/// A reader asking for the write lock gets `UpgradeNotSupported` at once and keeps its read lock.
pub async fn an_upgrade_is_refused_at_once(c: &Client, name: &str) {
    let rw = c.read_write_lock(name).unwrap();
    let me = owner::fresh();
    rw.read_lock().acquire(me, once()).await.unwrap();
    let started = Instant::now();
    let err = rw
        .write_lock()
        .acquire(me, AcquireOptions::forever())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UpgradeNotSupported, "{err}");
    // At once: the acquire waits forever otherwise (1 s leaves room for a loaded machine).
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(err.message().contains("read lock"), "{err}");
    assert_eq!(rw.read_lock().hold_count(me).await.unwrap(), 1);
    assert_eq!(rw.read_lock().release(me).await.unwrap(), Released::Freed);
    // Without the read lock the same owner may write.
    rw.write_lock().acquire(me, once()).await.unwrap();
    rw.write_lock().release(me).await.unwrap();
}

/// 4 readers and 2 writers on two clients, 30 sections each: a writer is always alone; the
/// counter the writers increment (read, pause, write) stays exact; readers overlap each other.
pub async fn mixed_readers_and_writers_keep_a_counter_exact(a: &Client, b: &Client, name: &str) {
    let counter = Arc::new(AtomicI64::new(0));
    let readers_in = Arc::new(AtomicUsize::new(0));
    let writers_in = Arc::new(AtomicUsize::new(0));
    let most_readers = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let sections = 30;
    let mut tasks = Vec::new();
    for i in 0..6 {
        let client = if i % 2 == 0 { a.clone() } else { b.clone() };
        let rw = client.read_write_lock(name).unwrap();
        let writer = i < 2;
        let (counter, readers_in, writers_in, most_readers, overlaps) = (
            counter.clone(),
            readers_in.clone(),
            writers_in.clone(),
            most_readers.clone(),
            overlaps.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let me = owner::fresh();
            let lock = if writer {
                rw.write_lock()
            } else {
                rw.read_lock()
            };
            for _ in 0..sections {
                lock.acquire(me, AcquireOptions::wait_for(Duration::from_secs(30)))
                    .await
                    .unwrap();
                if writer {
                    if writers_in.fetch_add(1, Ordering::SeqCst) != 0
                        || readers_in.load(Ordering::SeqCst) != 0
                    {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    let v = counter.load(Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    counter.store(v + 1, Ordering::SeqCst);
                    writers_in.fetch_sub(1, Ordering::SeqCst);
                } else {
                    let n = readers_in.fetch_add(1, Ordering::SeqCst) + 1;
                    most_readers.fetch_max(n, Ordering::SeqCst);
                    if writers_in.load(Ordering::SeqCst) != 0 {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    readers_in.fetch_sub(1, Ordering::SeqCst);
                }
                lock.release(me).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "a writer was not alone");
    assert_eq!(counter.load(Ordering::SeqCst), 2 * sections as i64);
    assert!(
        most_readers.load(Ordering::SeqCst) >= 2,
        "readers never shared the lock ({} at most)",
        most_readers.load(Ordering::SeqCst)
    );
}

/// Closing a client ends its waiting writer; nothing of it stays held.
pub async fn a_cancelled_writer_leaves_nothing(c: &Client, other: &Client, name: &str) {
    let rw = c.read_write_lock(name).unwrap();
    let me = owner::fresh();
    rw.read_lock().acquire(me, once()).await.unwrap();
    let w = other.read_write_lock(name).unwrap().write_lock();
    let writer = owner::fresh();
    let waiting = {
        let w = w.clone();
        tokio::spawn(async move { w.acquire(writer, AcquireOptions::forever()).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    waiting.abort();
    let _ = waiting.await;
    let timed_out = w.acquire(writer, within(150)).await.unwrap_err();
    assert_eq!(timed_out.kind(), ErrorKind::Timeout);
    rw.read_lock().release(me).await.unwrap();
    // Had either wait left anything behind, this would not be free now.
    let other_owner = owner::fresh();
    rw.write_lock()
        .acquire(other_owner, within(2_000))
        .await
        .unwrap();
    rw.write_lock().release(other_owner).await.unwrap();
    assert!(!w.is_held_locally());
}
