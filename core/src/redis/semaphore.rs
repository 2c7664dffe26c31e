//! Redisson's semaphores on Redis: `RSemaphore` (free permits as a counter, owned by nobody) and
//! `RPermitExpirableSemaphore` (permits with ids and leases).
//!
//! | key / channel             | content |
//! |---------------------------|---------|
//! | `<name>`                  | string integer: the free permits (absent = 0) |
//! | `{<name>}:timeout`        | zset (expiring permits): member = permit id (16 raw bytes), score = its expiry in ms since the epoch (client clock), `922337203685477` without a lease |
//! | `redisson_sc:{<name>}`    | pub/sub: the new count (or the delta) after permits were added or given back |
//!
//! Waiters wake on the channel; a lost message only delays them to the next expiry (expiring
//! permits) or to a re-check every third of the watchdog timeout (plain permits, which nothing
//! bounds).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::{RedisError, Script};

use super::pubsub::Wake;
use super::{
    backoff, epoch_ms, hand_over_on_drop, map_err, ms, prefixed, retryable, tagged, RedisConn,
    RETRIES,
};
use crate::backend::{
    ExpirableOps, Granted, HoldOps, PermitRelease, PermitRequest, RenewItem, SemaphoreOps,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::outcome::{PermitHolder, SemaphoreStatus};
use crate::model::owner::OwnerId;
use crate::runtime;

/// A give-back of a cancelled acquire, run in a task of its own.
type GiveBack = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Redisson's score of a permit without a lease.
const NO_EXPIRY: u64 = 922_337_203_685_477;

fn channel(name: &str) -> String {
    prefixed("redisson_sc", name)
}

fn timeout_key(name: &str) -> String {
    format!("{}:timeout", tagged(name))
}

/// A permit id as stored: 16 raw bytes, from the 32 hex characters users see.
pub(crate) fn id_bytes(id: &str) -> Result<Vec<u8>> {
    let bad = || {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("'{id}' is not a permit id (32 hexadecimal characters)"),
        )
    };
    // Hex digits only, checked before slicing: a multi-byte character would put a slice inside
    // it, and from_str_radix takes a sign ("+f").
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    Ok(id
        .as_bytes()
        .chunks(2)
        .map(|pair| (hex_digit(pair[0]) << 4) | hex_digit(pair[1]))
        .collect())
}

fn hex_digit(b: u8) -> u8 {
    (b as char).to_digit(16).unwrap_or(0) as u8
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

struct Scripts {
    try_set: Script,
    add: Script,
    acquire: Script,
    release: Script,
    drain: Script,
    permit_acquire: Script,
    permit_release: Script,
    permit_renew: Script,
    permit_available: Script,
    permit_status: Script,
}

impl Scripts {
    fn new() -> Scripts {
        let reclaim = include_str!("lua/permits/reclaim.lua");
        let with_reclaim = |s: &str| Script::new(&s.replace("--RECLAIM--", reclaim));
        Scripts {
            try_set: Script::new(include_str!("lua/semaphore/try_set.lua")),
            add: Script::new(include_str!("lua/semaphore/add.lua")),
            acquire: Script::new(include_str!("lua/semaphore/acquire.lua")),
            release: Script::new(include_str!("lua/semaphore/release.lua")),
            drain: Script::new(include_str!("lua/semaphore/drain.lua")),
            permit_acquire: with_reclaim(include_str!("lua/permits/acquire.lua")),
            permit_release: Script::new(include_str!("lua/permits/release.lua")),
            permit_renew: Script::new(include_str!("lua/permits/renew.lua")),
            permit_available: with_reclaim(include_str!("lua/permits/available.lua")),
            permit_status: with_reclaim(include_str!("lua/permits/status.lua")),
        }
    }
}

/// Both of Redisson's semaphores for one client (`expiring` picks which one this is).
pub(crate) struct RedisSemaphore {
    conn: Arc<RedisConn>,
    scripts: Arc<Scripts>,
    expiring: bool,
}

impl RedisSemaphore {
    pub(crate) fn new(conn: Arc<RedisConn>, expiring: bool) -> RedisSemaphore {
        RedisSemaphore {
            conn,
            scripts: Arc::new(Scripts::new()),
            expiring,
        }
    }

    /// A script call on the caller's own connection where it blocks a thread; retried only if
    /// `idempotent` (a lost reply must not take or give back permits twice).
    async fn call<T: redis::FromRedisValue>(
        &self,
        inv: &redis::ScriptInvocation<'_>,
        idempotent: bool,
        doing: &str,
    ) -> Result<T> {
        let mut attempt = 0;
        loop {
            let reply: std::result::Result<T, RedisError> = self.conn.invoke(inv).await;
            match reply {
                Ok(v) => return Ok(v),
                Err(e) if idempotent && attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, doing)),
            }
        }
    }

    async fn try_set(&self, name: &str, permits: u32) -> Result<bool> {
        let mut inv = self.scripts.try_set.key(name);
        inv.key(channel(name)).arg(permits).arg(self.conn.publish);
        let n: i64 = self.call(&inv, true, "set the semaphore's permits").await?;
        Ok(n == 1)
    }

    async fn add(&self, name: &str, delta: i64) -> Result<()> {
        let mut inv = self.scripts.add.key(name);
        inv.key(channel(name))
            .arg(delta)
            .arg(self.conn.publish)
            .arg(if self.expiring { "delta" } else { "value" });
        let _: i64 = self.call(&inv, false, "add permits").await?;
        Ok(())
    }

    /// Give back `permits` plain permits in the background (those of a cancelled acquire).
    fn give_back_later(&self, name: &str) -> impl FnOnce(i64) -> GiveBack {
        let (scripts, mut conn, name) = (self.scripts.clone(), self.conn.conn(), name.to_string());
        let publish = self.conn.publish;
        move |permits: i64| -> GiveBack {
            Box::pin(async move {
                if permits <= 0 {
                    return;
                }
                // A give-back adds to the count: it is tried again only when the server surely
                // did not run it (the connection was refused), never after an answer was lost,
                // which could give the permits back twice.
                let mut attempt = 0;
                loop {
                    let mut inv = scripts.release.key(&name);
                    inv.key(channel(&name)).arg(permits).arg(publish);
                    match inv.invoke_async::<i64>(&mut conn).await {
                        Ok(_) => return,
                        Err(e) if e.is_connection_refusal() && attempt < RETRIES => {
                            attempt += 1;
                            tokio::time::sleep(backoff(attempt)).await;
                        }
                        Err(e) => {
                            tracing::error!(
                                semaphore = name.as_str(),
                                permits,
                                "polylock: giving back {permits} permit(s) of semaphore '{name}' \
                                 that a cancelled acquire took failed ({e}); they stay taken \
                                 until someone adds them back (add_permits)"
                            );
                            return;
                        }
                    }
                }
            })
        }
    }

    /// One try at the plain semaphore: true when taken. Cancel-safe: permits taken by a try whose
    /// caller is gone are given back.
    async fn try_take(&self, name: &str, permits: u32) -> Result<bool> {
        if runtime::on_blocking_caller() {
            // On the caller's own connection, within one poll: it cannot be dropped in flight.
            let mut inv = self.scripts.acquire.key(name);
            inv.arg(permits);
            let n: i64 = self.call(&inv, false, "acquire permits").await?;
            return Ok(n == 1);
        }
        let (scripts, mut conn, key) = (self.scripts.clone(), self.conn.conn(), name.to_string());
        let key_shown = key.clone();
        let give_back = self.give_back_later(name);
        let n = hand_over_on_drop(
            async move {
                let mut inv = scripts.acquire.key(&key);
                inv.arg(permits);
                inv.invoke_async::<i64>(&mut conn).await
            },
            move |reply| {
                if let Err(e) = &reply {
                    tracing::warn!(
                        semaphore = %key_shown,
                        permits,
                        "polylock: a cancelled acquire of {permits} permit(s) of semaphore \
                         '{key_shown}' lost its answer ({e}); if the server ran it, those permits \
                         are taken by nobody: compare available_permits with what is held"
                    );
                }
                give_back(if matches!(reply, Ok(1)) {
                    permits as i64
                } else {
                    0
                })
            },
        )
        .await
        .map_err(|e| map_err(e, "acquire permits"))?;
        Ok(n == 1)
    }

    /// One try at the expiring semaphore: `Ok(None)` taken, `Ok(Some(d))` not taken, the next
    /// lease ends in `d` (if any).
    async fn try_take_ids(
        &self,
        name: &str,
        ids: &[Vec<u8>],
        lease: Duration,
    ) -> Result<Option<Option<Duration>>> {
        let now = epoch_ms();
        let v: Vec<i64> = if runtime::on_blocking_caller() {
            // On the caller's own connection, within one poll: it cannot be dropped in flight.
            let mut inv = self.scripts.permit_acquire.key(name);
            inv.key(timeout_key(name))
                .key(channel(name))
                .arg(now)
                .arg(now.saturating_add(ms(lease)).min(NO_EXPIRY))
                .arg(self.conn.publish);
            for id in ids {
                inv.arg(id.as_slice());
            }
            // Safe to retry: the ids are unique, and a retry that finds them taken says so.
            self.call(&inv, true, "acquire permits").await?
        } else {
            self.take_ids_cancel_safe(name, ids, now, lease).await?
        };
        match v.as_slice() {
            [1] => Ok(None),
            [0, next] => Ok(Some((*next >= 0).then(|| Duration::from_millis(*next as u64)))),
            _ => Err(Error::new(
                ErrorKind::Backend,
                format!("Redis: unexpected reply {v:?} from the permit script; is '{name}' a Redisson semaphore?"),
            )),
        }
    }

    /// The permit script of [`RedisSemaphore::try_take_ids`] where the caller may be dropped in
    /// flight: the ids of a try whose caller is gone are given back.
    async fn take_ids_cancel_safe(
        &self,
        name: &str,
        ids: &[Vec<u8>],
        now: u64,
        lease: Duration,
    ) -> Result<Vec<i64>> {
        let mut attempt = 0;
        loop {
            let (scripts, mut conn) = (self.scripts.clone(), self.conn.conn());
            let (key, owned_ids) = (name.to_string(), ids.to_vec());
            let (scripts2, mut conn2) = (self.scripts.clone(), self.conn.conn());
            let publish = self.conn.publish;
            let (key2, ids2) = (name.to_string(), ids.to_vec());
            let reply = hand_over_on_drop(
                async move {
                    let mut inv = scripts.permit_acquire.key(&key);
                    inv.key(timeout_key(&key))
                        .key(channel(&key))
                        .arg(now)
                        .arg(now.saturating_add(ms(lease)).min(NO_EXPIRY))
                        .arg(publish);
                    for id in &owned_ids {
                        inv.arg(id.as_slice());
                    }
                    inv.invoke_async::<Vec<i64>>(&mut conn).await
                },
                move |reply| async move {
                    if !matches!(reply.as_deref(), Ok([1])) {
                        return;
                    }
                    // Releasing a permit by its id is idempotent: tried again on any error a
                    // retry can cure, then told; the permit's own lease ends it at the latest.
                    for id in ids2 {
                        let mut attempt = 0;
                        loop {
                            let mut inv = scripts2.permit_release.key(&key2);
                            inv.key(timeout_key(&key2))
                                .key(channel(&key2))
                                .arg(id.as_slice())
                                .arg(epoch_ms())
                                .arg(publish);
                            match inv.invoke_async::<i64>(&mut conn2).await {
                                Ok(_) => break,
                                Err(e) if retryable(&e) && attempt < RETRIES => {
                                    attempt += 1;
                                    tokio::time::sleep(backoff(attempt)).await;
                                }
                                Err(e) => {
                                    tracing::error!(
                                        semaphore = key2.as_str(),
                                        "polylock: giving back a permit of semaphore '{key2}' \
                                         that a cancelled acquire took failed ({e}); it stays \
                                         taken until its lease ends"
                                    );
                                    break;
                                }
                            }
                        }
                    }
                },
            )
            .await;
            match reply {
                Ok(v) => return Ok(v),
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, "acquire permits")),
            }
        }
    }

    /// Wait for permits: `attempt` is one try (`Ok(None)` taken, `Ok(Some(hint))` try again after
    /// at most `hint`), woken by the channel.
    async fn wait_for<F, Fut>(
        &self,
        req: &PermitRequest<'_>,
        mut attempt: F,
    ) -> Result<Option<Instant>>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Option<Option<Duration>>>>,
    {
        let deadline = req.wait.deadline();
        let sent = Instant::now();
        if attempt().await?.is_none() {
            return Ok(Some(sent));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        // Nothing bounds a plain semaphore's wait: re-check now and then in case a message was
        // lost (a third of the watchdog timeout).
        let recheck = req.max_sleep / 3;
        let guard = self
            .conn
            .subs
            .wait_on(&channel(req.name), Wake::All)
            .await?;
        loop {
            let notified = guard.channel.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let sent = Instant::now();
            let hint = match attempt().await? {
                None => return Ok(Some(sent)),
                Some(hint) => hint,
            };
            let mut sleep = hint.unwrap_or(recheck).min(recheck);
            if let Some(d) = deadline {
                let now = Instant::now();
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

    /// Run a script that reclaims expired permits first (its keys and arguments are the same:
    /// the count, the lease set, the channel; now, whether to publish).
    async fn reclaiming<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        name: &str,
        doing: &str,
    ) -> Result<T> {
        let mut inv = script.key(name);
        inv.key(timeout_key(name))
            .key(channel(name))
            .arg(epoch_ms())
            .arg(self.conn.publish);
        self.call(&inv, true, doing).await
    }

    /// The free count and the leases with their expiry, read by one script.
    async fn permit_status(&self, name: &str) -> Result<SemaphoreStatus> {
        let (available, leases): (i64, Vec<Vec<u8>>) = self
            .reclaiming(
                &self.scripts.permit_status,
                name,
                "read the semaphore's permits",
            )
            .await?;
        let now = epoch_ms() as f64;
        // ZRANGE WITHSCORES: id, score, id, score, ...
        let holders: Vec<PermitHolder> = leases
            .chunks_exact(2)
            .map(|pair| {
                let score = std::str::from_utf8(&pair[1])
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .unwrap_or(0.0);
                PermitHolder {
                    id: hex(&pair[0]),
                    expires_in: (score < NO_EXPIRY as f64)
                        .then(|| Duration::from_millis((score - now).max(0.0) as u64)),
                }
            })
            .collect();
        Ok(SemaphoreStatus {
            name: name.to_string(),
            available,
            permits: Some(available + holders.len() as i64),
            holders,
        })
    }
}

#[async_trait]
impl HoldOps for RedisSemaphore {
    /// Expiring permits: re-score each still there (plain permits are held by nobody).
    async fn renew(&self, holds: &[RenewItem], lease: Duration) -> Result<Vec<bool>> {
        let until = epoch_ms().saturating_add(ms(lease));
        self.conn
            .renew_batch(&self.scripts.permit_renew, until, holds, |h| {
                Ok((
                    timeout_key(&h.name),
                    id_bytes(h.node.as_deref().unwrap_or_default())?,
                ))
            })
            .await
    }

    async fn drop_hold(&self, name: &str, _owner: OwnerId, node: Option<&str>) -> Result<bool> {
        match node {
            Some(id) => Ok(ExpirableOps::release(self, name, id).await? != PermitRelease::Unknown),
            None => Ok(false),
        }
    }
}

#[async_trait]
impl SemaphoreOps for RedisSemaphore {
    fn holds_permits(&self) -> bool {
        false
    }

    async fn try_set_permits(&self, name: &str, permits: u32) -> Result<bool> {
        self.try_set(name, permits).await
    }

    async fn add_permits(&self, name: &str, delta: i64) -> Result<()> {
        self.add(name, delta).await
    }

    async fn acquire(&self, req: &PermitRequest<'_>) -> Result<Option<Vec<Granted>>> {
        let got = self
            .wait_for(req, || async {
                Ok((!self.try_take(req.name, req.permits).await?).then_some(None))
            })
            .await?;
        Ok(got.map(|_| Vec::new()))
    }

    async fn release(&self, name: &str, permits: u32, _nodes: &[String]) -> Result<()> {
        let mut inv = self.scripts.release.key(name);
        inv.key(channel(name)).arg(permits).arg(self.conn.publish);
        let _: i64 = self.call(&inv, false, "release permits").await?;
        Ok(())
    }

    async fn available(&self, name: &str) -> Result<i64> {
        let v: Option<i64> = self
            .conn
            .query(
                redis::cmd("GET").arg(name).clone(),
                "count the free permits",
            )
            .await?;
        Ok(v.unwrap_or(0))
    }

    async fn drain(&self, name: &str) -> Result<(i64, Vec<Granted>)> {
        if runtime::on_blocking_caller() {
            let inv = self.scripts.drain.key(name);
            let n: i64 = self.call(&inv, false, "drain the permits").await?;
            return Ok((n, Vec::new()));
        }
        let (scripts, mut conn, key) = (self.scripts.clone(), self.conn.conn(), name.to_string());
        let give_back = self.give_back_later(name);
        let n = hand_over_on_drop(
            async move { scripts.drain.key(&key).invoke_async::<i64>(&mut conn).await },
            move |reply| give_back(reply.unwrap_or(0)),
        )
        .await
        .map_err(|e| map_err(e, "drain the permits"))?;
        Ok((n, Vec::new()))
    }

    async fn status(&self, name: &str) -> Result<SemaphoreStatus> {
        if self.expiring {
            return self.permit_status(name).await;
        }
        Ok(SemaphoreStatus {
            name: name.to_string(),
            available: SemaphoreOps::available(self, name).await?,
            permits: None, // a plain semaphore counts free permits only
            holders: Vec::new(),
        })
    }
}

#[async_trait]
impl ExpirableOps for RedisSemaphore {
    async fn try_set_permits(&self, name: &str, permits: u32) -> Result<bool> {
        self.try_set(name, permits).await
    }

    async fn add_permits(&self, name: &str, delta: i64) -> Result<()> {
        self.add(name, delta).await
    }

    async fn acquire(&self, req: &PermitRequest<'_>) -> Result<Option<Instant>> {
        let ids = req
            .ids
            .iter()
            .map(|id| id_bytes(id))
            .collect::<Result<Vec<_>>>()?;
        self.wait_for(req, || self.try_take_ids(req.name, &ids, req.lease))
            .await
    }

    async fn release(&self, name: &str, id: &str) -> Result<PermitRelease> {
        let mut inv = self.scripts.permit_release.key(name);
        inv.key(timeout_key(name))
            .key(channel(name))
            .arg(id_bytes(id)?)
            .arg(epoch_ms())
            .arg(self.conn.publish);
        let mut attempt = 0;
        loop {
            let reply: std::result::Result<i64, RedisError> = self.conn.invoke(&inv).await;
            match reply {
                // A retry that finds the permit gone was our own first attempt.
                Ok(0) if attempt > 0 => return Ok(PermitRelease::Released),
                Ok(0) => return Ok(PermitRelease::Unknown),
                Ok(2) => return Ok(PermitRelease::Expired),
                Ok(_) => return Ok(PermitRelease::Released),
                Err(e) if attempt < RETRIES && retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(map_err(e, "release the permit")),
            }
        }
    }

    async fn available(&self, name: &str) -> Result<i64> {
        self.reclaiming(
            &self.scripts.permit_available,
            name,
            "count the free permits",
        )
        .await
    }

    async fn status(&self, name: &str) -> Result<SemaphoreStatus> {
        self.permit_status(name).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permit_ids_are_16_raw_bytes_shown_as_32_hex_characters() {
        let id = "00ff10a0b1c2d3e4f5060708090a0b0c";
        let bytes = id_bytes(id).unwrap();
        assert_eq!(bytes.len(), 16);
        assert_eq!(hex(&bytes), id);
        for bad in [
            "",
            "00ff",
            "zz00000000000000000000000000000000",
            &"0".repeat(33),
            // 32 bytes, a character of two of them: it panicked, slicing inside it.
            &format!("é{}", "0".repeat(30)),
            // from_str_radix takes a sign.
            &format!("+f{}", "0".repeat(30)),
            &format!("0-{}", "0".repeat(30)),
        ] {
            assert_eq!(
                id_bytes(bad).unwrap_err().kind(),
                ErrorKind::InvalidArgument,
                "{bad:?}"
            );
        }
        assert_eq!(channel("s"), "redisson_sc:{s}");
        assert_eq!(timeout_key("s"), "{s}:timeout");
    }
}
