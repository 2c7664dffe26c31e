//! Redisson's `RFairLock` on Redis: first come, first served, across polylock and Redisson.
//!
//! | key / channel                                        | content |
//! |------------------------------------------------------|---------|
//! | `<name>`                                             | hash, as an RLock |
//! | `redisson_lock_queue:{<name>}`                       | list of waiting owners, head first |
//! | `redisson_lock_timeout:{<name>}`                     | zset: waiting owner → its deadline (ms since the epoch, client clock) |
//! | `redisson_lock__channel:{<name>}:<owner field>`      | one channel per waiter; a release wakes only the queue's head |
//! | `polylock_lock_alive:{<name>}`                       | zset: polylock's waiters → their heartbeat deadline (polylock only) |
//!
//! A waiter's deadline follows Redisson's chain: the deadline of the waiter before it plus
//! Redisson's wait (300 s, its `fairLockWaitTimeout`), and every grant takes that wait off every
//! deadline behind, as Redisson's grant does, so Redisson and polylock waiters keep their places
//! in one queue. Where polylock differs: a live waiter renews its deadline and a heartbeat at
//! every try (a third of `ClientOptions::fair_wait_timeout`, 5 s by default, apart), and
//! polylock's scripts drop a waiter whose heartbeat passed, so a dead polylock waiter holds
//! polylock's waiters up for one timeout; Redisson's scripts know only the chained deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::{RedisError, Script, Value};

use super::lock::{
    channel, field, hash_tag_twin, lock_exists, parse_acquire, read_hold_count, read_lease,
    read_lease_left, status_of, token_key, Flavor,
};
use super::pubsub::Wake;
use super::{backoff, epoch_ms, map_err, ms, prefixed, retryable, RedisConn, RETRIES};
use crate::backend::cleanup::{clean_up, CleanUp};
use crate::backend::{
    AcquireRequest, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest, RenewItem,
    UnlockReply,
};
use crate::model::error::Result;
use crate::model::kind::LockKind;
use crate::model::outcome::{LockStatus, RemainingLease};
use crate::model::owner::OwnerId;

const RELEASED: &str = "0";

fn queue_key(name: &str) -> String {
    prefixed("redisson_lock_queue", name)
}

fn deadlines_key(name: &str) -> String {
    prefixed("redisson_lock_timeout", name)
}

fn heartbeats_key(name: &str) -> String {
    prefixed("polylock_lock_alive", name)
}

/// Redisson's wait per queued waiter (`fairLockWaitTimeout`, 300 s since Redisson 3.13.3): added
/// to the deadline before a waiter's, taken off every deadline when a waiter is granted.
const REDISSON_WAIT_MS: u64 = 300_000;

struct Scripts {
    acquire: Script,
    release: Script,
    dequeue: Script,
    drop: Script,
    force_unlock: Script,
    renew: Script,
}

impl Scripts {
    fn new() -> Scripts {
        let evict = include_str!("lua/fair/evict.lua");
        let s = |text: &str| Script::new(&text.replace("--EVICT--", evict));
        Scripts {
            acquire: s(include_str!("lua/fair/acquire.lua")),
            release: s(include_str!("lua/fair/release.lua")),
            dequeue: s(include_str!("lua/fair/dequeue.lua")),
            drop: s(include_str!("lua/fair/drop.lua")),
            force_unlock: s(include_str!("lua/fair/force_unlock.lua")),
            // A holder's field is renewed exactly like an RLock owner's.
            renew: Script::new(include_str!("lua/lock/renew.lua")),
        }
    }
}

/// The fair lock of one client.
pub(crate) struct RedisFairLock {
    conn: Arc<RedisConn>,
    scripts: Arc<Scripts>,
    /// How long a waiter stays queued without trying again.
    stale: Duration,
}

/// The script call that leaves the queue (or, with `expected`, also undoes one hold a cancelled
/// acquire may have taken).
fn give_up_call<'s>(
    scripts: &'s Scripts,
    name: &str,
    field: &str,
    publish: &str,
) -> redis::ScriptInvocation<'s> {
    let mut inv = scripts.dequeue.key(name);
    inv.key(channel(Flavor::Plain, name))
        .key(queue_key(name))
        .key(deadlines_key(name))
        .key(heartbeats_key(name))
        .arg(RELEASED)
        .arg(field)
        .arg(publish)
        .arg(epoch_ms())
        .arg(REDISSON_WAIT_MS);
    inv
}

fn drop_call<'s>(
    scripts: &'s Scripts,
    name: &str,
    field: &str,
    expected: Option<u32>,
    publish: &str,
) -> redis::ScriptInvocation<'s> {
    let mut inv = scripts.drop.key(name);
    inv.key(channel(Flavor::Plain, name))
        .key(queue_key(name))
        .key(deadlines_key(name))
        .key(heartbeats_key(name))
        .arg(RELEASED)
        .arg(field)
        .arg(publish);
    match expected {
        Some(n) => inv.arg(n),
        None => inv.arg(""),
    };
    inv.arg(epoch_ms());
    inv
}

impl RedisFairLock {
    pub(crate) fn new(conn: Arc<RedisConn>, stale: Duration) -> RedisFairLock {
        RedisFairLock {
            conn,
            scripts: Arc::new(Scripts::new()),
            stale,
        }
    }

    fn field(&self, owner: OwnerId) -> String {
        field(&self.conn, Flavor::Plain, owner)
    }

    /// One try; `queue`: take (or refresh) a place in the queue if it is not granted.
    async fn attempt(
        &self,
        name: &str,
        field: &str,
        lease: Duration,
        held: u32,
        queue: bool,
    ) -> Result<std::result::Result<Granted, Option<Duration>>> {
        let token = token_key(name);
        let sent = Instant::now();
        let mut attempt = 0;
        loop {
            let mut inv = self.scripts.acquire.key(name);
            inv.key(&token)
                .key(queue_key(name))
                .key(deadlines_key(name))
                .key(heartbeats_key(name))
                .arg(ms(lease))
                .arg(field)
                .arg(held)
                .arg(if attempt == 0 { "" } else { "1" })
                .arg(epoch_ms())
                .arg(ms(self.stale))
                .arg(if queue { "1" } else { "" })
                .arg(REDISSON_WAIT_MS);
            // Dropped in flight, the script may still run: undo a hold it may have added and
            // leave the queue it may have joined.
            let guard = GiveUp {
                lock: self,
                name,
                field,
                undo: Some(held + 1),
                armed: true,
            };
            let reply: std::result::Result<Vec<i64>, RedisError> = self.conn.invoke(&inv).await;
            let mut guard = guard;
            guard.armed = false;
            match reply {
                Ok(v) => return parse_acquire(name, v, sent, lease),
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, "acquire the fair lock")),
            }
        }
    }

    async fn dequeue(&self, name: &str, field: &str) {
        let _: redis::RedisResult<i64> =
            give_up_call(&self.scripts, name, field, self.conn.publish)
                .invoke_async(&mut self.conn.conn())
                .await;
    }
}

/// Leaves the queue (and undoes a hold an acquire in flight may have taken) when an acquire ends
/// without the lock: in the background when the acquire is cancelled.
struct GiveUp<'a> {
    lock: &'a RedisFairLock,
    name: &'a str,
    field: &'a str,
    undo: Option<u32>,
    armed: bool,
}

impl Drop for GiveUp<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let scripts = self.lock.scripts.clone();
        let (name, field, undo) = (self.name.to_string(), self.field.to_string(), self.undo);
        let conn = self.lock.conn.conn();
        let publish = self.lock.conn.publish;
        // Both scripts are safe to run again: the undo removes a hold only while the field has
        // exactly the holds it had with it, and leaving the queue twice is leaving it once.
        let what = format!("the fair-lock queue entry {field} of '{name}'");
        clean_up(what, move || {
            let (scripts, name, field, mut conn) =
                (scripts.clone(), name.clone(), field.clone(), conn.clone());
            let undone = async move {
                if let Some(expected) = undo {
                    drop_call(&scripts, &name, &field, Some(expected), publish)
                        .invoke_async::<i64>(&mut conn)
                        .await?;
                }
                give_up_call(&scripts, &name, &field, publish)
                    .invoke_async::<i64>(&mut conn)
                    .await
            };
            async move {
                match undone.await {
                    Ok(_) => CleanUp::Done,
                    Err(e) => CleanUp::Retry(e.to_string()),
                }
            }
        });
    }
}

#[async_trait]
impl HoldOps for RedisFairLock {
    async fn renew(&self, holds: &[RenewItem], lease: Duration) -> Result<Vec<bool>> {
        self.conn
            .renew_batch(&self.scripts.renew, ms(lease), holds, |h| {
                Ok((h.name.to_string(), self.field(h.owner).into_bytes()))
            })
            .await
    }

    async fn drop_hold(&self, name: &str, owner: OwnerId, _node: Option<&str>) -> Result<bool> {
        let field = self.field(owner);
        let n: i64 = drop_call(&self.scripts, name, &field, None, self.conn.publish)
            .invoke_async(&mut self.conn.conn())
            .await
            .map_err(|e| map_err(e, "drop the owner's holds"))?;
        Ok(n == 1)
    }
}

#[async_trait]
impl LockOps for RedisFairLock {
    fn kind(&self) -> LockKind {
        LockKind::Fair
    }

    fn reentry(&self) -> Reentry {
        Reentry::Server
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Renewable
    }

    /// Waiters queue, but a single try never joins the queue and never goes ahead of it (it is
    /// granted only when nobody queues, as Redisson's `tryLock()`), so a binding's "one try on
    /// the caller's thread, then wait" loses no place it had: the waiter queues at its first
    /// waiting attempt, one round trip after its try.
    fn queues_waiters(&self) -> bool {
        false
    }

    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let (name, field) = (req.name, self.field(req.owner));
        let deadline = req.wait.deadline();
        let once = deadline.is_some_and(|d| Instant::now() >= d);
        if once {
            // A single try never queues (Redisson's tryLock()).
            return Ok(self
                .attempt(name, &field, req.lease, req.held, false)
                .await?
                .ok());
        }
        let mut leave = GiveUp {
            lock: self,
            name,
            field: &field,
            undo: None,
            armed: true,
        };
        // Fast path: a free lock with nobody queued costs one round trip, with no subscription.
        // A refused try has taken a place in the queue (the guard leaves it if we stop here); a
        // release between it and the subscription below is caught by the try after it.
        if let Ok(g) = self
            .attempt(name, &field, req.lease, req.held, true)
            .await?
        {
            leave.armed = false; // the script took us out of the queue
            return Ok(Some(g));
        }
        // This waiter's own channel: a release wakes the queue's head only.
        let own = format!("{}:{field}", channel(Flavor::Plain, name));
        let guard = self.conn.subs.wait_on(&own, Wake::All).await?;
        let refresh = self.stale / 3;
        loop {
            let notified = guard.channel.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let hint = match self
                .attempt(name, &field, req.lease, req.held, true)
                .await?
            {
                Ok(g) => {
                    leave.armed = false; // the script took us out of the queue
                    return Ok(Some(g));
                }
                Err(hint) => hint,
            };
            // Sleep until woken, or until this waiter must refresh its place (or try again if a
            // message was lost), bounded by the caller's deadline.
            let mut sleep = hint.unwrap_or(refresh).min(refresh).min(req.max_sleep);
            if let Some(d) = deadline {
                let now = Instant::now();
                if now >= d {
                    leave.armed = false;
                    self.dequeue(name, &field).await;
                    return Ok(None);
                }
                sleep = sleep.min(d - now);
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(sleep.max(Duration::from_millis(1))) => {}
            }
        }
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let field = self.field(req.owner);
        let mut attempt = 0;
        loop {
            let mut inv = self.scripts.release.key(req.name);
            inv.key(channel(Flavor::Plain, req.name))
                .key(queue_key(req.name))
                .key(deadlines_key(req.name))
                .key(heartbeats_key(req.name))
                .arg(RELEASED)
                .arg(ms(req.lease))
                .arg(&field)
                .arg(self.conn.publish)
                .arg(req.held)
                .arg(if attempt > 0 || req.retry { "1" } else { "" })
                .arg(epoch_ms());
            let reply: std::result::Result<Option<i64>, RedisError> = self.conn.invoke(&inv).await;
            match reply {
                Ok(None) => return Ok(UnlockReply::NotHeld),
                Ok(Some(0)) => return Ok(UnlockReply::Decremented),
                Ok(Some(_)) => return Ok(UnlockReply::Freed),
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, "release the fair lock")),
            }
        }
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        lock_exists(&self.conn, name).await
    }

    async fn hold_count(&self, name: &str, owner: OwnerId) -> Result<u32> {
        read_hold_count(&self.conn, name, &self.field(owner)).await
    }

    async fn remaining_lease(&self, name: &str) -> Result<Option<Duration>> {
        read_lease(&self.conn, name).await
    }

    async fn lease_left(&self, name: &str) -> Result<RemainingLease> {
        read_lease_left(&self.conn, name).await
    }

    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let mut inv = self.scripts.force_unlock.key(name);
        inv.key(channel(Flavor::Plain, name))
            .key(queue_key(name))
            .key(deadlines_key(name))
            .key(heartbeats_key(name))
            .arg(RELEASED)
            .arg(self.conn.publish)
            .arg(epoch_ms());
        let n: i64 = inv
            .invoke_async(&mut self.conn.conn())
            .await
            .map_err(|e| map_err(e, "force-unlock the fair lock"))?;
        Ok(n == 1)
    }

    /// The holder, and the queue in order.
    async fn status(&self, name: &str) -> Result<LockStatus> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL")
            .arg(name)
            .cmd("PTTL")
            .arg(name)
            .cmd("LRANGE")
            .arg(queue_key(name))
            .arg(0)
            .arg(-1);
        // The name whose timeout key and queue Redisson's format shares with this one (a name
        // without a twin reads itself again, ignored).
        let twin = hash_tag_twin(name);
        pipe.cmd("EXISTS").arg(twin.as_deref().unwrap_or(name));
        let (fields, pttl, queue, twin_held): (Vec<(String, Value)>, i64, Vec<String>, i64) =
            self.conn.query_pipe(pipe, "read the lock status").await?;
        let mut st = status_of(name, fields, pttl);
        st.waiters = queue;
        st.shared_with.extend(twin.filter(|_| twin_held > 0));
        Ok(st)
    }
}
