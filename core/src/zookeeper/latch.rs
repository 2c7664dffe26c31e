//! A count-down latch on ZooKeeper: the count is a Curator `SharedCount` node at the latch's path
//! (a 4-byte big-endian int), counted down by versioned `setData`, waited for by a data watch. The
//! latch is open at zero (or when the node does not exist); a count can be set again once open.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use zookeeper_client as zk;

use super::{map_err, wait_until, ZkSession};
use crate::backend::LatchOps;
use crate::model::error::{Error, Result};
use crate::model::options::Wait;

pub(crate) struct ZkLatch {
    session: Arc<ZkSession>,
}

impl ZkLatch {
    pub(crate) fn new(session: Arc<ZkSession>) -> ZkLatch {
        ZkLatch { session }
    }
}

#[async_trait]
impl LatchOps for ZkLatch {
    async fn try_set_count(&self, name: &str, count: u64) -> Result<bool> {
        let n = i32::try_from(count)
            .map_err(|_| Error::invalid(format!("a count of {count} is too large")))?;
        if self.session.create_count(name, n).await? {
            return Ok(true);
        }
        // It exists: set it only where it is open (zero).
        let mut set = false;
        self.session
            .update_count(name, |v| {
                set = v <= 0;
                Ok(set.then_some(n))
            })
            .await?;
        Ok(set)
    }

    async fn count_down(&self, name: &str) -> Result<()> {
        self.session
            .update_count(name, |v| Ok((v > 0).then(|| v - 1)))
            .await?;
        Ok(())
    }

    async fn count(&self, name: &str) -> Result<u64> {
        Ok(self
            .session
            .read_count(name)
            .await?
            .map_or(0, |(v, _)| v.max(0) as u64))
    }

    async fn wait(&self, name: &str, wait: Wait, _max_sleep: Duration) -> Result<bool> {
        let deadline = wait.deadline();
        loop {
            let (count, changed) = self.session.watch_count(name).await?;
            if count.unwrap_or(0) <= 0 {
                return Ok(true);
            }
            if !wait_until(changed, deadline).await {
                return Ok(false);
            }
        }
    }

    async fn delete(&self, name: &str) -> Result<bool> {
        match self.session.client()?.delete(name, None).await {
            Ok(()) => Ok(true),
            Err(zk::Error::NoNode) => Ok(false),
            Err(e) => Err(map_err(e, "delete the latch")),
        }
    }
}
