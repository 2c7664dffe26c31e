//! A client's memory stays bounded by what it holds now, not by the names it ever held: 100,000
//! names taken with a fixed lease and never released (what Redisson users do with
//! `lock(lease)`). A test binary of its own, so that the process's resident memory is this
//! test's alone.

mod common;

use std::time::{Duration, Instant};

use common::*;
use polylock::owner;

/// Names taken 1,000 at a time with a 200 ms lease and never released. After the first 10,000
/// and after all 100,000 (each time once the leases ran out): the client keeps no hold, it
/// remembers at most `ENDED_KEPT` ended holds, and the process's resident memory after 100,000
/// names is within 4 MiB of what it was after 10,000.
///
/// The bound: what a client keeps of an ended hold is one record among its last 1,024, full
/// long before 10,000 names, so nothing grows per name after them; 4 MiB leaves room for the
/// allocator. Keeping every ended hold (a `Hold` with its key, name and watch channel, hundreds
/// of bytes) would grow by tens of MB over the 90,000 names, and the registry counts would fail
/// first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_fixed_leases_keep_memory_flat() {
    const BOUND: u64 = 4 << 20;
    const BATCH: usize = 1000;
    let c = client().await;
    let prefix = unique("rss");
    let me = owner::fresh();
    let lease = Duration::from_millis(200);
    let started = Instant::now();
    let mut rss_10k = 0;
    // Names are made per batch and dropped (the test keeps nothing per name itself).
    let batch_names = |batch: usize| -> Vec<String> {
        (0..BATCH)
            .map(|i| format!("{prefix}:{}", batch * BATCH + i))
            .collect()
    };
    for batch in 0..100 {
        let names = batch_names(batch);
        // Bounded: a batch that stalls fails the test rather than hanging it.
        tokio::time::timeout(Duration::from_secs(120), take_all(&c, &names, me, lease))
            .await
            .unwrap_or_else(|_| panic!("batch {batch} took over 120 s"));
        // The locks expire by themselves; their fencing counters would stay.
        drop_token_keys(&names).await;
        if batch != 9 && batch != 99 {
            continue;
        }
        let taken = (batch + 1) * BATCH;
        let left = until_no_holds(&c, "lock", Duration::from_secs(10)).await;
        let (held, ended) = c.debug_hold_registry();
        let rss = rss_bytes();
        println!(
            "after {taken:>6} names: RSS {:.1} MiB, {held} holds, {ended} ended holds \
             remembered ({:.1} s)",
            rss as f64 / (1 << 20) as f64,
            started.elapsed().as_secs_f64()
        );
        assert_eq!(left, 0.0, "after {taken} names: no hold left (gauge)");
        assert_eq!(held, 0, "after {taken} names: no hold left in the registry");
        assert!(
            ended <= ENDED_KEPT,
            "after {taken} names: {ended} ended holds remembered"
        );
        if batch == 9 {
            rss_10k = rss;
        } else {
            let grew = rss.saturating_sub(rss_10k);
            assert!(
                grew < BOUND,
                "RSS grew {:.1} MiB from 10,000 to 100,000 names",
                grew as f64 / (1 << 20) as f64
            );
        }
    }
    c.close().await.unwrap();
}
