//! What lock calls return: acquires, releases, and a lock's status.

use std::time::Duration;

use super::kind::HoldMode;
use super::lost::LostSignal;

/// A successful acquire.
#[derive(Debug, Clone)]
pub struct Acquired {
    /// Fencing token of this ownership: strictly greater than any token given to an earlier
    /// owner of the same lock. A re-entry returns the token the owner already has.
    pub fencing_token: u64,
    /// The owner's hold count after this acquire (1 for a first acquire).
    pub hold_count: u32,
    /// Fires if the lock is lost while held.
    pub lost: LostSignal,
}

/// The outcome of a successful release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// A re-entrant hold was released; the owner still holds the lock this many times.
    StillHeld(u32),
    /// The owner's last hold was released (for a read lock other readers may still hold it).
    Freed,
}

/// One holder in a [`LockStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The stored owner (`<client uuid>:<owner id>` on Redis, the node name on ZooKeeper).
    pub owner: String,
    /// Its hold count.
    pub count: u32,
    /// How it holds the lock.
    pub mode: HoldMode,
    /// Who it is, as stored next to the hold: a polylock client's identity as one line of JSON
    /// (service, host, pid, runtime, version), or what the server keeps for others (Curator's
    /// node data, the client's IP; a PostgreSQL connection's application name). `None` where
    /// nothing is stored (a Redisson client on Redis). Filled by `status` only.
    pub identity: Option<String>,
}

/// What the server says about a lock, for operators (`polylock status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockStatus {
    /// The lock's name.
    pub name: String,
    /// Whether anybody holds it.
    pub locked: bool,
    /// A read-write lock's mode while it is held: [`HoldMode::Read`] or [`HoldMode::Write`];
    /// `None` for other locks and when it is free.
    pub mode: Option<HoldMode>,
    /// The holders with their counts (one for a mutex, one writer, or any number of readers).
    pub holders: Vec<Holder>,
    /// Remaining lease, if the lock is held with one (Redis).
    pub ttl: Option<Duration>,
    /// Contenders queued behind the holders, in the order they will get the lock (ZooKeeper).
    pub waiters: Vec<String>,
    /// The waiters' identities, in the order of `waiters` (as [`Holder::identity`]).
    pub waiter_identities: Vec<Option<String>>,
    /// Other names on the server that share this lock's state by the backend's own format (the
    /// peers' formats, kept for interoperability): on Redis `a` and `{a}` share the
    /// `{a}:timeout` key and the fair queue; on etcd a lock `a` waits on the keys of a lock `a/b`,
    /// as etcd's own Mutex does. Filled by `status` where such a name exists now.
    pub shared_with: Vec<String>,
}

/// One permit held, in a [`SemaphoreStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermitHolder {
    /// The permit's id (Redis, expiring permits) or lease node (ZooKeeper).
    pub id: String,
    /// How long until it expires (expiring permits); `None` while a session keeps it.
    pub expires_in: Option<Duration>,
}

/// What the server says about a semaphore, for operators (`polylock status --permits`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemaphoreStatus {
    /// The semaphore's name.
    pub name: String,
    /// Permits free now.
    pub available: i64,
    /// All permits, free and taken, where the server knows it (ZooKeeper's count, expiring
    /// permits); `None` for Redisson's `RSemaphore`, which stores only the free ones.
    pub permits: Option<i64>,
    /// The permits taken, where they are held by somebody (expiring permits, leases).
    pub holders: Vec<PermitHolder>,
}

/// What [`Lock::remaining_lease`](crate::Lock::remaining_lease) answers: the contract's three
/// distinct answers (docs/src/contract.md, "Remaining lease"). Every binding keeps them apart:
/// C and Java say -2 / -1 / N ms (Redis's `PTTL`, Redisson's `remainTimeToLive`), Python `None` /
/// `math.inf` / seconds, Node `null` / `Infinity` / ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemainingLease {
    /// Nobody holds the lock.
    NotHeld,
    /// Held, with nothing that ends it but its holder or its session (ZooKeeper, SQL session
    /// locks, etcd when its lease's TTL cannot be read).
    NoExpiry,
    /// Held, and the lease ends in this long unless renewed (by the watchdog) or released.
    Expires(Duration),
}

impl RemainingLease {
    /// The time left, if the lease ends.
    pub fn duration(self) -> Option<Duration> {
        match self {
            RemainingLease::Expires(d) => Some(d),
            _ => None,
        }
    }

    /// True unless nobody holds the lock.
    pub fn is_held(self) -> bool {
        self != RemainingLease::NotHeld
    }

    /// Python's encoding: `None` not held, infinity with no expiry, else the seconds left.
    pub fn as_secs(self) -> Option<f64> {
        match self {
            RemainingLease::NotHeld => None,
            RemainingLease::NoExpiry => Some(f64::INFINITY),
            RemainingLease::Expires(d) => Some(d.as_secs_f64()),
        }
    }

    /// The C and Java encoding (Redis's `PTTL`, Redisson's `remainTimeToLive`): -2 not held, -1
    /// held with no expiry, else the milliseconds left.
    pub fn as_millis_code(self) -> i64 {
        match self {
            RemainingLease::NotHeld => -2,
            RemainingLease::NoExpiry => -1,
            RemainingLease::Expires(d) => d.as_millis().min(i64::MAX as u128) as i64,
        }
    }
}

/// How [`Lock::extend_lease`](crate::Lock::extend_lease) changes a fixed lease: the three shapes
/// the ecosystems use (redis-py's `extend(additional_time)`, `extend(t, replace_ttl=True)` and
/// `reacquire()`; node-redlock's `extend(duration)` is `Set`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseChange {
    /// Add this much to what is left of the lease.
    Add(Duration),
    /// The lease ends this long from now.
    Set(Duration),
    /// The lease ends its original length from now (as when it was acquired).
    Reset,
}

/// The leader of an election: who, and since which term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// The identity the leader campaigned with (on Redis, a holder that is not a polylock
    /// candidate, such as a Redisson `RLock` on the same name, shows as its stored owner).
    pub identity: String,
    /// The leader's term: its lock's fencing token, greater for every new leader.
    pub term: u64,
}

/// One reply of a command run by a fenced write ([`Fence::write`](crate::fence::Fence::write)),
/// as a Lua script sees it: Redis's integer, bulk string, status, nil and array replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A nil reply (`GET` of a missing key).
    Nil,
    /// An integer reply (`INCR`, `DECR`, `RPUSH`, ...).
    Int(i64),
    /// A bulk string reply (`GET`), as the bytes stored.
    Bytes(Vec<u8>),
    /// A status reply (`OK` of `SET`).
    Status(String),
    /// An array reply (`LRANGE`, `HGETALL`), its items in order.
    Array(Vec<Reply>),
}

impl Reply {
    /// The reply as an integer, when it is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(n) => Some(*n),
            _ => None,
        }
    }
}
