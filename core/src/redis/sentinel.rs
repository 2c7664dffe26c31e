//! Following the master that Redis Sentinel names: asked at connect, and again every second and
//! whenever the sentinels announce a switch; when it changes, every connection of the client
//! moves to the new master. Holds taken on the old master are then unknown: the next renewal on
//! the new master confirms them (the replica had them) or says they are gone, and their holders
//! hear the lost signal.

use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::AsyncConnectionConfig;
use tokio::sync::{Mutex, Notify};

use super::topology::{redact, Shape};
use super::{map_err, RedisConn};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::options::ClientOptions;

/// How often the sentinels are asked which server is the master.
const POLL: Duration = Duration::from_secs(1);

pub(crate) struct SentinelSource {
    /// The sentinels' URLs (with their own credentials).
    urls: Vec<String>,
    /// A connection to each sentinel, made when first needed and again after a failure.
    conns: Mutex<Vec<Option<MultiplexedConnection>>>,
    master: String,
    /// How to reach the master once its address is known: `redis[s]://[user:pass@]` and the
    /// `/db[#insecure]` after the address.
    prefix: String,
    suffix: String,
    connect_timeout: Duration,
}

impl SentinelSource {
    pub(crate) fn new(shape: &Shape, options: &ClientOptions) -> Result<SentinelSource> {
        let Shape::Sentinel {
            sentinels,
            master,
            user,
            password,
            db,
            tls,
            insecure,
        } = shape
        else {
            return Err(Error::internal("not a Sentinel URL"));
        };
        let cred = match (user, password) {
            (None, None) => String::new(),
            (u, p) => format!(
                "{}:{}@",
                u.as_deref().unwrap_or_default(),
                p.as_deref().unwrap_or_default()
            ),
        };
        Ok(SentinelSource {
            conns: Mutex::new(sentinels.iter().map(|_| None).collect()),
            urls: sentinels.clone(),
            master: master.clone(),
            prefix: format!("{}://{cred}", if *tls { "rediss" } else { "redis" }),
            suffix: format!("/{db}{}", if *insecure { "#insecure" } else { "" }),
            connect_timeout: options.connect_timeout,
        })
    }

    /// The master's client, as the sentinels name it now: the first sentinel that answers
    /// `SENTINEL GET-MASTER-ADDR-BY-NAME` names it (it names a promoted replica as soon as it is
    /// promoted, where `SENTINEL MASTERS` waits for the failover's end), and the server must say
    /// it is a master (`ROLE`).
    pub(crate) async fn master(&self) -> Result<redis::Client> {
        let mut last = None;
        let mut conns = self.conns.lock().await;
        for (i, url) in self.urls.iter().enumerate() {
            let conn = match &mut conns[i] {
                Some(c) => c,
                slot => match self.open(url).await {
                    Ok(c) => slot.insert(c),
                    Err(e) => {
                        last = Some(e);
                        continue;
                    }
                },
            };
            let reply: redis::RedisResult<Option<(String, u16)>> = redis::cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg(&self.master)
                .query_async(conn)
                .await;
            let (host, port) = match reply {
                Ok(Some(addr)) => addr,
                Ok(None) => {
                    last = Some(Error::new(
                        ErrorKind::Connection,
                        format!(
                            "Redis Sentinel: {} knows no master named '{}'",
                            redact(url),
                            self.master
                        ),
                    ));
                    continue;
                }
                Err(e) => {
                    conns[i] = None;
                    last = Some(map_err(e, "ask a sentinel for the master"));
                    continue;
                }
            };
            let client =
                redis::Client::open(format!("{}{host}:{port}{}", self.prefix, self.suffix))
                    .map_err(|e| map_err(e, "open the master's address"))?;
            match self.is_master(&client).await {
                Ok(true) => return Ok(client),
                Ok(false) => {
                    last = Some(Error::new(
                        ErrorKind::Connection,
                        format!("Redis Sentinel: {host}:{port} is not a master (yet)"),
                    ))
                }
                Err(e) => last = Some(e),
            }
        }
        let why = last.map(|e| e.message().to_string()).unwrap_or_default();
        Err(Error::new(
            ErrorKind::Connection,
            format!(
                "Redis Sentinel: no sentinel named a reachable master '{}': {why}",
                self.master
            ),
        ))
    }

    async fn open(&self, url: &str) -> Result<MultiplexedConnection> {
        let client =
            redis::Client::open(url).map_err(|e| map_err(e, "open the sentinel's address"))?;
        let config =
            AsyncConnectionConfig::new().set_connection_timeout(Some(self.connect_timeout));
        client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| map_err(e, &format!("connect to the sentinel {}", redact(url))))
    }

    async fn is_master(&self, client: &redis::Client) -> Result<bool> {
        let config =
            AsyncConnectionConfig::new().set_connection_timeout(Some(self.connect_timeout));
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| map_err(e, "connect to the master"))?;
        let role: Vec<redis::Value> = redis::cmd("ROLE")
            .query_async(&mut conn)
            .await
            .map_err(|e| map_err(e, "ask the master's role"))?;
        Ok(matches!(role.first(), Some(redis::Value::BulkString(b)) if b == b"master"))
    }
}

/// Subscribe to a sentinel's `+switch-master` announcements; each one wakes the watcher. The
/// subscription lives as long as the returned connection (and is made again after a reconnect).
async fn hear_switches(
    url: &str,
    switched: Arc<Notify>,
    options: &ClientOptions,
) -> redis::RedisResult<ConnectionManager> {
    let info = redis::IntoConnectionInfo::into_connection_info(url)?;
    let settings = info
        .redis_settings()
        .clone()
        .set_protocol(redis::ProtocolVersion::RESP3);
    let client = redis::Client::open(info.set_redis_settings(settings))?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(options.connect_timeout))
        .set_automatic_resubscription()
        .set_push_sender(move |msg: redis::PushInfo| {
            if msg.kind == redis::PushKind::Message {
                switched.notify_one();
            }
            Ok::<(), redis::aio::SendError>(())
        });
    let mut conn = ConnectionManager::new_with_config(client, config).await?;
    conn.subscribe("+switch-master").await?;
    Ok(conn)
}

/// Ask the sentinels which server is the master every second, and at once when a sentinel
/// announces a switch; move the client's connections when it changed. Ends with the client.
pub(crate) async fn watch(conn: Weak<RedisConn>, source: SentinelSource, options: ClientOptions) {
    let Some(stop) = conn.upgrade().map(|c| c.stop.clone()) else {
        return;
    };
    let switched = Arc::new(Notify::new());
    for url in &source.urls {
        // Listen to every sentinel in a task of its own, so that a slow or absent one delays
        // nothing; one that does not answer is tried again every second.
        let (url, switched, options, stop) =
            (url.clone(), switched.clone(), options.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                match hear_switches(&url, switched.clone(), &options).await {
                    Ok(_listening) => return stop.cancelled().await,
                    Err(e) => tracing::debug!(
                        "polylock: no +switch-master from {}: {}",
                        redact(&url),
                        redact(&e.to_string())
                    ),
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(POLL) => {}
                }
            }
        });
    }
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(POLL) => {}
            _ = switched.notified() => {}
        }
        let Ok(client) = source.master().await else {
            continue; // no sentinel answers now: ask again
        };
        let Some(conn) = conn.upgrade() else {
            return;
        };
        let addr = client.get_connection_info().addr().to_string();
        if addr != conn.target().addr {
            if let Err(e) = conn.retarget(client, &options).await {
                tracing::warn!("polylock: could not move to the new master {addr}: {e}");
            }
        }
    }
}
