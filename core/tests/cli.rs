//! The `polylock` command against a real redis-server: exit codes, environment, signals, loss.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use redis::AsyncCommands;

/// The command under test: this build's, or the one POLYLOCK_TEST_CLI names (a release build).
fn polylock() -> Command {
    let exe = std::env::var("POLYLOCK_TEST_CLI").unwrap_or(env!("CARGO_BIN_EXE_polylock").into());
    let mut c = Command::new(exe);
    c.env("POLYLOCK_URL", url());
    c
}

fn run(args: &[&str]) -> Output {
    polylock().args(args).output().unwrap()
}

async fn wait_locked(name: &str, want: bool) {
    let mut r = raw().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n: i64 = r.exists(name).await.unwrap();
        if (n == 1) == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "lock {name} never became locked={want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn run_passes_the_token_and_exits_with_the_commands_code() {
    let name = unique("cli-run");
    let out = run(&[
        "run",
        "--name",
        &name,
        "--",
        "sh",
        "-c",
        "echo \"$POLYLOCK_NAME $POLYLOCK_FENCING_TOKEN\"; exit 7",
    ]);
    assert_eq!(out.status.code(), Some(7));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut parts = stdout.split_whitespace();
    assert_eq!(parts.next(), Some(name.as_str()));
    let token: u64 = parts.next().unwrap().parse().unwrap();
    assert!(token >= 1);
    let out = run(&[
        "run",
        "--name",
        &name,
        "--",
        "sh",
        "-c",
        "echo $POLYLOCK_FENCING_TOKEN",
    ]);
    assert!(out.status.success());
    let next: u64 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(next > token, "tokens grow: {next} after {token}");
    // Released after the command: the status says free.
    let out = run(&["status", "--name", &name]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["locked"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_that_runs_out_exits_75_and_status_shows_the_holder() {
    let name = unique("cli-wait");
    let mut holder = polylock()
        .args(["run", "--name", &name, "--", "sleep", "30"])
        .spawn()
        .unwrap();
    wait_locked(&name, true).await;
    let out = run(&["status", "--name", &name]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["locked"], true);
    assert_eq!(v["holders"].as_array().unwrap().len(), 1);
    assert_eq!(v["holders"][0]["count"], 1);
    assert!(v["ttl_ms"].as_u64().unwrap() > 20_000);
    let started = Instant::now();
    let out = run(&["run", "--name", &name, "--wait", "300ms", "--", "true"]);
    assert_eq!(
        out.status.code(),
        Some(75),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[test]
fn usage_errors_exit_64() {
    for args in [
        vec!["run", "--name", "x"],
        vec!["run", "--name", "x", "--wait", "soon", "--", "true"],
        vec!["run", "--name", "x", "--lease", "0s", "--", "true"],
        vec!["run", "--name", "", "--", "true"],
        vec![
            "run",
            "--url",
            "http://127.0.0.1:6379",
            "--name",
            "x",
            "--",
            "true",
        ],
        vec!["unlock", "--name", "x"],
        vec!["frobnicate"],
    ] {
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(64),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty(), "{args:?} explains itself");
    }
    assert_eq!(run(&["--help"]).status.code(), Some(0));
}

#[test]
fn unreachable_server_exits_69_and_missing_command_127() {
    let dead = format!("redis://127.0.0.1:{}", free_port());
    let out = run(&["run", "--url", &dead, "--name", "x", "--", "true"]);
    assert_eq!(out.status.code(), Some(69));
    let out = run(&[
        "run",
        "--name",
        &unique("cli-127"),
        "--",
        "/no/such/command",
    ]);
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn wrong_password_exits_77() {
    let server = OwnRedis::start(&["--requirepass", "pw"]);
    let u = format!("redis://:nope@127.0.0.1:{}", server.port);
    let out = run(&["run", "--url", &u, "--name", "x", "--", "true"]);
    assert_eq!(
        out.status.code(),
        Some(77),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_stops_the_command_and_exits_76() {
    let name = unique("cli-lost");
    let child = polylock()
        .args([
            "run",
            "--name",
            &name,
            "--watchdog",
            "900ms",
            "--",
            "sleep",
            "30",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_locked(&name, true).await;
    let _: () = raw().await.del(&name).await.unwrap();
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(76),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("lost"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_lost_ignore_only_warns() {
    let name = unique("cli-ignore");
    let child = polylock()
        .args([
            "run",
            "--name",
            &name,
            "--watchdog",
            "600ms",
            "--on-lost",
            "ignore",
            "--",
            "sh",
            "-c",
            "sleep 1.5; exit 4",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_locked(&name, true).await;
    let _: () = raw().await.del(&name).await.unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_is_forwarded_and_the_lock_still_released() {
    let name = unique("cli-term");
    let mut child = polylock()
        .args([
            "run",
            "--name",
            &name,
            "--",
            "sh",
            "-c",
            "trap 'exit 9' TERM; sleep 30 & wait",
        ])
        .spawn()
        .unwrap();
    wait_locked(&name, true).await;
    tokio::time::sleep(Duration::from_millis(200)).await; // let sh install its trap
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(9),
        "the command saw SIGTERM and chose its exit code"
    );
    let n: i64 = raw().await.exists(&name).await.unwrap();
    assert_eq!(n, 0, "released after the command ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_force_frees_a_held_lock() {
    let name = unique("cli-force");
    let holder = polylock()
        .args(["run", "--name", &name, "--", "sleep", "30"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_locked(&name, true).await;
    let out = run(&["unlock", "--name", &name, "--force"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unlocked"], true);
    // The holder learns at its next renewal (30 s watchdog: up to 10 s) and stops its command.
    let out = tokio::task::spawn_blocking(move || holder.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(76));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_urls_work_for_run_status_and_unlock() {
    let path = zk_path("cli");
    let u = zk_url();
    let out = run(&[
        "run",
        "--url",
        &u,
        "--name",
        &path,
        "--",
        "sh",
        "-c",
        "echo $POLYLOCK_FENCING_TOKEN",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token: u64 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(token > 0);
    let mut holder = polylock()
        .args(["run", "--url", &u, "--name", &path, "--", "sleep", "30"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    zk_children_until(&path, |c| !c.is_empty()).await;
    let mut waiter = polylock()
        .args(["run", "--url", &u, "--name", &path, "--", "true"])
        .spawn()
        .unwrap();
    zk_children_until(&path, |c| c.len() >= 2).await;
    let out = run(&["status", "--url", &u, "--name", &path]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["locked"], true);
    let children = zk_children(&path).await;
    let holder_node = v["holders"][0]["owner"].as_str().unwrap().to_string();
    let waiter_node = v["waiters"][0].as_str().unwrap().to_string();
    assert!(children.contains(&holder_node) && children.contains(&waiter_node));
    let seq = |n: &str| n.rsplit("-lock-").next().unwrap().parse::<u64>().unwrap();
    assert!(
        seq(&holder_node) < seq(&waiter_node),
        "contenders listed in lock order"
    );
    let out = run(&[
        "run", "--url", &u, "--name", &path, "--wait", "200ms", "--", "true",
    ]);
    assert_eq!(out.status.code(), Some(75));
    let out = run(&["unlock", "--url", &u, "--name", &path, "--force"]);
    assert!(out.status.success());
    let _ = tokio::task::spawn_blocking(move || waiter.wait())
        .await
        .unwrap();
    holder.kill().unwrap();
    let _ = holder.wait();
    let out = run(&["run", "--url", &u, "--name", "relative/path", "--", "true"]);
    assert_eq!(out.status.code(), Some(64));
}

/// `--read`/`--write` (and flock's `--shared`/`--exclusive`) take the halves of a read-write lock:
/// readers run side by side, a writer waits for them; `status` shows the mode and the holders.
async fn read_and_write_modes(u: &str, name: &str) {
    let mut readers: Vec<_> = [["--read", name], ["--shared", "--name"]]
        .iter()
        .map(|how| {
            let mut args = vec!["run", "--url", u];
            args.extend_from_slice(how);
            if how[0] == "--shared" {
                args.push(name);
            }
            args.extend_from_slice(&["--", "sleep", "30"]);
            polylock().args(&args).spawn().unwrap()
        })
        .collect();
    // Both readers hold at once.
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let out = run(&["status", "--url", u, "--read", name]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if v["holders"].as_array().map_or(0, |h| h.len()) == 2 {
            break v;
        }
        assert!(Instant::now() < deadline, "two readers never held: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["mode"], "read");
    assert_eq!(status["holders"][0]["mode"], "read");
    // A writer cannot get in while they read.
    let out = run(&[
        "run", "--url", u, "--write", name, "--wait", "300ms", "--", "true",
    ]);
    assert_eq!(out.status.code(), Some(75));
    let out = run(&[
        "run",
        "--url",
        u,
        "--exclusive",
        "--name",
        name,
        "--wait",
        "300ms",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(75));
    for r in &mut readers {
        r.kill().unwrap();
        let _ = r.wait();
    }
    // Killed readers release on SIGKILL only when their lease or session ends; force it open.
    let out = run(&["unlock", "--url", u, "--read", name, "--force"]);
    assert!(out.status.success());
    let out = run(&[
        "run",
        "--url",
        u,
        "--write",
        name,
        "--wait",
        "15s",
        "--",
        "sh",
        "-c",
        "echo $POLYLOCK_NAME",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_and_write_modes_on_redis() {
    read_and_write_modes(&url(), &unique("cli-rw")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_and_write_modes_on_zookeeper() {
    read_and_write_modes(&zk_url(), &zk_path("cli-rw")).await;
}

#[test]
fn read_write_usage_errors_exit_64() {
    for args in [
        &["run", "--read", "a", "--name", "a", "--", "true"][..],
        &["run", "--read", "a", "--write", "a", "--", "true"],
        &["run", "--shared", "--", "true"],
        &[
            "run",
            "--name",
            "a",
            "--shared",
            "--exclusive",
            "--",
            "true",
        ],
        &["status"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(64), "{args:?}");
    }
}

/// A `--wait` that runs out on ZooKeeper removes its node before the process exits (and the
/// process closes its session), so the next waiter gets the lock as soon as the holder lets go,
/// instead of queueing behind a dead node until the session times out. 20 rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_zookeeper_wait_leaves_no_node_behind() {
    let u = zk_url();
    let holders = zk_client().await;
    let waiters = zk_client().await;
    let path = zk_path("cli-timeout");
    let mut slowest = Duration::ZERO;
    for round in 0..20 {
        let holder = holders.lock(&path).unwrap();
        holder
            .acquire(1, polylock::AcquireOptions::forever())
            .await
            .unwrap();
        let (u2, p2) = (u.clone(), path.clone());
        let out = tokio::task::spawn_blocking(move || {
            run(&[
                "run", "--url", &u2, "--name", &p2, "--wait", "300ms", "--", "true",
            ])
        })
        .await
        .unwrap();
        assert_eq!(out.status.code(), Some(75), "round {round}");
        let left = zk_children(&path).await;
        assert_eq!(
            left.len(),
            1,
            "round {round}: only the holder's node: {left:?}"
        );
        let waiter = waiters.lock(&path).unwrap();
        let queued = tokio::spawn(async move {
            waiter
                .acquire(2, polylock::AcquireOptions::forever())
                .await
                .unwrap();
            (Instant::now(), waiter)
        });
        zk_children_until(&path, |c| c.len() == 2).await;
        let released = Instant::now();
        holder.release(1).await.unwrap();
        let (got, waiter) = queued.await.unwrap();
        let took = got.duration_since(released);
        slowest = slowest.max(took);
        // A node left behind by the timed-out command would hold the waiter until that
        // command's session expired (10 s): the bound is half of that (a CI run once took
        // 168 ms here).
        assert!(
            took < Duration::from_secs(5),
            "round {round}: the third waiter got the lock {took:?} after the release"
        );
        waiter.release(2).await.unwrap();
        zk_children_until(&path, |c| c.is_empty()).await;
    }
    println!("20 rounds: the third waiter got the lock at most {slowest:?} after the release");
}

/// `run --permits N` runs at most N commands at once; the rest wait (or time out with 75); on
/// Redis a SIGKILLed polylock's permit comes back within its watchdog lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_bound_concurrent_commands_and_a_killed_holder_leaks_none() {
    let u = url();
    let name = unique("cli-permits");
    let mut holders: Vec<_> = (0..2)
        .map(|_| {
            polylock()
                .args([
                    "run",
                    "--url",
                    &u,
                    "--permits",
                    "2",
                    "--name",
                    &name,
                    "--watchdog",
                    "1s",
                    "--",
                    "sh",
                    "-c",
                    "echo $POLYLOCK_PERMIT; sleep 30",
                ])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = run(&["status", "--url", &u, "--permits", "--name", &name]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if v["taken"] == 2 {
            assert_eq!(v["available"], 0);
            assert_eq!(v["permits"], 2);
            assert_eq!(v["holders"][0]["id"].as_str().unwrap().len(), 32);
            break;
        }
        assert!(Instant::now() < deadline, "two permits never taken: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let out = run(&[
        "run",
        "--url",
        &u,
        "--permits",
        "2",
        "--name",
        &name,
        "--wait",
        "300ms",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(75), "a third waits and times out");
    // SIGKILL one holder (and its orphaned command): no release, no more renewals.
    let mut victim = holders.remove(0);
    let orphan = Command::new("pgrep")
        .args(["-P", &victim.id().to_string()])
        .output()
        .unwrap();
    victim.kill().unwrap();
    let _ = victim.wait();
    let started = Instant::now();
    for pid in String::from_utf8_lossy(&orphan.stdout).split_whitespace() {
        let _ = Command::new("kill").args(["-KILL", pid]).status();
    }
    let out = run(&[
        "run",
        "--url",
        &u,
        "--permits",
        "2",
        "--name",
        &name,
        "--wait",
        "10s",
        "--",
        "true",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        // At the 1 s lease's end, not the 10 s wait's (a process start or two beside it).
        started.elapsed() < Duration::from_secs(6),
        "the killed holder's permit came back within its 1 s lease: {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "it came back by expiry, not by a release: {:?}",
        started.elapsed()
    );
    for mut h in holders {
        let _ = Command::new("pkill")
            .args(["-TERM", "-P", &h.id().to_string()])
            .status();
        let _ = h.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_on_zookeeper_are_session_leases() {
    let u = zk_url();
    let path = zk_path("cli-permits");
    let mut holder = polylock()
        .args([
            "run",
            "--url",
            &u,
            "--permits",
            "1",
            "--name",
            &path,
            "--",
            "sleep",
            "30",
        ])
        .spawn()
        .unwrap();
    zk_children_until(&format!("{path}/leases"), |c| c.len() == 1).await;
    let out = run(&["status", "--url", &u, "--permits", "--name", &path]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["available"].clone(), v["taken"].clone()),
        (0.into(), 1.into())
    );
    let out = run(&[
        "run",
        "--url",
        &u,
        "--permits",
        "1",
        "--name",
        &path,
        "--wait",
        "300ms",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(75));
    assert_eq!(
        zk_children(&format!("{path}/leases")).await.len(),
        1,
        "nothing left by the timeout"
    );
    let _ = Command::new("pkill")
        .args(["-TERM", "-P", &holder.id().to_string()])
        .status();
    let _ = holder.wait();
    zk_children_until(&format!("{path}/leases"), |c| c.is_empty()).await;
}

/// Several --name: all of them or none; the tokens in the order given; status, one line each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_names_take_a_multi_lock() {
    let (a, b) = (unique("cli-multi-a"), unique("cli-multi-b"));
    let out = run(&[
        "run",
        "--name",
        &b,
        "--name",
        &a,
        "--",
        "sh",
        "-c",
        &format!(
            "echo \"$POLYLOCK_NAME $POLYLOCK_FENCING_TOKENS\"; redis-cli -p {} exists {a} {b}",
            url().rsplit(':').next().unwrap()
        ),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], format!("{b},{a} 1,1"));
    assert_eq!(lines[1], "2", "both held while the command ran");
    // One of them held elsewhere: the run waits, times out, and takes nothing.
    let holder = client().await;
    holder
        .lock(&b)
        .unwrap()
        .acquire(1, polylock::AcquireOptions::forever())
        .await
        .unwrap();
    let out = run(&[
        "run", "--name", &a, "--name", &b, "--wait", "300ms", "--", "true",
    ]);
    assert_eq!(out.status.code(), Some(75));
    let mut r = raw().await;
    let n: i64 = r.exists(&a).await.unwrap();
    assert_eq!(n, 0, "the free member was given back");
    let out = run(&["status", "--name", &a, "--name", &b]);
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0]["locked"].as_bool(), lines[1]["locked"].as_bool()),
        (Some(false), Some(true))
    );
    holder.close().await.unwrap();
    let out = run(&[
        "run",
        "--name",
        &a,
        "--name",
        &b,
        "--permits",
        "2",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(64));
}

/// --url three times: a RedLock over the three masters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_urls_take_a_redlock() {
    let servers: Vec<OwnRedis> = (0..3).map(|_| OwnRedis::start(&[])).collect();
    let name = unique("cli-redlock");
    let mut args = vec!["run".to_string()];
    for s in &servers {
        args.extend(["--url".to_string(), s.url()]);
    }
    let ports: Vec<String> = servers.iter().map(|s| s.port.to_string()).collect();
    let script = format!(
        "for p in {}; do redis-cli -p $p exists {name}; done",
        ports.join(" ")
    );
    args.extend(["--name", &name, "--", "sh", "-c", &script].map(String::from));
    let out = polylock().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "1\n1\n1\n",
        "held on every master"
    );
    for s in &servers {
        let mut r = raw_at(&s.url()).await;
        let n: i64 = r.exists(&name).await.unwrap();
        assert_eq!(n, 0, "released on every master");
    }
    // Two URLs are not a RedLock.
    let out = polylock()
        .args([
            "run",
            "--url",
            &servers[0].url(),
            "--url",
            &servers[1].url(),
            "--name",
            &name,
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
}

/// A child killed and reaped when the test ends, whatever happens (a holder left running would
/// keep its lock and the test's port busy).
struct Holder(std::process::Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `polylock ARGS` holding a lock with `sleep 30` (or without a command), and wait until
/// `ready` says the server shows it.
async fn hold(args: &[&str], ready: impl AsyncFn() -> bool) -> Holder {
    let child = polylock()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let holder = Holder(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready().await {
        assert!(Instant::now() < deadline, "{args:?} never held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    holder
}

fn status_of(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_wait_and_the_conflict_exit_code() {
    let name = unique("cli-nowait");
    let _holder = hold(&["run", &name, "--", "sleep", "30"], async || {
        let n: i64 = raw().await.exists(&name).await.unwrap();
        n == 1
    })
    .await;
    // -n: one try, exit 75 at once and silently (cron mails any output), the command not run.
    let started = Instant::now();
    let out = run(&["run", "-n", &name, "--", "sh", "-c", "echo ran"]);
    assert_eq!(out.status.code(), Some(75));
    assert!(
        out.stdout.is_empty(),
        "the command ran while the lock was held"
    );
    assert!(
        out.stderr.is_empty(),
        "a conflict is silent without --verbose: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        // No wait at all: the bound only has to stay below the holder's 30 s.
        started.elapsed() < Duration::from_secs(10),
        "-n waited {:?}",
        started.elapsed()
    );
    // --wait 0 is the same (it used to be a usage error).
    assert_eq!(
        run(&["run", "--wait", "0", &name, "--", "true"])
            .status
            .code(),
        Some(75)
    );
    assert_eq!(
        run(&["run", "--wait", "0s", &name, "--", "true"])
            .status
            .code(),
        Some(75)
    );
    // -E 0: "another host has it" is a success for cron; -E N after a bounded wait too.
    let out = run(&["run", "-n", "-E", "0", &name, "--", "sh", "-c", "echo ran"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "-E 0 must not run the command");
    let out = run(&[
        "run",
        "--conflict-exit-code",
        "3",
        "--wait",
        "200ms",
        &name,
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(3));
    // --verbose says what happened and who holds it.
    let out = run(&["--verbose", "run", "-n", &name, "--", "true"]);
    assert_eq!(out.status.code(), Some(75));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"kind\":\"lock\"") && err.contains("\"locked\":true"),
        "{err}"
    );
    // -n with --wait is a usage error; a free lock runs the command with -n.
    assert_eq!(
        run(&["run", "-n", "--wait", "1s", &name, "--", "true"])
            .status
            .code(),
        Some(64)
    );
    let free = unique("cli-nowait-free");
    let out = run(&["run", "-n", "-E", "0", &free, "--", "sh", "-c", "echo ran"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ran");
}

#[test]
fn run_and_lock_take_the_name_positionally() {
    let name = unique("cli-positional");
    for sub in ["run", "lock"] {
        let out = run(&[sub, &name, "--", "sh", "-c", "echo \"$POLYLOCK_NAME\""]);
        assert!(
            out.status.success(),
            "{sub}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), name, "{sub}");
    }
    // --name is kept, and a name given both ways with another is a multi-lock of the two.
    let out = run(&[
        "run",
        "--name",
        &name,
        "--",
        "sh",
        "-c",
        "echo \"$POLYLOCK_NAME\"",
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), name);
    let other = unique("cli-positional-2");
    let out = run(&[
        "run",
        &name,
        "--name",
        &other,
        "--",
        "sh",
        "-c",
        "echo \"$POLYLOCK_FENCING_TOKENS\"",
    ]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .split(',')
            .count(),
        2,
        "two names: a multi-lock with two tokens"
    );
    // No name at all is a usage error.
    assert_eq!(run(&["run", "--", "true"]).status.code(), Some(64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_without_a_command_holds_until_sigterm() {
    use std::io::BufRead;
    let name = unique("cli-hold");
    let mut child = polylock()
        .args(["lock", &name])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        line
    })
    .await
    .unwrap();
    let mut holder = Holder(child);
    let v: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(v["name"], name.as_str());
    assert_eq!(
        v["key"],
        name.as_str(),
        "on Redis the key is the lock's hash"
    );
    let token = v["fencing_token"].as_u64().unwrap();
    assert!(token >= 1);
    // The owner it prints is the field the server stores for it.
    let owner = v["owner"].as_str().unwrap().to_string();
    let fields: std::collections::HashMap<String, i64> = raw().await.hgetall(&name).await.unwrap();
    assert_eq!(fields.get(&owner), Some(&1), "{fields:?} holds {owner}");
    // It holds: another command finds the lock taken, also a second later.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        run(&["run", "-n", &name, "--", "true"]).status.code(),
        Some(75)
    );
    // SIGTERM: it releases and exits 0.
    let ok = Command::new("kill")
        .args(["-TERM", &holder.0.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = tokio::task::spawn_blocking(move || {
        let s = holder.0.wait();
        std::mem::forget(holder);
        s
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "released after SIGTERM and exited 0"
    );
    let n: i64 = raw().await.exists(&name).await.unwrap();
    assert_eq!(n, 0, "the lock was released");
    let out = run(&[
        "run",
        "-n",
        &name,
        "--",
        "sh",
        "-c",
        "echo $POLYLOCK_FENCING_TOKEN",
    ]);
    let next: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(next > token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_without_a_command_exits_76_when_the_lock_is_lost() {
    let name = unique("cli-hold-lost");
    let child = polylock()
        .args(["lock", &name, "--watchdog", "900ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_locked(&name, true).await;
    let _: () = raw().await.del(&name).await.unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(76));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lost"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_what_each_name_holds_on_redis() {
    // Nothing stored.
    let free = unique("cli-status-free");
    let v = status_of(&["status", &free]);
    assert_eq!(
        (v["kind"].as_str(), v["locked"].as_bool()),
        (Some("free"), Some(false))
    );

    // A lock.
    let lock = unique("cli-status-lock");
    let _l = hold(&["run", &lock, "--", "sleep", "30"], async || {
        let n: i64 = raw().await.exists(&lock).await.unwrap();
        n == 1
    })
    .await;
    let v = status_of(&["status", &lock]);
    assert_eq!(
        (v["kind"].as_str(), v["locked"].as_bool()),
        (Some("lock"), Some(true))
    );

    // A read-write lock taken for reading.
    let rw = unique("cli-status-rw");
    let _r = hold(&["run", "--read", &rw, "--", "sleep", "30"], async || {
        let n: i64 = raw().await.exists(&rw).await.unwrap();
        n == 1
    })
    .await;
    let v = status_of(&["status", &rw]);
    assert_eq!(v["kind"], "read-write lock");
    assert_eq!(v["mode"], "read");
    assert_eq!(v["holders"][0]["mode"], "read");

    // A semaphore taken with --permits (this printed Redis's raw WRONGTYPE error before).
    let sem = unique("cli-status-sem");
    let _s = hold(
        &["run", "--permits", "2", &sem, "--", "sleep", "30"],
        async || {
            let n: i64 = raw()
                .await
                .zcard(format!("{{{sem}}}:timeout"))
                .await
                .unwrap();
            n == 1
        },
    )
    .await;
    let v = status_of(&["status", &sem]);
    assert_eq!(v["kind"], "expiring semaphore", "{v}");
    assert_eq!(
        (v["available"].as_i64(), v["permits"].as_i64()),
        (Some(1), Some(2))
    );
    assert_eq!(v["taken"], 1);

    // A plain semaphore (Redisson's RSemaphore) whose permits are all taken: a bare "0".
    let plain = unique("cli-status-plain");
    let _: () = raw().await.set(&plain, 0).await.unwrap();
    let v = status_of(&["status", &plain]);
    assert_eq!(v["kind"], "semaphore", "{v}");
    assert_eq!(v["available"], 0);

    // A fair lock with a waiter in its queue.
    let fair = unique("cli-status-fair");
    let _f = hold(&["run", "--fair", &fair, "--", "sleep", "30"], async || {
        let n: i64 = raw().await.exists(&fair).await.unwrap();
        n == 1
    })
    .await;
    let queue = format!("redisson_lock_queue:{{{fair}}}");
    let _w = hold(&["run", "--fair", &fair, "--", "true"], async || {
        let n: i64 = raw().await.llen(&queue).await.unwrap();
        n == 1
    })
    .await;
    let v = status_of(&["status", &fair]);
    assert_eq!(v["kind"], "fair lock", "{v}");
    assert_eq!(v["waiters"].as_array().unwrap().len(), 1);

    // Several names: one line each, each saying what it is.
    let out = run(&["status", &lock, "--name", &sem]);
    let kinds: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(kinds, ["\"lock\"", "\"expiring semaphore\""]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_what_each_name_holds_on_zookeeper() {
    let u = zk_url();
    let lock = zk_path("cli-status-lock");
    let _l = hold(
        &["run", "--url", &u, &lock, "--", "sleep", "30"],
        async || !zk_children(&lock).await.is_empty(),
    )
    .await;
    let v = status_of(&["status", "--url", &u, &lock]);
    assert_eq!(
        (v["kind"].as_str(), v["locked"].as_bool()),
        (Some("lock"), Some(true)),
        "{v}"
    );

    let sem = zk_path("cli-status-sem");
    let leases = format!("{sem}/leases");
    let _s = hold(
        &[
            "run",
            "--url",
            &u,
            "--permits",
            "2",
            &sem,
            "--",
            "sleep",
            "30",
        ],
        async || zk_children(&leases).await.len() == 1,
    )
    .await;
    let v = status_of(&["status", "--url", &u, &sem]);
    assert_eq!(v["kind"], "semaphore", "{v}");
    assert_eq!(v["permits"], 2);

    let free = zk_path("cli-status-free");
    let v = status_of(&["status", "--url", &u, &free]);
    assert_eq!(v["kind"], "free", "{v}");
}

#[test]
fn verbose_says_which_server_and_where_its_url_came_from() {
    let name = unique("cli-verbose");
    // The default: no --url and no POLYLOCK_URL (the test server is the default's address).
    let out = Command::new(env!("CARGO_BIN_EXE_polylock"))
        .env_remove("POLYLOCK_URL")
        .args(["--verbose", "status", &name])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("redis://127.0.0.1:6379 (from the default"),
        "{err}"
    );
    // POLYLOCK_URL is read.
    let out = polylock().args(["-v", "status", &name]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{} (from POLYLOCK_URL)", url())),
        "{err}"
    );
    let out = polylock()
        .env("POLYLOCK_URL", format!("redis://127.0.0.1:{}", free_port()))
        .args(["status", &name])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "POLYLOCK_URL names the server");
    // --url wins, and a password is never printed.
    let out = polylock()
        .args([
            "--verbose",
            "status",
            "--url",
            "redis://user:secret@127.0.0.1:1/0",
            &name,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("redis://user:***@127.0.0.1:1/0 (from --url)"),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
    // Without --verbose nothing is said.
    let out = polylock().args(["status", &name]).output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn help_lists_every_url_form_and_the_cron_recipe() {
    for sub in ["run", "lock", "status", "unlock"] {
        let out = run(&[sub, "--help"]);
        assert_eq!(out.status.code(), Some(0));
        let help = String::from_utf8_lossy(&out.stdout);
        for form in [
            "redis://",
            "rediss://",
            "redis+sentinel://",
            "rediss+sentinel",
            "redis+cluster://",
            "rediss+cluster",
            "wait_replicas=",
            "zk://",
            "zks://",
            "etcd://",
            "etcds://",
            "mysql://",
            "mariadb://",
            "postgres://",
            "postgresql://",
            "mode=table",
            "fencing=",
            "sslmode=",
            "POLYLOCK_URL",
            "three or more times",
        ] {
            assert!(
                help.contains(form),
                "`polylock {sub} --help` lacks {form}:\n{help}"
            );
        }
    }
    let top = String::from_utf8_lossy(&run(&["--help"]).stdout).to_string();
    assert!(top.contains("polylock run -n -E 0"), "{top}");
    assert!(!top.contains("help-markdown"), "the generator stays hidden");
}

#[test]
fn the_books_reference_is_what_help_markdown_prints() {
    let out = run(&["help-markdown"]);
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/src/cli.md");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        generated.contains("## `polylock run`") && generated.contains("--conflict-exit-code"),
        "{generated}"
    );
    assert!(
        committed == generated,
        "docs/src/cli.md is not what `polylock help-markdown` prints: run scripts/docs.sh --fix-reference"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_what_each_name_holds_on_etcd_and_sql() {
    let etcd =
        std::env::var("POLYLOCK_ETCD_URL").unwrap_or_else(|_| "etcd://127.0.0.1:2379".into());
    let mysql = std::env::var("POLYLOCK_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock".into());
    let pg = std::env::var("POLYLOCK_PG_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock".into());
    let id = uuid::Uuid::new_v4().simple().to_string();
    // A semaphore on etcd (its permit keys must not read as a lock's contenders), a lock there.
    let sem = format!("cli-status-sem-{id}");
    let lock = format!("cli-status-lock-{id}");
    // Each command prints what `status` says while it holds.
    let inner = |url: &str, name: &str| {
        format!(
            "{} status --url '{url}' '{name}'",
            env!("CARGO_BIN_EXE_polylock")
        )
    };
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (
            vec![
                "--url".into(),
                etcd.clone(),
                "--permits".into(),
                "2".into(),
                sem.clone(),
            ],
            "semaphore",
            &sem,
        ),
        (
            vec!["--url".into(), etcd.clone(), lock.clone()],
            "lock",
            &lock,
        ),
        (
            vec!["--url".into(), etcd.clone(), "--read".into(), lock.clone()],
            "read-write lock",
            &lock,
        ),
        (
            vec!["--url".into(), mysql.clone(), lock.clone()],
            "lock",
            &lock,
        ),
        (
            vec!["--url".into(), pg.clone(), lock.clone()],
            "lock",
            &lock,
        ),
        (
            vec!["--url".into(), pg.clone(), "--read".into(), lock.clone()],
            "read-write lock",
            &lock,
        ),
        (
            vec!["--url".into(), format!("{pg}?mode=table"), lock.clone()],
            "lock",
            &lock,
        ),
    ];
    for (args, kind, name) in cases {
        let url = args[1].clone();
        let mut full: Vec<String> = vec!["run".into()];
        full.extend(args);
        full.extend(["--".into(), "sh".into(), "-c".into(), inner(&url, name)]);
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let out = run(&full);
        assert!(
            out.status.success(),
            "{full:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{full:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(v["kind"], kind, "{full:?}: {v}");
        if kind != "semaphore" {
            assert_eq!(v["locked"], true, "{full:?}: {v}");
        } else {
            assert_eq!(
                (v["permits"].as_i64(), v["taken"].as_i64()),
                (Some(2), Some(1)),
                "{v}"
            );
        }
        // Released: the name is free again (a semaphore keeps its count, all of it free).
        let after = status_of(&["status", "--url", &url, name]);
        if kind == "semaphore" {
            assert_eq!(after["available"], 2, "{after}");
        } else {
            assert_eq!(after["kind"], "free", "{full:?} after: {after}");
        }
    }
}

#[path = "sql_common/mod.rs"]
mod sql_common;

/// A `polylock run` waiting on MariaDB or PostgreSQL and stopped with Ctrl-C cancels its wait on
/// the server before it exits. Before, it exited 130 and left its GET_LOCK / pg_advisory_lock
/// running: that orphan was granted the lock when the holder let go and kept it until the server
/// noticed the closed socket, so a third client still found the lock taken.
async fn ctrl_c_cancels_the_servers_wait(url: &str) {
    let name = sql_common::unique("cli-ctrl-c");
    let holder = sql_common::client(url).await;
    let lock = holder.lock(&name).unwrap();
    let owner = polylock::owner::fresh();
    lock.acquire(owner, polylock::AcquireOptions::forever())
        .await
        .unwrap();
    let mut child = polylock()
        .args([
            "-v", "run", "--url", url, "--name", &name, "--wait", "20s", "--", "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // -v names the server once the command's signal handlers are in place: a SIGINT sent before
    // that would meet the default action (the server's waiter count below may be another test's).
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut first).unwrap();
    assert!(first.contains("polylock: server"), "{first}");
    // Its wait is on the server (its connection waits in the lock statement).
    let waiting = if url.starts_with("mysql") {
        sql_common::eventually(Duration::from_secs(10), || async {
            sql_common::my_all_waiters().await >= 1
        })
        .await
    } else {
        sql_common::eventually(Duration::from_secs(10), || async {
            sql_common::pg_waiters().await >= 1
        })
        .await
    };
    assert!(
        waiting.is_some(),
        "{url}: the command never waited on the server"
    );
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{url}: {out:?}");
    drop(stderr);
    // The holder lets go: nobody else may be granted the lock now.
    lock.release(owner).await.unwrap();
    let third = sql_common::client(url).await;
    let theirs = third.lock(&name).unwrap();
    let got = sql_common::eventually(Duration::from_secs(1), || async {
        let o = polylock::owner::fresh();
        match theirs.try_acquire(o, None).await.unwrap() {
            Some(_) => {
                theirs.release(o).await.unwrap();
                true
            }
            None => false,
        }
    })
    .await;
    assert!(
        got.is_some(),
        "{url}: the lock is still taken 1 s after the holder let go: the stopped command's wait \
         was left on the server and granted"
    );
    third.close().await.unwrap();
    holder.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_a_mysql_wait_on_the_server() {
    ctrl_c_cancels_the_servers_wait(&sql_common::mysql_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_a_postgres_wait_on_the_server() {
    ctrl_c_cancels_the_servers_wait(&sql_common::pg_url()).await;
}

// --- The command's whole process group ----------------------------------------------------------

/// Whether process `pid` is gone (or a zombie nobody reaped yet: it runs nothing).
fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // "pid (comm) S ...": the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The pid a command wrote to `file` (it writes it once its grandchild runs).
fn pid_in(file: &std::path::Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pid_file(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("polylock-{tag}-{}", uuid::Uuid::new_v4()))
}

/// `polylock run` with a shell command that starts a grandchild (`sleep 300`, its pid written
/// to a file); `ignore_term` makes both the shell and the grandchild ignore SIGTERM.
fn run_with_grandchild(
    name: &str,
    pids: &std::path::Path,
    ignore_term: bool,
) -> std::process::Child {
    let trap = if ignore_term { "trap '' TERM; " } else { "" };
    // The grandchild keeps none of polylock's pipes: a test waits for polylock's own end only.
    let script = format!(
        "{trap}sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {}; wait",
        pids.display()
    );
    polylock()
        .args([
            "run",
            "--name",
            name,
            "--watchdog",
            "900ms",
            "--grace",
            "1s",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_stops_the_commands_grandchildren_too() {
    let name = unique("cli-lost-group");
    let pids = pid_file("group");
    let child = run_with_grandchild(&name, &pids, false);
    let grandchild = pid_in(&pids);
    wait_locked(&name, true).await;
    let _: () = raw().await.del(&name).await.unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(76),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // polylock ends the group before it exits: the grandchild runs no longer, without a wait.
    assert!(
        process_gone(grandchild),
        "the grandchild {grandchild} outlived the lock"
    );
    let _ = std::fs::remove_file(&pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_that_ignores_sigterm_gets_sigkill_after_the_grace() {
    let name = unique("cli-lost-stubborn");
    let pids = pid_file("stubborn");
    let child = run_with_grandchild(&name, &pids, true);
    let grandchild = pid_in(&pids);
    wait_locked(&name, true).await;
    let _: () = raw().await.del(&name).await.unwrap();
    let deleted = Instant::now();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(76),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        process_gone(grandchild),
        "the grandchild {grandchild} outlived the lock"
    );
    // SIGTERM was ignored: only the SIGKILL after the 1 s grace ended them (a lower bound, which
    // no load can break).
    assert!(
        deleted.elapsed() >= Duration::from_secs(1),
        "{:?}",
        deleted.elapsed()
    );
    let _ = std::fs::remove_file(&pids);
}

#[test]
fn what_the_command_leaves_running_ends_before_the_lock_is_released() {
    let name = unique("cli-leftover");
    let pids = pid_file("leftover");
    // The shell ends at once and leaves its grandchild running.
    let script = format!(
        "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {}",
        pids.display()
    );
    let out = run(&[
        "run", "--name", &name, "--grace", "1s", "--", "sh", "-c", &script,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let grandchild = pid_in(&pids);
    assert!(
        process_gone(grandchild),
        "the grandchild {grandchild} outlived polylock"
    );
    let _ = std::fs::remove_file(&pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_polylock_reaches_the_whole_group() {
    let name = unique("cli-term-group");
    let pids = pid_file("term");
    let child = run_with_grandchild(&name, &pids, false);
    let grandchild = pid_in(&pids);
    wait_locked(&name, true).await;
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        process_gone(grandchild),
        "the grandchild {grandchild} kept running"
    );
    wait_locked(&name, false).await;
    let _ = std::fs::remove_file(&pids);
}

#[test]
fn the_command_inherits_the_url_but_not_serves_token() {
    let name = unique("cli-env");
    let out = polylock()
        .env("POLYLOCK_SERVE_TOKEN", "serve-secret-1")
        .args([
            "run",
            "--name",
            &name,
            "--",
            "sh",
            "-c",
            "echo \"token=[$POLYLOCK_SERVE_TOKEN] url=[$POLYLOCK_URL]\"",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("token=[]"), "{stdout}");
    assert!(stdout.contains(&format!("url=[{}]", url())), "{stdout}");
}

/// Whether `text` holds a character a terminal would obey (the CLI must show them escaped).
fn obeyable(text: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(text)
        .chars()
        .filter(|&c| c != '\n' && polylock::shown::is_obeyed(c))
        .collect()
}

/// A lock name and a holder identity written by someone else, with a title-setting sequence, a
/// clear-screen CSI, its 8-bit form and a bidi override: status (one name and a pattern), a
/// timed-out `run -v`, `leader` and a losing `elect -v` show them escaped, and the JSON lines
/// still read back to the very name and identity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_holders_from_others_are_shown_escaped() {
    let name = format!(
        "{}\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}2J\u{202e}",
        unique("cli-esc")
    );
    let mut holder = polylock()
        .args(["run", "--name", &name, "--", "sleep", "30"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_locked(&name, true).await;
    let out = run(&["status", "--name", &name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        obeyable(&out.stdout),
        Vec::<char>::new(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["name"], name.as_str());
    let prefix = &name[..name.find('\u{1b}').unwrap()];
    let out = run(&["status", "--match", &format!("{prefix}*")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\\u001b]0;pwned"));
    assert_eq!(obeyable(&out.stdout), Vec::<char>::new());
    let out = run(&[
        "-v", "run", "--name", &name, "--wait", "100ms", "--", "true",
    ]);
    assert_eq!(out.status.code(), Some(75));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\\u001b]0;pwned"));
    assert_eq!(
        obeyable(&out.stderr),
        Vec::<char>::new(),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    holder.kill().unwrap();
    holder.wait().unwrap();

    let election = unique("cli-esc-elect");
    let identity = "node\u{1b}]0;pwned\u{7}\u{9b}1A";
    let mut leader = polylock()
        .args([
            "elect",
            &election,
            "--identity",
            identity,
            "--",
            "sleep",
            "30",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    let out = loop {
        let out = run(&["leader", &election]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if v["leader"] == identity {
            break out;
        }
        assert!(Instant::now() < until, "{v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        obeyable(&out.stdout),
        Vec::<char>::new(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run(&["-v", "elect", &election, "--wait", "0", "--", "true"]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("node\\u001b]0;pwned\\u0007\\u009b1A"), "{err}");
    assert_eq!(obeyable(&out.stderr), Vec::<char>::new(), "{err:?}");
    leader.kill().unwrap();
    leader.wait().unwrap();
}

/// Redisson's format gives `x` and `{x}` one timeout key and one fair queue: `status` of either
/// names the other while both are held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_names_a_lock_that_shares_state() {
    let x = unique("cli-shared");
    let tagged = format!("{{{x}}}");
    let mut holders: Vec<_> = [&x, &tagged]
        .iter()
        .map(|n| {
            polylock()
                .args(["run", "--name", n, "--", "sleep", "30"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_locked(&x, true).await;
    wait_locked(&tagged, true).await;
    for (name, other) in [(&x, &tagged), (&tagged, &x)] {
        let out = run(&["status", "--name", name]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["shared_with"], serde_json::json!([other]), "{v}");
    }
    for h in &mut holders {
        h.kill().unwrap();
        h.wait().unwrap();
    }
}
