//! `polylock_lock`: one handle for every lock-like primitive (a reentrant lock, a mutex, either
//! half of a read-write lock, a fair lock, a multi-lock, a RedLock client's lock): making and
//! freeing it, and its lost callbacks. Its calls (acquiring, releasing, queries) are generated
//! from core/api/lock.toml (`src/gen/lock.rs`).

use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use polylock::{runtime, Client, HoldKind, Lock, LockKind, MultiLock};

use crate::client::{new_handle, polylock_client};
use crate::result::{boundary, fail, null, polylock_result, POLYLOCK_OK};

/// A handle on one named lock (opaque). Thread-safe. It keeps its client alive: freeing the client
/// first is allowed, the lock keeps working until it is freed too.
pub struct polylock_lock {
    pub(crate) inner: Lock,
    name: CString,
    /// Where this handle's holds are reported lost: its client with its name and kind (for a
    /// multi-lock, each member's).
    sources: Vec<Source>,
    callbacks: Arc<Mutex<Vec<LostCallback>>>,
    /// Set once callbacks listen: dropping it (with the handle) ends the listening tasks.
    listening: Mutex<Option<tokio::sync::watch::Sender<()>>>,
}

/// A client, and the name and kind of the holds on it that a handle reports lost.
#[derive(Clone)]
pub(crate) struct Source {
    client: Client,
    name: Arc<str>,
    kind: HoldKind,
}

/// Called when a hold of the lock is lost: `userdata` as registered, the lock's `name` (valid only
/// during the call), the owner whose hold was lost, and why (`POLYLOCK_LOST_EXPIRED`,
/// `POLYLOCK_LOST_DELETED`, `POLYLOCK_LOST_RENEWAL_FAILED`, `POLYLOCK_LOST_SESSION_EXPIRED` or
/// `POLYLOCK_LOST_CLIENT_CLOSED`).
pub type polylock_lost_callback = Option<
    unsafe extern "C" fn(userdata: *mut c_void, name: *const c_char, owner: u64, reason: u32),
>;

#[derive(Clone, Copy)]
struct LostCallback {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char, u64, u32),
    userdata: *mut c_void,
}

// SAFETY: the caller of polylock_lock_on_lost promises that `userdata` may be used from the
// runtime thread that runs the callback (documented on that function).
unsafe impl Send for LostCallback {}

/// A lost hold's reason: its lease (fixed, no watchdog) ran out.
pub const POLYLOCK_LOST_EXPIRED: u32 = 1;
/// A lost hold's reason: its entry disappeared from the server (deleted, force-unlocked, its
/// connection killed).
pub const POLYLOCK_LOST_DELETED: u32 = 2;
/// A lost hold's reason: the watchdog could not renew it before its lease ran out.
pub const POLYLOCK_LOST_RENEWAL_FAILED: u32 = 3;
/// A lost hold's reason: the session that held it expired (ZooKeeper, etcd).
pub const POLYLOCK_LOST_SESSION_EXPIRED: u32 = 4;
/// A lost hold's reason: its client was closed while it was held.
pub const POLYLOCK_LOST_CLIENT_CLOSED: u32 = 5;

/// `polylock_lock_remaining_lease_ms`: nobody holds the lock (Redis's `PTTL` -2).
pub const POLYLOCK_LEASE_NOT_HELD: i64 = -2;
/// `polylock_lock_remaining_lease_ms`: held with no expiry (ZooKeeper, SQL session locks;
/// Redis's `PTTL` -1).
pub const POLYLOCK_LEASE_NO_EXPIRY: i64 = -1;

/// `wait_ms` for `polylock_lock_acquire`: wait until acquired.
pub const POLYLOCK_WAIT_FOREVER: i64 = -1;
/// `wait_ms` for `polylock_lock_acquire`: one attempt.
pub const POLYLOCK_NO_WAIT: i64 = 0;
/// `lease_ms` for `polylock_lock_acquire`: the watchdog keeps the lock while the client lives.
pub const POLYLOCK_WATCHDOG: i64 = -1;

/// `mode` for `polylock_client_read_write_lock`: the read half (shared).
pub const POLYLOCK_READ: u32 = 1;
/// `mode` for `polylock_client_read_write_lock`: the write half (exclusive).
pub const POLYLOCK_WRITE: u32 = 2;

/// Make a lock handle of `kind` on `name` and store it in `*out`.
///
/// # Safety
/// `client` is NULL or a live client handle; `name` is NULL or NUL-terminated; `out` is NULL or
/// writable.
unsafe fn new_lock(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_lock,
    kind: polylock::Result<LockKind>,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        new_handle(client, name, out, |c, n| {
            let lock = c.lock_of_kind(n, kind?)?;
            Ok(polylock_lock {
                name: CString::new(n).expect("validated: no NUL"),
                sources: vec![Source {
                    client: c.clone(),
                    name: Arc::from(n),
                    kind: HoldKind::Lock(lock.kind()),
                }],
                inner: lock,
                callbacks: Arc::default(),
                listening: Mutex::new(None),
            })
        })
    }
}

/// A reentrant lock handle for `name` (a znode path on ZooKeeper). Free it with
/// `polylock_lock_free`. `name` must be NUL-terminated UTF-8, 1 to 65536 bytes; it is copied.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_new(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_lock,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe { new_lock(client, name, out, Ok(LockKind::Reentrant)) }
}

/// A non-reentrant mutex on ZooKeeper (Curator's InterProcessSemaphoreMutex): one holder; any
/// owner of this client may release it. `POLYLOCK_UNSUPPORTED` on Redis.
#[no_mangle]
pub unsafe extern "C" fn polylock_mutex_new(
    client: *mut polylock_client,
    path: *const c_char,
    out: *mut *mut polylock_lock,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe { new_lock(client, path, out, Ok(LockKind::Mutex)) }
}

/// A fair lock for `name`: granted in the order of asking, across polylock and Redisson clients
/// (Redisson's RFairLock on Redis; a waiter that stops asking loses its place after
/// `polylock_options.fair_wait_timeout_ms`, 5 s by default, where Redisson waits 5 minutes). On
/// ZooKeeper every lock is fair: this is the ordinary lock. A `polylock_lock`; free it with
/// `polylock_lock_free`.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_fair_lock(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_lock,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe { new_lock(client, name, out, Ok(LockKind::Fair)) }
}

/// A multi-lock over `n` locks (from any clients, Redis and ZooKeeper mixed): acquire takes all of
/// them or none within one wait, release gives back all. Members are taken in one order (by name,
/// then server, then kind) whatever order they are given in, so two multi-locks over overlapping
/// sets never deadlock. The handle in `*out` is a `polylock_lock` that every lock function
/// accepts; free it with `polylock_lock_free`. The member handles stay usable (and must be freed
/// by the caller): `polylock_lock_fencing_token` on a member gives that member's token.
/// `POLYLOCK_INVALID_ARGUMENT` for `n == 0` or the same lock twice.
#[no_mangle]
pub unsafe extern "C" fn polylock_multi_lock_new(
    locks: *const *mut polylock_lock,
    n: usize,
    out: *mut *mut polylock_lock,
) -> polylock_result {
    boundary(|| {
        if out.is_null() {
            return null("out");
        }
        // SAFETY: `out` is writable (caller contract).
        unsafe { *out = std::ptr::null_mut() };
        if locks.is_null() {
            return null("locks");
        }
        let mut members = Vec::with_capacity(n.min(1024));
        let mut sources = Vec::new();
        for i in 0..n {
            // SAFETY: `locks` has `n` entries, each NULL or a live handle (caller contract).
            match unsafe { lock_ref(*locks.add(i)) } {
                Ok(l) => {
                    members.push(l.inner.clone());
                    sources.extend(l.sources.iter().cloned());
                }
                Err(r) => return r,
            }
        }
        match MultiLock::new(members) {
            Ok(lock) => {
                let handle = polylock_lock {
                    name: CString::new(lock.name()).expect("member names have no NUL"),
                    inner: lock,
                    sources,
                    callbacks: Arc::default(),
                    listening: Mutex::new(None),
                };
                // SAFETY: checked above.
                unsafe { *out = Box::into_raw(Box::new(handle)) };
                POLYLOCK_OK
            }
            Err(e) => fail(&e),
        }
    })
}

/// One half of the read-write lock `name` (Redisson's RReadWriteLock on Redis, Curator's
/// InterProcessReadWriteLock on ZooKeeper): `mode` is `POLYLOCK_READ` (shared with other
/// readers) or `POLYLOCK_WRITE` (exclusive). The handle in `*out` is a `polylock_lock` that every
/// lock function accepts; free it with `polylock_lock_free`.
///
/// Both halves are reentrant per owner. An owner holding the write half may take the read half
/// and keep it after releasing the write half (a downgrade). An owner holding the read half that
/// acquires the write half gets `POLYLOCK_UPGRADE_NOT_SUPPORTED` at once.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_read_write_lock(
    client: *mut polylock_client,
    name: *const c_char,
    mode: u32,
    out: *mut *mut polylock_lock,
) -> polylock_result {
    let kind = match mode {
        POLYLOCK_READ => Ok(LockKind::Read),
        POLYLOCK_WRITE => Ok(LockKind::Write),
        m => Err(polylock::Error::new(
            polylock::ErrorKind::InvalidArgument,
            format!("mode must be POLYLOCK_READ (1) or POLYLOCK_WRITE (2), got {m}"),
        )),
    };
    // SAFETY: forwarded contract.
    unsafe { new_lock(client, name, out, kind) }
}

/// Free a lock handle. NULL is allowed. Holds still held through it stay held (release them
/// first); its lost callbacks are not called any more.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_free(lock: *mut polylock_lock) {
    let _ = boundary(|| {
        if !lock.is_null() {
            // SAFETY: a pointer from polylock_lock_new, freed once (caller contract).
            let l = unsafe { Box::from_raw(lock) };
            l.callbacks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            // Ends the listening tasks.
            drop(l.listening.lock().unwrap_or_else(|e| e.into_inner()).take());
        }
        POLYLOCK_OK
    });
}

/// An owner id for the calling thread: stable for the thread's life, never reused by another
/// thread of this process (unlike pthread ids). Any other `uint64_t` works as an owner too.
#[no_mangle]
pub extern "C" fn polylock_owner_current_thread() -> u64 {
    polylock::owner::current_thread()
}

/// # Safety
/// `lock` is NULL or a live lock handle.
pub(crate) unsafe fn lock_ref<'a>(
    lock: *mut polylock_lock,
) -> Result<&'a polylock_lock, polylock_result> {
    // SAFETY: a live lock handle or NULL (caller contract).
    unsafe { lock.as_ref() }.ok_or_else(|| null("lock"))
}

/// Start the tasks that call the handle's lost callbacks: one per client it reports on, reading
/// that client's one stream of lost holds, so that every hold of the handle's name and kind is
/// watched, also one taken before the first callback was registered.
fn listen(l: &polylock_lock) {
    let mut listening = l.listening.lock().unwrap_or_else(|e| e.into_inner());
    if listening.is_some() {
        return;
    }
    let (stop, stopped) = tokio::sync::watch::channel(());
    *listening = Some(stop);
    let mut clients: Vec<&Client> = Vec::new();
    for s in &l.sources {
        if !clients.iter().any(|c| c.id() == s.client.id()) {
            clients.push(&s.client);
        }
    }
    let multi = l.inner.is_multi();
    for client in clients {
        let mut events = client.lost_events();
        let mut stopped = stopped.clone();
        let watched: Vec<(Arc<str>, HoldKind)> = l
            .sources
            .iter()
            .filter(|s| s.client.id() == client.id())
            .map(|s| (s.name.clone(), s.kind))
            .collect();
        let callbacks = Arc::downgrade(&l.callbacks);
        let name = l.name.clone();
        let lock = l.inner.clone();
        runtime::handle().spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                let event = tokio::select! {
                    e = events.recv() => e,
                    _ = stopped.changed() => return,
                };
                let event = match event {
                    Ok(e) => e,
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                };
                if !watched
                    .iter()
                    .any(|(n, k)| **n == *event.name && *k == event.kind)
                {
                    continue;
                }
                // A multi-lock's listeners hear of a member's loss by an owner holding the
                // multi-lock (it has a hold record of every member until released).
                if multi && lock.lost_signal(event.owner).is_none() {
                    continue;
                }
                let Some(callbacks) = callbacks.upgrade() else {
                    return;
                };
                let cbs: Vec<LostCallback> =
                    callbacks.lock().unwrap_or_else(|e| e.into_inner()).clone();
                drop(callbacks);
                for c in cbs {
                    let call = AssertUnwindSafe(|| {
                        // SAFETY: a function pointer and userdata registered by the caller, who
                        // promised they stay valid while the lock handle lives.
                        unsafe {
                            (c.cb)(
                                c.userdata,
                                name.as_ptr(),
                                event.owner,
                                event.reason.number(),
                            )
                        }
                    });
                    // A panic cannot cross the C frame; this only guards our own code around it.
                    let _ = catch_unwind(call);
                }
            }
        });
    }
}

/// Register `cb` to be called when a hold of this lock (its name and kind) by an owner of its
/// client is lost: taken through this handle or another, before the registration or after it.
/// For a multi-lock: a member's hold lost by an owner that holds the multi-lock.
///
/// Thread: `cb` runs on one of polylock's runtime threads (named `polylock-worker`), never on the
/// thread that acquired. `name` is valid only during the call. `userdata` is passed back as is;
/// it must stay valid, and be safe to use from that thread, until the handle is freed. The
/// callback may call non-blocking functions (`polylock_lock_fencing_token`, ...); blocking ones
/// (acquire, release, ...) return `POLYLOCK_INVALID_STATE` there instead of deadlocking.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_on_lost(
    lock: *mut polylock_lock,
    cb: polylock_lost_callback,
    userdata: *mut c_void,
) -> polylock_result {
    boundary(|| {
        // SAFETY: caller contract.
        let l = match unsafe { lock_ref(lock) } {
            Ok(l) => l,
            Err(r) => return r,
        };
        let Some(cb) = cb else {
            return null("cb");
        };
        l.callbacks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(LostCallback { cb, userdata });
        listen(l);
        POLYLOCK_OK
    })
}
