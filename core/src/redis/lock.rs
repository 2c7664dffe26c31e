//! Redisson's lock family on Redis: the reentrant `RLock` and the two halves of
//! `RReadWriteLock`, one [`LockOps`] per kind over the same waiting loop.
//!
//! | kind  | key / channel                                 | content |
//! |-------|-----------------------------------------------|---------|
//! | all   | `<name>`                                      | hash; the key's PTTL is the lease |
//! | lock  | field `<clientId>:<ownerId>`                  | hold count |
//! | rw    | field `mode`                                  | `read` or `write` |
//! | read  | field `<clientId>:<ownerId>`                  | read hold count |
//! | read  | `{<name>}:<clientId>:<ownerId>:rwlock_timeout:<n>` | one key per read hold, PTTL = its lease |
//! | write | field `<clientId>:<ownerId>:write`            | write hold count |
//! | lock  | channel `redisson_lock__channel:{<name>}`     | `0` after a full release |
//! | rw    | channel `redisson_rwlock:{<name>}`            | `0` after the last reader, `1` after the writer |
//! | all   | `redisson_lock_token:{<name>}`                | fencing counter, `INCR` per new ownership |
//!
//! Every script takes the hold count the client knows, so that a retried call (its first
//! attempt's reply was lost) is never counted twice; Redisson writes an unlock latch key per
//! release for the same purpose. Nothing else reads those latches, so both exclude each other.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::{RedisError, Script, Value};

use super::pubsub::Wake;
use super::{backoff, map_err, ms, prefixed, retryable, tagged, RedisConn, RETRIES};
use crate::backend::{
    AcquireRequest, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest, RenewItem,
    UnlockReply,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldMode, LockKind};
use crate::model::outcome::{Holder, LockStatus, RemainingLease};
use crate::model::owner::{self, OwnerId};

/// Wakes one waiter: a lock or the last read hold was released.
const RELEASED_ONE: &str = "0";
/// Wakes every waiter: the write lock was released.
const RELEASED_ALL: &str = "1";

/// Which of Redisson's locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `RLock`.
    Plain,
    /// `RReadWriteLock.readLock()`.
    Read,
    /// `RReadWriteLock.writeLock()`.
    Write,
}

struct Scripts {
    acquire: Script,
    release: Script,
    renew: Script,
    drop: Script,
    force_unlock: Script,
}

impl Scripts {
    fn of(flavor: Flavor) -> Scripts {
        match flavor {
            Flavor::Plain => Scripts {
                acquire: Script::new(include_str!("lua/lock/acquire.lua")),
                release: Script::new(include_str!("lua/lock/release.lua")),
                renew: Script::new(include_str!("lua/lock/renew.lua")),
                drop: Script::new(include_str!("lua/lock/drop.lua")),
                force_unlock: Script::new(include_str!("lua/lock/force_unlock.lua")),
            },
            Flavor::Read => Scripts {
                acquire: Script::new(include_str!("lua/read/acquire.lua")),
                release: Script::new(include_str!("lua/read/release.lua")),
                renew: Script::new(include_str!("lua/read/renew.lua")),
                drop: Script::new(include_str!("lua/read/drop.lua")),
                force_unlock: Script::new(include_str!("lua/rw_force_unlock.lua")),
            },
            Flavor::Write => Scripts {
                acquire: Script::new(include_str!("lua/write/acquire.lua")),
                release: Script::new(include_str!("lua/write/release.lua")),
                // The writer's field is renewed exactly like an RLock owner's.
                renew: Script::new(include_str!("lua/lock/renew.lua")),
                drop: Script::new(include_str!("lua/write/drop.lua")),
                force_unlock: Script::new(include_str!("lua/rw_force_unlock.lua")),
            },
        }
    }
}

/// Channel on which releases of `name` are announced.
pub(super) fn channel(flavor: Flavor, name: &str) -> String {
    match flavor {
        Flavor::Plain => prefixed("redisson_lock__channel", name),
        Flavor::Read | Flavor::Write => prefixed("redisson_rwlock", name),
    }
}

pub(super) fn token_key(name: &str) -> String {
    prefixed("redisson_lock_token", name)
}

/// Prefix of a reader's per-hold keys: `{<name>}:<field>:rwlock_timeout`.
fn hold_key_prefix(name: &str, field: &str) -> String {
    format!("{}:{field}:rwlock_timeout", tagged(name))
}

fn release_message(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Plain | Flavor::Read => RELEASED_ONE,
        Flavor::Write => RELEASED_ALL,
    }
}

/// The operations of one Redisson lock kind for one client.
pub(crate) struct RedisLock {
    conn: Arc<RedisConn>,
    flavor: Flavor,
    scripts: Arc<Scripts>,
    /// Undos of cancelled acquires still in flight, by lock and owner: the owner's next acquire
    /// waits for its own, so a late undo can never remove a newer hold.
    undos: Arc<Undos>,
}

type Undos = std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Notify>>>;

/// The stored owner field of `owner` in this flavor.
pub(super) fn field(conn: &RedisConn, flavor: Flavor, owner: OwnerId) -> String {
    let mut f = owner::field(&conn.client_id, owner);
    if flavor == Flavor::Write {
        f.push_str(":write");
    }
    f
}

/// The script that removes `field`'s holds (all of them, or one when the field has exactly
/// `expected` holds).
fn drop_call<'s>(
    scripts: &'s Scripts,
    flavor: Flavor,
    name: &str,
    field: &str,
    expected: Option<u32>,
    publish: &str,
) -> redis::ScriptInvocation<'s> {
    let mut inv = scripts.drop.key(name);
    inv.key(channel(flavor, name));
    if flavor == Flavor::Read {
        inv.key(hold_key_prefix(name, field));
    }
    inv.arg(release_message(flavor)).arg(field).arg(publish);
    match expected {
        Some(n) => inv.arg(n),
        None => inv.arg(""),
    };
    inv
}

/// Parse the reply of an acquire script: `{1, token, count}` held, `{0, pttl}` busy.
/// `sent` is when the first try of this acquire was sent: the lease `lease` runs from then at the
/// latest.
pub(super) fn parse_acquire(
    name: &str,
    v: Vec<i64>,
    sent: Instant,
    lease: Duration,
) -> Result<std::result::Result<Granted, Option<Duration>>> {
    match v.as_slice() {
        [1, token, count] => Ok(Ok(Granted {
            token: (*token).max(0) as u64,
            count: (*count).clamp(0, u32::MAX as i64) as u32,
            node: None,
            gone: None,
            valid_until: Some(sent + lease),
        })),
        [0, pttl] => Ok(Err((*pttl > 0).then(|| Duration::from_millis(*pttl as u64)))),
        // A re-entry whose hold is gone from the server: the hold was lost (see one.rs).
        [-1] => Err(crate::model::lost::LostReason::Deleted.error(name)),
        _ => Err(Error::new(
            ErrorKind::Backend,
            format!("Redis: unexpected reply {v:?} from the acquire script; is '{name}' a Redisson lock of this kind?"),
        )),
    }
}

impl RedisLock {
    pub(crate) fn new(conn: Arc<RedisConn>, flavor: Flavor) -> RedisLock {
        RedisLock {
            conn,
            flavor,
            scripts: Arc::new(Scripts::of(flavor)),
            undos: Arc::default(),
        }
    }

    pub(super) fn field(&self, owner: OwnerId) -> String {
        field(&self.conn, self.flavor, owner)
    }

    /// The channel on which releases of `name` are announced, and the client's subscriptions.
    pub(super) fn wake_channel(&self, name: &str) -> (String, Arc<super::pubsub::Subscriptions>) {
        (channel(self.flavor, name), self.conn.subs.clone())
    }

    /// One acquire script call, retried on retryable errors without counting a re-entry twice.
    pub(super) async fn attempt(
        &self,
        name: &str,
        field: &str,
        lease: Duration,
        held: u32,
    ) -> Result<std::result::Result<Granted, Option<Duration>>> {
        let token = token_key(name);
        let prefix = (self.flavor == Flavor::Read).then(|| hold_key_prefix(name, field));
        let writer = (self.flavor == Flavor::Read).then(|| format!("{field}:write"));
        let sent = Instant::now();
        let mut attempt = 0;
        loop {
            let mut inv = self.scripts.acquire.key(name);
            inv.key(&token);
            if let Some(p) = &prefix {
                inv.key(p);
            }
            inv.arg(ms(lease))
                .arg(field)
                .arg(held)
                .arg(if attempt == 0 { "" } else { "1" });
            if let Some(w) = &writer {
                inv.arg(w);
            }
            // If this future is dropped while the script is in flight, the script may still run:
            // the guard then undoes the hold it would have added.
            let guard = UndoOnDrop {
                lock: self,
                name,
                field,
                held,
                armed: true,
            };
            let reply = self
                .conn
                .invoke_acked(&inv, |v: &Vec<i64>| v.first() == Some(&1))
                .await;
            let mut guard = guard;
            guard.armed = false;
            match reply {
                Ok(Ok(v)) => return parse_acquire(name, v, sent, lease),
                Ok(Err(acked)) => {
                    // Held, but too few replicas have it: give back the hold just added.
                    let _: redis::RedisResult<i64> = drop_call(
                        &self.scripts,
                        self.flavor,
                        name,
                        field,
                        Some(held + 1),
                        self.conn.publish,
                    )
                    .invoke_async(&mut self.conn.conn())
                    .await;
                    return Err(self.conn.not_replicated(acked, "acquire the lock", true));
                }
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, "acquire the lock")),
            }
        }
    }

    pub(super) async fn wait_for_undo(&self, name: &str, field: &str) {
        if self
            .undos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            return;
        }
        let key = undo_key(name, field);
        loop {
            let Some(done) = self
                .undos
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .cloned()
            else {
                return;
            };
            let notified = done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self
                .undos
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(&key)
            {
                return;
            }
            notified.await;
        }
    }

    /// Remove the one hold an acquire may have added (the field has exactly `expected` holds if it
    /// ran), in a task of its own, after whatever is already queued on the connection. The
    /// owner's next acquire of `name` waits for it ([`RedisLock::wait_for_undo`]), so it can
    /// never remove a newer hold.
    pub(super) fn undo_in_background(&self, name: &str, field: &str, expected: u32) {
        let scripts = self.scripts.clone();
        let flavor = self.flavor;
        let (name, field) = (name.to_string(), field.to_string());
        let mut conn = self.conn.conn();
        let publish = self.conn.publish;
        let undos = self.undos.clone();
        let key = undo_key(&name, &field);
        let done = Arc::new(tokio::sync::Notify::new());
        undos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), done.clone());
        // On polylock's runtime (the caller's may end with the cancelled acquire). The undo is
        // safe to run again (it removes a hold only while the field has exactly `expected`).
        crate::runtime::spawn_clean_up(async move {
            let _clear = ClearUndo { undos, key, done };
            let mut attempt = 0;
            loop {
                let undo = drop_call(&scripts, flavor, &name, &field, Some(expected), publish)
                    .invoke_async::<i64>(&mut conn)
                    .await;
                match undo {
                    Ok(_) => return,
                    Err(e) if retryable(&e) && attempt < RETRIES => {
                        attempt += 1;
                        tokio::time::sleep(backoff(attempt)).await;
                    }
                    Err(e) => {
                        tracing::error!(
                            lock = name.as_str(),
                            "polylock: undoing the hold a cancelled acquire of '{name}' may have \
                             taken failed ({e}); if it was taken, its lease ends it"
                        );
                        return;
                    }
                }
            }
        });
    }

    /// Give back a hold of one count that nobody else knows of (a RedLock that was granted by a
    /// minority), without announcing it when `announce` is false. True if it was there.
    pub(super) async fn give_back(&self, name: &str, field: &str, announce: bool) -> Result<bool> {
        let publish = if announce { self.conn.publish } else { "" };
        let n: i64 = drop_call(&self.scripts, self.flavor, name, field, Some(1), publish)
            .invoke_async(&mut self.conn.conn())
            .await
            .map_err(|e| map_err(e, "give back a RedLock vote"))?;
        Ok(n == 1)
    }

    /// Run the release script once; `retry` says an earlier attempt's reply was lost.
    async fn release_script(
        &self,
        req: &ReleaseRequest<'_>,
    ) -> std::result::Result<UnlockReply, RedisError> {
        let name = req.name;
        let field = self.field(req.owner);
        let mut inv = self.scripts.release.key(name);
        inv.key(channel(self.flavor, name));
        if self.flavor == Flavor::Read {
            inv.key(hold_key_prefix(name, &field)).key(tagged(name));
        }
        inv.arg(release_message(self.flavor))
            .arg(ms(req.lease))
            .arg(&field)
            .arg(self.conn.publish)
            .arg(req.held)
            .arg(if req.retry { "1" } else { "" });
        let reply: Option<i64> = self.conn.invoke(&inv).await?;
        Ok(match reply {
            None => UnlockReply::NotHeld,
            Some(0) => UnlockReply::Decremented,
            Some(_) => UnlockReply::Freed,
        })
    }

    /// The `mode` field of a read-write lock.
    async fn mode(&self, name: &str) -> Result<Option<String>> {
        self.conn
            .query(
                redis::cmd("HGET").arg(name).arg("mode").clone(),
                "read the lock's mode",
            )
            .await
    }
}

#[async_trait]
impl HoldOps for RedisLock {
    async fn renew(&self, holds: &[RenewItem], lease: Duration) -> Result<Vec<bool>> {
        self.conn
            .renew_batch(&self.scripts.renew, ms(lease), holds, |h| {
                Ok((h.name.to_string(), self.field(h.owner).into_bytes()))
            })
            .await
    }

    async fn drop_hold(&self, name: &str, owner: OwnerId, _node: Option<&str>) -> Result<bool> {
        let field = self.field(owner);
        let n: i64 = drop_call(
            &self.scripts,
            self.flavor,
            name,
            &field,
            None,
            self.conn.publish,
        )
        .invoke_async(&mut self.conn.conn())
        .await
        .map_err(|e| map_err(e, "drop the owner's holds"))?;
        Ok(n == 1)
    }
}

#[async_trait]
impl LockOps for RedisLock {
    fn kind(&self) -> LockKind {
        match self.flavor {
            Flavor::Plain => LockKind::Reentrant,
            Flavor::Read => LockKind::Read,
            Flavor::Write => LockKind::Write,
        }
    }

    fn reentry(&self) -> Reentry {
        Reentry::Server
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Renewable
    }

    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let (name, field) = (req.name, self.field(req.owner));
        let deadline = req.wait.deadline();
        self.wait_for_undo(name, &field).await;
        // Fast path: uncontended locks cost exactly one round trip.
        if let Ok(g) = self.attempt(name, &field, req.lease, req.held).await? {
            return Ok(Some(g));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        let guard = self
            .conn
            .subs
            .wait_on(&channel(self.flavor, name), Wake::OneOnZero)
            .await?;
        loop {
            let notified = guard.channel.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let pttl = match self.attempt(name, &field, req.lease, req.held).await? {
                Ok(g) => return Ok(Some(g)),
                Err(p) => p,
            };
            let now = Instant::now();
            // Sleep until woken, bounded by the lock's TTL (a lost message only delays us) and
            // by the caller's deadline.
            let mut sleep = pttl.unwrap_or(req.max_sleep).min(req.max_sleep);
            if let Some(d) = deadline {
                if now >= d {
                    return Ok(None);
                }
                sleep = sleep.min(d - now);
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let mut attempt = 0;
        loop {
            let r = ReleaseRequest {
                retry: attempt > 0,
                ..*req
            };
            match self.release_script(&r).await {
                Ok(reply) => return Ok(reply),
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, "release the lock")),
            }
        }
    }

    async fn release_once(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        self.release_script(req)
            .await
            .map_err(|e| map_err(e, "release the lock"))
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        match self.flavor {
            Flavor::Plain => lock_exists(&self.conn, name).await,
            Flavor::Read => Ok(self.mode(name).await?.as_deref() == Some("read")),
            Flavor::Write => Ok(self.mode(name).await?.as_deref() == Some("write")),
        }
    }

    async fn hold_count(&self, name: &str, owner: OwnerId) -> Result<u32> {
        read_hold_count(&self.conn, name, &self.field(owner)).await
    }

    async fn remaining_lease(&self, name: &str) -> Result<Option<Duration>> {
        read_lease(&self.conn, name).await
    }

    async fn lease_left(&self, name: &str) -> Result<RemainingLease> {
        match self.flavor {
            // The key is the lock: PTTL tells all three answers in one round trip.
            Flavor::Plain => read_lease_left(&self.conn, name).await,
            // The key is held in one mode or the other: which one asks is_locked.
            Flavor::Read | Flavor::Write => match read_lease(&self.conn, name).await? {
                Some(d) if self.is_locked(name).await? => Ok(RemainingLease::Expires(d)),
                Some(_) => Ok(RemainingLease::NotHeld),
                None if self.is_locked(name).await? => Ok(RemainingLease::NoExpiry),
                None => Ok(RemainingLease::NotHeld),
            },
        }
    }

    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let mut inv = self.scripts.force_unlock.key(name);
        inv.key(channel(self.flavor, name))
            .arg(release_message(self.flavor))
            .arg(self.conn.publish);
        if self.flavor != Flavor::Plain {
            inv.arg(if self.flavor == Flavor::Read {
                "read"
            } else {
                "write"
            });
        }
        let n: i64 = inv
            .invoke_async(&mut self.conn.conn())
            .await
            .map_err(|e| map_err(e, "force-unlock the lock"))?;
        Ok(n == 1)
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(name).cmd("PTTL").arg(name);
        // The name whose timeout key and fair queue Redisson's format shares with this one (a
        // name without a twin reads itself again, ignored).
        let twin = hash_tag_twin(name);
        pipe.cmd("EXISTS").arg(twin.as_deref().unwrap_or(name));
        let (fields, pttl, twin_held): (Vec<(String, Value)>, i64, i64) =
            self.conn.query_pipe(pipe, "read the lock status").await?;
        let mut st = status_of(name, fields, pttl);
        st.shared_with.extend(twin.filter(|_| twin_held > 0));
        Ok(st)
    }
}

/// The other name whose state Redisson's key format shares with `name`: `a` and `{a}` both keep
/// `{a}:timeout` and the fair queue `redisson_lock_queue:{a}` (Redisson adds the braces only to a
/// name without them). `None` for a name with braces of another shape.
pub(crate) fn hash_tag_twin(name: &str) -> Option<String> {
    match name.strip_prefix('{').and_then(|n| n.strip_suffix('}')) {
        Some(inner) if !inner.is_empty() && !inner.contains(['{', '}']) => Some(inner.to_string()),
        Some(_) => None,
        None if name.contains('{') => None,
        None => Some(format!("{{{name}}}")),
    }
}

/// A lock's status from its hash (an `RLock`, or an `RReadWriteLock` when it has `mode`).
pub(super) fn status_of(name: &str, fields: Vec<(String, Value)>, pttl: i64) -> LockStatus {
    let mut mode = None;
    let mut holders = Vec::new();
    let rw = fields.iter().any(|(f, _)| f == "mode");
    for (f, v) in fields {
        let text = match &v {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Int(i) => i.to_string(),
            _ => String::new(),
        };
        if f == "mode" {
            mode = match text.as_str() {
                "read" => Some(HoldMode::Read),
                "write" => Some(HoldMode::Write),
                _ => None,
            };
            continue;
        }
        let count = text.parse::<i64>().unwrap_or(0).clamp(0, u32::MAX as i64) as u32;
        let (owner, hold_mode) = match f.strip_suffix(":write") {
            Some(o) if rw => (o.to_string(), HoldMode::Write),
            _ if rw => (f, HoldMode::Read),
            _ => (f, HoldMode::Exclusive),
        };
        holders.push(Holder {
            owner,
            count,
            mode: hold_mode,
            identity: None,
        });
    }
    // The writer first, then readers, each in a stable order.
    holders.sort_by(|a, b| {
        (a.mode != HoldMode::Write, &a.owner).cmp(&(b.mode != HoldMode::Write, &b.owner))
    });
    LockStatus {
        name: name.to_string(),
        locked: !holders.is_empty(),
        mode,
        holders,
        ttl: (pttl >= 0).then(|| Duration::from_millis(pttl as u64)),
        waiters: Vec::new(),
        waiter_identities: Vec::new(),
        shared_with: Vec::new(),
    }
}

/// Undoes the hold a cancelled acquire may have added (see [`RedisLock::attempt`]).
struct UndoOnDrop<'a> {
    lock: &'a RedisLock,
    name: &'a str,
    field: &'a str,
    held: u32,
    armed: bool,
}

impl Drop for UndoOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.lock
                .undo_in_background(self.name, self.field, self.held + 1);
        }
    }
}

/// Whether the lock hash `name` exists (held by anybody): the plain and the fair lock.
pub(super) async fn lock_exists(conn: &RedisConn, name: &str) -> Result<bool> {
    let n: i64 = conn
        .query(redis::cmd("EXISTS").arg(name).clone(), "check the lock")
        .await?;
    Ok(n == 1)
}

/// The hold count of `field` in the lock hash `name` (0 if it holds nothing).
pub(super) async fn read_hold_count(conn: &RedisConn, name: &str, field: &str) -> Result<u32> {
    let n: Option<i64> = conn
        .query(
            redis::cmd("HGET").arg(name).arg(field).clone(),
            "read the hold count",
        )
        .await?;
    Ok(n.unwrap_or(0).clamp(0, u32::MAX as i64) as u32)
}

/// What is left of the lease of `name`; `None` if it is free or has no expiry.
/// `PTTL`'s three answers: -2 no key (not held), -1 no expiry, else the milliseconds left.
pub(super) async fn read_lease_left(conn: &RedisConn, name: &str) -> Result<RemainingLease> {
    let pttl: i64 = conn
        .query(redis::cmd("PTTL").arg(name).clone(), "read the lease")
        .await?;
    Ok(match pttl {
        -2 => RemainingLease::NotHeld,
        n if n < 0 => RemainingLease::NoExpiry,
        n => RemainingLease::Expires(Duration::from_millis(n as u64)),
    })
}

pub(super) async fn read_lease(conn: &RedisConn, name: &str) -> Result<Option<Duration>> {
    let pttl: i64 = conn
        .query(redis::cmd("PTTL").arg(name).clone(), "read the lease")
        .await?;
    Ok((pttl >= 0).then(|| Duration::from_millis(pttl as u64)))
}

fn undo_key(name: &str, field: &str) -> String {
    format!("{field}\n{name}")
}

/// Unregisters a finished undo (also if its task is dropped) and wakes whoever waits for it.
struct ClearUndo {
    undos: Arc<Undos>,
    key: String,
    done: Arc<tokio::sync::Notify>,
}

impl Drop for ClearUndo {
    fn drop(&mut self) {
        let mut map = self.undos.lock().unwrap_or_else(|e| e.into_inner());
        if map
            .get(&self.key)
            .is_some_and(|d| Arc::ptr_eq(d, &self.done))
        {
            map.remove(&self.key);
        }
        drop(map);
        self.done.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_follow_redisson() {
        assert_eq!(channel(Flavor::Plain, "a"), "redisson_lock__channel:{a}");
        assert_eq!(channel(Flavor::Read, "a"), "redisson_rwlock:{a}");
        assert_eq!(channel(Flavor::Write, "a"), "redisson_rwlock:{a}");
        assert_eq!(token_key("a"), "redisson_lock_token:{a}");
        assert_eq!(hold_key_prefix("a", "u:1"), "{a}:u:1:rwlock_timeout");
        // A name with a hash tag of its own keeps it (Redisson's prefixName), so that every key
        // of the lock stays in the name's slot.
        assert_eq!(
            channel(Flavor::Plain, "{a}x"),
            "redisson_lock__channel:{a}x"
        );
        assert_eq!(token_key("{a}x"), "redisson_lock_token:{a}x");
        // A name with its own hash tag gets no second one (Redisson's suffixName).
        assert_eq!(hold_key_prefix("{a}x", "u:1"), "{a}x:u:1:rwlock_timeout");
    }

    #[test]
    fn names_that_share_a_hash_tag() {
        assert_eq!(hash_tag_twin("a").as_deref(), Some("{a}"));
        assert_eq!(hash_tag_twin("{a}").as_deref(), Some("a"));
        assert_eq!(hash_tag_twin("{a}b"), None);
        assert_eq!(hash_tag_twin("{}"), None);
        assert_eq!(hash_tag_twin("{{a}}"), None);
    }

    #[test]
    fn status_reads_both_hash_layouts() {
        let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let st = status_of("x", vec![("u:1".into(), b("2"))], 900);
        assert_eq!(st.mode, None);
        assert_eq!(st.holders[0].mode, HoldMode::Exclusive);
        assert_eq!(st.holders[0].count, 2);
        let st = status_of(
            "x",
            vec![
                ("mode".into(), b("write")),
                ("u:1".into(), b("1")),
                ("u:1:write".into(), b("3")),
            ],
            -2,
        );
        assert_eq!(st.mode, Some(HoldMode::Write));
        assert_eq!(st.ttl, None);
        assert_eq!(
            st.holders,
            vec![
                Holder {
                    owner: "u:1".into(),
                    count: 3,
                    mode: HoldMode::Write,
                    identity: None,
                },
                Holder {
                    owner: "u:1".into(),
                    count: 1,
                    mode: HoldMode::Read,
                    identity: None,
                },
            ]
        );
    }
}
