//! A wait dropped in a caller's own short-lived `current_thread` runtime, which then ends, leaves
//! nothing on the server: the clean-up of what the wait created (a ZooKeeper contender node, a
//! Redis fair-queue entry, a subscription) runs on polylock's runtime, not on the caller's. Before,
//! it was spawned on the caller's runtime, which dropped it unrun when it ended.

mod common;

use std::time::Duration;

use common::*;
use polylock::{AcquireOptions, Client};

/// Start waiting for `lock` in a runtime of its own, give up after 300 ms, end that runtime.
fn wait_and_give_up_in_a_short_lived_runtime(lock: &polylock::Lock) {
    let short = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let waited = short.block_on(async {
        tokio::time::timeout(
            Duration::from_millis(300),
            lock.acquire(polylock::owner::fresh(), AcquireOptions::forever()),
        )
        .await
    });
    assert!(
        waited.is_err(),
        "the lock is held by another: the wait runs out"
    );
    drop(short);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn zookeeper_contender_node_is_deleted() {
    let rt = runtime();
    let path = zk_path("short-runtime");
    let (holder, waiter) = rt.block_on(async { (zk_client().await, zk_client().await) });
    let held = holder.lock(&path).unwrap();
    rt.block_on(held.acquire(1, AcquireOptions::forever()))
        .unwrap();
    let lock = waiter.lock(&path).unwrap();
    wait_and_give_up_in_a_short_lived_runtime(&lock);
    // Only the holder's node is left (the waiter's client, and its session, are still open).
    let left = rt.block_on(zk_children_until(&path, |c| c.len() == 1));
    assert_eq!(left.len(), 1, "contender nodes left: {left:?}");
    rt.block_on(held.release(1)).unwrap();
    rt.block_on(async {
        holder.close().await.unwrap();
        waiter.close().await.unwrap();
    });
}

#[test]
fn redis_fair_queue_entry_is_removed() {
    let rt = runtime();
    let name = unique("short-runtime-fair");
    let (holder, waiter): (Client, Client) =
        rt.block_on(async { (client().await, client().await) });
    let held = holder.fair_lock(&name).unwrap();
    rt.block_on(held.acquire(1, AcquireOptions::forever()))
        .unwrap();
    let lock = waiter.fair_lock(&name).unwrap();
    wait_and_give_up_in_a_short_lived_runtime(&lock);
    let queue = format!("redisson_lock_queue:{{{name}}}");
    let left = rt.block_on(async {
        let mut r = raw().await;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let len: i64 = redis::cmd("LLEN")
                .arg(&queue)
                .query_async(&mut r)
                .await
                .unwrap();
            if len == 0 || std::time::Instant::now() > deadline {
                return len;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert_eq!(left, 0, "entries left in {queue}");
    rt.block_on(held.release(1)).unwrap();
    rt.block_on(async {
        holder.close().await.unwrap();
        waiter.close().await.unwrap();
    });
}

#[test]
fn redis_subscription_is_dropped() {
    let rt = runtime();
    let name = unique("short-runtime-plain");
    let (holder, waiter): (Client, Client) =
        rt.block_on(async { (client().await, client().await) });
    let held = holder.lock(&name).unwrap();
    rt.block_on(held.acquire(1, AcquireOptions::forever()))
        .unwrap();
    let lock = waiter.lock(&name).unwrap();
    wait_and_give_up_in_a_short_lived_runtime(&lock);
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let subscribers = rt.block_on(async {
        let mut r = raw().await;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let (_, n): (String, i64) = redis::cmd("PUBSUB")
                .arg("NUMSUB")
                .arg(&channel)
                .query_async(&mut r)
                .await
                .unwrap();
            if n == 0 || std::time::Instant::now() > deadline {
                return n;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert_eq!(subscribers, 0, "subscribers left on {channel}");
    // The client forgets the channel when the UNSUBSCRIBE's answer is read, which may come a
    // moment after the server counted 0: an eventual check, with the same deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while waiter.subscribed_channels() != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(waiter.subscribed_channels(), 0);
    rt.block_on(held.release(1)).unwrap();
    rt.block_on(async {
        holder.close().await.unwrap();
        waiter.close().await.unwrap();
    });
}
