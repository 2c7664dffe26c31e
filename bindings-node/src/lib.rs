//! The native addon behind the `polylock` npm package (the JS wrapper is `index.js`).
//!
//! Nothing blocks the event loop: every call runs on the environment's own loop, its Redis I/O
//! on sockets the loop watches (`driver.rs`), or on polylock's one runtime (the runtime driver).
//! No napi async runtime is used (core owns the only runtime). Calls
//! resolve an `Outcome` object rather than rejecting, so the JS side can build a
//! `PolylockError` with the stable `code` of core's error table. One lock handle serves every
//! lock kind (reentrant lock, mutex, the halves of a read-write lock).

pub mod cancel;
pub mod client;
pub mod convert;
mod driver;
pub mod lock;
pub mod outcome;
pub mod semaphore;
mod uv;

use napi_derive::napi;

/// The addon's allocator (Rust's allocations only; Node's own are its own): with many handles in
/// flight the Node thread spent about a fifth of its time in glibc's malloc and free (polylock's
/// futures, replies and holds), mimalloc's thread-local heaps serve those faster.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A process-wide fresh owner id (never reused); the JS wrapper gives one to each lock handle.
#[napi]
pub fn fresh_owner() -> f64 {
    polylock::owner::fresh() as f64
}

/// The driver this environment's calls take: `loop` (on Node's own event loop) or `runtime`
/// (on polylock's runtime threads: `POLYLOCK_NODE_DRIVER=runtime`, or no libuv in the host).
#[napi]
pub fn driver_name(env: napi::Env) -> &'static str {
    if driver::node_loop(&env).is_some() {
        "loop"
    } else {
        "runtime"
    }
}

/// The crate version.
#[napi]
pub fn version() -> String {
    polylock::VERSION.to_string()
}
