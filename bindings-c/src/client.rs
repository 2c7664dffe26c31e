//! `polylock_client`: connecting, closing, freeing.

use std::ffi::c_char;
use std::time::Duration;

use polylock::{Client, ClientOptions};

use crate::result::{block, boundary, fail, null, polylock_result, text, POLYLOCK_OK};

/// A connection to one lock server (opaque). Thread-safe: share it between threads.
pub struct polylock_client {
    pub(crate) client: Client,
}

/// Options for `polylock_client_connect_with`. Zero means "the default".
#[repr(C)]
pub struct polylock_options {
    /// Watchdog lease in ms (default 30000).
    pub watchdog_timeout_ms: u64,
    /// Connection attempt limit in ms (default 5000).
    pub connect_timeout_ms: u64,
    /// Command answer limit in ms (default 5000).
    pub command_timeout_ms: u64,
    /// ZooKeeper session timeout in ms (default 10000).
    pub session_timeout_ms: u64,
    /// How long a fair lock's waiter keeps its place without trying again, in ms (default 5000;
    /// live waiters refresh it, so only a dead waiter's place expires).
    pub fair_wait_timeout_ms: u64,
}

fn opt_ms(v: u64, default: Duration) -> Duration {
    if v == 0 {
        default
    } else {
        Duration::from_millis(v)
    }
}

/// The client behind a handle, or `POLYLOCK_NULL_PARAMETER`.
///
/// # Safety
/// `client` is NULL or a live handle from `polylock_client_connect`.
pub(crate) unsafe fn client_ref<'a>(
    client: *mut polylock_client,
) -> Result<&'a Client, polylock_result> {
    // SAFETY: the caller's contract.
    unsafe { client.as_ref() }
        .map(|c| &c.client)
        .ok_or_else(|| null("client"))
}

/// Connect to `url` with default options and store a new client in `*out`. Free it with
/// `polylock_client_free`. Every URL form (Redis, Sentinel, Cluster, ZooKeeper, etcd, MySQL,
/// PostgreSQL, with their options): the URL table in docs/src/contract.md#urls.
///
/// `url` must be a NUL-terminated string; it is not kept.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_connect(
    url: *const c_char,
    out: *mut *mut polylock_client,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe { polylock_client_connect_with(url, std::ptr::null(), out) }
}

/// Like `polylock_client_connect`, with options (`opts` may be NULL for the defaults).
#[no_mangle]
pub unsafe extern "C" fn polylock_client_connect_with(
    url: *const c_char,
    opts: *const polylock_options,
    out: *mut *mut polylock_client,
) -> polylock_result {
    boundary(|| {
        if out.is_null() {
            return null("out");
        }
        // SAFETY: `out` is not NULL and points to writable storage (caller contract).
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: NUL-terminated string (caller contract).
        let url = match unsafe { text(url, "url") } {
            Ok(u) => u.to_string(),
            Err(r) => return r,
        };
        // SAFETY: NULL or a polylock_options (caller contract).
        let options = unsafe { options_from(opts) };
        // SAFETY: `out` is writable (checked above).
        unsafe {
            store(
                out,
                block(async move { Client::connect_with(&url, options).await }),
            )
        }
    })
}

/// The options behind `opts`, defaults where it is NULL or a field is zero.
///
/// # Safety
/// `opts` is NULL or points to a `polylock_options`.
unsafe fn options_from(opts: *const polylock_options) -> ClientOptions {
    let d = ClientOptions {
        runtime: Some("c".to_string()),
        ..ClientOptions::default()
    };
    // SAFETY: the caller's contract.
    let Some(o) = (unsafe { opts.as_ref() }) else {
        return d;
    };
    ClientOptions {
        watchdog_timeout: opt_ms(o.watchdog_timeout_ms, d.watchdog_timeout),
        connect_timeout: opt_ms(o.connect_timeout_ms, d.connect_timeout),
        command_timeout: opt_ms(o.command_timeout_ms, d.command_timeout),
        session_timeout: opt_ms(o.session_timeout_ms, d.session_timeout),
        fair_wait_timeout: opt_ms(o.fair_wait_timeout_ms, d.fair_wait_timeout),
        ..d
    }
}

/// Store a connected client in `*out`, or report the error.
///
/// # Safety
/// `out` is writable.
unsafe fn store(
    out: *mut *mut polylock_client,
    connected: polylock::Result<Client>,
) -> polylock_result {
    match connected {
        Ok(client) => {
            // SAFETY: the caller's contract.
            unsafe { *out = Box::into_raw(Box::new(polylock_client { client })) };
            POLYLOCK_OK
        }
        Err(e) => fail(&e),
    }
}

/// Connect a RedLock over `n` independent Redis masters (3 to 16 `redis://` or `rediss://`
/// URLs of different servers) with default options and store the client in `*out`. Its
/// `polylock_lock_new` locks are held while a majority of the masters hold them; other kinds
/// (read-write, fair, semaphores, latches) are `POLYLOCK_UNSUPPORTED` on it. A master that does
/// not answer now is tried again every second, as long as a majority answers.
///
/// RedLock's safety rests on bounded process pauses and clock drift; read the README's RedLock
/// section before relying on it, and prefer one Redis with replicas (or ZooKeeper) where you can.
#[no_mangle]
pub unsafe extern "C" fn polylock_connect_redlock(
    urls: *const *const c_char,
    n: usize,
    out: *mut *mut polylock_client,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe { polylock_connect_redlock_with(urls, n, std::ptr::null(), out) }
}

/// Like `polylock_connect_redlock`, with options (`opts` may be NULL for the defaults).
#[no_mangle]
pub unsafe extern "C" fn polylock_connect_redlock_with(
    urls: *const *const c_char,
    n: usize,
    opts: *const polylock_options,
    out: *mut *mut polylock_client,
) -> polylock_result {
    boundary(|| {
        if out.is_null() {
            return null("out");
        }
        // SAFETY: `out` is not NULL and points to writable storage (caller contract).
        unsafe { *out = std::ptr::null_mut() };
        if urls.is_null() {
            return null("urls");
        }
        let mut list = Vec::with_capacity(n.min(64));
        for i in 0..n {
            // SAFETY: `urls` has `n` entries (caller contract).
            let u = unsafe { *urls.add(i) };
            // SAFETY: each entry is NULL or NUL-terminated (caller contract).
            match unsafe { text(u, "urls[i]") } {
                Ok(u) => list.push(u.to_string()),
                Err(r) => return r,
            }
        }
        // SAFETY: NULL or a polylock_options (caller contract).
        let options = unsafe { options_from(opts) };
        let connected = block(async move { Client::connect_redlock_with(&list, options).await });
        // SAFETY: `out` is writable (checked above).
        unsafe { store(out, connected) }
    })
}

/// Close the client: release every lock its owners still hold, end its waits, close its
/// connections (a ZooKeeper session ends before this returns, so its nodes are gone), and refuse
/// later calls with `POLYLOCK_INVALID_STATE`. Idempotent. The handle must still be freed.
///
/// Call it before the process exits (from `atexit` if you like): C has no hook of its own that
/// polylock could use. A ZooKeeper client that is not closed leaves its nodes on the server until
/// its session times out (10 s by default), and other waiters queue behind them until then.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_close(client: *mut polylock_client) -> polylock_result {
    boundary(|| {
        // SAFETY: a pointer from polylock_client_connect, not yet freed (caller contract).
        let c = match unsafe { client_ref(client) } {
            Ok(c) => c.clone(),
            Err(r) => return r,
        };
        match block(async move { c.close().await }) {
            Ok(()) => POLYLOCK_OK,
            Err(e) => fail(&e),
        }
    })
}

/// Whether the client is suspended, in `*out`: true while the connection to ZooKeeper (or etcd)
/// is down but the session may still be alive. Holds stay held then (they are lost only if the
/// session expires), but nothing can be acquired or released until the connection comes back.
/// Always false on Redis and SQL servers. No round trip.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_suspended(
    client: *mut polylock_client,
    out: *mut bool,
) -> polylock_result {
    boundary(|| {
        if out.is_null() {
            return null("out");
        }
        // SAFETY: a live client handle (caller contract).
        let c = match unsafe { client_ref(client) } {
            Ok(c) => c,
            Err(r) => return r,
        };
        // SAFETY: checked above.
        unsafe { *out = c.is_suspended() };
        POLYLOCK_OK
    })
}

/// Free a client handle. NULL is allowed. Locks created from it keep the connection alive until
/// they are freed too; locks still held are released when the last of them goes (or expire).
/// Freeing does not wait for the server: close the client first (`polylock_client_close`) in a
/// process that is about to exit.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_free(client: *mut polylock_client) {
    let _ = boundary(|| {
        if !client.is_null() {
            // SAFETY: a pointer from polylock_client_connect, freed once (caller contract).
            drop(unsafe { Box::from_raw(client) });
        }
        POLYLOCK_OK
    });
}

/// Make a handle for `name` with `make` and store it in `*out`.
///
/// # Safety
/// `client` is NULL or live; `name` NULL or NUL-terminated; `out` NULL or writable.
pub(crate) unsafe fn new_handle<T>(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut T,
    make: impl FnOnce(&polylock::Client, &str) -> polylock::Result<T>,
) -> polylock_result {
    boundary(|| {
        if out.is_null() {
            return null("out");
        }
        // SAFETY: `out` is writable (caller contract).
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: caller contract.
        let c = match unsafe { client_ref(client) } {
            Ok(c) => c,
            Err(r) => return r,
        };
        // SAFETY: caller contract.
        let n = match unsafe { text(name, "name") } {
            Ok(n) => n,
            Err(r) => return r,
        };
        match make(c, n) {
            Ok(h) => {
                // SAFETY: checked above.
                unsafe { *out = Box::into_raw(Box::new(h)) };
                POLYLOCK_OK
            }
            Err(e) => fail(&e),
        }
    })
}
