//! Highly available Redis of the tests' own, on free loopback ports: a master with two replicas
//! watched by three sentinels, and a six-node cluster (three masters, each with a replica).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{free_port, OwnRedis};

pub const MASTER_NAME: &str = "mymaster";

fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli must be installed (scripts/servers.sh install)");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One sentinel process.
pub struct OwnSentinel {
    pub child: Child,
    pub port: u16,
    dir: PathBuf,
}

impl Drop for OwnSentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A master, two replicas and three sentinels.
pub struct Sentinels {
    pub servers: Vec<OwnRedis>,
    pub sentinels: Vec<OwnSentinel>,
}

impl Sentinels {
    pub fn start() -> Sentinels {
        let master = OwnRedis::start(&[]);
        let replicaof = ["--replicaof", "127.0.0.1", &master.port.to_string()].map(String::from);
        let replica_args: Vec<&str> = replicaof.iter().map(String::as_str).collect();
        let servers = vec![
            master,
            OwnRedis::start(&replica_args),
            OwnRedis::start(&replica_args),
        ];
        let mport = servers[0].port;
        wait_until("both replicas in sync", 20, || {
            redis_cli(mport, &["INFO", "replication"]).contains("connected_slaves:2")
                && servers[1..].iter().all(|r| {
                    redis_cli(r.port, &["INFO", "replication"]).contains("master_link_status:up")
                })
        });
        let sentinels = (0..3)
            .map(|_| {
                let port = free_port();
                let dir = std::env::temp_dir().join(format!("polylock-sentinel-{port}"));
                std::fs::create_dir_all(&dir).unwrap();
                let conf = dir.join("sentinel.conf");
                std::fs::write(
                    &conf,
                    format!(
                        "port {port}\nbind 127.0.0.1\ndir {}\n\
                         sentinel monitor {MASTER_NAME} 127.0.0.1 {mport} 2\n\
                         sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
                         sentinel failover-timeout {MASTER_NAME} 10000\n\
                         sentinel parallel-syncs {MASTER_NAME} 2\n",
                        dir.display()
                    ),
                )
                .unwrap();
                let child = Command::new("redis-server")
                    .arg(&conf)
                    .arg("--sentinel")
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("redis-server must be installed");
                OwnSentinel { child, port, dir }
            })
            .collect::<Vec<_>>();
        let s = Sentinels { servers, sentinels };
        wait_until(
            "every sentinel sees the master, 2 replicas, 2 other sentinels",
            30,
            || {
                s.sentinels.iter().all(|x| {
                    let m = redis_cli(x.port, &["SENTINEL", "MASTER", MASTER_NAME]);
                    let lines: Vec<&str> = m.lines().collect();
                    let field = |name: &str| {
                        lines
                            .iter()
                            .position(|l| *l == name)
                            .and_then(|i| lines.get(i + 1))
                            .map(|v| v.to_string())
                    };
                    field("num-slaves").as_deref() == Some("2")
                        && field("num-other-sentinels").as_deref() == Some("2")
                })
            },
        );
        s
    }

    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        format!("redis+sentinel://{}/{MASTER_NAME}", hosts.join(","))
    }

    /// The port of the server the sentinels name as master now.
    pub fn master_port(&self) -> u16 {
        let reply = redis_cli(
            self.sentinels[0].port,
            &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME],
        );
        reply
            .lines()
            .nth(1)
            .and_then(|p| p.trim().parse().ok())
            .expect("the sentinels name a master")
    }

    /// The server (index into `servers`) on `port`.
    pub fn index_of(&self, port: u16) -> usize {
        self.servers.iter().position(|s| s.port == port).unwrap()
    }

    /// Ask for a failover and wait until every sentinel names another master, and it is one.
    pub fn failover(&self) -> u16 {
        let old = self.master_port();
        let reply = redis_cli(
            self.sentinels[0].port,
            &["SENTINEL", "FAILOVER", MASTER_NAME],
        );
        assert_eq!(reply, "OK", "SENTINEL FAILOVER");
        self.wait_new_master(old)
    }

    /// Wait until the sentinels name a master other than `old` and it answers as a master.
    pub fn wait_new_master(&self, old: u16) -> u16 {
        let mut new = old;
        wait_until("a new master", 60, || {
            new = self.master_port();
            new != old && redis_cli(new, &["ROLE"]).starts_with("master")
        });
        new
    }
}

/// A six-node Redis Cluster: three masters, each with one replica.
pub struct Cluster {
    pub nodes: Vec<OwnRedis>,
}

impl Cluster {
    pub fn start() -> Cluster {
        // The bus port is a free port of its own: by default it is the node's port + 10000,
        // which another server may hold (a node then exits at start).
        let nodes: Vec<OwnRedis> = (0..6)
            .map(|_| {
                OwnRedis::start_with(|| {
                    [
                        "--cluster-enabled",
                        "yes",
                        "--cluster-node-timeout",
                        "2000",
                        "--cluster-port",
                        &free_port().to_string(),
                        "--cluster-config-file",
                        &format!("nodes-{}.conf", uuid::Uuid::new_v4().simple()),
                    ]
                    .map(String::from)
                    .to_vec()
                })
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli must be installed");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let c = Cluster { nodes };
        wait_until("the cluster is ok on every node", 60, || {
            c.nodes
                .iter()
                .all(|n| redis_cli(n.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
        });
        wait_until(
            "three replicas attached and in sync, as every node sees it",
            60,
            || {
                c.nodes.iter().all(|n| {
                    redis_cli(n.port, &["CLUSTER", "NODES"])
                        .lines()
                        .filter(|l| {
                            l.split_whitespace()
                                .nth(2)
                                .is_some_and(|f| f.contains("slave"))
                        })
                        .count()
                        == 3
                }) && c.nodes.iter().all(|n| {
                    let info = redis_cli(n.port, &["INFO", "replication"]);
                    info.contains("role:master") || info.contains("master_link_status:up")
                })
            },
        );
        c
    }

    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .take(3)
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// The port of the master that serves `key` now.
    pub fn master_of(&self, key: &str) -> u16 {
        let slot: u16 = redis_cli(self.nodes[0].port, &["CLUSTER", "KEYSLOT", key])
            .parse()
            .unwrap();
        // CLUSTER NODES: "<id> <ip:port@cport> <flags> <master> ... <slot ranges>"
        for line in redis_cli(self.nodes[0].port, &["CLUSTER", "NODES"]).lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if !parts.get(2).is_some_and(|f| f.contains("master")) {
                continue;
            }
            for range in &parts[8..] {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>()) else {
                    continue;
                };
                if (a..=b).contains(&slot) {
                    let addr = parts[1].split('@').next().unwrap();
                    return addr.rsplit_once(':').unwrap().1.parse().unwrap();
                }
            }
        }
        panic!("no master serves slot {slot}");
    }

    /// The replica of the master on `port`.
    pub fn replica_of(&self, port: u16) -> u16 {
        let nodes = redis_cli(self.nodes[0].port, &["CLUSTER", "NODES"]);
        let master_id = nodes
            .lines()
            .find(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| a.starts_with(&format!("127.0.0.1:{port}@")))
            })
            .and_then(|l| l.split_whitespace().next())
            .unwrap()
            .to_string();
        for l in nodes.lines() {
            let parts: Vec<&str> = l.split_whitespace().collect();
            if parts.get(3) == Some(&master_id.as_str()) {
                let addr = parts[1].split('@').next().unwrap();
                return addr.rsplit_once(':').unwrap().1.parse().unwrap();
            }
        }
        panic!("the master on {port} has no replica");
    }

    /// Wait until the replica of the master on `port` has everything the master wrote so far.
    pub fn wait_replicated(&self, port: u16) {
        let replica = self.replica_of(port);
        let offset = |p: u16, field: &str| -> i64 {
            redis_cli(p, &["INFO", "replication"])
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(-1)
        };
        let target = offset(port, "master_repl_offset:");
        wait_until("the replica caught up", 20, || {
            offset(replica, "slave_repl_offset:") >= target
        });
    }

    /// Promote the replica of the master that serves `key` (CLUSTER FAILOVER); its new port.
    pub fn failover(&self, key: &str) -> u16 {
        let old = self.master_of(key);
        let replica = self.replica_of(old);
        assert_eq!(redis_cli(replica, &["CLUSTER", "FAILOVER"]), "OK");
        wait_until("the replica took over the slot", 30, || {
            self.master_of(key) == replica
        });
        replica
    }
}

pub fn cli(port: u16, args: &[&str]) -> String {
    redis_cli(port, args)
}
