//! Helpers shared by the integration tests. They talk to a real redis-server: the one at
//! POLYLOCK_REDIS_URL (default redis://127.0.0.1:6379, started by scripts/servers.sh), or one a
//! test starts itself. A server that cannot be reached fails the test; nothing is skipped.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use polylock::{Client, ClientOptions};

pub fn url() -> String {
    std::env::var("POLYLOCK_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A lock name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    format!("polylock-test:{prefix}:{}", uuid::Uuid::new_v4().simple())
}

pub async fn client() -> Client {
    Client::connect(&url())
        .await
        .expect("connect to the test Redis (scripts/servers.sh start)")
}

pub async fn client_with(watchdog: Duration) -> Client {
    let opts = ClientOptions {
        watchdog_timeout: watchdog,
        ..ClientOptions::default()
    };
    Client::connect_with(&url(), opts).await.expect("connect")
}

pub async fn raw_at(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("raw connection to the test Redis")
}

pub async fn raw() -> redis::aio::MultiplexedConnection {
    raw_at(&url()).await
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A redis-server of the test's own (to pause, stop, restart or configure without disturbing others).
pub struct OwnRedis {
    pub child: Child,
    pub port: u16,
    dir: PathBuf,
    args: Vec<String>,
}

impl OwnRedis {
    /// A plain server on a free port, with `extra` arguments.
    pub fn start(extra: &[&str]) -> OwnRedis {
        OwnRedis::start_with(|| extra.iter().map(|a| a.to_string()).collect())
    }

    /// A server on a free port, with the arguments `extra` makes, made again for each attempt:
    /// a free port can be taken by another process before the server binds it (and a cluster
    /// node's bus port with it), and the server then exits at once. Up to five attempts.
    pub fn start_with(extra: impl Fn() -> Vec<String>) -> OwnRedis {
        let mut why = String::new();
        for _ in 0..5 {
            let port = free_port();
            let mut args = vec!["--port".to_string(), port.to_string()];
            args.extend(extra());
            let dir = OwnRedis::dir(port);
            match OwnRedis::try_spawn(port, &dir, &args) {
                Ok(child) => {
                    return OwnRedis {
                        child,
                        port,
                        dir,
                        args,
                    }
                }
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    why = e;
                }
            }
        }
        panic!("own redis-server did not start in five attempts: {why}");
    }

    /// A TLS-only server on a free port with this certificate (also its own CA) and key.
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> OwnRedis {
        let port = free_port();
        let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
        let args = [
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--tls-auth-clients",
            "no",
            "--tls-cert-file",
            cert,
            "--tls-key-file",
            key,
            "--tls-ca-cert-file",
            cert,
        ];
        OwnRedis::launch(port, args.iter().map(|a| a.to_string()).collect())
    }

    fn dir(port: u16) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("polylock-redis-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn launch(port: u16, args: Vec<String>) -> OwnRedis {
        let dir = OwnRedis::dir(port);
        let child = OwnRedis::spawn(port, &dir, &args);
        OwnRedis {
            child,
            port,
            dir,
            args,
        }
    }

    fn spawn(port: u16, dir: &std::path::Path, args: &[String]) -> Child {
        OwnRedis::try_spawn(port, dir, args)
            .unwrap_or_else(|e| panic!("own redis-server did not start: {e}"))
    }

    /// Start redis-server and wait until it accepts connections; an error if it exits first
    /// or does not accept them within 5 s (then it is killed).
    fn try_spawn(port: u16, dir: &std::path::Path, args: &[String]) -> Result<Child, String> {
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (scripts/servers.sh install)");
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "port {port}: redis-server exited at start ({status})"
                ));
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("port {port}: no connection accepted within 5 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(child)
    }

    /// Kill the server and start it again on the same port; without persistence its data is gone.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// Kill the server (SIGKILL: no goodbye to its clients).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        self.child.wait().unwrap();
    }

    /// Start a stopped server again on its port, empty.
    pub fn start_again(&mut self) {
        self.child = OwnRedis::spawn(self.port, &self.dir, &self.args);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} failed");
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn zk_url() -> String {
    std::env::var("POLYLOCK_ZK_URL").unwrap_or_else(|_| "zk://127.0.0.1:2181".into())
}

/// A lock path no other test (or earlier run) uses.
pub fn zk_path(prefix: &str) -> String {
    format!("/polylock-test/{prefix}-{}", uuid::Uuid::new_v4().simple())
}

pub async fn zk_client() -> Client {
    Client::connect(&zk_url())
        .await
        .expect("connect to the test ZooKeeper (scripts/servers.sh start)")
}

/// A plain zookeeper-client session, to look at what polylock stored.
pub async fn zk_raw() -> zookeeper_client::Client {
    let hosts = zk_url().trim_start_matches("zk://").to_string();
    zookeeper_client::Client::connect(&hosts)
        .await
        .expect("raw ZooKeeper session")
}

pub async fn zk_children(path: &str) -> Vec<String> {
    match zk_raw().await.list_children(path).await {
        Ok(mut c) => {
            c.sort();
            c
        }
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

/// Wait (up to 10 s) until the children of `path` satisfy `ok`; panics otherwise.
pub async fn zk_children_until(path: &str, ok: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let children = zk_children(path).await;
        if ok(&children) {
            return children;
        }
        assert!(
            Instant::now() < deadline,
            "children of {path} never got there: {children:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub mod ha;
pub mod proxy;
pub mod rw;
pub mod sem;

/// Assert that the client's waiters leave no subscription behind: the last waiter unsubscribes
/// in a task of its own, so allow it two seconds.
#[allow(dead_code)]
pub async fn assert_no_channels_left(c: &Client) {
    let until = Instant::now() + Duration::from_secs(2);
    while c.subscribed_channels() != 0 {
        assert!(
            Instant::now() < until,
            "{} channels still subscribed after 2 s",
            c.subscribed_channels()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The value of the `polylock_holds` gauge of `kind` in this client's own metrics: the holds
/// the client has now (0 when the series is not shown).
pub fn holds_now(c: &Client, kind: &str) -> f64 {
    let series = format!("polylock_holds{{kind=\"{kind}\",backend=\"redis\"}} ");
    c.metrics_text()
        .lines()
        .find_map(|l| l.strip_prefix(&series)?.parse().ok())
        .unwrap_or(0.0)
}

/// Wait (up to `within`) until the client has no hold of `kind` left; the holds it still has.
pub async fn until_no_holds(c: &Client, kind: &str, within: Duration) -> f64 {
    let until = Instant::now() + within;
    loop {
        let n = holds_now(c, kind);
        if n == 0.0 || Instant::now() >= until {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// This process's resident memory, in bytes (/proc/self/statm).
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page as u64
}

/// Delete the fencing counters of `names` (a lock leaves its counter behind on purpose; tests
/// that take thousands of names clean up after themselves).
pub async fn drop_token_keys(names: &[String]) {
    let mut raw = raw().await;
    for chunk in names.chunks(1000) {
        let mut pipe = redis::pipe();
        for n in chunk {
            pipe.unlink(format!("redisson_lock_token:{{{n}}}")).ignore();
        }
        let _: () = pipe
            .query_async(&mut raw)
            .await
            .expect("unlink the counters");
    }
}

/// Most ended holds a client remembers (core's `hold::ENDED_KEPT`).
pub const ENDED_KEPT: usize = 1024;

/// Take each of `names` once for `me` with a fixed `lease`, all at once (the client pipelines
/// them on its connection); the tokens.
pub async fn take_all(lock_of: &Client, names: &[String], me: u64, lease: Duration) -> Vec<u64> {
    let tries = names.iter().map(|n| async move {
        let lock = lock_of.lock(n).unwrap();
        let held = lock
            .acquire(me, polylock::AcquireOptions::try_once().with_lease(lease))
            .await
            .unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(held.hold_count, 1, "{n}: a new hold");
        held.fencing_token
    });
    futures_util::future::join_all(tries).await
}
