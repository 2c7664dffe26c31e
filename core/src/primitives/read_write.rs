//! The read-write lock: two [`Lock`]s on one name, its read half and its write half.

use std::sync::Arc;

use super::lock::Lock;
use crate::hold::ClientCore;
use crate::model::error::Result;
use crate::model::kind::LockKind;

/// Many readers or one writer (Redisson's `RReadWriteLock`, Curator's
/// `InterProcessReadWriteLock`, in their storage formats).
///
/// Both halves are reentrant per owner and have the watchdog, the lost signal and fencing tokens
/// of the plain lock. An owner that holds the write lock may also take the read lock and keep it
/// after releasing the write lock (a downgrade). An owner that holds the read lock and asks for
/// the write lock gets `UpgradeNotSupported` at once: Redisson and Curator would wait forever.
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl ReadWriteLock {
    pub(crate) fn new(core: Arc<ClientCore>, name: &str) -> Result<ReadWriteLock> {
        Ok(ReadWriteLock {
            read: Lock::new(core.clone(), name, LockKind::Read)?,
            write: Lock::new(core, name, LockKind::Write)?,
        })
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        self.read.name()
    }

    /// The read half: shared by any number of owners while nobody holds the write half.
    pub fn read_lock(&self) -> Lock {
        self.read.clone()
    }

    /// The write half: exclusive of readers and other writers.
    pub fn write_lock(&self) -> Lock {
        self.write.clone()
    }
}
