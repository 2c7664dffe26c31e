//! Redisson's `RCountDownLatch` on Redis.
//!
//! | key / channel                                  | content |
//! |------------------------------------------------|---------|
//! | `<name>`                                       | string integer: the count (absent = 0 = open) |
//! | `redisson_countdownlatch__channel__{<name>}`   | `0` when the count reached zero, `1` when a count was set or the latch deleted |

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::Script;

use super::pubsub::Wake;
use super::{map_err, RedisConn};
use crate::backend::LatchOps;
use crate::model::error::Result;
use crate::model::options::Wait;

fn channel(name: &str) -> String {
    // Braces always added, even when the name has its own (Redisson's CountDownLatchPubSub).
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

struct Scripts {
    try_set: Script,
    count_down: Script,
    delete: Script,
}

/// The count-down latch of one client.
pub(crate) struct RedisLatch {
    conn: Arc<RedisConn>,
    scripts: Scripts,
}

impl RedisLatch {
    pub(crate) fn new(conn: Arc<RedisConn>) -> RedisLatch {
        RedisLatch {
            conn,
            scripts: Scripts {
                try_set: Script::new(include_str!("lua/latch/try_set.lua")),
                count_down: Script::new(include_str!("lua/latch/count_down.lua")),
                delete: Script::new(include_str!("lua/latch/delete.lua")),
            },
        }
    }
}

#[async_trait]
impl LatchOps for RedisLatch {
    async fn try_set_count(&self, name: &str, count: u64) -> Result<bool> {
        let mut inv = self.scripts.try_set.key(name);
        inv.key(channel(name)).arg(count).arg(self.conn.publish);
        let n: i64 = self
            .conn
            .invoke(&inv)
            .await
            .map_err(|e| map_err(e, "set the latch's count"))?;
        Ok(n == 1)
    }

    /// Not retried after an error: a retry could count down twice.
    async fn count_down(&self, name: &str) -> Result<()> {
        let mut inv = self.scripts.count_down.key(name);
        inv.key(channel(name)).arg(self.conn.publish);
        let _: i64 = self
            .conn
            .invoke(&inv)
            .await
            .map_err(|e| map_err(e, "count the latch down"))?;
        Ok(())
    }

    async fn count(&self, name: &str) -> Result<u64> {
        let v: Option<i64> = self
            .conn
            .query(
                redis::cmd("GET").arg(name).clone(),
                "read the latch's count",
            )
            .await?;
        Ok(v.unwrap_or(0).max(0) as u64)
    }

    async fn wait(&self, name: &str, wait: Wait, max_sleep: Duration) -> Result<bool> {
        if self.count(name).await? == 0 {
            return Ok(true);
        }
        let deadline = wait.deadline();
        let guard = self.conn.subs.wait_on(&channel(name), Wake::All).await?;
        loop {
            let notified = guard.channel.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Subscribed before this read: a count reaching zero after it is heard.
            if self.count(name).await? == 0 {
                return Ok(true);
            }
            // A lost message only delays a waiter to this re-check.
            let mut sleep = max_sleep / 3;
            if let Some(d) = deadline {
                let now = Instant::now();
                if now >= d {
                    return Ok(false);
                }
                sleep = sleep.min(d - now);
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    async fn delete(&self, name: &str) -> Result<bool> {
        let mut inv = self.scripts.delete.key(name);
        inv.key(channel(name)).arg(self.conn.publish);
        let n: i64 = self
            .conn
            .invoke(&inv)
            .await
            .map_err(|e| map_err(e, "delete the latch"))?;
        Ok(n == 1)
    }
}
