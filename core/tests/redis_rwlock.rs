//! The read-write lock on Redis, in Redisson's RReadWriteLock format, against a real redis-server.

mod common;

use std::time::{Duration, Instant};

use common::rw;
use common::*;
use polylock::{owner, AcquireOptions, ErrorKind, HoldMode, LostReason, Released};
use redis::AsyncCommands;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_excludes() {
    rw::readers_share_and_a_writer_excludes(&client().await, &client().await, &unique("rw-share"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_halves_are_reentrant() {
    rw::both_halves_are_reentrant(&client().await, &unique("rw-reentry")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_downgrades() {
    rw::a_writer_downgrades(&client().await, &client().await, &unique("rw-down")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_is_refused_at_once() {
    rw::an_upgrade_is_refused_at_once(&client().await, &unique("rw-up")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_readers_and_writers_keep_a_counter_exact() {
    rw::mixed_readers_and_writers_keep_a_counter_exact(
        &client().await,
        &client().await,
        &unique("rw-mixed"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_writer_leaves_nothing() {
    let name = unique("rw-cancel");
    let (a, b) = (client().await, client().await);
    rw::a_cancelled_writer_leaves_nothing(&a, &b, &name).await;
    // Nothing of either client is left in the hash.
    let exists: bool = raw().await.exists(&name).await.unwrap();
    assert!(!exists, "the lock's hash is gone");
    assert_no_channels_left(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_is_redissons_rreadwritelock_format() {
    let c = client().await;
    let name = unique("rw-format");
    let rw = c.read_write_lock(&name).unwrap();
    let me = owner::fresh();
    let mut r = raw().await;
    let field = format!("{}:{me}", c.id());
    let first = rw
        .read_lock()
        .acquire(me, AcquireOptions::forever())
        .await
        .unwrap();
    rw.read_lock()
        .acquire(me, AcquireOptions::forever())
        .await
        .unwrap();
    let mut hash: Vec<(String, String)> = r.hgetall(&name).await.unwrap();
    hash.sort();
    assert_eq!(
        hash,
        vec![
            (field.clone(), "2".to_string()),
            ("mode".to_string(), "read".to_string())
        ]
    );
    // One key per read hold, each with its own lease.
    for n in 1..=2 {
        let key = format!("{{{name}}}:{field}:rwlock_timeout:{n}");
        let pttl: i64 = r.pttl(&key).await.unwrap();
        assert!(pttl > 25_000 && pttl <= 30_000, "{key}: pttl {pttl}");
    }
    let token: u64 = r
        .get(format!("redisson_lock_token:{{{name}}}"))
        .await
        .unwrap();
    assert_eq!(token, first.fencing_token);
    let st = rw.read_lock().status().await.unwrap();
    assert_eq!(st.mode, Some(HoldMode::Read));
    assert_eq!(st.holders.len(), 1);
    assert_eq!(
        (st.holders[0].count, st.holders[0].mode),
        (2, HoldMode::Read)
    );

    // Releases are announced on redisson_rwlock:{name}: '0' after the last reader, '1' after the
    // writer.
    let mut sub = redis::Client::open(url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    sub.subscribe(format!("redisson_rwlock:{{{name}}}"))
        .await
        .unwrap();
    let mut messages = sub.on_message();
    assert_eq!(
        rw.read_lock().release(me).await.unwrap(),
        Released::StillHeld(1)
    );
    let gone: bool = r
        .exists(format!("{{{name}}}:{field}:rwlock_timeout:2"))
        .await
        .unwrap();
    assert!(!gone, "the released hold's key is deleted");
    rw.read_lock().release(me).await.unwrap();
    use futures_util::StreamExt;
    let msg = tokio::time::timeout(Duration::from_secs(2), messages.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(msg.get_payload::<String>().unwrap(), "0");
    let exists: bool = r.exists(&name).await.unwrap();
    assert!(!exists);

    rw.write_lock()
        .acquire(me, AcquireOptions::forever())
        .await
        .unwrap();
    let hash: std::collections::HashMap<String, String> = r.hgetall(&name).await.unwrap();
    assert_eq!(hash.get("mode").map(String::as_str), Some("write"));
    assert_eq!(
        hash.get(&format!("{field}:write")).map(String::as_str),
        Some("1")
    );
    assert_eq!(hash.len(), 2);
    rw.write_lock().release(me).await.unwrap();
    let msg = tokio::time::timeout(Duration::from_secs(2), messages.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(msg.get_payload::<String>().unwrap(), "1");
    // Only the fencing counter stays.
    let keys: Vec<String> = r.keys(format!("*{name}*")).await.unwrap();
    assert_eq!(keys, vec![format!("redisson_lock_token:{{{name}}}")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_redisson_reader_blocks_our_writer_until_it_publishes() {
    // What a Redisson reader does: mode=read, its field, its hold key; later DEL + PUBLISH 0.
    let c = client().await;
    let name = unique("rw-foreign");
    let mut r = raw().await;
    let _: () = r.hset(&name, "mode", "read").await.unwrap();
    let _: () = r.hset(&name, "redisson-uuid:7", 1).await.unwrap();
    let _: () = r
        .pset_ex(
            format!("{{{name}}}:redisson-uuid:7:rwlock_timeout:1"),
            1,
            30_000,
        )
        .await
        .unwrap();
    let _: () = r.pexpire(&name, 30_000).await.unwrap();
    let wl = c.read_write_lock(&name).unwrap().write_lock();
    let me = owner::fresh();
    assert_eq!(
        wl.try_acquire(me, None)
            .await
            .unwrap()
            .map(|a| a.hold_count),
        None
    );
    // Another reader joins the foreign one at once.
    let rl = c.read_write_lock(&name).unwrap().read_lock();
    let reader = owner::fresh();
    rl.acquire(reader, AcquireOptions::try_once())
        .await
        .expect("readers share with Redisson's readers");
    rl.release(reader).await.unwrap();
    let exists: bool = r.exists(&name).await.unwrap();
    assert!(
        exists,
        "our reader's release leaves the foreign reader's hold"
    );
    let waiting = {
        let wl = wl.clone();
        tokio::spawn(async move { wl.acquire(me, AcquireOptions::forever()).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let released = Instant::now();
    let _: () = r.del(&name).await.unwrap();
    let _: () = r
        .publish(format!("redisson_rwlock:{{{name}}}"), "0")
        .await
        .unwrap();
    waiting.await.unwrap().unwrap();
    assert!(
        // No lease on the foreign hold: without the message the waiter would wait on.
        released.elapsed() < Duration::from_secs(5),
        "woken by the message"
    );
    wl.release(me).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_keeps_a_read_hold_and_its_key_past_the_lease() {
    let c = client_with(Duration::from_millis(600)).await;
    let name = unique("rw-watchdog");
    let rl = c.read_write_lock(&name).unwrap().read_lock();
    let me = owner::fresh();
    let held = rl.acquire(me, AcquireOptions::forever()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1900)).await;
    assert!(!held.lost.is_lost());
    let key = format!("{{{name}}}:{}:{me}:rwlock_timeout:1", c.id());
    let pttl: i64 = raw().await.pttl(&key).await.unwrap();
    assert!(pttl > 200, "the hold key is renewed too: {pttl}");
    let other = client().await;
    let w = owner::fresh();
    assert!(other
        .read_write_lock(&name)
        .unwrap()
        .write_lock()
        .try_acquire(w, None)
        .await
        .unwrap()
        .is_none());
    assert_eq!(rl.release(me).await.unwrap(), Released::Freed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_hold_deleted_behind_its_back_fires_the_lost_signal() {
    let c = client_with(Duration::from_millis(900)).await;
    let name = unique("rw-lost");
    let rl = c.read_write_lock(&name).unwrap().read_lock();
    let me = owner::fresh();
    let held = rl.acquire(me, AcquireOptions::forever()).await.unwrap();
    let mut events = c.lost_events();
    let _: () = raw().await.del(&name).await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(3), held.lost.wait())
        .await
        .unwrap();
    assert_eq!(reason, Some(LostReason::Deleted));
    let ev = events.try_recv().unwrap();
    assert_eq!(
        (ev.kind, ev.owner),
        (polylock::HoldKind::Lock(polylock::LockKind::Read), me)
    );
    assert_eq!(
        rl.release(me).await.unwrap_err().kind(),
        ErrorKind::LockLost
    );
    assert_eq!(
        rl.release(me).await.unwrap_err().kind(),
        ErrorKind::NotOwner
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_read_lease_expires_and_the_holder_learns_it() {
    let c = client().await;
    let rl = c.read_write_lock(&unique("rw-lease")).unwrap().read_lock();
    let me = owner::fresh();
    let held = rl
        .acquire(
            me,
            AcquireOptions::forever().with_lease(Duration::from_millis(300)),
        )
        .await
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(2), held.lost.wait())
        .await
        .unwrap();
    assert_eq!(reason, Some(LostReason::Expired));
    assert_eq!(
        rl.release(me).await.unwrap_err().kind(),
        ErrorKind::LockLost
    );
}

/// Redisson's format favours readers: a reader joins a read-locked lock even while a writer
/// waits, so a stream of overlapping readers keeps the writer out until it ends. Measured here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_that_keep_coming_hold_off_a_waiting_writer() {
    let c = client().await;
    let name = unique("rw-starve");
    let rw = c.read_write_lock(&name).unwrap();
    let stream_for = Duration::from_millis(1500);
    let started = Instant::now();
    // Readers 150 ms long, a new one every 20 ms: the read mode never ends while they come.
    let readers = {
        let rl = rw.read_lock();
        tokio::spawn(async move {
            let mut tasks = Vec::new();
            while started.elapsed() < stream_for {
                let rl = rl.clone();
                tasks.push(tokio::spawn(async move {
                    let me = owner::fresh();
                    rl.acquire(me, AcquireOptions::wait_for(Duration::from_secs(5)))
                        .await
                        .unwrap();
                    tokio::time::sleep(Duration::from_millis(150)).await;
                    rl.release(me).await.unwrap();
                }));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            for t in tasks {
                t.await.unwrap();
            }
            Instant::now()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let w = owner::fresh();
    let asked = Instant::now();
    rw.write_lock()
        .acquire(w, AcquireOptions::wait_for(Duration::from_secs(10)))
        .await
        .unwrap();
    let got = Instant::now();
    let readers_done = readers.await.unwrap();
    println!(
        "writer waited {:?}; the reader stream lasted {:?} after it asked",
        got - asked,
        readers_done.saturating_duration_since(asked)
    );
    assert!(
        got + Duration::from_millis(100) >= readers_done,
        "the writer got in before the readers stopped coming"
    );
    rw.write_lock().release(w).await.unwrap();
}
