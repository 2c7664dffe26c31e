//! Curator's `InterProcessSemaphoreV2` on ZooKeeper: leases as ephemeral nodes, the number of
//! permits in a `SharedCount`.
//!
//! | node | role |
//! |------|------|
//! | `<path>/locks/_c_<uuid>-lock-<seq>` | an InterProcessMutex that serialises acquirers |
//! | `<path>/leases/_c_<uuid>-lease-<seq>` | one per lease held (or being waited for) |
//! | `<path>/count` | SharedCount: the number of permits, a 4-byte big-endian int |
//!
//! Acquiring one lease: take the internal mutex, create the lease node, and hold it once the
//! leases number at most the permits (waiting on a child watch of `leases/` and a data watch of
//! the count); let the mutex go in every case. The rule is a count, not a position: any N lease
//! nodes are N holders. Leases are ephemeral: a lost session frees them (and their holder hears
//! the lost signal). A Curator service shares the semaphore with
//! `new InterProcessSemaphoreV2(client, path, new SharedCount(client, path + "/count", 0))`, or
//! with a constant `maxLeases` equal to the count set here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::lock::{Queue, ZkLock};
use super::{map_err, wait_until, Cleanup, ZkSession};
use crate::backend::{AcquireRequest, Granted, HoldOps, LockOps, PermitRequest, SemaphoreOps};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::options::Wait;
use crate::model::outcome::{PermitHolder, SemaphoreStatus};
use crate::model::owner::OwnerId;

/// Marker of Curator's semaphore leases.
pub(crate) const LEASE_MARKER: &str = "-lease-";

/// Where the number of permits comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Permits {
    /// A constant (the semaphore mutex: one).
    Fixed(i32),
    /// The SharedCount at `<path>/count`.
    Counted,
}

fn count_path(path: &str) -> String {
    format!("{path}/count")
}

/// The lease algorithm shared by the semaphore and the semaphore mutex.
pub(crate) struct Leases {
    session: Arc<ZkSession>,
    /// The internal mutex at `<path>/locks`.
    internal: ZkLock,
}

impl Leases {
    pub(crate) fn new(session: Arc<ZkSession>) -> Leases {
        Leases {
            internal: ZkLock::new(session.clone(), Queue::Mutex),
            session,
        }
    }

    /// The lease nodes of the semaphore at `path`.
    pub(crate) async fn list(&self, path: &str) -> Result<Vec<String>> {
        let mut children = self
            .session
            .children(&format!("{path}/leases"), "list the semaphore's leases")
            .await?;
        children.retain(|c| c.contains(LEASE_MARKER));
        Ok(children)
    }

    /// Take `n` leases within the one deadline, all under one hold of Curator's internal mutex
    /// (`locks/`): two acquires of several leases never hold some each and wait for each other's
    /// (Curator itself lets the mutex go between leases, so a Curator client's acquire of several
    /// can still interleave with ours). On a failure or a timeout the leases already taken are
    /// given back. Lease nodes are named `leases/<node>`.
    pub(crate) async fn acquire(
        &self,
        path: &str,
        n: u32,
        wait: Wait,
        max_sleep: Duration,
        permits: Permits,
    ) -> Result<Option<Vec<Granted>>> {
        let deadline = wait.deadline();
        let lock_path = format!("{path}/locks");
        let internal_req = AcquireRequest {
            name: &lock_path,
            owner: 0,
            lease: max_sleep,
            held: 0,
            wait: wait_left(deadline).checked()?,
            max_sleep,
            write_node: None,
            data: None,
        };
        let Some(internal) = self.internal.acquire(&internal_req).await? else {
            return Ok(None);
        };
        // Let the internal mutex go however this ends: before returning (so that this client's
        // next try does not find it still taken), and in the background if the acquire is
        // cancelled.
        let mut internal = Cleanup {
            client: self.session.client()?,
            path: lock_path,
            uuid: String::new(),
            node: internal.node,
            armed: true,
        };
        let client = self.session.client()?;
        let mut taken: Vec<Granted> = Vec::new();
        // The leases taken so far go back however this ends without all of them: now on a
        // timeout or failure, in the background if the acquire is dropped. They stay guarded
        // until the internal mutex is gone: dropped during that delete, the acquire leaves
        // neither behind.
        let mut give_back: Vec<Cleanup> = Vec::new();
        for _ in 0..n {
            match self.take_lease(path, deadline, permits).await {
                Ok(Some(g)) => {
                    give_back.push(Cleanup {
                        client: client.clone(),
                        path: path.to_string(),
                        uuid: String::new(),
                        node: g.node.clone(),
                        armed: true,
                    });
                    taken.push(g);
                }
                other => {
                    for lease in &mut give_back {
                        lease.delete_now().await;
                    }
                    internal.delete_now().await;
                    return other.map(|_| None);
                }
            }
        }
        internal.delete_now().await;
        for lease in &mut give_back {
            lease.armed = false;
        }
        Ok(Some(taken))
    }

    /// One lease, with the internal mutex held by the caller.
    async fn take_lease(
        &self,
        path: &str,
        deadline: Option<Instant>,
        permits: Permits,
    ) -> Result<Option<Granted>> {
        let leases = format!("{path}/leases");
        let client = self.session.client()?;
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut cleanup = Cleanup {
            client: client.clone(),
            path: leases.clone(),
            uuid: uuid.clone(),
            node: None,
            armed: true,
        };
        let (node, token) = self
            .session
            .create_protected(&client, &leases, &uuid, LEASE_MARKER, &[])
            .await?;
        cleanup.node = Some(node.clone());
        loop {
            let (children, _, leases_changed) = client
                .get_and_watch_children(&leases)
                .await
                .map_err(|e| map_err(e, "list the semaphore's leases"))?;
            if !children.contains(&node) {
                return Err(Error::new(
                    ErrorKind::LockLost,
                    format!("our lease {leases}/{node} disappeared while waiting"),
                ));
            }
            let (max, count_changed) = match permits {
                Permits::Fixed(n) => (n, None),
                Permits::Counted => {
                    let (v, w) = self.session.watch_count(&count_path(path)).await?;
                    (v.unwrap_or(0), Some(w))
                }
            };
            let holders = children.iter().filter(|c| c.contains(LEASE_MARKER)).count();
            if holders as i64 <= max as i64 {
                cleanup.armed = false;
                return Ok(Some(Granted {
                    token,
                    count: 1,
                    gone: Some(self.session.watch_gone(&leases, &node)),
                    node: Some(format!("leases/{node}")),
                    valid_until: None,
                }));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                cleanup.delete_now().await;
                return Ok(None);
            }
            let woke = async {
                match count_changed {
                    Some(c) => {
                        tokio::select! {
                            r = wait_until(leases_changed, deadline) => r,
                            r = wait_until(c, deadline) => r,
                        }
                    }
                    None => wait_until(leases_changed, deadline).await,
                }
            };
            if !woke.await {
                cleanup.delete_now().await;
                return Ok(None);
            }
            self.session.woken();
        }
    }
}

/// The semaphore of one client.
pub(crate) struct ZkSemaphore {
    session: Arc<ZkSession>,
    leases: Leases,
}

impl ZkSemaphore {
    pub(crate) fn new(session: Arc<ZkSession>) -> ZkSemaphore {
        ZkSemaphore {
            leases: Leases::new(session.clone()),
            session,
        }
    }

    async fn permits(&self, path: &str) -> Result<i32> {
        Ok(self
            .session
            .read_count(&count_path(path))
            .await?
            .map_or(0, |(v, _)| v))
    }
}

#[async_trait]
impl HoldOps for ZkSemaphore {
    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        match node {
            Some(node) => self.session.release(name, node, false).await,
            None => Ok(false),
        }
    }
}

#[async_trait]
impl SemaphoreOps for ZkSemaphore {
    fn holds_permits(&self) -> bool {
        true
    }

    async fn try_set_permits(&self, name: &str, permits: u32) -> Result<bool> {
        let n = i32::try_from(permits)
            .map_err(|_| Error::invalid(format!("{permits} permits are too many")))?;
        self.session.create_count(&count_path(name), n).await
    }

    async fn add_permits(&self, name: &str, delta: i64) -> Result<()> {
        let path = count_path(name);
        let add = |v: i32| {
            i32::try_from(v as i64 + delta)
                .map(Some)
                .map_err(|_| Error::invalid(format!("{v} + {delta} permits are out of range")))
        };
        if self.session.update_count(&path, add).await?.is_none() {
            let start = i32::try_from(delta)
                .map_err(|_| Error::invalid(format!("{delta} permits are out of range")))?;
            if !self.session.create_count(&path, start).await? {
                // Created by somebody else meanwhile: add to theirs.
                self.session.update_count(&path, add).await?;
            }
        }
        Ok(())
    }

    async fn acquire(&self, req: &PermitRequest<'_>) -> Result<Option<Vec<Granted>>> {
        self.leases
            .acquire(
                req.name,
                req.permits,
                req.wait,
                req.max_sleep,
                Permits::Counted,
            )
            .await
    }

    async fn release(&self, name: &str, _permits: u32, nodes: &[String]) -> Result<()> {
        for node in nodes {
            self.session.release(name, node, false).await?;
        }
        Ok(())
    }

    async fn available(&self, name: &str) -> Result<i64> {
        let max = self.permits(name).await? as i64;
        Ok((max - self.leases.list(name).await?.len() as i64).max(0))
    }

    /// Take every free permit as a lease of this client.
    async fn drain(&self, name: &str) -> Result<(i64, Vec<Granted>)> {
        let mut taken = Vec::new();
        loop {
            let max_sleep = self.session.options.watchdog_timeout;
            let next = self
                .leases
                .acquire(name, 1, Wait::Never, max_sleep, Permits::Counted)
                .await;
            match next {
                Ok(Some(mut g)) => taken.append(&mut g),
                Ok(None) => return Ok((taken.len() as i64, taken)),
                Err(e) => {
                    // Give back what this drain took before the failure: nobody would know of it.
                    let nodes: Vec<String> = taken.into_iter().filter_map(|g| g.node).collect();
                    for node in &nodes {
                        if let Err(why) = self.session.release(name, node, false).await {
                            tracing::error!(
                                semaphore = name,
                                "polylock: a failed drain of '{name}' could not give back its \
                                 lease {node} ({why}); it ends with this client's session"
                            );
                        }
                    }
                    return Err(e);
                }
            }
        }
    }

    async fn status(&self, name: &str) -> Result<SemaphoreStatus> {
        let max = self.permits(name).await? as i64;
        let mut leases = self.leases.list(name).await?;
        leases.sort_by_key(|l| {
            l.rsplit(LEASE_MARKER)
                .next()
                .unwrap_or_default()
                .to_string()
        });
        Ok(SemaphoreStatus {
            name: name.to_string(),
            available: (max - leases.len() as i64).max(0),
            permits: Some(max),
            holders: leases
                .into_iter()
                .map(|l| PermitHolder {
                    id: format!("leases/{l}"),
                    expires_in: None,
                })
                .collect(),
        })
    }
}

/// What is left of a caller's wait, for an internal acquire: under the 1 ms resolution that a
/// caller's own wait must have, one try. (A remainder of a few hundred microseconds was passed
/// on as it was and refused as an invalid wait: a timed semaphore acquire on ZooKeeper could fail
/// with InvalidArgument instead of timing out. Found by the randomized checker.)
fn wait_left(deadline: Option<Instant>) -> Wait {
    match deadline.map(|d| d.saturating_duration_since(Instant::now())) {
        None => Wait::Forever,
        Some(left) if left < Duration::from_millis(1) => Wait::Never,
        Some(left) => Wait::For(left),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_left_under_a_millisecond_is_one_try_not_an_invalid_wait() {
        for left in [
            Duration::ZERO,
            Duration::from_micros(169),
            Duration::from_micros(999),
        ] {
            let wait = wait_left(Some(Instant::now() + left));
            assert!(wait.checked().is_ok(), "{left:?} left: {wait:?}");
        }
        assert!(matches!(
            wait_left(Some(Instant::now() + Duration::from_secs(5))),
            Wait::For(d) if d > Duration::from_secs(4)
        ));
        assert_eq!(wait_left(None), Wait::Forever);
    }
}
