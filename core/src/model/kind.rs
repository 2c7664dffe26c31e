//! The kinds of lock, and how a holder holds one.

use super::error::{Error, Result};
use super::shown::escape;

/// The kinds of lock a client hands out. Every kind is served by the one [`Lock`](crate::Lock)
/// handle; a backend that lacks a kind refuses it with `Unsupported` when the handle is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LockKind {
    /// Reentrant exclusive lock (Redisson `RLock`, Curator `InterProcessMutex`).
    Reentrant,
    /// Non-reentrant mutex that any owner of the client may release (Curator
    /// `InterProcessSemaphoreMutex`; ZooKeeper only).
    Mutex,
    /// The shared half of a read-write lock (Redisson `RReadWriteLock.readLock()`, Curator
    /// `InterProcessReadWriteLock.readLock()`).
    Read,
    /// The exclusive half of a read-write lock.
    Write,
    /// A reentrant lock granted in the order of asking (Redisson's `RFairLock`; on ZooKeeper every
    /// lock queues in order, and a fair lock is the ordinary one).
    Fair,
    /// A candidacy in a leader election (see [`Election`](crate::Election)): the lock its leader
    /// holds (Curator's `LeaderLatch`, etcd's `concurrency.Election`, a Redisson lock plus a
    /// leader record on Redis).
    Leader,
}

impl LockKind {
    /// Every kind.
    pub const ALL: [LockKind; 6] = [
        LockKind::Reentrant,
        LockKind::Mutex,
        LockKind::Read,
        LockKind::Write,
        LockKind::Fair,
        LockKind::Leader,
    ];

    /// The name the bindings give it: `reentrant`, `mutex`, `read`, `write`, `fair`, `leader`.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Reentrant => "reentrant",
            LockKind::Mutex => "mutex",
            LockKind::Read => "read",
            LockKind::Write => "write",
            LockKind::Fair => "fair",
            LockKind::Leader => "leader",
        }
    }

    /// The kind a binding names (see [`LockKind::name`]); an unknown name is `InvalidArgument`.
    pub fn from_name(name: &str) -> Result<LockKind> {
        LockKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| Error::invalid(format!("unknown lock kind '{}'", escape(name))))
    }

    /// A lower-case word for messages and `status` output.
    pub fn word(self) -> &'static str {
        match self {
            LockKind::Reentrant => "lock",
            LockKind::Mutex => "mutex",
            LockKind::Read => "read lock",
            LockKind::Write => "write lock",
            LockKind::Fair => "fair lock",
            LockKind::Leader => "leader election",
        }
    }
}

/// How a holder in a [`LockStatus`] holds the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HoldMode {
    /// An exclusive lock or mutex.
    Exclusive,
    /// A reader of a read-write lock.
    Read,
    /// The writer of a read-write lock.
    Write,
}

impl HoldMode {
    /// `exclusive`, `read` or `write`.
    pub fn word(self) -> &'static str {
        match self {
            HoldMode::Exclusive => "exclusive",
            HoldMode::Read => "read",
            HoldMode::Write => "write",
        }
    }
}

/// What a hold of a client is a hold of: a lock of some kind, or a permit of a semaphore (an
/// expiring permit on Redis, a lease on ZooKeeper). Holds of every kind are renewed by the one
/// watchdog, announce their loss the same way, and are given back when their client closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HoldKind {
    /// A hold of a lock of this kind.
    Lock(LockKind),
    /// A permit of a semaphore.
    Permit,
}

impl HoldKind {
    /// The name the bindings give it: its lock kind's [`name`](LockKind::name), or `permit`.
    pub fn name(self) -> &'static str {
        match self {
            HoldKind::Lock(k) => k.name(),
            HoldKind::Permit => "permit",
        }
    }

    /// A lower-case word for messages.
    pub fn word(self) -> &'static str {
        match self {
            HoldKind::Lock(k) => k.word(),
            HoldKind::Permit => "permit",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::error::ErrorKind;

    #[test]
    fn every_kind_goes_by_its_name_and_back() {
        for k in LockKind::ALL {
            assert_eq!(LockKind::from_name(k.name()).unwrap(), k);
            assert_eq!(HoldKind::Lock(k).name(), k.name());
        }
        assert_eq!(HoldKind::Permit.name(), "permit");
        let e = LockKind::from_name("\u{1b}[2Jfair").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(!e.message().contains('\u{1b}'), "{}", e.message());
    }
}
