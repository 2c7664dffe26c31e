//! polylock: distributed locks with one Rust core, used from Rust, C, Python, Node and Java.
//!
//! Locks live on Redis in Redisson's RLock format, so polylock and Redisson exclude each other
//! on the same name. They are reentrant per owner, kept alive by a watchdog while the holder
//! lives, announce their loss, hand out fencing tokens, and wait by pub/sub, never by polling.
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
//! # Ok(()) }
//! ```

pub mod blocking;
mod client;
pub mod error;
pub mod owner;
mod redis;
pub mod runtime;
mod watchdog;
mod zookeeper;

pub use crate::client::{
    validate_name, AcquireOptions, Acquired, Client, ClientOptions, Holder, Lock, LockStatus,
    Released, Wait, MAX_DURATION, MAX_NAME_LEN, MIN_WATCHDOG_TIMEOUT,
};
pub use crate::error::{Error, ErrorKind, Result};
pub use crate::owner::OwnerId;
pub use crate::redis::UnlockReply;
pub use crate::watchdog::{HoldState, LostEvent, LostReason, LostSignal};
pub use crate::zookeeper::validate_path as validate_zk_path;

/// The crate version (also the version of every binding built from it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
