//! The native library behind the `io.polylock` Java package (JNI).
//!
//! A thin adapter: every `native` method of `io.polylock.Native` lands here, converts its
//! arguments, calls the core and turns a core error into the Java exception that
//! `PolylockException.fromNative` picks for its code. The Java side chooses owners (one per Java
//! thread), validates time units and counts the calls in flight on a client handle, so that a
//! handle is freed only when no call uses it.
//!
//! Short calls (one round trip) block the calling Java thread on core's runtime. Calls that wait
//! for somebody else (an acquire, a latch's wait) are started here and complete a Java
//! `NativeFuture` from a runtime thread, so that Java can wait on it interruptibly and cancel the
//! native wait on `Thread.interrupt()`. The future is completed exactly once on every path,
//! including cancellation and panics, and what a cancelled call got is given back.
//!
//! The files follow what they wrap:
//! - `error`: the panic boundary of every entry point, and core errors thrown as Java exceptions;
//! - `jvm`: the remembered `JavaVM` and calls into Java from runtime threads;
//! - `convert`: Java arguments to core values (strings, durations, owners, lock kinds);
//! - `client`: connecting, closing and freeing a client, its queries, its lost-hold stream;
//! - `lock`: a lock's handle (made per kind, or over other locks as a multi-lock), the kind its
//!   holds are reported with, and the one try before a wait;
//! - `gen`: the calls generated from the tables of `core/api/` (`python3 scripts/gen-bindings.py`):
//!   the count-down latch, the election, both semaphores (with a counting semaphore's leases) and
//!   the calls on a lock;
//! - `metrics`: the process's metrics snapshot for `MetricFamily` and the Micrometer binder, and
//!   the Prometheus text of the process or of one client;
//! - `log`: the core's log events handed to SLF4J through `Logs.log`;
//! - `wait`: every waiting call's `NativeFuture`, its cancellation and the give-back of what a
//!   cancelled call got.

mod client;
mod convert;
mod election;
mod error;
mod gen;
mod handle;
mod jvm;
mod lock;
mod log;
mod metrics;
mod wait;
