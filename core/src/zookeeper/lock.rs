//! Curator's queue locks on ZooKeeper: `InterProcessMutex` and the two halves of
//! `InterProcessReadWriteLock`, one [`LockOps`] per kind over the same queue walk.
//!
//! A contender creates an EPHEMERAL_SEQUENTIAL child of the lock path in Curator's protected
//! mode: `_c_<uuid>-lock-<seq>` for the mutex, `_c_<uuid>-__READ__<seq>` and
//! `_c_<uuid>-__WRIT__<seq>` for the read-write lock. Children are ordered by the sequence after
//! the marker (readers and writers of one lock share one order). Who holds, and which node a
//! waiter watches, follows Curator's rules:
//!
//! | kind   | holds when                          | watches                        |
//! |--------|-------------------------------------|--------------------------------|
//! | mutex  | its node is first                   | the node just before it        |
//! | write  | its node is first of all            | the node just before it        |
//! | read   | no writer comes before its node     | the first (lowest) writer      |
//!
//! so each release wakes only the waiters it unblocks. Re-entry is counted in the client. A
//! writer that takes the read lock (a downgrade) gets a plain EPHEMERAL read node named with its
//! writer node's sequence, so it sorts in the writer's place (Curator 5.5+, CURATOR-621).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use zookeeper_client as zk;

use super::{map_err, maybe_applied, wait_until, Cleanup, ZkSession, PROTECTED_PREFIX};
use crate::backend::{
    AcquireRequest, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest, UnlockReply,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldMode, LockKind};
use crate::model::outcome::{Holder, LockStatus};
use crate::model::owner::OwnerId;

const MUTEX_MARKER: &str = "lock-";
const LATCH_MARKER: &str = "latch-";
const READ_MARKER: &str = "__READ__";
const WRITE_MARKER: &str = "__WRIT__";

/// Which of Curator's queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queue {
    /// InterProcessMutex.
    Mutex,
    /// InterProcessReadWriteLock's read lock.
    Read,
    /// InterProcessReadWriteLock's write lock.
    Write,
    /// LeaderLatch: the first node leads; its data is the participant's id.
    Latch,
}

impl Queue {
    /// The marker of this queue's own nodes.
    fn marker(self) -> &'static str {
        match self {
            Queue::Mutex => MUTEX_MARKER,
            Queue::Read => READ_MARKER,
            Queue::Write => WRITE_MARKER,
            Queue::Latch => LATCH_MARKER,
        }
    }

    /// The markers of every node that takes part in this queue's order.
    fn markers(self) -> &'static [&'static str] {
        match self {
            Queue::Mutex => &[MUTEX_MARKER],
            Queue::Latch => &[LATCH_MARKER],
            Queue::Read | Queue::Write => &[READ_MARKER, WRITE_MARKER],
        }
    }

    /// Whether the contender at `idx` holds the lock; if not, the index of the node to watch.
    fn verdict(self, list: &[Contender], idx: usize) -> std::result::Result<(), usize> {
        match self {
            Queue::Mutex | Queue::Write | Queue::Latch if idx == 0 => Ok(()),
            Queue::Mutex | Queue::Write | Queue::Latch => Err(idx - 1),
            Queue::Read => match list[..idx].iter().position(|c| c.writer) {
                None => Ok(()),
                Some(first_writer) => Err(first_writer),
            },
        }
    }
}

/// A contender node, parsed.
#[derive(Debug, Clone)]
pub(crate) struct Contender {
    pub(crate) name: String,
    seq: String,
    writer: bool,
}

impl Contender {
    fn mode(&self, queue: Queue) -> HoldMode {
        match (queue, self.writer) {
            (Queue::Mutex | Queue::Latch, _) => HoldMode::Exclusive,
            (_, true) => HoldMode::Write,
            (_, false) => HoldMode::Read,
        }
    }
}

/// The children that take part in `queue`'s order, in that order: by the sequence after the
/// last marker, compared as zero-padded text like Curator does (ties keep the listing order).
pub(crate) fn contenders(queue: Queue, children: Vec<String>) -> Vec<Contender> {
    let mut v: Vec<Contender> = children
        .into_iter()
        .filter_map(|name| {
            let (at, marker) = queue
                .markers()
                .iter()
                .filter_map(|m| name.rfind(m).map(|at| (at, *m)))
                .max_by_key(|(at, _)| *at)?;
            let seq = name[at + marker.len()..].to_string();
            if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                return None;
            }
            Some(Contender {
                writer: marker == WRITE_MARKER,
                seq,
                name,
            })
        })
        .collect();
    v.sort_by(|a, b| a.seq.cmp(&b.seq));
    v
}

/// The operations of one of Curator's queue locks for one client.
pub(crate) struct ZkLock {
    session: Arc<ZkSession>,
    queue: Queue,
}

impl ZkLock {
    pub(crate) fn new(session: Arc<ZkSession>, queue: Queue) -> ZkLock {
        ZkLock { session, queue }
    }

    /// The mark after Curator's protected prefix: `-lock-`, `-__READ__` or `-__WRIT__`.
    fn create_marker(&self) -> String {
        format!("-{}", self.queue.marker())
    }

    async fn contenders(&self, path: &str) -> Result<Vec<Contender>> {
        let children = self
            .session
            .children(path, "list the lock's contenders")
            .await?;
        Ok(contenders(self.queue, children))
    }

    /// A writer takes the read lock of its own read-write lock: a plain EPHEMERAL read node that
    /// sorts in the writer's place, granted at once (Curator 5.5+).
    async fn downgrade(&self, path: &str, write_node: &str) -> Result<Granted> {
        let Some(at) = write_node.rfind(WRITE_MARKER) else {
            return Err(Error::internal(format!(
                "'{write_node}' is not a write-lock node"
            )));
        };
        let seq = &write_node[at + WRITE_MARKER.len()..];
        let uuid = uuid::Uuid::new_v4().to_string();
        let node = format!("{PROTECTED_PREFIX}{uuid}-{READ_MARKER}{seq}");
        let options = zk::CreateMode::Ephemeral.with_acls(self.session.acls());
        let client = self.session.client()?;
        let mut attempts = 0;
        loop {
            attempts += 1;
            match client
                .create(&format!("{path}/{node}"), &[], &options)
                .await
            {
                Ok((stat, _)) => {
                    return Ok(Granted {
                        token: stat.czxid as u64,
                        count: 1,
                        gone: Some(self.session.watch_gone(path, &node)),
                        node: Some(node),
                        valid_until: None,
                    })
                }
                Err(e) if attempts <= 3 && maybe_applied(&e) => {
                    if let Some((found, token)) =
                        self.session.find_own(&client, path, &uuid).await?
                    {
                        return Ok(Granted {
                            token,
                            count: 1,
                            gone: Some(self.session.watch_gone(path, &found)),
                            node: Some(found),
                            valid_until: None,
                        });
                    }
                }
                Err(e) => return Err(map_err(e, "create the read node of a downgrade")),
            }
        }
    }
}

#[async_trait]
impl HoldOps for ZkLock {
    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        match node {
            Some(node) => self.session.release(name, node, false).await,
            None => Ok(true),
        }
    }
}

#[async_trait]
impl LockOps for ZkLock {
    fn kind(&self) -> LockKind {
        match self.queue {
            Queue::Mutex => LockKind::Reentrant,
            Queue::Read => LockKind::Read,
            Queue::Write => LockKind::Write,
            Queue::Latch => LockKind::Leader,
        }
    }

    fn reentry(&self) -> Reentry {
        Reentry::Client
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Session
    }

    fn queues_waiters(&self) -> bool {
        true
    }

    /// Create our contender node and wait until it holds the lock. `Ok(None)` when the wait ran
    /// out (our node is deleted again).
    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let path = req.name;
        if let (Queue::Read, Some(w)) = (self.queue, req.write_node) {
            return self.downgrade(path, w).await.map(Some);
        }
        let deadline = req.wait.deadline();
        let client = self.session.client()?;
        let uuid = uuid::Uuid::new_v4().to_string();
        let marker = self.create_marker();
        let mut cleanup = Cleanup {
            client: client.clone(),
            path: path.to_string(),
            uuid: uuid.clone(),
            node: None,
            armed: true,
        };
        // Create and list in one round trip: zookeeper-client sends a request when the method is
        // called, and the server answers a session's requests in order, so a listing sent right
        // after the create already contains our node.
        let prefix = format!("{path}/{PROTECTED_PREFIX}{uuid}{marker}");
        let options = zk::CreateMode::EphemeralSequential.with_acls(self.session.acls());
        let data = req.data.unwrap_or_default().as_bytes();
        let create = client.create(&prefix, data, &options);
        let listing = client.get_children(path);
        let (created, listed) = tokio::join!(create, listing);
        let (node, token) = match created {
            Ok((stat, seq)) => (
                format!("{PROTECTED_PREFIX}{uuid}{marker}{seq}"),
                stat.czxid as u64,
            ),
            // A create lost with the connection may have made our node: find it by its uuid
            // before making a second one (Curator's protected mode).
            Err(e) if maybe_applied(&e) => {
                match self.session.find_own(&client, path, &uuid).await? {
                    Some(found) => found,
                    None => {
                        self.session
                            .create_protected(&client, path, &uuid, &marker, data)
                            .await?
                    }
                }
            }
            // Missing parents and the like: the careful path creates them.
            Err(_) => {
                self.session
                    .create_protected(&client, path, &uuid, &marker, data)
                    .await?
            }
        };
        cleanup.node = Some(node.clone());
        let mut listed = Some(listed);
        loop {
            let children = match listed.take() {
                Some(Ok((children, _))) if children.contains(&node) => children,
                _ => {
                    client
                        .get_children(path)
                        .await
                        .map_err(|e| map_err(e, "list the lock's contenders"))?
                        .0
                }
            };
            let list = contenders(self.queue, children);
            let Some(idx) = list.iter().position(|c| c.name == node) else {
                return Err(Error::new(
                    ErrorKind::LockLost,
                    format!("our contender node {path}/{node} disappeared while waiting (session expired or node deleted)"),
                ));
            };
            let watch = match self.queue.verdict(&list, idx) {
                Ok(()) => {
                    cleanup.armed = false;
                    return Ok(Some(Granted {
                        token,
                        count: 1,
                        gone: Some(self.session.watch_gone(path, &node)),
                        node: Some(node),
                        valid_until: None,
                    }));
                }
                Err(watch) => watch,
            };
            if deadline.is_some_and(|d| Instant::now() >= d) {
                cleanup.delete_now().await;
                return Ok(None);
            }
            let pred = format!("{path}/{}", list[watch].name);
            let watcher = match client.get_and_watch_data(&pred).await {
                Ok((_, _, w)) => w,
                Err(zk::Error::NoNode) => continue, // it went away meanwhile: look again
                Err(e) => return Err(map_err(e, "watch the previous contender")),
            };
            if !wait_until(watcher, deadline).await {
                cleanup.delete_now().await;
                return Ok(None);
            }
            self.session.woken();
        }
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let node = req.node.unwrap_or_default();
        Ok(
            match self.session.release(req.name, node, req.retry).await? {
                true => UnlockReply::Freed,
                false => UnlockReply::NotHeld,
            },
        )
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        let list = self.contenders(name).await?;
        Ok(match self.queue {
            Queue::Mutex | Queue::Latch => !list.is_empty(),
            Queue::Write => list.first().is_some_and(|c| c.writer),
            Queue::Read => list.first().is_some_and(|c| !c.writer),
        })
    }

    async fn remaining_lease(&self, _name: &str) -> Result<Option<Duration>> {
        Ok(None) // no lease: held while the session lives
    }

    /// Delete the nodes that hold this kind of lock; true if there were any. Their waiters wake.
    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let list = self.contenders(name).await?;
        let holding: Vec<String> = match self.queue {
            // Every contender, as Curator's users expect of a mutex's force-unlock.
            Queue::Mutex => list.into_iter().map(|c| c.name).collect(),
            // The leader only: the next candidate leads.
            Queue::Latch => list.into_iter().take(1).map(|c| c.name).collect(),
            Queue::Write => list
                .into_iter()
                .take(1)
                .filter(|c| c.writer)
                .map(|c| c.name)
                .collect(),
            Queue::Read => list
                .into_iter()
                .take_while(|c| !c.writer)
                .map(|c| c.name)
                .collect(),
        };
        self.session.delete_all(name, &holding).await
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        let children = self
            .session
            .children(name, "list the lock's contenders")
            .await?;
        let mut queue = self.queue;
        let mut list = contenders(queue, children.clone());
        if list.is_empty() && queue == Queue::Mutex {
            // An operator asking about a path that holds a read-write lock sees that lock.
            queue = Queue::Write;
            list = contenders(queue, children);
        }
        Ok(status_of(name, queue, list))
    }
}

/// The status of a queue lock from its ordered contenders.
fn status_of(name: &str, queue: Queue, list: Vec<Contender>) -> LockStatus {
    let holding = match queue {
        Queue::Mutex | Queue::Latch => list.len().min(1),
        Queue::Read | Queue::Write => match list.first() {
            None => 0,
            Some(c) if c.writer => 1,
            Some(_) => list.iter().take_while(|c| !c.writer).count(),
        },
    };
    let mode = match queue {
        Queue::Mutex | Queue::Latch => None,
        Queue::Read | Queue::Write => list.first().map(|c| c.mode(queue)),
    };
    let holders = list[..holding]
        .iter()
        .map(|c| Holder {
            owner: c.name.clone(),
            count: 1,
            mode: c.mode(queue),
            identity: None,
        })
        .collect();
    LockStatus {
        name: name.to_string(),
        locked: holding > 0,
        mode,
        holders,
        ttl: None,
        waiters: list[holding..].iter().map(|c| c.name.clone()).collect(),
        waiter_identities: Vec::new(),
        shared_with: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(queue: Queue, children: &[&str]) -> Vec<String> {
        contenders(queue, children.iter().map(|s| s.to_string()).collect())
            .into_iter()
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn contender_order_is_by_sequence_not_by_uuid() {
        let list = names(
            Queue::Mutex,
            &[
                "_c_ffff-lock-0000000003",
                "_c_0000-lock-0000000010",
                "_c_aaaa-lock-0000000001",
                "not-a-lock",
            ],
        );
        assert_eq!(
            list,
            [
                "_c_aaaa-lock-0000000001",
                "_c_ffff-lock-0000000003",
                "_c_0000-lock-0000000010"
            ]
        );
    }

    #[test]
    fn readers_and_writers_share_one_order_and_follow_curators_rules() {
        let children = [
            "_c_b-__WRIT__0000000004",
            "_c_a-__READ__0000000001",
            "_c_c-__READ__0000000002",
            "_c_d-__READ__0000000005",
            "_c_e-lock-0000000003",
        ];
        let list = contenders(
            Queue::Write,
            children.iter().map(|s| s.to_string()).collect(),
        );
        let order: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            order,
            [
                "_c_a-__READ__0000000001",
                "_c_c-__READ__0000000002",
                "_c_b-__WRIT__0000000004",
                "_c_d-__READ__0000000005"
            ]
        );
        // Both early readers hold; the writer waits for the reader just before it; the late
        // reader waits for the first writer, not for the reader just before it.
        assert_eq!(Queue::Read.verdict(&list, 0), Ok(()));
        assert_eq!(Queue::Read.verdict(&list, 1), Ok(()));
        assert_eq!(Queue::Write.verdict(&list, 2), Err(1));
        assert_eq!(Queue::Read.verdict(&list, 3), Err(2));
    }
}
