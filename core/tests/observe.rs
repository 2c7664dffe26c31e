//! What operators see, from Rust, against a real redis-server: the metrics in the Prometheus text
//! (each series asserted by its value), the client's identity on the server (and gone after
//! close), holders' identities in `status`, and the names a pattern lists.

mod common;

use std::time::Duration;

use common::*;
use polylock::{owner, AcquireOptions, Client, ClientOptions, ErrorKind, LostReason};
use redis::AsyncCommands;

/// The value of the series `series` (name and labels, as printed) in `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_metrics_count_its_acquires_holds_losses_and_named_tokens() {
    let prefix = unique("observe");
    let c = Client::connect(&format!("{}?metric_names={prefix}:named*", url()))
        .await
        .unwrap();
    let other = client().await;
    let named = format!("{prefix}:named");
    let lock = c.lock(&named).unwrap();
    let me = owner::fresh();
    let held = lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    lock.acquire(me, AcquireOptions::forever()).await.unwrap(); // a re-entry
    let text = c.metrics_text();
    let s = |rest: &str| format!("{}{rest}", "polylock_");
    assert_eq!(
        value(
            &text,
            &s(r#"acquire_wait_seconds_count{kind="lock",backend="redis",outcome="acquired"}"#)
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        value(&text, &s(r#"holds{kind="lock",backend="redis"}"#)),
        Some(1.0)
    );
    assert_eq!(
        value(&text, &s(r#"reentries_total{kind="lock",backend="redis"}"#)),
        Some(1.0)
    );
    assert_eq!(
        value(
            &text,
            &s(&format!(
                r#"name_fencing_token{{name="{named}",kind="lock",backend="redis"}}"#
            ))
        ),
        Some(held.fencing_token as f64)
    );

    // Another client's refused try is its own not_acquired; this client's counts do not move.
    let refused = other
        .lock(&named)
        .unwrap()
        .try_acquire(owner::fresh(), None)
        .await
        .unwrap();
    assert!(refused.is_none());
    assert_eq!(
        value(
            &other.metrics_text(),
            &s(r#"acquire_wait_seconds_count{kind="lock",backend="redis",outcome="not_acquired"}"#)
        ),
        Some(1.0)
    );

    // Lost: force-unlocked by the other client; the re-entry that finds it gone says so.
    assert!(other.lock(&named).unwrap().force_unlock().await.unwrap());
    let err = lock
        .acquire(me, AcquireOptions::forever())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost);
    assert_eq!(
        held.lost.state(),
        polylock::HoldState::Lost(LostReason::Deleted)
    );
    let text = c.metrics_text();
    assert_eq!(
        value(
            &text,
            &s(r#"losses_total{kind="lock",backend="redis",reason="deleted"}"#)
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            &s(r#"acquire_wait_seconds_count{kind="lock",backend="redis",outcome="error"}"#)
        ),
        Some(1.0)
    );
    let _ = lock.release(me).await; // LockLost: the hold is forgotten
    let text = c.metrics_text();
    assert_eq!(
        value(&text, &s(r#"holds{kind="lock",backend="redis"}"#)),
        Some(0.0)
    );
    assert_eq!(
        value(
            &text,
            &s(r#"hold_seconds_count{kind="lock",backend="redis"}"#)
        ),
        Some(1.0)
    );

    // The process's text adds up both clients and keeps them after they close.
    c.close().await.unwrap();
    other.close().await.unwrap();
    drop((c, other, lock));
    let all = polylock::metrics::prometheus_text();
    assert!(
        value(
            &all,
            &s(r#"acquire_wait_seconds_count{kind="lock",backend="redis",outcome="acquired"}"#)
        )
        .is_some_and(|v| v >= 2.0),
        "{all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_metrics_records_nothing() {
    let c = Client::connect_with(
        &url(),
        ClientOptions {
            metrics: false,
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let lock = c.lock(&unique("quiet")).unwrap();
    lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    lock.release(1).await.unwrap();
    assert_eq!(c.metrics_text(), "");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_identity_lives_on_the_server_while_the_client_does_and_shows_in_status() {
    let c = Client::connect_with(
        &format!("{}?service=billing", url()),
        ClientOptions {
            runtime: Some("rust-test".into()),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let mut raw = raw().await;
    let key = format!("{}{}", polylock::REDIS_IDENTITY_PREFIX, c.id());
    let stored: String = raw.get(&key).await.unwrap();
    let v: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(v["service"], "billing");
    assert_eq!(v["runtime"], "rust-test");
    assert_eq!(v["pid"], std::process::id());
    assert_eq!(v["host"], polylock::host_name());
    assert_eq!(stored, c.identity());
    let ttl: i64 = raw.pttl(&key).await.unwrap();
    assert!(
        ttl > 0 && ttl <= 30_000,
        "kept alive by the watchdog: {ttl}"
    );

    let prefix = unique("who");
    let name = format!("{prefix}:a");
    let lock = c.lock(&name).unwrap();
    lock.acquire(7, AcquireOptions::forever()).await.unwrap();
    let st = lock.status().await.unwrap();
    assert_eq!(st.holders.len(), 1);
    assert_eq!(st.holders[0].identity.as_deref(), Some(c.identity()));
    // A Redisson-style holder with no identity key shows as itself, identity None.
    let stranger = format!("{prefix}:b");
    let _: () = raw.hset(&stranger, "0f0f0f0f-redisson:1", 1).await.unwrap();
    let st = c.lock(&stranger).unwrap().status().await.unwrap();
    assert_eq!(st.holders[0].owner, "0f0f0f0f-redisson:1");
    assert_eq!(st.holders[0].identity, None);

    // Listing by pattern: both names, sorted, and none of the bookkeeping keys.
    let names = c.list_names(&format!("{prefix}:*"), 100).await.unwrap();
    assert_eq!(names, vec![name.clone(), stranger.clone()]);
    assert!(c
        .list_names("polylock_client:*", 100)
        .await
        .unwrap()
        .is_empty());
    let err = c.list_names("", 10).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);

    lock.release(7).await.unwrap();
    let _: () = raw.del(&stranger).await.unwrap();
    c.close().await.unwrap();
    let gone: Option<String> = raw.get(&key).await.unwrap();
    assert_eq!(gone, None, "close removes the identity");
    tokio::time::sleep(Duration::from_millis(1)).await;
}
