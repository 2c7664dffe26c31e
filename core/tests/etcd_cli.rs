//! The `polylock` command on etcd: `run` passes the key's create revision as the token, and
//! `status` lists the contenders in order with their lease ids and TTL left, etcdctl's included.

mod etcd_common;

use std::process::{Command, Stdio};
use std::time::Duration;

use etcd_common::*;

fn polylock() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_polylock"));
    c.env("POLYLOCK_URL", url());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_and_status_on_etcd() {
    let name = unique("cli");
    // etcdctl holds; `polylock run` queues behind it; status shows both in order.
    let mut ctl = etcdctl();
    ctl.args(["lock", &name, "--", "sleep", "1.5"])
        .stdout(Stdio::null());
    let mut ctl = ctl.spawn().unwrap();
    let k = wait_keys(&name, 1, Duration::from_secs(5)).await;
    assert_eq!(k.len(), 1);
    let mut run = polylock();
    run.args([
        "run",
        "--name",
        &name,
        "--",
        "sh",
        "-c",
        "echo $POLYLOCK_FENCING_TOKEN",
    ])
    .stdout(Stdio::piped());
    let run = run.spawn().unwrap();
    let k = wait_keys(&name, 2, Duration::from_secs(5)).await;
    assert_eq!(k.len(), 2, "polylock run queued: {k:?}");
    let out = polylock()
        .args(["status", "--name", &name])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["locked"], true, "{st}");
    let holder = st["holders"][0]["owner"].as_str().unwrap();
    let waiter = st["waiters"][0].as_str().unwrap();
    for (shown, key) in [(holder, &k[0]), (waiter, &k[1])] {
        let want = format!("{:x}@{} ttl=", key.lease, key.create_revision);
        assert!(shown.starts_with(&want), "{shown} vs {want}");
        let secs: u64 = shown[want.len()..].trim_end_matches('s').parse().unwrap();
        assert!((1..=10).contains(&secs), "{shown}");
    }
    assert!(st["ttl_ms"].as_u64().unwrap() <= 10_000);
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success());
    let token: i64 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        token, k[1].create_revision,
        "the token is the key's create revision"
    );
    assert!(ctl.wait().unwrap().success());
    assert!(wait_keys(&name, 0, Duration::from_secs(3)).await.is_empty());
}
