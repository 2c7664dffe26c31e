//! etcd's `concurrency.Election`: what an election adds to its [`Mode::Leader`] lock.
//!
//! A candidate puts `NAME/<lease id in hex>` with its proposal (the candidate's identity) as the
//! value, attached to its lease; the key created first leads (the lock of [`super::lock`]), as
//! `etcdctl elect NAME PROPOSAL` does. The term is the leader key's create revision.
//!
//! [`Mode::Leader`]: super::lock::Mode::Leader

use std::sync::Arc;

use async_trait::async_trait;
use ec::{GetOptions, SortOrder, SortTarget};
use etcd_client as ec;

use super::{prefix_end, watch_for, EtcdSession};
use crate::backend::{Change, ElectionOps};
use crate::model::error::Result;
use crate::model::outcome::Leader;

pub(crate) struct EtcdElection {
    session: Arc<EtcdSession>,
}

impl EtcdElection {
    pub(crate) fn new(session: Arc<EtcdSession>) -> EtcdElection {
        EtcdElection { session }
    }

    /// The candidates' keys in create order (the first `limit`, if given).
    async fn participants(&self, name: &str, limit: Option<i64>) -> Result<Vec<Leader>> {
        let prefix = format!("{name}/");
        let mut options = GetOptions::new()
            .with_range(prefix_end(&prefix))
            .with_sort(SortTarget::Create, SortOrder::Ascend);
        if let Some(n) = limit {
            options = options.with_limit(n);
        }
        let mut c = self.session.client()?;
        let r = self
            .session
            .call(
                "list the election's candidates",
                c.get(prefix.as_str(), Some(options)),
            )
            .await?;
        Ok(r.kvs()
            .iter()
            .map(|kv| Leader {
                identity: String::from_utf8_lossy(kv.value()).into_owned(),
                term: kv.create_revision() as u64,
            })
            .collect())
    }
}

#[async_trait]
impl ElectionOps for EtcdElection {
    async fn leader(&self, name: &str) -> Result<Option<Leader>> {
        Ok(self.participants(name, Some(1)).await?.into_iter().next())
    }

    async fn candidates(&self, name: &str) -> Result<Vec<String>> {
        Ok(self
            .participants(name, None)
            .await?
            .into_iter()
            .map(|l| l.identity)
            .collect())
    }

    async fn arm(&self, name: &str) -> Result<Change> {
        // The revision now: any change of the candidates after it resolves the watch.
        let prefix = format!("{name}/");
        let mut c = self.session.client()?;
        let r = self
            .session
            .call(
                "read the election's revision",
                c.get(
                    prefix.as_str(),
                    Some(
                        GetOptions::new()
                            .with_range(prefix_end(&prefix))
                            .with_count_only(),
                    ),
                ),
            )
            .await?;
        let at = r.header().map_or(0, |h| h.revision());
        let session = self.session.clone();
        Ok(Box::pin(async move {
            let end = prefix_end(&prefix);
            // An event, the end of the session, or an error: the caller looks again either way.
            let _ = watch_for(&session, &prefix, Some(end), at + 1, None, |_| true).await;
        }))
    }
}
