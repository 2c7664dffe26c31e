//! Curator's `LeaderLatch` on ZooKeeper: what an election adds to its [`Queue::Latch`] lock.
//!
//! A candidate is an EPHEMERAL_SEQUENTIAL node `_c_<uuid>-latch-<seq>` under the election's path
//! whose data is the participant id (UTF-8); the lowest sequence leads (the lock of
//! [`super::lock`] with the latch marker). The term is the leader node's creation zxid.

use std::sync::Arc;

use async_trait::async_trait;
use zookeeper_client as zk;

use super::lock::{contenders, Queue};
use super::{map_err, ZkSession};
use crate::backend::{Change, ElectionOps};
use crate::model::error::Result;
use crate::model::outcome::Leader;

pub(crate) struct ZkElection {
    session: Arc<ZkSession>,
}

impl ZkElection {
    pub(crate) fn new(session: Arc<ZkSession>) -> ZkElection {
        ZkElection { session }
    }

    /// The candidates in order with their ids and creation zxids; a node that went away while
    /// it was read is left out.
    async fn participants(&self, path: &str, first_only: bool) -> Result<Vec<Leader>> {
        let children = self
            .session
            .children(path, "list the election's candidates")
            .await?;
        let client = self.session.client()?;
        let mut out = Vec::new();
        for c in contenders(Queue::Latch, children) {
            match client.get_data(&format!("{path}/{}", c.name)).await {
                Ok((data, stat)) => {
                    out.push(Leader {
                        identity: String::from_utf8_lossy(&data).into_owned(),
                        term: stat.czxid as u64,
                    });
                    if first_only {
                        break;
                    }
                }
                Err(zk::Error::NoNode) => {}
                Err(e) => return Err(map_err(e, "read a candidate's id")),
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl ElectionOps for ZkElection {
    async fn leader(&self, name: &str) -> Result<Option<Leader>> {
        Ok(self.participants(name, true).await?.into_iter().next())
    }

    async fn candidates(&self, name: &str) -> Result<Vec<String>> {
        Ok(self
            .participants(name, false)
            .await?
            .into_iter()
            .map(|l| l.identity)
            .collect())
    }

    async fn arm(&self, name: &str) -> Result<Change> {
        let client = self.session.client()?;
        // The candidates come and go as children; before the first one, the path itself.
        let watcher = match client.get_and_watch_children(name).await {
            Ok((_, _, w)) => w,
            Err(zk::Error::NoNode) => match client.check_and_watch_stat(name).await {
                Ok((_, w)) => w,
                Err(e) => return Err(map_err(e, "watch the election")),
            },
            Err(e) => return Err(map_err(e, "watch the election")),
        };
        Ok(Box::pin(async move {
            watcher.changed().await;
        }))
    }
}
