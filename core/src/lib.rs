//! polylock: distributed locks with one Rust core, used from Rust, C, Python, Node and Java.
//!
//! Locks live on Redis in Redisson's formats, on ZooKeeper in Curator's, on etcd in etcd's own
//! (`concurrency.Mutex`, `etcdctl lock`), and on MySQL/MariaDB
//! (`GET_LOCK`) and PostgreSQL (advisory locks, or ShedLock's lease table) by the rules of
//! DistributedLock and ShedLock, so polylock and those libraries exclude each other on the same
//! name. They are reentrant per owner, kept alive
//! by a watchdog while the holder lives, announce their loss, hand out fencing tokens, and wait
//! by notification, never by polling.
//!
//! ```no_run
//! # async fn demo() -> polylock::Result<()> {
//! use polylock::{AcquireOptions, Client};
//! let client = Client::connect("redis://127.0.0.1:6379").await?;
//! let lock = client.lock("goods")?;
//! let owner = polylock::owner::fresh();
//! let held = lock.acquire(owner, AcquireOptions::forever()).await?;
//! println!("fencing token {}", held.fencing_token);
//! lock.release(owner).await?;
//!
//! let rw = client.read_write_lock("catalog")?;
//! rw.read_lock().acquire(owner, AcquireOptions::forever()).await?;
//! rw.read_lock().release(owner).await?;
//! # Ok(()) }
//! ```
//!
//! The layers, each importing only those before it: `model` (names, owners, options, errors,
//! the lost signal) ← `backend` (the traits a server implements) ← `redis`, `zookeeper`, `sql` ←
//! `hold` (holds, the watchdog) ← `primitives` (the lock, the read-write lock) ← `client`.

// A build with some backends left out leaves parts of the shared backend machinery unused (the
// watch a ZooKeeper hold has, the lease a Redis hold renews): the full build is where unused code
// is a finding.
#![cfg_attr(
    not(all(
        feature = "redis",
        feature = "zookeeper",
        feature = "mysql",
        feature = "postgres",
        feature = "etcd"
    )),
    allow(dead_code, unused_imports)
)]

mod backend;
pub mod blocking;
#[cfg(feature = "cli")]
pub mod cli;
mod client;
#[cfg(feature = "redis")]
pub mod driver;
#[cfg(feature = "etcd")]
mod etcd;
pub mod fence;
mod hold;
pub mod log;
pub mod metrics;
mod model;
mod primitives;
// The backends, each behind its cargo feature; client.rs is where a URL picks one.
#[cfg(feature = "redis")]
mod redis;
pub mod runtime;
#[cfg(feature = "sql")]
mod sql;
#[cfg(feature = "zookeeper")]
mod zookeeper;

pub use crate::backend::UnlockReply;
pub use crate::client::Client;
pub use crate::model::args::{self, count_from_f64, count_from_i64};
pub use crate::model::error::{self, Error, ErrorKind, Result};
pub use crate::model::identity::{host_name, identity_value, REDIS_IDENTITY_PREFIX};
pub use crate::model::kind::{HoldKind, HoldMode, LockKind};
pub use crate::model::lost::{HoldState, LostEvent, LostReason, LostSignal};
pub use crate::model::names::{text_from_java_utf8, text_from_utf16, validate_name, MAX_NAME_LEN};
pub use crate::model::options::{
    AcquireOptions, ClientOptions, Wait, MAX_DURATION, MAX_SESSION_TIMEOUT, MIN_WATCHDOG_TIMEOUT,
};
pub use crate::model::outcome::{
    Acquired, Holder, Leader, LeaseChange, LockStatus, PermitHolder, Released, RemainingLease,
    Reply, SemaphoreStatus,
};
pub use crate::model::owner::{self, OwnerId};
pub use crate::model::secret::{redact_text, redact_url, scrub, Secret};
pub use crate::model::shown;
pub use crate::primitives::election::{validate_identity, Election, Leadership, MAX_IDENTITY_LEN};
pub use crate::primitives::fence::Fence;
pub use crate::primitives::latch::CountDownLatch;
pub use crate::primitives::lock::Lock;
pub use crate::primitives::lock::MultiLock;
pub use crate::primitives::permit_semaphore::{Permit, PermitExpirableSemaphore};
pub use crate::primitives::read_write::ReadWriteLock;
pub use crate::primitives::semaphore::{Permits, Semaphore};
#[cfg(feature = "zookeeper")]
pub use crate::zookeeper::validate_path as validate_zk_path;

/// The crate version (also the version of every binding built from it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
