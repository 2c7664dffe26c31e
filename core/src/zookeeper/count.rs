//! Curator's `SharedCount`: a persistent node whose data is a 4-byte big-endian integer, changed
//! by versioned `setData` (so concurrent changes never overwrite each other) and followed by a
//! data watch. The ZooKeeper semaphore keeps its number of permits in one, the latch its count.

use zookeeper_client as zk;

use super::{map_err, ZkSession};
use crate::model::error::{Error, ErrorKind, Result};

fn decode(path: &str, data: &[u8]) -> Result<i32> {
    let bytes: [u8; 4] = data.try_into().map_err(|_| {
        Error::new(
            ErrorKind::Backend,
            format!(
                "ZooKeeper: {path} holds {} bytes, not a SharedCount's 4",
                data.len()
            ),
        )
    })?;
    Ok(i32::from_be_bytes(bytes))
}

impl ZkSession {
    /// The count at `path` and its version; `None` if the node does not exist.
    pub(crate) async fn read_count(&self, path: &str) -> Result<Option<(i32, i32)>> {
        match self.client()?.get_data(path).await {
            Ok((data, stat)) => Ok(Some((decode(path, &data)?, stat.version))),
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(map_err(e, "read a count")),
        }
    }

    /// The count at `path` (`None` if absent) and a watch that fires when it changes (or the
    /// node comes or goes).
    pub(crate) async fn watch_count(
        &self,
        path: &str,
    ) -> Result<(Option<i32>, zk::OneshotWatcher)> {
        let client = self.client()?;
        match client.get_and_watch_data(path).await {
            Ok((data, _, watcher)) => Ok((Some(decode(path, &data)?), watcher)),
            Err(zk::Error::NoNode) => match client.check_and_watch_stat(path).await {
                // Created meanwhile: read it again.
                Ok((Some(_), _)) => Box::pin(self.watch_count(path)).await,
                Ok((None, watcher)) => Ok((None, watcher)),
                Err(e) => Err(map_err(e, "watch a count")),
            },
            Err(e) => Err(map_err(e, "watch a count")),
        }
    }

    /// Create the count node at `path` with `value` (missing parents as container nodes); false
    /// if it exists already.
    pub(crate) async fn create_count(&self, path: &str, value: i32) -> Result<bool> {
        let client = self.client()?;
        let options = zk::CreateMode::Persistent.with_acls(self.acls());
        for _ in 0..3 {
            match client.create(path, &value.to_be_bytes(), &options).await {
                Ok(_) => return Ok(true),
                Err(zk::Error::NodeExists) => return Ok(false),
                Err(zk::Error::NoNode) => {
                    let parent = &path[..path.rfind('/').unwrap_or(0)];
                    if !parent.is_empty() {
                        let containers = zk::CreateMode::Container.with_acls(self.acls());
                        match client.mkdir(parent, &containers).await {
                            Ok(()) | Err(zk::Error::NodeExists) => {}
                            Err(e) => return Err(map_err(e, "create a count's parents")),
                        }
                    }
                }
                Err(e) => return Err(map_err(e, "create a count")),
            }
        }
        Err(Error::new(
            ErrorKind::Backend,
            format!("ZooKeeper: could not create {path}"),
        ))
    }

    /// Change the count at `path` with `f` by versioned `setData`, again while others change it
    /// first. `f` sees the current value and returns the new one, or `None` to leave it. Returns
    /// the value written (or left); `None` if the node does not exist.
    pub(crate) async fn update_count(
        &self,
        path: &str,
        mut f: impl FnMut(i32) -> Result<Option<i32>>,
    ) -> Result<Option<i32>> {
        loop {
            let Some((value, version)) = self.read_count(path).await? else {
                return Ok(None);
            };
            let Some(next) = f(value)? else {
                return Ok(Some(value));
            };
            match self
                .client()?
                .set_data(path, &next.to_be_bytes(), Some(version))
                .await
            {
                Ok(_) => return Ok(Some(next)),
                Err(zk::Error::BadVersion) => continue,
                Err(zk::Error::NoNode) => return Ok(None),
                Err(e) => return Err(map_err(e, "change a count")),
            }
        }
    }
}
