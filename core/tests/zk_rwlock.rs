//! The read-write lock on ZooKeeper, in Curator's InterProcessReadWriteLock format, against a
//! real ZooKeeper.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::rw;
use common::*;
use polylock::{owner, AcquireOptions, Client, ClientOptions, ErrorKind, HoldMode, LostReason};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_excludes() {
    let path = zk_path("rw-share");
    rw::readers_share_and_a_writer_excludes(&zk_client().await, &zk_client().await, &path).await;
    zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_halves_are_reentrant_with_one_node_each() {
    let c = zk_client().await;
    let path = zk_path("rw-reentry");
    let rw = c.read_write_lock(&path).unwrap();
    let me = owner::fresh();
    rw.read_lock()
        .acquire(me, AcquireOptions::try_once())
        .await
        .unwrap();
    rw.read_lock()
        .acquire(me, AcquireOptions::try_once())
        .await
        .unwrap();
    let children = zk_children(&path).await;
    assert_eq!(children.len(), 1, "re-entry is counted in the client");
    assert!(
        children[0].starts_with("_c_") && children[0].contains("-__READ__"),
        "{children:?}"
    );
    rw.read_lock().release(me).await.unwrap();
    rw.read_lock().release(me).await.unwrap();
    zk_children_until(&path, |c| c.is_empty()).await;
    rw::both_halves_are_reentrant(&c, &path).await;
    zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_downgrades_with_a_read_node_in_its_place() {
    let c = zk_client().await;
    let path = zk_path("rw-down-nodes");
    let rw = c.read_write_lock(&path).unwrap();
    let me = owner::fresh();
    rw.write_lock()
        .acquire(me, AcquireOptions::try_once())
        .await
        .unwrap();
    rw.read_lock()
        .acquire(me, AcquireOptions::try_once())
        .await
        .unwrap();
    let children = zk_children(&path).await;
    let seq = |marker: &str| {
        children
            .iter()
            .find_map(|c| c.rsplit_once(marker).map(|(_, s)| s.to_string()))
            .unwrap_or_else(|| panic!("no {marker} node in {children:?}"))
    };
    assert_eq!(
        seq("__WRIT__"),
        seq("__READ__"),
        "the read node takes the writer's sequence (Curator 5.5+)"
    );
    rw.write_lock().release(me).await.unwrap();
    rw.read_lock().release(me).await.unwrap();
    zk_children_until(&path, |c| c.is_empty()).await;
    rw::a_writer_downgrades(&c, &zk_client().await, &path).await;
    zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_is_refused_at_once() {
    let path = zk_path("rw-up");
    rw::an_upgrade_is_refused_at_once(&zk_client().await, &path).await;
    zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_readers_and_writers_keep_a_counter_exact() {
    let path = zk_path("rw-mixed");
    rw::mixed_readers_and_writers_keep_a_counter_exact(
        &zk_client().await,
        &zk_client().await,
        &path,
    )
    .await;
    zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_writer_leaves_no_node() {
    let path = zk_path("rw-cancel");
    rw::a_cancelled_writer_leaves_nothing(&zk_client().await, &zk_client().await, &path).await;
    zk_children_until(&path, |c| c.is_empty()).await;
}

/// Curator queues readers behind a waiting writer (unlike Redisson's format): a reader that
/// comes after a queued writer waits for it, and every waiter watches only what blocks it, so
/// the writer's release wakes the readers queued behind it once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_queue_behind_a_waiting_writer_and_wake_once_each() {
    let c = zk_client().await;
    let path = zk_path("rw-queue");
    let rw = c.read_write_lock(&path).unwrap();
    let first = owner::fresh();
    rw.read_lock()
        .acquire(first, AcquireOptions::try_once())
        .await
        .unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let writer = {
        let (wl, order) = (rw.write_lock(), order.clone());
        tokio::spawn(async move {
            let me = owner::fresh();
            wl.acquire(me, AcquireOptions::forever()).await.unwrap();
            order.lock().unwrap().push("writer");
            tokio::time::sleep(Duration::from_millis(50)).await;
            order.lock().unwrap().push("writer done");
            wl.release(me).await.unwrap();
        })
    };
    zk_children_until(&path, |c| c.len() == 2).await;
    let mut readers = Vec::new();
    for i in 0..3 {
        let (rl, order) = (rw.read_lock(), order.clone());
        readers.push(tokio::spawn(async move {
            let me = owner::fresh();
            rl.acquire(me, AcquireOptions::forever()).await.unwrap();
            order.lock().unwrap().push("reader");
            tokio::time::sleep(Duration::from_millis(20)).await;
            rl.release(me).await.unwrap();
        }));
        zk_children_until(&path, |c| c.len() == 3 + i).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        order.lock().unwrap().is_empty(),
        "readers behind a queued writer wait"
    );
    let before = c.debug_zk_wakeups();
    rw.read_lock().release(first).await.unwrap();
    writer.await.unwrap();
    for r in readers {
        r.await.unwrap();
    }
    assert_eq!(
        *order.lock().unwrap(),
        ["writer", "writer done", "reader", "reader", "reader"]
    );
    // The writer woke once (its predecessor went), each reader once (the writer went).
    assert_eq!(c.debug_zk_wakeups() - before, 4);
    zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_mode_readers_and_queued_writer() {
    let c = zk_client().await;
    let path = zk_path("rw-status");
    let rw = c.read_write_lock(&path).unwrap();
    let (a, b) = (owner::fresh(), owner::fresh());
    rw.read_lock()
        .acquire(a, AcquireOptions::try_once())
        .await
        .unwrap();
    rw.read_lock()
        .acquire(b, AcquireOptions::try_once())
        .await
        .unwrap();
    rw.read_lock()
        .acquire(b, AcquireOptions::try_once())
        .await
        .unwrap();
    let wl = rw.write_lock();
    let w = owner::fresh();
    let waiting = tokio::spawn(async move { wl.acquire(w, AcquireOptions::forever()).await });
    zk_children_until(&path, |c| c.len() == 3).await;
    let st = rw.read_lock().status().await.unwrap();
    assert_eq!(st.mode, Some(HoldMode::Read));
    assert_eq!(st.holders.len(), 2);
    let mut counts: Vec<u32> = st.holders.iter().map(|h| h.count).collect();
    counts.sort();
    assert_eq!(counts, [1, 2], "our own holders' counts");
    assert_eq!(st.waiters.len(), 1);
    assert!(st.waiters[0].contains("__WRIT__"));
    rw.read_lock().release(a).await.unwrap();
    rw.read_lock().release(b).await.unwrap();
    rw.read_lock().release(b).await.unwrap();
    waiting.await.unwrap().unwrap();
    let st = rw.write_lock().status().await.unwrap();
    assert_eq!(st.mode, Some(HoldMode::Write));
    assert_eq!(st.holders[0].mode, HoldMode::Write);
    assert!(rw.write_lock().force_unlock().await.unwrap());
    zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_fires_the_lost_signal_of_read_and_write_holds() {
    let opts = ClientOptions {
        session_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    let c = Client::connect_with(&zk_url(), opts).await.unwrap();
    let path = zk_path("rw-expiry");
    let rw = c.read_write_lock(&path).unwrap();
    let me = owner::fresh();
    let w = rw
        .write_lock()
        .acquire(me, AcquireOptions::forever())
        .await
        .unwrap();
    let r = rw
        .read_lock()
        .acquire(me, AcquireOptions::forever())
        .await
        .unwrap();
    c.debug_close_zk_session().await.unwrap();
    for held in [w, r] {
        let reason = tokio::time::timeout(Duration::from_secs(10), held.lost.wait())
            .await
            .expect("lost in time");
        assert_eq!(reason, Some(LostReason::SessionExpired));
    }
    assert_eq!(
        rw.write_lock().release(me).await.unwrap_err().kind(),
        ErrorKind::LockLost
    );
    assert_eq!(
        rw.read_lock().release(me).await.unwrap_err().kind(),
        ErrorKind::LockLost
    );
    let other = zk_client().await;
    let started = Instant::now();
    let o = owner::fresh();
    other
        .read_write_lock(&path)
        .unwrap()
        .write_lock()
        .acquire(o, AcquireOptions::wait_for(Duration::from_secs(5)))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    other
        .read_write_lock(&path)
        .unwrap()
        .write_lock()
        .release(o)
        .await
        .unwrap();
}
