// Generated from core/api/fence.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `polylock_fence`: A fence: fenced writes of Redis commands under a lock's fencing token (Redis
//! only).

use std::ffi::c_char;

use polylock::Fence;

use crate::client::{new_handle, polylock_client};
use crate::reply::{commands, polylock_reply, put_replies};
use crate::result::{boundary, on, polylock_result, POLYLOCK_OK};

/// A fence: fenced writes of Redis commands under a lock's fencing token (Redis only). Opaque and
/// thread-safe; it keeps its client alive.
pub struct polylock_fence {
    inner: Fence,
}

/// The fence of `name`: fenced writes to the lock server's own Redis (`POLYLOCK_UNSUPPORTED` on
/// ZooKeeper, etcd, SQL and RedLock; data in a SQL database is fenced by the guard row in the
/// application's own transaction). Free it with `polylock_fence_free`.
#[no_mangle]
pub unsafe extern "C" fn polylock_fence_new(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_fence,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        new_handle(client, name, out, |c, n| {
            Ok(polylock_fence { inner: c.fence(n)? })
        })
    }
}

/// Free a fence handle. NULL is allowed.
#[no_mangle]
pub unsafe extern "C" fn polylock_fence_free(fence: *mut polylock_fence) {
    let _ = boundary(|| {
        if !fence.is_null() {
            // SAFETY: from polylock_fence_new, freed once (caller contract).
            drop(unsafe { Box::from_raw(fence) });
        }
        POLYLOCK_OK
    });
}

/// Run the commands (each a command's name and its arguments) in one atomic step if `token` is not
/// smaller than the largest token this fence accepted, recording it; their replies, in order. A
/// smaller token fails with STALE_TOKEN and nothing runs; the same token may write any number of
/// times. In a Redis Cluster the commands' keys must carry the name's hash tag ({name}). The
/// replies go to `*out` as one array reply (a `polylock_reply` tree: read it with
/// `polylock_reply_type`, `_integer`, `_string`, `_count`, `_item`; free it with
/// `polylock_reply_free`); `out` may be NULL when they are not wanted. The commands are `ncommands`
/// commands, the i-th of `argcs[i]` arguments, all the arguments one after the other in `argv` with
/// their lengths in `argvlens` (hiredis's argv/argvlen; `argvlens` may be NULL for NUL-terminated
/// arguments).
#[no_mangle]
pub unsafe extern "C" fn polylock_fence_write(
    fence: *mut polylock_fence,
    token: u64,
    ncommands: usize,
    argcs: *const usize,
    argv: *const *const c_char,
    argvlens: *const usize,
    out: *mut *mut polylock_reply,
) -> polylock_result {
    // SAFETY: caller contract on the arrays.
    let commands = match unsafe { commands(ncommands, argcs, argv, argvlens) } {
        Ok(v) => v,
        Err(r) => return r,
    };
    let mut answer = Vec::new();
    // SAFETY: forwarded contract.
    let r = unsafe {
        on(fence, "fence", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.write(token, &commands).await })
        })
    };
    // SAFETY: forwarded contract on `out`.
    unsafe { put_replies(r, answer, out) }
}

/// The largest token this fence accepted, or none. The token goes to `*out`; 0 when there is none.
#[no_mangle]
pub unsafe extern "C" fn polylock_fence_accepted(
    fence: *mut polylock_fence,
    out: *mut u64,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(fence, "fence", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { Ok(inner.accepted().await?.unwrap_or(0)) })
        })
    }
}
