//! The native addon behind the `polylock` npm package (the JS wrapper is `index.js`).
//!
//! Nothing blocks the event loop: every call runs on polylock's one runtime and settles a Promise
//! through a napi deferred. No napi async runtime is used (core owns the only runtime). Calls
//! resolve an `Outcome` object rather than rejecting, so the JS side can build a
//! `PolylockError` with the stable `code` of core's error table. One lock handle serves every
//! lock kind (reentrant lock, mutex, the halves of a read-write lock).

pub mod cancel;
pub mod client;
pub mod convert;
pub mod lock;
pub mod outcome;
pub mod semaphore;

use napi_derive::napi;

/// A process-wide fresh owner id (never reused); the JS wrapper gives one to each lock handle.
#[napi]
pub fn fresh_owner() -> f64 {
    polylock::owner::fresh() as f64
}

/// The crate version.
#[napi]
pub fn version() -> String {
    polylock::VERSION.to_string()
}
