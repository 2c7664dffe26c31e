//! The blocking API from plain threads (as C, Python and Java call it): the caller's thread does
//! the Redis I/O on a connection of its own. These tests run without a tokio runtime of their own.
mod common;

use std::time::Duration;

use common::*;
use polylock::blocking::Client;
use polylock::{AcquireOptions, ClientOptions, ErrorKind, Released};

fn connected_clients(url: &str) -> i64 {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let info: String = redis::cmd("INFO").arg("clients").query(&mut c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[test]
fn blocked_callers_talk_on_their_own_connection_and_survive_a_restart() {
    let mut server = OwnRedis::start(&[]);
    let url = server.url();
    let opts = ClientOptions {
        command_timeout: Duration::from_millis(500),
        ..ClientOptions::default()
    };
    let client = Client::connect_with(&url, opts).unwrap();
    let lock = client.lock("blocking").unwrap();
    let before = connected_clients(&url);
    let held = lock.acquire(1, AcquireOptions::try_once()).unwrap();
    assert_eq!(held.hold_count, 1);
    assert_eq!(
        lock.acquire(1, AcquireOptions::forever())
            .unwrap()
            .hold_count,
        2
    );
    assert_eq!(lock.hold_count(1).unwrap(), 2);
    assert_eq!(lock.release(1).unwrap(), Released::StillHeld(1));
    assert_eq!(lock.release(1).unwrap(), Released::Freed);
    assert_eq!(
        connected_clients(&url),
        before + 1,
        "one connection of the calling thread, reused for every call"
    );
    // Two threads at once use two connections; neither sees the other's hold as its own.
    let l2 = lock.clone();
    lock.acquire(1, AcquireOptions::forever()).unwrap();
    let other = std::thread::spawn(move || {
        let got = l2.try_acquire(2, None).unwrap().is_some();
        let err = l2.release(2).unwrap_err().kind();
        (got, err)
    })
    .join()
    .unwrap();
    assert_eq!(other, (false, ErrorKind::NotOwner));
    lock.release(1).unwrap();

    // A restart kills the idle connection: the next call reconnects by itself.
    server.restart();
    let mut again = None;
    for _ in 0..50 {
        match lock.try_acquire(1, None) {
            Ok(a) => {
                again = a;
                break;
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    assert!(again.is_some(), "acquired after the restart");
    assert_eq!(lock.release(1).unwrap(), Released::Freed);
    let open = connected_clients(&url);
    client.close().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while connected_clients(&url) != open - 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        connected_clients(&url),
        open - 1,
        "close dropped the idle connection of the calling thread"
    );
}

#[test]
fn a_blocked_waiter_is_woken_by_a_release_from_another_thread() {
    let url = url();
    let client = Client::connect(&url).unwrap();
    let lock = client.lock(&unique("blocking-wait")).unwrap();
    lock.acquire(1, AcquireOptions::forever()).unwrap();
    let l2 = lock.clone();
    let waiter = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        let got = l2.acquire(2, AcquireOptions::wait_for(Duration::from_secs(10)));
        (got.map(|a| a.hold_count), t0.elapsed(), l2.release(2))
    });
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(lock.release(1).unwrap(), Released::Freed);
    let (got, waited, released) = waiter.join().unwrap();
    assert_eq!(got.unwrap(), 1);
    // Not woken, it would wait out its 10 s: half of that is the bound.
    assert!(
        waited < Duration::from_secs(5),
        "woken by the release, {waited:?}"
    );
    assert_eq!(released.unwrap(), Released::Freed);
    client.close().unwrap();
}

#[test]
fn blocked_callers_log_in_select_the_database_and_wait_out_a_slow_reply() {
    let server = OwnRedis::start(&[]);
    let port = server.port;
    let mut admin = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "locker", "on", ">pa55", "~*", "&*", "+@all"])
        .query(&mut admin)
        .unwrap();
    let opts = ClientOptions {
        command_timeout: Duration::from_millis(700),
        ..ClientOptions::default()
    };
    let client =
        Client::connect_with(&format!("redis://locker:pa55@127.0.0.1:{port}/3"), opts).unwrap();
    let lock = client.lock("in-db-3").unwrap();
    lock.acquire(1, AcquireOptions::try_once()).unwrap();
    let _: () = redis::cmd("SELECT").arg(3).query(&mut admin).unwrap();
    let holders: Vec<String> = redis::cmd("HKEYS")
        .arg("in-db-3")
        .query(&mut admin)
        .unwrap();
    assert_eq!(
        holders.len(),
        1,
        "the hold is in database 3, as the URL says"
    );
    let _: () = redis::cmd("SELECT").arg(0).query(&mut admin).unwrap();
    let in_db0: bool = redis::cmd("EXISTS")
        .arg("in-db-3")
        .query(&mut admin)
        .unwrap();
    assert!(!in_db0);

    // A reply that comes long after the caller stopped polling for it still arrives.
    let _: () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "400", "WRITE"])
        .query(&mut admin)
        .unwrap();
    let t0 = std::time::Instant::now();
    assert_eq!(lock.release(1).unwrap(), Released::Freed);
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "the release waited for the pause: {:?}",
        t0.elapsed()
    );

    // A reply later than the command timeout (and its retries) is a Connection error, and the
    // next call does not read that late reply as its own.
    let _: () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "3000", "WRITE"])
        .query(&mut admin)
        .unwrap();
    let err = lock.acquire(1, AcquireOptions::try_once()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut admin)
        .unwrap();
    let mut count = None;
    for _ in 0..20 {
        match lock.hold_count(1) {
            Ok(n) => {
                count = Some(n);
                break;
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    let held = count.expect("answers again after the pause");
    assert!(
        held <= 1,
        "the timed-out acquire may have run, once: {held}"
    );
    let _ = lock.release(1);

    // Credentials changed on the server: a new connection of a blocked caller is refused as Auth.
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "locker", "resetpass", ">other"])
        .query(&mut admin)
        .unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg(&["KILL", "USER", "locker"])
        .query(&mut admin)
        .unwrap();
    // The first call may still find the killed idle connection (a Connection error); the next
    // opens a new one and logs in.
    let mut kinds = Vec::new();
    for _ in 0..3 {
        let err = lock.acquire(1, AcquireOptions::try_once()).unwrap_err();
        kinds.push(err.kind());
        if err.kind() == ErrorKind::Auth {
            break;
        }
        assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    }
    assert_eq!(kinds.last(), Some(&ErrorKind::Auth), "{kinds:?}");
}

/// How many times the calling thread has slept (blocked) so far.
fn sleeps_of_this_thread() -> u64 {
    std::fs::read_to_string("/proc/thread-self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[test]
fn polling_for_replies_follows_the_environment() {
    // The setting is read once per process: run this test again in children with it set.
    let Some(spin) = std::env::var_os("POLYLOCK_SPIN_US") else {
        for spin in ["0", "10000"] {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "polling_for_replies_follows_the_environment",
                    "--nocapture",
                ])
                .env("POLYLOCK_SPIN_US", spin)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "POLYLOCK_SPIN_US={spin}: {text}");
            assert!(text.contains("1 passed"), "the child ran the test: {text}");
            for line in text.lines().filter(|l| l.contains("slept")) {
                println!("POLYLOCK_SPIN_US={spin}: {line}");
            }
        }
        return;
    };
    let polling = spin != "0";
    let client = Client::connect(&url()).unwrap();
    let lock = client.lock(&unique("polling")).unwrap();
    lock.acquire(1, AcquireOptions::forever()).unwrap();
    lock.release(1).unwrap();
    let (before, polled_before) = (sleeps_of_this_thread(), polylock::runtime::polled_waits());
    for _ in 0..500 {
        lock.acquire(1, AcquireOptions::forever()).unwrap();
        assert_eq!(lock.release(1).unwrap(), Released::Freed);
    }
    let sleeps = sleeps_of_this_thread() - before;
    let polled = polylock::runtime::polled_waits() - polled_before;
    println!("1000 round trips, polling {polling}: {polled} waits polled, the thread slept {sleeps} times");
    if polling {
        // Each round trip's reply is polled for (alone in this process, the caller has the
        // permit), and so hardly ever slept for (0 sleeps seen).
        assert!(polled >= 1000, "only {polled} of 1000 waits polled");
        assert!(sleeps < 100, "slept {sleeps} times while polling");
    } else {
        // How often a caller that does not poll sleeps depends on the machine (a loaded one
        // may preempt it while the server answers): what must hold is that it never polled.
        assert_eq!(polled, 0, "waits polled with POLYLOCK_SPIN_US=0");
    }
    client.close().unwrap();
}

extern "C" fn ignore_signal(_: libc::c_int) {}

#[test]
fn signals_during_a_slow_reply_do_not_fail_the_call() {
    // Python installs its signal handlers without SA_RESTART, so a Ctrl-C interrupts whatever
    // recv the calling thread sleeps in. SIGURG stands in for it here: nothing else uses it.
    // SAFETY: a handler that does nothing, installed for a signal no one else in this process
    // uses.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ignore_signal as *const () as libc::sighandler_t;
        action.sa_flags = 0;
        assert_eq!(
            libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut()),
            0
        );
    }
    let server = OwnRedis::start(&[]);
    let mut admin = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let client = Client::connect(&server.url()).unwrap();
    let lock = client.lock("signals").unwrap();
    lock.acquire(1, AcquireOptions::try_once()).unwrap();
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() } as usize;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _: () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "500", "WRITE"])
        .query(&mut admin)
        .unwrap();
    let signaller = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut sent = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
                // SAFETY: the target thread is alive until `done` is set, and handles SIGURG.
                unsafe { libc::pthread_kill(me as libc::pthread_t, libc::SIGURG) };
                sent += 1;
            }
            sent
        })
    };
    let released = lock.release(1);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let sent = signaller.join().unwrap();
    assert!(sent >= 10, "the caller was interrupted {sent} times");
    assert_eq!(released.unwrap(), Released::Freed);
    assert!(!lock.is_locked().unwrap());
    client.close().unwrap();
}

/// A server whose script cache was emptied (SCRIPT FLUSH; a restart or a failover does the
/// same) answers EVALSHA with a NOSCRIPT error reply: read on a blocked caller's connection and
/// on a runtime task's, it is taken as that error, the script is loaded again, and the lock
/// works on.
#[test]
fn an_emptied_script_cache_is_filled_again_on_each_path() {
    let server = OwnRedis::start(&[]);
    let url = server.url();
    let flush = move || {
        let mut admin = redis::Client::open(url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut admin).unwrap();
        let exists: i64 = redis::cmd("EXISTS")
            .arg("script-cache")
            .query(&mut admin)
            .unwrap();
        exists
    };
    let client = Client::connect(&server.url()).unwrap();
    let lock = client.lock("script-cache").unwrap();

    // A blocked caller.
    lock.acquire(1, AcquireOptions::try_once()).unwrap();
    assert_eq!(lock.release(1).unwrap(), Released::Freed);
    assert_eq!(flush(), 0);
    let held = lock.acquire(1, AcquireOptions::try_once()).unwrap();
    assert_eq!(held.hold_count, 1);
    assert_eq!(flush(), 1);
    assert_eq!(lock.release(1).unwrap(), Released::Freed);
    assert_eq!(flush(), 0, "the release ran on the server");

    // A task of polylock's runtime (the async Rust path), on a connection of its own.
    let task_lock = lock.as_async().clone();
    let seen = polylock::runtime::block_on(async move {
        tokio::spawn(async move {
            assert!(polylock::runtime::on_runtime_thread());
            let mut counts = Vec::new();
            for _ in 0..2 {
                flush();
                let held = task_lock.acquire(7, AcquireOptions::try_once()).await;
                counts.push(held.unwrap().hold_count);
            }
            flush();
            let first = task_lock.release(7).await.unwrap();
            let second = task_lock.release(7).await.unwrap();
            (counts, first, second, flush())
        })
        .await
        .unwrap()
    })
    .unwrap();
    assert_eq!(
        seen,
        (vec![1, 2], Released::StillHeld(1), Released::Freed, 0)
    );
    client.close().unwrap();
}
