//! The native addon behind the `polylock` npm package (the JS wrapper is `index.js`).
//!
//! Nothing blocks the event loop: every call runs on the environment's own loop, its Redis I/O
//! on sockets the loop watches (`driver.rs`), or on polylock's one runtime (the runtime driver).
//! No napi async runtime is used (core owns the only runtime). Calls
//! resolve an `Outcome` object rather than rejecting, so the JS side can build a
//! `PolylockError` with the stable `code` of core's error table. One lock handle serves every
//! lock kind (reentrant lock, mutex, the halves of a read-write lock). No panic reaches Node: every
//! entry point, every call's future and every libuv callback is behind the panic boundary of
//! `boundary.rs`.

mod boundary;
pub mod cancel;
pub mod client;
mod driver;
pub mod gen;
pub mod lock;
pub mod observe;
pub mod outcome;
mod uv;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::boundary::entry;
use crate::driver::promise;
use crate::outcome::{outcome, Outcome};

/// The addon's allocator (Rust's allocations only; Node's own are its own): with many handles in
/// flight the Node thread spent about a fifth of its time in glibc's malloc and free (polylock's
/// futures, replies and holds), mimalloc's thread-local heaps serve those faster.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A process-wide fresh owner id (never reused); the JS wrapper gives one to each acquisition
/// that does not re-enter a hold of its flow (see index.js).
#[napi]
pub fn fresh_owner() -> Result<f64> {
    entry(|| Ok(polylock::owner::fresh() as f64))
}

/// The driver this environment's calls take: `loop` (on Node's own event loop) or `runtime`
/// (on polylock's runtime threads: `POLYLOCK_NODE_DRIVER=runtime`, or no libuv in the host).
#[napi]
pub fn driver_name(env: Env) -> Result<&'static str> {
    entry(|| {
        Ok(if driver::node_loop(&env).is_some() {
            "loop"
        } else {
            "runtime"
        })
    })
}

/// The statements of the SQL fences by name (`postgres_guard`, `mysql_read`, ...): index.js's
/// `fence.sql` sends them through the application's own `pg` or `mysql2` client.
#[napi]
pub fn fence_sql() -> Result<std::collections::HashMap<String, String>> {
    entry(|| {
        Ok(polylock::fence::SQL
            .iter()
            .map(|(what, text)| (what.to_string(), text.to_string()))
            .collect())
    })
}

/// Check a SQL fence's name and token by the core's rules (a synchronous error otherwise).
#[napi]
pub fn fence_checked(name: Utf16String, token: f64) -> Result<()> {
    entry(|| {
        let name = polylock::text_from_utf16(&name, "fence name").map_err(outcome::sync_err)?;
        let token = polylock::args::token_from_f64(token, "token").map_err(outcome::sync_err)?;
        polylock::fence::checked_sql(&name, token).map_err(outcome::sync_err)?;
        Ok(())
    })
}

/// The crate version.
#[napi]
pub fn version() -> Result<String> {
    entry(|| Ok(polylock::VERSION.to_string()))
}

/// TEST ONLY, not part of the API: index.js does not export it and index.d.ts does not declare
/// it. Panics where `at` says, so that test/panic.test.js can check the panic boundary:
/// `sync` in the call itself, `poll` in the call's future as it is first polled (inside the call
/// on the loop driver), `callback` in the future after a timer woke it (in a libuv callback on
/// the loop driver, on a runtime thread on the runtime driver).
#[napi(js_name = "__testPanic")]
pub fn test_panic<'e>(env: &'e Env, at: String) -> Result<Object<'e>> {
    fn boom(at: &str) -> Outcome {
        panic!("the test panic at '{at}'")
    }
    entry(|| match at.as_str() {
        "sync" => {
            boom(&at);
            promise(env, async { outcome(true, None) })
        }
        "poll" => promise(env, async move { boom(&at) }),
        "callback" => promise(env, async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            boom(&at)
        }),
        _ => Err(Error::from_reason(
            "INVALID_ARGUMENT\u{1}at must be 'sync', 'poll' or 'callback'",
        )),
    })
}
