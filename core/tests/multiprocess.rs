//! Mutual exclusion across processes: 8 buyer processes × 200 critical sections on one lock,
//! each a non-atomic read-modify-write of a counter, keep the counter exact.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::*;
use redis::AsyncCommands;

/// The seckill example, built by `cargo test` next to the test binaries.
fn seckill() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join("examples").join("seckill");
    assert!(
        path.exists(),
        "{} not built (cargo test builds examples)",
        path.display()
    );
    path
}

/// Run `n` seckill buyer processes with `args` at once; assert each succeeded; return their
/// JSON summaries.
async fn run_buyers(n: usize, args: &[&str]) -> Vec<serde_json::Value> {
    let children: Vec<_> = (0..n)
        .map(|_| {
            Command::new(seckill())
                .args(args)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs = tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    outputs
        .iter()
        .map(|out| {
            assert!(
                out.status.success(),
                "buyer failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_times_200_sections_keep_a_counter_exact() {
    let name = unique("mp");
    let stock = 100_000i64;
    let mut r = raw().await;
    let _: () = r.set(format!("seckill:{name}:stock"), stock).await.unwrap();
    let (u, max) = (url(), "200");
    let args = [
        "--url",
        &u,
        "--name",
        &name,
        "--delay-ms",
        "0",
        "buyer",
        "--max",
        max,
    ];
    for v in run_buyers(8, &args).await {
        assert_eq!(v["purchases"], 200);
    }
    let sold: i64 = r.get(format!("seckill:{name}:sold")).await.unwrap();
    let left: i64 = r.get(format!("seckill:{name}:stock")).await.unwrap();
    assert_eq!(
        sold, 1600,
        "lost updates mean two processes were inside at once"
    );
    assert_eq!(left, stock - 1600);
}

#[test]
fn the_seckill_demo_never_oversells() {
    let out = Command::new(seckill())
        .args([
            "--url",
            &url(),
            "--name",
            &unique("sale"),
            "--stock",
            "60",
            "--buyers",
            "4",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("sold = 60 of 60") && stdout.contains("oversold = 0"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_times_100_sections_on_zookeeper_keep_a_counter_exact() {
    let name = unique("mpzk").replace(':', "-");
    let mut r = raw().await;
    let _: () = r
        .set(format!("seckill:{name}:stock"), 100_000)
        .await
        .unwrap();
    let (u, z) = (url(), zk_url());
    let args = [
        "--url",
        &u,
        "--lock-url",
        &z,
        "--name",
        &name,
        "--delay-ms",
        "0",
        "buyer",
        "--max",
        "100",
    ];
    for v in run_buyers(8, &args).await {
        assert_eq!(v["purchases"], 100);
    }
    let sold: i64 = r.get(format!("seckill:{name}:sold")).await.unwrap();
    assert_eq!(
        sold, 800,
        "lost updates mean two processes were inside at once"
    );
}
