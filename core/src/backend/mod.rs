//! What a backend implements. Primitives are written once over these traits and never ask which
//! server they talk to.
//!
//! A [`Backend`] is one connection (or session) to one server. It hands out the operations of
//! each kind of lock it supports as a [`LockOps`]; asking for a kind it lacks is a typed
//! `Unsupported` error when the lock handle is made, not on first use. Capabilities that differ
//! between servers are stated by the operations themselves ([`Reentry`], [`LeaseSupport`],
//! [`LockOps::queues_waiters`]) so that the one lock primitive can follow them.

pub(crate) mod cleanup;

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::model::error::{Error, Result};
use crate::model::kind::{HoldKind, LockKind};
use crate::model::options::Wait;
use crate::model::outcome::{Leader, LockStatus, RemainingLease, Reply, SemaphoreStatus};
use crate::model::owner::OwnerId;

/// Who counts re-entries of one owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reentry {
    /// The server stores the count (Redis): every acquire and release is a round trip that
    /// carries the count the client knows, so that a retried call is not counted twice.
    Server,
    /// The client counts re-entries (ZooKeeper, as Curator does): only the first acquire and the
    /// last release reach the server.
    Client,
    /// Not reentrant: one hold per client, released by any of its owners (Curator's semaphore
    /// mutex). A second acquire waits like anybody else's.
    None,
}

/// How a backend keeps a held lock alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseSupport {
    /// A lease on the server: fixed, or renewed by the watchdog through [`LockOps::renew`].
    Renewable,
    /// Held while the session lives (ZooKeeper); a lease is `Unsupported`. A lost session is
    /// reported through [`SessionSink`].
    Session,
}

/// How a backend tells that a hold is gone from the server behind its holder's back (a watch on
/// its node, a dropped connection). The hold layer then declares the hold lost unless its owner
/// is releasing it.
pub(crate) enum Gone {
    /// A future the hold layer awaits in a task of its own: `true` when the hold is gone, `false`
    /// when there is nothing to tell (its watch ended; what follows is reported elsewhere).
    Watch(std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>),
    /// The backend tells it itself, through this notice: no task per hold (a SQL connection's
    /// keep-alive round tells every hold on that connection).
    Notice(GoneNotice),
}

/// A hold's end, told once by its backend to whoever listens: hooks added after it was told run
/// at once. [`GoneNotice::clear`] forgets the hooks of holds that ended normally.
#[derive(Clone, Default)]
pub(crate) struct GoneNotice(Arc<std::sync::Mutex<NoticeState>>);

type GoneHook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
enum NoticeState {
    #[default]
    Untold,
    Listening(Vec<GoneHook>),
    Told,
}

impl GoneNotice {
    fn state(&self) -> std::sync::MutexGuard<'_, NoticeState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `hook` when this notice is told (now, if it was).
    pub(crate) fn on_gone(&self, hook: GoneHook) {
        let mut state = self.state();
        match &mut *state {
            NoticeState::Told => {
                drop(state);
                hook();
            }
            NoticeState::Listening(hooks) => hooks.push(hook),
            NoticeState::Untold => *state = NoticeState::Listening(vec![hook]),
        }
    }

    /// Tell every hook added so far, and every one added later.
    pub(crate) fn tell(&self) {
        let was = std::mem::replace(&mut *self.state(), NoticeState::Told);
        if let NoticeState::Listening(hooks) = was {
            for hook in hooks {
                hook();
            }
        }
    }

    /// Forget the hooks added so far (their holds ended normally); a notice told stays told.
    pub(crate) fn clear(&self) {
        let mut state = self.state();
        if let NoticeState::Listening(_) = &*state {
            *state = NoticeState::Untold;
        }
    }
}

/// What a granted acquire returns.
pub(crate) struct Granted {
    /// The fencing token of this ownership.
    pub(crate) token: u64,
    /// The owner's hold count on the server after the acquire (1 where the client counts).
    pub(crate) count: u32,
    /// The node (or other server-side handle) that represents the hold, if any.
    pub(crate) node: Option<String>,
    /// Where the backend can watch the hold itself (ZooKeeper: its node), what tells when it is
    /// gone. Backends whose leases are renewed learn it at the next renewal instead.
    pub(crate) gone: Option<Gone>,
    /// Where the server set a lease: when it ends by this client's clock, counted from when the
    /// granting request was sent (never from when a wait began). `None` for session holds.
    pub(crate) valid_until: Option<Instant>,
}

/// One acquire, as a backend sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AcquireRequest<'a> {
    pub(crate) name: &'a str,
    pub(crate) owner: OwnerId,
    /// The lease to set (a [`LeaseSupport::Renewable`] backend).
    pub(crate) lease: Duration,
    /// The owner's hold count before this call ([`Reentry::Server`]; 0 otherwise).
    pub(crate) held: u32,
    pub(crate) wait: Wait,
    /// Longest sleep between two tries when no notification comes.
    pub(crate) max_sleep: Duration,
    /// The owner's own write-lock node when it asks for the read lock of the same read-write
    /// lock (a downgrade; ZooKeeper places the read node in the writer's place).
    pub(crate) write_node: Option<&'a str>,
    /// What the hold tells about its holder, where the format has a place for it (a leader
    /// candidate's identity: a ZooKeeper node's data, an etcd key's value).
    pub(crate) data: Option<&'a str>,
}

/// One release, as a backend sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReleaseRequest<'a> {
    pub(crate) name: &'a str,
    pub(crate) owner: OwnerId,
    /// The lease the remaining holds keep (a re-entrant release on a lease backend).
    pub(crate) lease: Duration,
    /// The owner's hold count before this release.
    pub(crate) held: u32,
    /// The node of the hold, if the backend gave one.
    pub(crate) node: Option<&'a str>,
    /// An earlier attempt may have been applied without its answer reaching us.
    pub(crate) retry: bool,
}

/// The result of one release on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnlockReply {
    /// The owner held nothing (its hold is gone: lost).
    NotHeld,
    /// One hold was released; the owner still holds the lock.
    Decremented,
    /// The owner's last hold was released.
    Freed,
}

/// One hold to renew: its name, its owner in the client's registry, and its node (or permit id).
#[derive(Debug, Clone)]
pub(crate) struct RenewItem {
    pub(crate) name: Arc<str>,
    pub(crate) owner: OwnerId,
    pub(crate) node: Option<String>,
}

/// What the watchdog and a closing client need of any kind of hold (a lock's, a permit).
#[async_trait]
pub(crate) trait HoldOps: Send + Sync {
    /// Renew the leases of many holds at once; one answer per hold: still held or not.
    async fn renew(&self, holds: &[RenewItem], lease: Duration) -> Result<Vec<bool>> {
        let _ = lease;
        Ok(vec![true; holds.len()])
    }

    /// How much of a renewed lease the client must not count on (RedLock: the clock drift
    /// between independent servers). The hold's deadline is the renewal's send time plus the
    /// lease minus this.
    fn lease_margin(&self, lease: Duration) -> Duration {
        let _ = lease;
        Duration::ZERO
    }

    /// Remove a hold of `owner` from the server, whatever its count (lost, or its client
    /// closed). True if something was removed.
    async fn drop_hold(&self, name: &str, owner: OwnerId, node: Option<&str>) -> Result<bool>;
}

/// The operations of one kind of lock on one backend.
#[async_trait]
pub(crate) trait LockOps: HoldOps {
    /// The kind these operations serve.
    fn kind(&self) -> LockKind;

    /// Who counts re-entries.
    fn reentry(&self) -> Reentry;

    /// How a hold is kept alive.
    fn lease_support(&self) -> LeaseSupport;

    /// True when a waiting acquire takes a place in a queue (ZooKeeper's sequential nodes): a
    /// "one try, then wait" fast path would queue twice there and lose its place.
    fn queues_waiters(&self) -> bool {
        false
    }

    /// Acquire (or re-enter, [`Reentry::Server`]), waiting as the request says. `Ok(None)` when
    /// the wait ran out; nothing is then left on the server. Dropping the future leaves nothing
    /// behind either.
    async fn acquire(&self, req: &AcquireRequest<'_>) -> Result<Option<Granted>>;

    /// Release one hold.
    async fn release(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply>;

    /// Whether anybody holds this kind of lock on `name`.
    async fn is_locked(&self, name: &str) -> Result<bool>;

    /// The hold count of `owner` on the server ([`Reentry::Server`] only).
    async fn hold_count(&self, name: &str, owner: OwnerId) -> Result<u32> {
        let _ = (name, owner);
        Err(Error::internal("this backend counts holds in the client"))
    }

    /// The remaining lease of whoever holds `name`; `None` if free or without a lease.
    async fn remaining_lease(&self, name: &str) -> Result<Option<Duration>>;

    /// The contract's three answers: not held, held with no expiry, held for so long. By
    /// default a `None` lease asks [`is_locked`](LockOps::is_locked) which of the first two it
    /// is; a backend that can tell in one round trip (Redis's `PTTL`) says so itself.
    async fn lease_left(&self, name: &str) -> Result<RemainingLease> {
        Ok(match self.remaining_lease(name).await? {
            Some(d) => RemainingLease::Expires(d),
            None if self.is_locked(name).await? => RemainingLease::NoExpiry,
            None => RemainingLease::NotHeld,
        })
    }

    /// Remove the lock whoever holds it and wake its waiters; true if it was held.
    async fn force_unlock(&self, name: &str) -> Result<bool>;

    /// The server's view of the lock.
    async fn status(&self, name: &str) -> Result<LockStatus>;

    /// Run one release attempt exactly as given, with no retry (the test of retried releases).
    async fn release_once(&self, req: &ReleaseRequest<'_>) -> Result<UnlockReply> {
        let _ = req;
        Err(Error::unsupported(
            "single release attempts are a Redis test hook",
        ))
    }
}

/// One acquire of semaphore permits, as a backend sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PermitRequest<'a> {
    pub(crate) name: &'a str,
    pub(crate) permits: u32,
    pub(crate) wait: Wait,
    /// Longest sleep between two tries when no notification comes.
    pub(crate) max_sleep: Duration,
    /// The lease of expiring permits.
    pub(crate) lease: Duration,
    /// The ids of expiring permits, chosen by the caller (one per permit).
    pub(crate) ids: &'a [String],
}

/// The semaphore of a backend (Redisson's `RSemaphore`, Curator's `InterProcessSemaphoreV2`).
#[async_trait]
pub(crate) trait SemaphoreOps: HoldOps {
    /// True when acquired permits are held by the client (ZooKeeper leases: released by the
    /// client that holds them, lost with its session); false when they belong to nobody (Redis:
    /// anyone may release).
    fn holds_permits(&self) -> bool;

    /// Set the number of permits if it was never set; true if this call set it.
    async fn try_set_permits(&self, name: &str, permits: u32) -> Result<bool>;

    /// Add permits (or take them away with a negative `delta`).
    async fn add_permits(&self, name: &str, delta: i64) -> Result<()>;

    /// Take `permits` permits, waiting as the request says. `Ok(None)` when the wait ran out
    /// (nothing is then taken); otherwise the leases taken where the client holds permits.
    async fn acquire(&self, req: &PermitRequest<'_>) -> Result<Option<Vec<Granted>>>;

    /// Give back `permits` permits; where the client holds permits, `nodes` are their leases.
    async fn release(&self, name: &str, permits: u32, nodes: &[String]) -> Result<()>;

    /// The permits free now.
    async fn available(&self, name: &str) -> Result<i64>;

    /// Take every permit free now; how many, and the leases taken where the client holds them.
    async fn drain(&self, name: &str) -> Result<(i64, Vec<Granted>)>;

    /// The server's view of the semaphore.
    async fn status(&self, name: &str) -> Result<SemaphoreStatus>;
}

/// What a release of an expiring permit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PermitRelease {
    /// It was held and is free again.
    Released,
    /// Its lease had run out before the release (it was counted back all the same).
    Expired,
    /// No such permit: never acquired, released before, or expired and taken again.
    Unknown,
}

/// Redisson's `RPermitExpirableSemaphore`: permits with ids and leases.
#[async_trait]
pub(crate) trait ExpirableOps: HoldOps {
    /// Set the number of permits if it was never set; true if this call set it.
    async fn try_set_permits(&self, name: &str, permits: u32) -> Result<bool>;

    /// Add permits (or take them away with a negative `delta`).
    async fn add_permits(&self, name: &str, delta: i64) -> Result<()>;

    /// Take one permit per id of the request, each with the request's lease. `None` when the
    /// wait ran out (nothing is then taken); otherwise when the granting request was sent (the
    /// leases run from then).
    async fn acquire(&self, req: &PermitRequest<'_>) -> Result<Option<Instant>>;

    /// Give back the permit `id`.
    async fn release(&self, name: &str, id: &str) -> Result<PermitRelease>;

    /// The permits free now (expired ones are reclaimed first).
    async fn available(&self, name: &str) -> Result<i64>;

    /// The server's view of the semaphore.
    async fn status(&self, name: &str) -> Result<SemaphoreStatus>;
}

/// The count-down latch of a backend (Redisson's `RCountDownLatch`, a Curator `SharedCount`).
#[async_trait]
pub(crate) trait LatchOps: Send + Sync {
    /// Set the count if the latch is not counting; true if this call set it.
    async fn try_set_count(&self, name: &str, count: u64) -> Result<bool>;

    /// Count down by one (at zero the latch opens and its waiters wake).
    async fn count_down(&self, name: &str) -> Result<()>;

    /// The count now (0 when open).
    async fn count(&self, name: &str) -> Result<u64>;

    /// Wait until the count is zero; false when the wait ran out first.
    async fn wait(&self, name: &str, wait: Wait, max_sleep: Duration) -> Result<bool>;

    /// Delete the latch (it opens); true if it was counting.
    async fn delete(&self, name: &str) -> Result<bool>;
}

/// The resource's side of fencing where the resource is the backend's own store (Redis): the
/// largest token accepted per name, checked atomically with the protected commands.
#[async_trait]
pub(crate) trait FenceOps: Send + Sync {
    /// Run `commands` (each a command and its arguments) in one atomic step if `token` is not
    /// smaller than the largest token accepted for `name`, recording it; `StaleToken` (and
    /// nothing run) otherwise.
    async fn write(&self, name: &str, token: u64, commands: &[Vec<Vec<u8>>]) -> Result<Vec<Reply>>;

    /// The largest token accepted for `name`, if any.
    async fn accepted(&self, name: &str) -> Result<Option<u64>>;
}

/// A future that resolves when what it was armed on may have changed.
pub(crate) type Change = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// What a backend adds to its [`LockKind::Leader`] lock for an election: who leads, who else
/// campaigns, and a way to wait for a change. Campaigning and resigning are that lock's
/// acquire and release.
#[async_trait]
pub(crate) trait ElectionOps: Send + Sync {
    /// The leader now, if there is one.
    async fn leader(&self, name: &str) -> Result<Option<Leader>>;

    /// The candidates' identities in their order, the leader first.
    async fn candidates(&self, name: &str) -> Result<Vec<String>>;

    /// Arm a notification of a change of the election (a watch, a subscription) and return the
    /// future it resolves; a change made after this returns resolves it. It may also resolve
    /// with no change (a poll bound where the server tells no expiry).
    async fn arm(&self, name: &str) -> Result<Change>;
}

/// Where a backend with sessions reports them (the client's holds).
pub(crate) trait SessionSink: Send + Sync {
    /// The connection is down but the session may live (`true`), or it is back (`false`).
    fn suspended(&self, yes: bool);
    /// The session ended: every hold made through it is lost.
    fn session_lost(&self);
}

/// One connection (or session) to one lock server.
#[async_trait]
pub(crate) trait Backend: Send + Sync {
    /// The server's name for messages: "Redis", "ZooKeeper".
    fn server(&self) -> &'static str;

    /// Rules of the server on names, beyond the shared ones (ZooKeeper paths).
    fn validate_name(&self, name: &str) -> Result<()> {
        let _ = name;
        Ok(())
    }

    /// The operations of `kind`, or `Unsupported`.
    fn lock_ops(&self, kind: LockKind) -> Result<Arc<dyn LockOps>>;

    /// The operations that renew and drop holds of `kind`.
    fn hold_ops(&self, kind: HoldKind) -> Result<Arc<dyn HoldOps>>;

    /// The semaphore, or `Unsupported`.
    fn semaphore_ops(&self) -> Result<Arc<dyn SemaphoreOps>> {
        Err(Error::unsupported(format!(
            "{} has no semaphore in polylock",
            self.server()
        )))
    }

    /// The semaphore of expiring permits, or `Unsupported`.
    fn permit_semaphore_ops(&self) -> Result<Arc<dyn ExpirableOps>> {
        Err(Error::unsupported(format!(
            "{} has no semaphore of expiring permits: its semaphore's leases last while the \
             session lives (use semaphore())",
            self.server()
        )))
    }

    /// What a leader election needs beyond its lock, or `Unsupported`.
    fn election_ops(&self) -> Result<Arc<dyn ElectionOps>> {
        Err(Error::unsupported(format!(
            "{} has no leader election in polylock",
            self.server()
        )))
    }

    /// The count-down latch, or `Unsupported`.
    fn latch_ops(&self) -> Result<Arc<dyn LatchOps>> {
        Err(Error::unsupported(format!(
            "{} has no count-down latch in polylock",
            self.server()
        )))
    }

    /// Fenced writes to the backend's own store, or `Unsupported`.
    fn fence_ops(&self) -> Result<Arc<dyn FenceOps>> {
        Err(Error::unsupported(format!(
            "{} keeps no fenced data in polylock: a fenced write of Redis commands needs a \
             Redis client; data in PostgreSQL or MySQL is fenced by polylock::fence::postgres or \
             ::mysql (the guard row in your own transaction)",
            self.server()
        )))
    }

    /// Start following the server session, reporting to `sink` until it is gone or the backend
    /// is closed. Backends without sessions do nothing.
    fn watch_session(&self, sink: Weak<dyn SessionSink>) {
        let _ = sink;
    }

    /// Round trip of the cheapest request (the benchmarks' physical limit).
    async fn ping(&self) -> Result<()>;

    /// Close connections (the client closes; its holds are already dropped).
    async fn close(&self);

    /// Publish who this client is where the server keeps it apart from every lock (Redis: a key
    /// of its own that lives `ttl`, published again by the watchdog). Others keep it with their
    /// holds (ZooKeeper node data) or their connection (PostgreSQL) and do nothing here.
    async fn publish_identity(&self, client_id: &str, identity: &str, ttl: Duration) -> Result<()> {
        let _ = (client_id, identity, ttl);
        Ok(())
    }

    /// Remove what [`publish_identity`](Backend::publish_identity) stored (the client closes).
    async fn forget_identity(&self, client_id: &str) {
        let _ = client_id;
    }

    /// The names of the locks, semaphores and elections stored under names that match `pattern`
    /// (a Redis-style glob), at most `limit` of them, sorted; for operators (`polylock status
    /// --match`, `top`, `serve`). `Unsupported` where the server does not keep names (SQL
    /// session locks keep a hash of the name).
    async fn list_names(&self, pattern: &str, limit: usize) -> Result<Vec<String>> {
        let _ = (pattern, limit);
        Err(Error::unsupported(format!(
            "{} does not keep lock names that could be listed: name the locks to look at",
            self.server()
        )))
    }

    /// The stored identities of the holders and waiters of the lock `name`, named as its status
    /// names them (`None` where the server keeps none).
    async fn identities(&self, name: &str, owners: &[String]) -> Vec<Option<String>> {
        let _ = name;
        vec![None; owners.len()]
    }

    /// How often waiters were woken by a watch (tests: one wake per release on ZooKeeper).
    fn wakeups(&self) -> u64 {
        0
    }

    /// Channels with a live subscription or waiters (tests check that none leak).
    fn subscribed_channels(&self) -> usize {
        0
    }

    /// End the session as an expiry would (tests of the lost signal).
    async fn expire_session(&self) -> Result<()> {
        Err(Error::unsupported("not a ZooKeeper client"))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn counter(n: &Arc<AtomicU32>) -> GoneHook {
        let n = n.clone();
        Box::new(move || {
            n.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn a_notice_tells_each_hook_once_and_late_hooks_at_once() {
        let (notice, n) = (GoneNotice::default(), Arc::new(AtomicU32::new(0)));
        notice.on_gone(counter(&n));
        notice.on_gone(counter(&n));
        assert_eq!(n.load(Ordering::SeqCst), 0);
        notice.tell();
        assert_eq!(n.load(Ordering::SeqCst), 2);
        notice.tell();
        assert_eq!(n.load(Ordering::SeqCst), 2, "told twice");
        notice.on_gone(counter(&n));
        assert_eq!(
            n.load(Ordering::SeqCst),
            3,
            "a hook added after the telling runs at once"
        );
        notice.clear();
        notice.on_gone(counter(&n));
        assert_eq!(n.load(Ordering::SeqCst), 4, "a told notice stays told");
    }

    #[test]
    fn a_cleared_notice_forgets_the_holds_that_ended() {
        let (notice, n) = (GoneNotice::default(), Arc::new(AtomicU32::new(0)));
        notice.on_gone(counter(&n));
        notice.clear();
        notice.on_gone(counter(&n));
        notice.tell();
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }
}
