//! Who a client is, as operators see it next to its holds: its service, host, pid, runtime and
//! polylock version.
//!
//! Stored where each server's format has room for it and never inside another library's data:
//! on Redis a key of its own per client (`polylock_client:<client id>`, next to Redisson's
//! hashes, kept alive by the watchdog), on ZooKeeper the contender node's data (which Curator
//! ignores), on PostgreSQL the connection's `application_name`.

use serde_json::{json, Value};

use crate::model::options::ClientOptions;

/// Where a Redis client publishes its identity: this prefix and its client id.
pub const REDIS_IDENTITY_PREFIX: &str = "polylock_client:";

/// The service name of a client: the option, else `POLYLOCK_SERVICE`, else the program's name.
pub(crate) fn resolve_service(options: &ClientOptions) -> String {
    if let Some(s) = options.service.as_deref().filter(|s| !s.is_empty()) {
        return s.to_string();
    }
    if let Ok(s) = std::env::var("POLYLOCK_SERVICE") {
        if !s.is_empty() {
            return s;
        }
    }
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// This machine's host name.
pub fn host_name() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname(2) writes at most buf.len() bytes into our buffer.
        if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return String::from_utf8_lossy(&buf[..end]).into_owned();
        }
    }
    std::env::var("HOSTNAME").unwrap_or_else(|_| "host".to_string())
}

/// The identity of a client with these options (the service resolved), as one line of JSON:
/// `{"service":..,"host":..,"pid":..,"runtime":..,"version":..}`.
pub(crate) fn identity_json(options: &ClientOptions) -> String {
    json!({
        "service": resolve_service(options),
        "host": host_name(),
        "pid": process_id(),
        "runtime": options.runtime.as_deref().unwrap_or("rust"),
        "version": crate::VERSION,
    })
    .to_string()
}

/// The short form for places with little room (PostgreSQL's 63-byte `application_name`):
/// `service@host/pid`, cut to `max` bytes on a character boundary.
pub(crate) fn short_identity(options: &ClientOptions, max: usize) -> String {
    let mut s = format!(
        "{}@{}/{}",
        resolve_service(options),
        host_name(),
        process_id()
    );
    while s.len() > max {
        s.pop();
    }
    s
}

/// What a stored identity says, for `status`: the JSON object of a polylock client, or the
/// text as it is (Curator's default node data is the client's IP address; a PostgreSQL
/// application name).
pub fn identity_value(stored: &str) -> Value {
    match serde_json::from_str::<Value>(stored) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::String(stored.to_string()),
    }
}

/// This process's id, without a system call on every use (a lock call asks it to tell a forked
/// child): read once, and read again after a `fork()` (a child handler clears it).
pub(crate) fn process_id() -> u32 {
    use std::sync::atomic::Ordering;
    static PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    #[cfg(unix)]
    {
        static HOOK: std::sync::Once = std::sync::Once::new();
        extern "C" fn forked_child() {
            PID.store(0, Ordering::Relaxed);
        }
        // SAFETY: registers a handler that only stores to an atomic, which is async-signal-safe
        // as a fork child handler must be.
        HOOK.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        });
    }
    match PID.load(Ordering::Relaxed) {
        0 => {
            let pid = std::process::id();
            PID.store(pid, Ordering::Relaxed);
            pid
        }
        pid => pid,
    }
}
