//! A blocking facade over the async API, running everything on polylock's one runtime.
//!
//! Each call blocks the calling thread (never a runtime thread: that is refused with
//! `InvalidState`). Bindings that must stay interruptible use [`crate::runtime::spawn`] instead.

use std::time::Duration;

use crate::runtime::block_on;
use crate::{
    AcquireOptions, Acquired, ClientOptions, LeaseChange, LockKind, LockStatus, LostSignal,
    OwnerId, Released, RemainingLease, Result,
};

/// Blocking [`crate::Client`].
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
}

/// Blocking [`crate::ReadWriteLock`].
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    inner: crate::ReadWriteLock,
}

impl ReadWriteLock {
    /// The read half.
    pub fn read_lock(&self) -> Lock {
        Lock {
            inner: self.inner.read_lock(),
        }
    }

    /// The write half.
    pub fn write_lock(&self) -> Lock {
        Lock {
            inner: self.inner.write_lock(),
        }
    }
}

/// Blocking [`crate::Lock`].
#[derive(Clone, Debug)]
pub struct Lock {
    inner: crate::Lock,
}

impl Client {
    /// Connect with default options.
    pub fn connect(url: &str) -> Result<Client> {
        Client::connect_with(url, ClientOptions::default())
    }

    /// Connect with options.
    pub fn connect_with(url: &str, options: ClientOptions) -> Result<Client> {
        let url = url.to_string();
        let inner = block_on(async move { crate::Client::connect_with(&url, options).await })??;
        Ok(Client { inner })
    }

    /// The async client behind this one.
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    /// A lock handle (see [`crate::Client::lock`]).
    pub fn lock(&self, name: &str) -> Result<Lock> {
        Ok(Lock {
            inner: self.inner.lock(name)?,
        })
    }

    /// A mutex handle (see [`crate::Client::mutex`]).
    pub fn mutex(&self, path: &str) -> Result<Lock> {
        Ok(Lock {
            inner: self.inner.mutex(path)?,
        })
    }

    /// A read-write lock (see [`crate::Client::read_write_lock`]).
    pub fn read_write_lock(&self, name: &str) -> Result<ReadWriteLock> {
        Ok(ReadWriteLock {
            inner: self.inner.read_write_lock(name)?,
        })
    }

    /// See [`crate::Client::ping`].
    pub fn ping(&self) -> Result<()> {
        let c = self.inner.clone();
        block_on(async move { c.ping().await })?
    }

    /// See [`crate::Client::fenced_write`].
    pub fn fenced_write(
        &self,
        name: &str,
        token: u64,
        commands: &[Vec<Vec<u8>>],
    ) -> Result<Vec<crate::Reply>> {
        let fence = self.inner.fence(name)?;
        let commands = commands.to_vec();
        block_on(async move { fence.write(token, &commands).await })?
    }

    /// See [`crate::Client::close`].
    pub fn close(&self) -> Result<()> {
        let c = self.inner.clone();
        block_on(async move { c.close().await })?
    }
}

macro_rules! blocking {
    ($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        $(#[$doc])*
        pub fn $name(&self, $($arg: $ty),*) -> Result<$ret> {
            let l = self.inner.clone();
            block_on(async move { l.$name($($arg),*).await })?
        }
    };
}

impl Lock {
    /// The async lock behind this one.
    pub fn as_async(&self) -> &crate::Lock {
        &self.inner
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The lock's kind.
    pub fn kind(&self) -> LockKind {
        self.inner.kind()
    }

    blocking!(
        /// See [`crate::Lock::acquire`].
        acquire(owner: OwnerId, options: AcquireOptions) -> Acquired
    );
    blocking!(
        /// See [`crate::Lock::try_acquire`].
        try_acquire(owner: OwnerId, lease: Option<Duration>) -> Option<Acquired>
    );
    blocking!(
        /// See [`crate::Lock::release`].
        release(owner: OwnerId) -> Released
    );
    blocking!(
        /// See [`crate::Lock::is_locked`].
        is_locked() -> bool
    );
    blocking!(
        /// See [`crate::Lock::is_held_by`].
        is_held_by(owner: OwnerId) -> bool
    );
    blocking!(
        /// See [`crate::Lock::hold_count`].
        hold_count(owner: OwnerId) -> u32
    );
    blocking!(
        /// See [`crate::Lock::remaining_lease`].
        remaining_lease() -> RemainingLease
    );
    blocking!(
        /// See [`crate::Lock::extend_lease`].
        extend_lease(owner: OwnerId, change: LeaseChange) -> Duration
    );
    blocking!(
        /// See [`crate::Lock::force_unlock`].
        force_unlock() -> bool
    );
    blocking!(
        /// See [`crate::Lock::status`].
        status() -> LockStatus
    );

    /// See [`crate::Lock::fencing_token`].
    pub fn fencing_token(&self, owner: OwnerId) -> Option<u64> {
        self.inner.fencing_token(owner)
    }

    /// See [`crate::Lock::lost_signal`].
    pub fn lost_signal(&self, owner: OwnerId) -> Option<LostSignal> {
        self.inner.lost_signal(owner)
    }
}
