//! RedLock: one reentrant lock on N independent Redis masters, held while a majority of them hold
//! it (the algorithm of the Redis documentation's "Distributed Locks with Redis"; Redisson's
//! `RedissonRedLock`).
//!
//! Each server stores exactly what a single-server `RLock` stores (hash, channel, fencing
//! counter), so a Redisson `RedissonRedLock` over `RLock`s of the same name on the same servers
//! excludes a polylock RedLock, and `polylock status` against any one server shows its part.
//!
//! - Acquire asks every server at once, each bounded by a short timeout ([`server_timeout`]). The
//!   lock is held when a majority granted it and some of the lease is left after the time the
//!   round took and the allowance for clock drift ([`drift`]): the hold's deadline is the round's
//!   start plus the lease minus that allowance. Otherwise what was granted is given back at once.
//! - A round that lost to a holder of a majority waits for a release message on any server,
//!   bounded by the TTLs the servers reported. A round where nobody can have a majority (votes
//!   split between contenders, servers down) tries again after a random pause that grows with
//!   each such round, so contenders stop colliding. A round in which too few servers answered
//!   in time says nothing about the lock: it is tried again the same way, for up to the command
//!   timeout, even by a try with no wait (as one server's slow command would be waited for).
//! - Re-entries are counted in the client: only the first acquire and the last release reach the
//!   servers. Release goes to every server. The watchdog renews on every server and keeps the
//!   hold while a majority renews it; when a majority says the hold is gone it is lost, and when
//!   no majority answers it is lost at its deadline.
//! - The fencing token is the largest of the counters of the servers that granted it. It grows
//!   with every ownership while the majority's counters survive; a server restarted empty starts
//!   its counter again, so a resource that must refuse stale holders needs its own (see the
//!   README's RedLock section).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::{join_all, select_all};

use super::lock::RedisLock;
use super::pubsub::{WaitGuard, Wake};
use super::{connect_backend, RedisBackend};
use crate::backend::{
    AcquireRequest, Backend, Granted, HoldOps, LeaseSupport, LockOps, Reentry, ReleaseRequest,
    RenewItem, UnlockReply,
};
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::kind::{HoldKind, HoldMode, LockKind};
use crate::model::options::ClientOptions;
use crate::model::outcome::{Holder, LockStatus};
use crate::model::owner::{self, OwnerId};
use crate::runtime::off_blocking_caller;

/// Fewest masters of a RedLock: with two, the majority is both, and no server may fail.
pub(crate) const MIN_SERVERS: usize = 3;
/// Most masters of a RedLock.
pub(crate) const MAX_SERVERS: usize = 16;

/// How often a server that did not answer at connect time is tried again.
const RECONNECT_EVERY: Duration = Duration::from_secs(1);

/// How long one server may take to answer one vote: a tenth of the lease, between 50 ms and
/// 500 ms, never more than the command timeout. It only bounds how long a dead or cut-off master
/// can hold up a round: safety comes from the validity check, which takes the whole round's time
/// off the lease. The Redis documentation suggests 5-50 ms for a 10 s lease; a hundredth of the
/// lease (the old bound) failed rounds whenever the client's own loop stalled that long (a Node
/// event loop busy for 50 ms, a loaded 2-core machine), with every master healthy.
pub(crate) fn server_timeout(lease: Duration, command_timeout: Duration) -> Duration {
    (lease / 10)
        .clamp(Duration::from_millis(50), Duration::from_millis(500))
        .min(command_timeout)
}

/// The allowance for the servers' clocks running at different speeds during one lease: 1 % of it
/// plus 2 ms, as in the Redis documentation.
pub(crate) fn drift(lease: Duration) -> Duration {
    lease / 100 + Duration::from_millis(2)
}

/// One of the masters: connected, or tried again in the background.
struct Server {
    /// The URL without credentials (messages).
    shown: String,
    backend: OnceLock<RedisBackend>,
}

impl Server {
    fn lock(&self) -> Option<&Arc<RedisLock>> {
        self.backend.get().map(|b| &b.plain)
    }
}

/// A client's RedLock backend.
pub(crate) struct RedLockBackend {
    lock: Arc<RedLock>,
    closed: Arc<AtomicBool>,
}

/// The RedLock's operations over the masters.
pub(crate) struct RedLock {
    servers: Vec<Arc<Server>>,
    quorum: usize,
    client_id: String,
    command_timeout: Duration,
}

/// Connect to every master at once. A master that does not answer is tried again every second in
/// the background, as long as a majority answered; a wrong password or a malformed URL on any of
/// them fails the connect.
pub(crate) async fn connect_redlock(
    urls: &[(String, String)],
    options: &ClientOptions,
    client_id: &str,
) -> Result<Box<dyn Backend>> {
    let n = urls.len();
    let quorum = n / 2 + 1;
    let tries = join_all(
        urls.iter()
            .map(|(url, _)| connect_backend(url, options, client_id)),
    )
    .await;
    let closed = Arc::new(AtomicBool::new(false));
    let mut servers = Vec::with_capacity(n);
    let mut down = Vec::new();
    for ((url, shown), tried) in urls.iter().zip(tries) {
        let server = Arc::new(Server {
            shown: shown.clone(),
            backend: OnceLock::new(),
        });
        match tried {
            Ok(b) => {
                let _ = server.backend.set(b);
            }
            Err(e) if e.kind() == ErrorKind::Connection => down.push((url.clone(), e)),
            Err(e) => return Err(Error::new(e.kind(), format!("RedLock server {shown}: {e}"))),
        }
        servers.push(server);
    }
    if n - down.len() < quorum {
        let first = down.first().map(|(_, e)| e.to_string()).unwrap_or_default();
        return Err(Error::new(
            ErrorKind::Connection,
            format!(
                "RedLock: only {} of {n} servers answered; a majority ({quorum}) is needed to \
                 lock anything. First failure: {first}",
                n - down.len()
            ),
        ));
    }
    for (url, server) in urls.iter().map(|(u, _)| u).zip(&servers) {
        if server.backend.get().is_none() {
            tracing::warn!(
                "polylock RedLock: {} did not answer; trying again every {RECONNECT_EVERY:?}",
                server.shown
            );
            tokio::spawn(reconnect(
                Arc::downgrade(server),
                url.clone(),
                options.clone(),
                client_id.to_string(),
                closed.clone(),
            ));
        }
    }
    Ok(Box::new(RedLockBackend {
        lock: Arc::new(RedLock {
            servers,
            quorum,
            client_id: client_id.to_string(),
            command_timeout: options.command_timeout,
        }),
        closed,
    }))
}

async fn reconnect(
    server: Weak<Server>,
    url: String,
    options: ClientOptions,
    client_id: String,
    closed: Arc<AtomicBool>,
) {
    loop {
        tokio::time::sleep(RECONNECT_EVERY).await;
        if closed.load(Ordering::Acquire) || server.strong_count() == 0 {
            return;
        }
        if let Ok(b) = connect_backend(&url, &options, &client_id).await {
            if let Some(s) = server.upgrade() {
                tracing::info!("polylock RedLock: {} answers again", s.shown);
                let _ = s.backend.set(b);
            }
            return;
        }
    }
}

/// One server's answer to one acquire round.
enum Vote {
    Granted(Granted),
    /// Held by another owner; its remaining lease, if it has one.
    Busy(Option<Duration>),
    Failed(Error),
    /// Connected, but it did not answer within the round's time for one server.
    Slow(Error),
}

/// What one acquire round came to.
enum Round {
    Held(Granted),
    /// Other owners hold a majority: wait for a release on these servers (their indexes), at
    /// most as long as the shortest lease they reported.
    Blocked(Vec<usize>, Option<Duration>),
    /// Nobody can have a majority now (split votes): try again soon. The servers that were busy.
    Split(Vec<usize>),
    /// Fewer than a majority answered, some of them only too late (a busy machine, a slow
    /// network): another round soon, for at most the command timeout in a row.
    Slow(Error),
}

/// Gives back, in the background, the votes of a round that was dropped in flight.
struct GiveBackOnDrop<'a> {
    lock: &'a RedLock,
    name: &'a str,
    field: &'a str,
    granted: Mutex<Vec<usize>>,
    armed: bool,
}

impl Drop for GiveBackOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let granted = std::mem::take(&mut *self.granted.lock().unwrap_or_else(|e| e.into_inner()));
        for i in granted {
            if let Some(l) = self.lock.servers[i].lock() {
                l.undo_in_background(self.name, self.field, 1);
            }
        }
    }
}

fn not_connected(s: &Server) -> Error {
    Error::new(
        ErrorKind::Connection,
        format!(
            "{} is not connected (tried again every {RECONNECT_EVERY:?})",
            s.shown
        ),
    )
}

/// A pause of up to `10 ms * 2^splits` (at most 320 ms), random so that contenders whose votes
/// split do not collide again.
fn split_pause(splits: u32) -> Duration {
    let bound = 10u64 << splits.min(5);
    let random = (uuid::Uuid::new_v4().as_u128() % 1_000) as u64;
    Duration::from_micros(bound * random)
}

impl RedLock {
    fn field(&self, owner: OwnerId) -> String {
        owner::field(&self.client_id, owner)
    }

    fn n(&self) -> usize {
        self.servers.len()
    }

    /// Run `op` on every server at once, each bounded by the command timeout; a server that is
    /// not connected or does not answer in time gives an error.
    async fn on_all<'a, T, F, Fut>(&'a self, op: F) -> Vec<Result<T>>
    where
        F: Fn(&'a Arc<RedisLock>) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let limit = self.command_timeout;
        join_all(self.servers.iter().map(|s| {
            let call = s.lock().map(&op);
            async move {
                let Some(call) = call else {
                    return Err(not_connected(s));
                };
                tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorKind::Connection,
                        format!("{} did not answer within {limit:?}", s.shown),
                    ))
                })
            }
        }))
        .await
    }

    /// The error when fewer than a majority of the servers answered.
    fn no_majority(&self, answered: usize, results: &[Result<impl Sized>]) -> Error {
        let first = results.iter().find_map(|r| r.as_ref().err());
        Error::new(
            first.map_or(ErrorKind::Connection, |e| e.kind()),
            format!(
                "RedLock: only {answered} of {} servers answered; a majority ({}) is needed. \
                 First failure: {}",
                self.n(),
                self.quorum,
                first.map_or_else(String::new, |e| e.to_string())
            ),
        )
    }

    /// Ask every server for the lock once; give back what was granted unless a majority granted
    /// it in time.
    async fn round(&self, name: &str, field: &str, lease: Duration) -> Result<Round> {
        let start = Instant::now();
        let per_server = server_timeout(lease, self.command_timeout);
        let mut guard = GiveBackOnDrop {
            lock: self,
            name,
            field,
            granted: Mutex::new(Vec::new()),
            armed: true,
        };
        let votes = {
            let granted = &guard.granted;
            join_all(self.servers.iter().enumerate().map(|(i, s)| async move {
                let Some(l) = s.lock() else {
                    return Vote::Failed(not_connected(s));
                };
                let vote = tokio::time::timeout(per_server, async {
                    l.wait_for_undo(name, field).await;
                    l.attempt(name, field, lease, 0).await
                })
                .await;
                match vote {
                    Ok(Ok(Ok(g))) => {
                        granted.lock().unwrap_or_else(|e| e.into_inner()).push(i);
                        Vote::Granted(g)
                    }
                    Ok(Ok(Err(pttl))) => Vote::Busy(pttl),
                    Ok(Err(e)) => Vote::Failed(e),
                    Err(_) => Vote::Slow(Error::new(
                        ErrorKind::Connection,
                        format!("{} did not answer within {per_server:?}", s.shown),
                    )),
                }
            }))
            .await
        };
        let valid_until = start + lease.saturating_sub(drift(lease));
        let tokens: Vec<u64> = votes
            .iter()
            .filter_map(|v| match v {
                Vote::Granted(g) => Some(g.token),
                _ => None,
            })
            .collect();
        if tokens.len() >= self.quorum && Instant::now() < valid_until {
            guard.armed = false;
            return Ok(Round::Held(Granted {
                token: tokens.into_iter().max().unwrap_or(0),
                count: 1,
                node: None,
                gone: None,
                valid_until: Some(valid_until),
            }));
        }
        // Not held: give every vote back before anything else, and say so on its channel (other
        // contenders may wait for that server).
        let granted = std::mem::take(&mut *guard.granted.lock().unwrap_or_else(|e| e.into_inner()));
        join_all(granted.iter().filter_map(|&i| {
            let l = self.servers[i].lock()?;
            Some(async move {
                let given =
                    tokio::time::timeout(self.command_timeout, l.give_back(name, field, true));
                if !matches!(given.await, Ok(Ok(_))) {
                    // Not known to be given back: a task does it, and the next round waits for it.
                    l.undo_in_background(name, field, 1);
                }
            })
        }))
        .await;
        guard.armed = false;
        let mut busy = Vec::new();
        let mut hint: Option<Duration> = None;
        let mut first_failure = None;
        let mut slow = false;
        for (i, v) in votes.into_iter().enumerate() {
            match v {
                Vote::Busy(pttl) => {
                    busy.push(i);
                    hint = match (hint, pttl) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                Vote::Failed(e) => {
                    first_failure.get_or_insert(e);
                }
                Vote::Slow(e) => {
                    slow = true;
                    first_failure.get_or_insert(e);
                }
                Vote::Granted(_) => {}
            }
        }
        let answered = granted.len() + busy.len();
        if answered < self.quorum {
            let e = first_failure.unwrap_or_else(|| Error::internal("no failure recorded"));
            let e = self.no_majority(answered, &[Err::<(), _>(e)]);
            return if slow { Ok(Round::Slow(e)) } else { Err(e) };
        }
        Ok(if busy.len() >= self.quorum {
            Round::Blocked(busy, hint)
        } else {
            Round::Split(busy)
        })
    }

    async fn acquire_votes(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        let (name, field) = (req.name, self.field(req.owner));
        let deadline = req.wait.deadline();
        // One subscription per server that was busy in some round, kept for the whole wait.
        let mut subs: Vec<Option<WaitGuard>> = self.servers.iter().map(|_| None).collect();
        let mut splits = 0u32;
        // When the rounds in a row began in which too few servers answered in time.
        let mut slow_since: Option<Instant> = None;
        loop {
            let mut woken: Vec<(
                usize,
                std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>>,
            )> = subs
                .iter()
                .enumerate()
                .filter_map(|(i, g)| Some((i, Box::pin(g.as_ref()?.channel.notify.notified()))))
                .collect();
            for (_, n) in &mut woken {
                n.as_mut().enable();
            }
            let round = self.round(name, &field, req.lease).await?;
            if !matches!(round, Round::Slow(_)) {
                slow_since = None;
            }
            let (busy, sleep) = match round {
                Round::Held(g) => return Ok(Some(g)),
                Round::Blocked(busy, hint) => {
                    splits = 0;
                    (busy, hint.unwrap_or(req.max_sleep).min(req.max_sleep))
                }
                Round::Split(busy) => {
                    splits += 1;
                    (busy, split_pause(splits))
                }
                Round::Slow(e) => {
                    // Too few answered in time: nothing is known about the lock yet, so this is
                    // no "not acquired", even for a try with no wait. Like one server's command,
                    // it is bounded by the command timeout, not by the wait (a try-lock on a
                    // loaded machine failed with a connection error after one 300 ms round).
                    let since = *slow_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= self.command_timeout {
                        return Err(e);
                    }
                    splits += 1;
                    drop(woken);
                    tokio::time::sleep(split_pause(splits)).await;
                    continue;
                }
            };
            let now = Instant::now();
            let sleep = match deadline {
                Some(d) if now >= d => return Ok(None),
                Some(d) => sleep.min(d - now),
                None => sleep,
            };
            let fresh: Vec<usize> = busy
                .iter()
                .copied()
                .filter(|&i| subs[i].is_none())
                .collect();
            if splits > 0 {
                drop(woken);
                tokio::time::sleep(sleep).await;
            } else if fresh.is_empty() {
                woken.retain(|(i, _)| busy.contains(i));
                let any = async {
                    if woken.is_empty() {
                        std::future::pending::<()>().await;
                    }
                    select_all(woken.into_iter().map(|(_, n)| n)).await;
                };
                tokio::select! {
                    _ = any => {}
                    _ = tokio::time::sleep(sleep) => {}
                }
                continue;
            } else {
                drop(woken);
            }
            // Listen to the servers that were busy for the first time; a release that came
            // before the subscription would be missed, so the next round follows at once.
            for i in fresh {
                if let Some(l) = self.servers[i].lock() {
                    let (channel, subscriptions) = l.wake_channel(name);
                    if let Ok(g) = subscriptions.wait_on(&channel, Wake::OneOnZero).await {
                        subs[i] = Some(g);
                    }
                }
            }
        }
    }
}

#[async_trait]
impl HoldOps for RedLock {
    async fn renew(&self, holds: &[RenewItem], lease: Duration) -> Result<Vec<bool>> {
        let answers = off_blocking_caller(self.on_all(|l| l.renew(holds, lease))).await;
        let no_more_than = self.n() - self.quorum;
        let mut out = Vec::with_capacity(holds.len());
        for h in 0..holds.len() {
            let said = |yes: bool| {
                answers
                    .iter()
                    .filter(|a| a.as_ref().is_ok_and(|v| v.get(h) == Some(&yes)))
                    .count()
            };
            if said(true) >= self.quorum {
                out.push(true);
            } else if said(false) > no_more_than {
                out.push(false);
            } else {
                let answered = answers.iter().filter(|a| a.is_ok()).count();
                return Err(self.no_majority(answered, &answers));
            }
        }
        Ok(out)
    }

    fn lease_margin(&self, lease: Duration) -> Duration {
        drift(lease)
    }

    async fn drop_hold(&self, name: &str, owner: OwnerId, node: Option<&str>) -> Result<bool> {
        let dropped = off_blocking_caller(self.on_all(|l| l.drop_hold(name, owner, node))).await;
        if dropped.iter().all(|d| d.is_err()) {
            return Err(self.no_majority(0, &dropped));
        }
        Ok(dropped.iter().any(|d| matches!(d, Ok(true))))
    }
}

#[async_trait]
impl LockOps for RedLock {
    fn kind(&self) -> LockKind {
        LockKind::Reentrant
    }

    fn reentry(&self) -> Reentry {
        Reentry::Client
    }

    fn lease_support(&self) -> LeaseSupport {
        LeaseSupport::Renewable
    }

    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>> {
        off_blocking_caller(self.acquire_votes(req)).await
    }

    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let one = ReleaseRequest { held: 1, ..*req };
        let replies = off_blocking_caller(self.on_all(|l| l.release(&one))).await;
        let freed = replies
            .iter()
            .filter(|r| matches!(r, Ok(UnlockReply::Freed)))
            .count();
        let failed = replies.iter().filter(|r| r.is_err()).count();
        if freed >= self.quorum {
            Ok(UnlockReply::Freed)
        } else if freed + failed >= self.quorum {
            // A majority may still have held it: not known, so not released. The hold stays,
            // and a later release tries again.
            Err(self.no_majority(self.n() - failed, &replies))
        } else {
            Ok(UnlockReply::NotHeld)
        }
    }

    async fn is_locked(&self, name: &str) -> Result<bool> {
        let answers = off_blocking_caller(self.on_all(|l| l.is_locked(name))).await;
        let answered = answers.iter().filter(|a| a.is_ok()).count();
        if answered < self.quorum {
            return Err(self.no_majority(answered, &answers));
        }
        Ok(answers.iter().filter(|a| matches!(a, Ok(true))).count() >= self.quorum)
    }

    async fn remaining_lease(&self, name: &str) -> Result<Option<Duration>> {
        let answers = off_blocking_caller(self.on_all(|l| l.remaining_lease(name))).await;
        Ok(majority_lease(&answers, self.quorum))
    }

    async fn force_unlock(&self, name: &str) -> Result<bool> {
        let answers = off_blocking_caller(self.on_all(|l| l.force_unlock(name))).await;
        if answers.iter().all(|a| a.is_err()) {
            return Err(self.no_majority(0, &answers));
        }
        Ok(answers.iter().any(|a| matches!(a, Ok(true))))
    }

    async fn status(&self, name: &str) -> Result<LockStatus> {
        let answers = off_blocking_caller(self.on_all(|l| l.status(name))).await;
        let answered: Vec<&LockStatus> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
        if answered.len() < self.quorum {
            return Err(self.no_majority(answered.len(), &answers));
        }
        // A holder is one that a majority stores.
        let mut holders: Vec<Holder> = Vec::new();
        for st in &answered {
            for h in &st.holders {
                let on = answered
                    .iter()
                    .filter(|s| s.holders.iter().any(|x| x.owner == h.owner))
                    .count();
                if on >= self.quorum && !holders.iter().any(|x| x.owner == h.owner) {
                    holders.push(Holder {
                        owner: h.owner.clone(),
                        count: h.count,
                        mode: HoldMode::Exclusive,
                        identity: None,
                    });
                }
            }
        }
        let ttls: Vec<Result<Option<Duration>>> = answered.iter().map(|s| Ok(s.ttl)).collect();
        Ok(LockStatus {
            name: name.to_string(),
            locked: !holders.is_empty(),
            mode: None,
            holders,
            ttl: majority_lease(&ttls, self.quorum),
            waiters: Vec::new(),
            waiter_identities: Vec::new(),
            shared_with: Vec::new(),
        })
    }
}

/// The lease a majority still has: the `quorum`-th longest of the answers.
fn majority_lease(answers: &[Result<Option<Duration>>], quorum: usize) -> Option<Duration> {
    let mut leases: Vec<Duration> = answers
        .iter()
        .filter_map(|a| a.as_ref().ok().copied().flatten())
        .collect();
    leases.sort_unstable_by(|a, b| b.cmp(a));
    leases.get(quorum - 1).copied()
}

#[async_trait]
impl Backend for RedLockBackend {
    fn server(&self) -> &'static str {
        "RedLock"
    }

    fn lock_ops(&self, kind: LockKind) -> Result<Arc<dyn LockOps>> {
        match kind {
            LockKind::Reentrant => Ok(self.lock.clone()),
            other => Err(Error::unsupported(format!(
                "a RedLock client has only the reentrant lock (Redisson's RedissonRedLock), not \
                 the {}: use a client of one Redis server for it",
                other.word()
            ))),
        }
    }

    fn hold_ops(&self, kind: HoldKind) -> Result<Arc<dyn HoldOps>> {
        match kind {
            HoldKind::Lock(LockKind::Reentrant) => Ok(self.lock.clone()),
            _ => Err(Error::internal(format!(
                "no {} holds on a RedLock client",
                kind.word()
            ))),
        }
    }

    fn semaphore_ops(&self) -> Result<Arc<dyn crate::backend::SemaphoreOps>> {
        Err(only_locks("semaphore"))
    }

    fn permit_semaphore_ops(&self) -> Result<Arc<dyn crate::backend::ExpirableOps>> {
        Err(only_locks("semaphore of expiring permits"))
    }

    fn latch_ops(&self) -> Result<Arc<dyn crate::backend::LatchOps>> {
        Err(only_locks("count-down latch"))
    }

    async fn ping(&self) -> Result<()> {
        let pings = off_blocking_caller(join_all(self.lock.servers.iter().map(|s| async move {
            match s.backend.get() {
                Some(b) => b.ping().await,
                None => Err(not_connected(s)),
            }
        })))
        .await;
        let answered = pings.iter().filter(|p| p.is_ok()).count();
        if answered < self.lock.quorum {
            return Err(self.lock.no_majority(answered, &pings));
        }
        Ok(())
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for s in &self.lock.servers {
            if let Some(b) = s.backend.get() {
                b.close().await;
            }
        }
    }

    fn subscribed_channels(&self) -> usize {
        self.lock
            .servers
            .iter()
            .filter_map(|s| s.backend.get())
            .map(|b| b.subscribed_channels())
            .sum()
    }
}

fn only_locks(what: &str) -> Error {
    Error::unsupported(format!(
        "a RedLock client has no {what}: RedLock is a lock over several masters; use a client of \
         one Redis server"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_and_drift_follow_the_lease() {
        let cmd = Duration::from_secs(3);
        assert_eq!(
            server_timeout(Duration::from_secs(3), cmd),
            Duration::from_millis(300)
        );
        assert_eq!(
            server_timeout(Duration::from_millis(300), cmd),
            Duration::from_millis(50)
        );
        assert_eq!(
            server_timeout(Duration::from_secs(600), cmd),
            Duration::from_millis(500)
        );
        assert_eq!(
            server_timeout(Duration::from_secs(30), Duration::from_millis(100)),
            Duration::from_millis(100)
        );
        assert_eq!(drift(Duration::from_secs(10)), Duration::from_millis(102));
    }

    #[test]
    fn the_majority_lease_is_the_quorum_th_longest() {
        let s = Duration::from_secs;
        let answers = vec![Ok(Some(s(9))), Ok(None), Ok(Some(s(3))), Ok(Some(s(5)))];
        assert_eq!(majority_lease(&answers, 3), Some(s(3)));
        assert_eq!(majority_lease(&answers, 4), None);
        assert_eq!(majority_lease(&answers[..2], 1), Some(s(9)));
    }

    #[test]
    fn split_pauses_grow_and_stay_bounded() {
        for splits in 0..10 {
            let bound = Duration::from_millis(10 << splits.min(5));
            assert!(split_pause(splits) < bound);
        }
    }
}
