//! Helpers of the etcd tests: the etcd of scripts/servers.sh (POLYLOCK_ETCD_URL, default
//! etcd://127.0.0.1:2379), a raw etcd-client connection to look at the server, and etcdctl.
//! A server that cannot be reached fails the test; nothing is skipped.
#![allow(dead_code)]

use std::process::Command;
use std::time::Duration;

use polylock::{Client, ClientOptions};

pub fn url() -> String {
    std::env::var("POLYLOCK_ETCD_URL").unwrap_or_else(|_| "etcd://127.0.0.1:2379".into())
}

/// The first member's `host:port`.
pub fn endpoint() -> String {
    let u = url();
    let hosts = u.split_once("://").map_or(u.as_str(), |(_, h)| h);
    let hosts = hosts.rsplit_once('@').map_or(hosts, |(_, h)| h);
    hosts.split(['?', ',']).next().unwrap().to_string()
}

/// A lock name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    format!("polylock-test/{prefix}/{}", uuid::Uuid::new_v4().simple())
}

pub async fn client() -> Client {
    Client::connect(&url())
        .await
        .expect("connect to the test etcd (scripts/servers.sh start)")
}

pub async fn client_ttl(ttl_secs: u32) -> Client {
    Client::connect_with(
        &format!("{}?ttl={ttl_secs}", url()),
        ClientOptions::default(),
    )
    .await
    .expect("connect to the test etcd")
}

pub async fn raw() -> etcd_client::Client {
    etcd_client::Client::connect([format!("http://{}", endpoint())], None)
        .await
        .expect("raw connection to the test etcd")
}

/// One key under `NAME/`, as the server has it.
#[derive(Debug, Clone)]
pub struct Key {
    pub key: String,
    pub value: String,
    pub lease: i64,
    pub create_revision: i64,
}

/// The keys under `NAME/`, in create order.
pub async fn keys(name: &str) -> Vec<Key> {
    let prefix = format!("{name}/");
    let opts = etcd_client::GetOptions::new().with_prefix().with_sort(
        etcd_client::SortTarget::Create,
        etcd_client::SortOrder::Ascend,
    );
    let r = raw().await.get(prefix, Some(opts)).await.unwrap();
    r.kvs()
        .iter()
        .map(|kv| Key {
            key: kv.key_str().unwrap().to_string(),
            value: kv.value_str().unwrap().to_string(),
            lease: kv.lease(),
            create_revision: kv.create_revision(),
        })
        .collect()
}

/// Wait until the keys under `NAME/` number `n` (at most `within`); the keys then.
pub async fn wait_keys(name: &str, n: usize, within: Duration) -> Vec<Key> {
    let until = std::time::Instant::now() + within;
    loop {
        let k = keys(name).await;
        if k.len() == n || std::time::Instant::now() >= until {
            return k;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `etcdctl` (API v3) against the test etcd.
pub fn etcdctl() -> Command {
    let mut c = Command::new("etcdctl");
    c.env("ETCDCTL_API", "3")
        .arg(format!("--endpoints=http://{}", endpoint()));
    c
}

/// The keys under `NAME/` as etcdctl lists them (the server's view, through another client).
pub fn etcdctl_keys(name: &str) -> Vec<String> {
    let out = etcdctl()
        .args(["get", "--prefix", "--keys-only", &format!("{name}/")])
        .output()
        .expect("run etcdctl (scripts/servers.sh install)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}
