//! Waiting by notification: one subscriber connection per client, shared by every waiter.
//!
//! A waiter subscribes to `redisson_lock__channel:{name}` before its retry, so a release between
//! its failed attempt and its sleep cannot be missed. An unlock message (`0`) wakes exactly one
//! local waiter (tokio's `Notify::notify_one`, FIFO, and passed on if that waiter was cancelled);
//! any other message wakes them all, as Redisson does for `1`. A lost message only delays a
//! waiter until the lock's TTL, because every sleep is bounded by it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{PushInfo, PushKind, RedisResult, Value};
use tokio::sync::{Mutex as AsyncMutex, Notify};

use crate::model::error::Result;

use super::map_err;

/// Where the subscriber connects: the one server (or the master Sentinel names, replaced after a
/// failover), or a cluster (sharded channels go to their slot's node).
#[derive(Clone)]
pub(crate) enum SubSource {
    Single(redis::Client),
    Cluster {
        seeds: Vec<String>,
        timeouts: (std::time::Duration, std::time::Duration),
        /// `SSUBSCRIBE` (Redis 7 and later), as the scripts `SPUBLISH`.
        sharded: bool,
    },
}

/// The subscriber connection of either topology.
#[derive(Clone)]
enum SubConn {
    Single(ConnectionManager),
    Cluster(ClusterConnection, bool),
}

impl SubConn {
    async fn subscribe(&mut self, channel: &str) -> RedisResult<()> {
        match self {
            SubConn::Single(c) => c.subscribe(channel).await,
            SubConn::Cluster(c, true) => c.ssubscribe(channel).await,
            SubConn::Cluster(c, false) => c.subscribe(channel).await,
        }
    }

    async fn unsubscribe(&mut self, channel: &str) -> RedisResult<()> {
        match self {
            SubConn::Single(c) => c.unsubscribe(channel).await,
            SubConn::Cluster(c, true) => c.sunsubscribe(channel).await,
            SubConn::Cluster(c, false) => c.unsubscribe(channel).await,
        }
    }
}

/// Whom a message on a channel wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// `0` wakes one local waiter (a lock was released: one of them can have it); any other
    /// message wakes them all (Redisson's `1`: a write lock released, every reader may go).
    OneOnZero,
    /// Every message wakes every local waiter (a latch opened, a semaphore's count changed).
    All,
}

/// The waiters of one channel.
pub(crate) struct Channel {
    pub(crate) notify: Notify,
    wake: Wake,
    waiters: std::sync::atomic::AtomicUsize,
    /// Serialises SUBSCRIBE/UNSUBSCRIBE of this channel; `true` while subscribed.
    subscribed: AsyncMutex<bool>,
}

type Channels = Arc<Mutex<HashMap<String, Arc<Channel>>>>;

pub(crate) struct Subscriptions {
    source: Mutex<SubSource>,
    config: ConnectionManagerConfig,
    conn: AsyncMutex<Option<SubConn>>,
    channels: Channels,
}

/// A registered waiter; unsubscribes the channel when the last waiter goes away.
pub(crate) struct WaitGuard {
    subs: Arc<Subscriptions>,
    name: String,
    pub(crate) channel: Arc<Channel>,
}

impl Subscriptions {
    pub(crate) fn new(source: SubSource, config: ConnectionManagerConfig) -> Subscriptions {
        Subscriptions {
            source: Mutex::new(source),
            config,
            conn: AsyncMutex::new(None),
            channels: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    async fn conn(&self) -> Result<SubConn> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let source = self
            .source
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let channels = self.channels.clone();
        let push = move |msg: PushInfo| {
            dispatch(&channels, msg);
            Ok::<(), redis::aio::SendError>(())
        };
        let fresh = match source {
            SubSource::Single(client) => {
                let info = client.get_connection_info().clone();
                let redis_info = info
                    .redis_settings()
                    .clone()
                    .set_protocol(redis::ProtocolVersion::RESP3);
                let client = redis::Client::open(info.set_redis_settings(redis_info))
                    .map_err(|e| map_err(e, "open the subscriber connection"))?;
                let config = self
                    .config
                    .clone()
                    .set_automatic_resubscription()
                    .set_push_sender(push);
                SubConn::Single(
                    ConnectionManager::new_with_config(client, config)
                        .await
                        .map_err(|e| map_err(e, "open the subscriber connection"))?,
                )
            }
            SubSource::Cluster {
                seeds,
                timeouts,
                sharded,
            } => {
                let client = super::cluster_builder(seeds, timeouts)
                    .use_protocol(redis::ProtocolVersion::RESP3)
                    .push_sender(push)
                    .build()
                    .map_err(|e| map_err(e, "open the subscriber connection"))?;
                let conn = client
                    .get_async_connection()
                    .await
                    .map_err(|e| map_err(e, "open the subscriber connection"))?;
                SubConn::Cluster(conn, sharded)
            }
        };
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// Follow the master to another server (a Sentinel failover): a new subscriber connection
    /// takes every channel with waiters, and every waiter tries again at once (messages may have
    /// been missed meanwhile).
    pub(crate) async fn retarget(&self, client: redis::Client) {
        *self.source.lock().unwrap_or_else(|e| e.into_inner()) = SubSource::Single(client);
        self.conn.lock().await.take();
        let channels: Vec<(String, Arc<Channel>)> = self
            .channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (name, state) in channels {
            let mut subscribed = state.subscribed.lock().await;
            if *subscribed {
                let ok = match self.conn().await {
                    Ok(mut c) => c.subscribe(&name).await.is_ok(),
                    Err(_) => false,
                };
                // A failed subscription is made again by the channel's next waiter.
                *subscribed = ok;
            }
            drop(subscribed);
            state.notify.notify_waiters();
        }
    }

    /// Register as a waiter on `channel` and make sure it is subscribed before returning. The
    /// first waiter of a channel sets whom its messages wake.
    pub(crate) async fn wait_on(self: &Arc<Self>, channel: &str, wake: Wake) -> Result<WaitGuard> {
        let state = {
            let mut map = self.channels.lock().unwrap_or_else(|e| e.into_inner());
            let state = map
                .entry(channel.to_string())
                .or_insert_with(|| {
                    Arc::new(Channel {
                        notify: Notify::new(),
                        wake,
                        waiters: 0.into(),
                        subscribed: AsyncMutex::new(false),
                    })
                })
                .clone();
            state
                .waiters
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            state
        };
        let guard = WaitGuard {
            subs: self.clone(),
            name: channel.to_string(),
            channel: state.clone(),
        };
        if state.subscribed.try_lock().is_ok_and(|s| *s) {
            return Ok(guard); // the common case of a second waiter: nothing to send
        }
        // Subscribe in a task of polylock's runtime: a waiter dropped while its SUBSCRIBE is in
        // flight must not leave the subscription behind. The task finishes it, and takes it back
        // if every waiter left meanwhile.
        let (subs, name) = (self.clone(), channel.to_string());
        let subscribing =
            crate::runtime::handle().spawn(async move { subs.subscribe_for(&state, &name).await });
        subscribing
            .await
            .map_err(|_| crate::model::error::Error::internal("the subscribe task panicked"))??;
        Ok(guard)
    }

    /// Make sure `channel` is subscribed, unless no waiter is left by the time it is.
    async fn subscribe_for(&self, state: &Channel, channel: &str) -> Result<()> {
        let mut subscribed = state.subscribed.lock().await;
        if !*subscribed {
            let mut conn = self.conn().await?;
            conn.subscribe(channel)
                .await
                .map_err(|e| map_err(e, "subscribe to the lock's channel"))?;
            *subscribed = true;
        }
        if state.waiters.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            // Every waiter left while this subscription was made (their guards' clean-up found it
            // not made yet): take it back.
            let conn = self.conn.lock().await.clone();
            if let Some(mut conn) = conn {
                if let Err(e) = conn.unsubscribe(channel).await {
                    tracing::debug!("polylock: unsubscribe from {channel} failed: {e}");
                }
            }
            *subscribed = false;
        }
        Ok(())
    }

    /// Number of channels with waiters or a live subscription (for tests and diagnostics).
    pub(crate) fn channel_count(&self) -> usize {
        self.channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let left = self
            .channel
            .waiters
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst)
            - 1;
        if left > 0 {
            return;
        }
        let subs = self.subs.clone();
        let name = std::mem::take(&mut self.name);
        let channel = self.channel.clone();
        // On polylock's runtime (the waiter may have been dropped outside any runtime, or in a
        // caller's runtime that ends with it), counted: a client's close waits for it.
        crate::runtime::spawn_clean_up(async move {
            let mut subscribed = channel.subscribed.lock().await;
            if channel.waiters.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                return; // a new waiter arrived meanwhile and keeps the subscription
            }
            if *subscribed {
                let conn = subs.conn.lock().await.clone();
                if let Some(mut conn) = conn {
                    if let Err(e) = conn.unsubscribe(&name).await {
                        // The connection is broken: its replacement subscribes afresh, to the
                        // channels that still have waiters only.
                        tracing::debug!("polylock: unsubscribe from {name} failed: {e}");
                    }
                }
                *subscribed = false;
            }
            let mut map = subs.channels.lock().unwrap_or_else(|e| e.into_inner());
            if channel.waiters.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                if let Some(current) = map.get(&name) {
                    if Arc::ptr_eq(current, &channel) {
                        map.remove(&name);
                    }
                }
            }
        });
    }
}

fn dispatch(channels: &Channels, msg: PushInfo) {
    match msg.kind {
        PushKind::Message | PushKind::SMessage => {
            let (Some(name), Some(payload)) = (msg.data.first(), msg.data.get(1)) else {
                return;
            };
            let Some(name) = as_str(name) else { return };
            let state = channels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .cloned();
            if let Some(state) = state {
                if state.wake == Wake::OneOnZero && as_str(payload) == Some("0") {
                    state.notify.notify_one();
                } else {
                    state.notify.notify_waiters();
                }
            }
        }
        PushKind::Disconnection => {
            // Messages may have been missed while disconnected: let every waiter try again.
            for state in channels.lock().unwrap_or_else(|e| e.into_inner()).values() {
                state.notify.notify_waiters();
            }
        }
        _ => {}
    }
}

fn as_str(v: &Value) -> Option<&str> {
    match v {
        Value::BulkString(b) => std::str::from_utf8(b).ok(),
        Value::SimpleString(s) => Some(s.as_str()),
        _ => None,
    }
}
