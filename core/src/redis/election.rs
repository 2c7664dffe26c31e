//! Leader election on Redis: a Redisson `RLock` on the election's name (so a Redisson user's
//! `RLock` on that name excludes the same way) plus a leader record beside it, never inside it.
//!
//! | key / channel                              | content |
//! |--------------------------------------------|---------|
//! | `<name>`                                   | Redisson's lock hash (see [`super::lock`]) |
//! | `redisson_lock_token:{<name>}`             | the lock's fencing counter: the term |
//! | `polylock_leader:{<name>}`                 | hash `holder` (the lock field), `identity`, `term`; PTTL = the lock's |
//! | channel `polylock_leader_channel:{<name>}` | the term after a new leader's record, `0` after a leader left |
//!
//! The record is written right after the grant and checked against the lock when read: a record
//! whose holder no longer holds the lock is not a leader. Redis keeps no queue of candidates:
//! the others retry on Redisson's release message, so only the leader is listed.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use super::lock::{token_key, RedisLock};
use super::pubsub::Wake;
use super::{map_err, ms, prefixed, RedisConn};
use crate::backend::{
    AcquireRequest, Change, ElectionOps, Granted, HoldOps, LeaseSupport, LockOps, Reentry,
    ReleaseRequest, RenewItem, UnlockReply,
};
use crate::model::error::Result;
use crate::model::kind::LockKind;
use crate::model::outcome::{Leader, LockStatus};
use crate::model::owner::OwnerId;

/// How often an observer looks again when no message came: a leader whose lease ran out (its
/// process died) tells nobody.
const OBSERVE_POLL: Duration = Duration::from_millis(500);

fn record_key(name: &str) -> String {
    prefixed("polylock_leader", name)
}

fn channel(name: &str) -> String {
    prefixed("polylock_leader_channel", name)
}

struct Scripts {
    record: Script,
    unrecord: Script,
    keep: Script,
    leader: Script,
}

/// The election's lock and record, for one client.
pub(crate) struct RedisLeader {
    conn: Arc<RedisConn>,
    lock: Arc<RedisLock>,
    scripts: Arc<Scripts>,
}

impl RedisLeader {
    pub(crate) fn new(conn: Arc<RedisConn>, lock: Arc<RedisLock>) -> RedisLeader {
        RedisLeader {
            conn,
            lock,
            scripts: Arc::new(Scripts {
                record: Script::new(include_str!("lua/leader/record.lua")),
                unrecord: Script::new(include_str!("lua/leader/unrecord.lua")),
                keep: Script::new(include_str!("lua/leader/keep.lua")),
                leader: Script::new(include_str!("lua/leader/leader.lua")),
            }),
        }
    }

    /// Delete the record of `field` (any holder's when empty) and tell the observers.
    async fn unrecord(&self, name: &str, field: &str) -> Result<()> {
        let mut inv = self.scripts.unrecord.key(record_key(name));
        inv.arg(field).arg(channel(name)).arg(self.conn.publish);
        let _: i64 = self
            .conn
            .invoke(&inv)
            .await
            .map_err(|e| map_err(e, "remove the leader record"))?;
        Ok(())
    }
}

#[async_trait]
impl HoldOps for RedisLeader {
    async fn renew(&self, holds: &[RenewItem], lease: Duration) -> Result<Vec<bool>> {
        let renewed = self.lock.renew(holds, lease).await?;
        for (h, kept) in holds.iter().zip(&renewed) {
            if *kept {
                let mut inv = self.scripts.keep.key(record_key(&h.name));
                inv.arg(self.lock.field(h.owner)).arg(ms(lease));
                let _: i64 = self
                    .conn
                    .invoke(&inv)
                    .await
                    .map_err(|e| map_err(e, "renew the leader record"))?;
            }
        }
        Ok(renewed)
    }

    async fn drop_hold(&self, name: &str, owner: OwnerId, node: Option<&str>) -> Result<bool> {
        let dropped = self.lock.drop_hold(name, owner, node).await?;
        self.unrecord(name, &self.lock.field(owner)).await?;
        Ok(dropped)
    }
}

#[async_trait]
impl LockOps for RedisLeader {
    fn kind(&self) -> LockKind {
        LockKind::Leader
    }

    fn reentry(&self) -> Reentry {
        Reentry::Server
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Renewable
    }

    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let Some(granted) = self.lock.acquire(req).await? else {
            return Ok(None);
        };
        if req.held == 0 {
            let mut inv = self.scripts.record.key(req.name);
            inv.key(record_key(req.name))
                .arg(self.lock.field(req.owner))
                .arg(req.data.unwrap_or_default())
                .arg(granted.token)
                .arg(channel(req.name))
                .arg(self.conn.publish);
            // A lock lost before its record was written: the watchdog's next renewal tells it.
            let written: std::result::Result<i64, _> = self.conn.invoke(&inv).await;
            if let Err(e) = written {
                // Not a leader nobody can see: give the lock back before saying so.
                let _ = self.lock.drop_hold(req.name, req.owner, None).await;
                return Err(map_err(e, "write the leader record"));
            }
        }
        Ok(Some(granted))
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let reply = self.lock.release(req).await?;
        if reply != UnlockReply::Decremented {
            self.unrecord(req.name, &self.lock.field(req.owner)).await?;
        }
        Ok(reply)
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        self.lock.is_locked(name).await
    }

    async fn hold_count(&self, name: &str, owner: OwnerId) -> Result<u32> {
        self.lock.hold_count(name, owner).await
    }

    async fn remaining_lease(&self, name: &str) -> Result<Option<Duration>> {
        self.lock.remaining_lease(name).await
    }

    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let held = self.lock.force_unlock(name).await?;
        self.unrecord(name, "").await?;
        Ok(held)
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        self.lock.status(name).await
    }
}

/// Who leads an election on Redis, and its change messages.
pub(crate) struct RedisElection {
    conn: Arc<RedisConn>,
    scripts: Arc<Scripts>,
}

impl RedisElection {
    pub(crate) fn new(conn: Arc<RedisConn>, leader: &RedisLeader) -> RedisElection {
        RedisElection {
            conn,
            scripts: leader.scripts.clone(),
        }
    }
}

#[async_trait]
impl ElectionOps for RedisElection {
    async fn leader(&self, name: &str) -> Result<Option<Leader>> {
        let mut tries = 0;
        loop {
            tries += 1;
            let mut inv = self.scripts.leader.key(name);
            inv.key(record_key(name)).key(token_key(name));
            let found: Option<(String, u64, i64)> = self
                .conn
                .invoke(&inv)
                .await
                .map_err(|e| map_err(e, "read the leader"))?;
            match found {
                None => return Ok(None),
                // A holder with no record yet may be a leader writing it: look again shortly
                // before showing it as stored.
                Some((_, _, 0)) if tries < 5 => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Some((identity, term, _)) => return Ok(Some(Leader { identity, term })),
            }
        }
    }

    async fn candidates(&self, name: &str) -> Result<Vec<String>> {
        Ok(self
            .leader(name)
            .await?
            .into_iter()
            .map(|l| l.identity)
            .collect())
    }

    async fn arm(&self, name: &str) -> Result<Change> {
        let guard = self.conn.subs.wait_on(&channel(name), Wake::All).await?;
        Ok(Box::pin(async move {
            let notified = guard.channel.notify.notified();
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(OBSERVE_POLL) => {}
            }
            drop(guard);
        }))
    }
}
