//! `polylock_election`: a candidate in a leader election (Curator's LeaderLatch on ZooKeeper,
//! etcd's concurrency.Election, a Redisson lock plus a leader record on Redis).

use std::ffi::c_char;

use polylock::Election;

use crate::client::polylock_client;
use crate::result::{
    boundary, copy_out, null, on, polylock_result, put, text, wait_arg, POLYLOCK_OK,
    POLYLOCK_TIMEOUT,
};
use crate::semaphore::new_handle;

/// A candidate in one election (opaque). Thread-safe; one candidate however many threads use
/// it. It keeps its client alive.
pub struct polylock_election {
    election: Election,
}

/// Run `f` on a live election and store its answer in `*out`.
///
/// # Safety
/// `election` is NULL or live; `out` NULL or writable.
unsafe fn with<T: Send + 'static, F>(
    election: *mut polylock_election,
    f: impl FnOnce(Election) -> F,
    out: *mut T,
) -> polylock_result
where
    F: std::future::Future<Output = polylock::Result<T>> + Send + 'static,
{
    // SAFETY: forwarded contract.
    unsafe { on(election, "election", out, |e| Ok(f(e.election.clone()))) }
}

/// The result of a call that answers a term or "the wait ran out": `POLYLOCK_OK` with the term
/// in `*out_term`, `POLYLOCK_TIMEOUT` for none, or the call's own failure.
///
/// # Safety
/// `out_term` is NULL or writable.
unsafe fn term_or_timeout(
    r: polylock_result,
    term: Option<u64>,
    out_term: *mut u64,
) -> polylock_result {
    match (r, term) {
        (POLYLOCK_OK, Some(t)) => {
            if !out_term.is_null() {
                // SAFETY: writable (caller contract).
                unsafe { *out_term = t };
            }
            POLYLOCK_OK
        }
        (POLYLOCK_OK, None) => POLYLOCK_TIMEOUT,
        (r, _) => r,
    }
}

/// A candidate in the election `name` (a znode path on ZooKeeper) that campaigns as `identity`
/// (non-empty UTF-8, at most 1024 bytes). `POLYLOCK_UNSUPPORTED` on SQL and RedLock clients.
/// Free it with `polylock_election_free`.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_new(
    client: *mut polylock_client,
    name: *const c_char,
    identity: *const c_char,
    out: *mut *mut polylock_election,
) -> polylock_result {
    // SAFETY: caller contract.
    let identity = match unsafe { text(identity, "identity") } {
        Ok(i) => i.to_string(),
        Err(r) => return r,
    };
    // SAFETY: forwarded contract.
    unsafe {
        new_handle(client, name, out, |c, n| {
            Ok(polylock_election {
                election: c.election(n, &identity)?,
            })
        })
    }
}

/// Free a candidate (a leader it still is stays leader until its client closes; resign first).
/// NULL is allowed.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_free(election: *mut polylock_election) {
    let _ = boundary(|| {
        if !election.is_null() {
            // SAFETY: from polylock_election_new, freed once (caller contract).
            drop(unsafe { Box::from_raw(election) });
        }
        POLYLOCK_OK
    });
}

/// Campaign until this candidate leads: `POLYLOCK_OK` with the term (a fencing token, greater
/// for every new leader) in `*out_term`, or `POLYLOCK_TIMEOUT` when `wait_ms` (-1 forever, 0
/// only if nobody leads, or a positive number of ms) ran out (the candidacy is withdrawn).
/// Leading already: `POLYLOCK_OK` with the same term. Blocks the calling thread.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_campaign(
    election: *mut polylock_election,
    wait_ms: i64,
    out_term: *mut u64,
) -> polylock_result {
    let wait = match wait_arg(wait_ms) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let mut term: Option<u64> = None;
    // SAFETY: forwarded contract.
    let r = unsafe {
        with(
            election,
            |e| async move { Ok(e.campaign(wait).await?.map(|l| l.term)) },
            &mut term,
        )
    };
    // SAFETY: forwarded contract on `out_term`.
    unsafe { term_or_timeout(r, term, out_term) }
}

/// Whether this candidate leads now (local, no round trip; false once the leadership is lost).
#[no_mangle]
pub unsafe extern "C" fn polylock_election_is_leader(
    election: *mut polylock_election,
    out: *mut bool,
) -> polylock_result {
    boundary(|| {
        // SAFETY: caller contract.
        let Some(e) = (unsafe { election.as_ref() }) else {
            return null("election");
        };
        // SAFETY: caller contract on `out`.
        unsafe { put(out, e.election.is_leader()) }
    })
}

/// Stop leading; `*out_was` says whether this candidate led. `POLYLOCK_LOCK_LOST` if its
/// leadership had been lost meanwhile.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_resign(
    election: *mut polylock_election,
    out_was: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe { with(election, |e| async move { e.resign().await }, out_was) }
}

/// Who leads (any client may ask): `*out_has` false when nobody does; otherwise the leader's
/// identity is copied into `buf` (at most `len` bytes, NUL-terminated when `len` > 0; the full
/// length in `*out_len`, as snprintf counts) and its term into `*out_term`. `buf`, `out_len`
/// and `out_term` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_leader(
    election: *mut polylock_election,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
    out_term: *mut u64,
    out_has: *mut bool,
) -> polylock_result {
    let mut leader = None;
    // SAFETY: forwarded contract.
    let r = unsafe { with(election, |e| async move { e.leader().await }, &mut leader) };
    if r != POLYLOCK_OK {
        return r;
    }
    boundary(|| {
        let (identity, term) = match &leader {
            Some(l) => (l.identity.as_str(), l.term),
            None => ("", 0),
        };
        let n = copy_out(identity, buf, len);
        // SAFETY: each pointer NULL or writable (caller contract).
        unsafe {
            if !out_len.is_null() {
                *out_len = n;
            }
            if !out_term.is_null() {
                *out_term = term;
            }
            put(out_has, leader.is_some())
        }
    })
}

/// The candidates' identities in their order, the leader first (ZooKeeper and etcd queue their
/// candidates; Redis keeps no queue and lists the leader only), each followed by a NUL byte.
/// The list is copied into `buf` only when all of it fits in `len` bytes (else `buf` is left as
/// it was: call again with `*out_len` bytes); `*out_len` gets the bytes the whole list takes
/// and `*out_count` the number of candidates. `buf`, `out_len` and `out_count` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_candidates(
    election: *mut polylock_election,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
    out_count: *mut usize,
) -> polylock_result {
    let mut candidates = Vec::new();
    // SAFETY: forwarded contract.
    let r = unsafe {
        with(
            election,
            |e| async move { e.candidates().await },
            &mut candidates,
        )
    };
    if r != POLYLOCK_OK {
        return r;
    }
    boundary(|| {
        let size: usize = candidates.iter().map(|c| c.len() + 1).sum();
        if !buf.is_null() && size <= len {
            let mut at = 0;
            for c in &candidates {
                // SAFETY: `buf` has room for `len` >= `size` bytes (caller contract); an
                // identity holds no NUL (the core refuses one).
                unsafe {
                    std::ptr::copy_nonoverlapping(c.as_ptr(), buf.add(at).cast::<u8>(), c.len());
                    *buf.add(at + c.len()) = 0;
                }
                at += c.len() + 1;
            }
        }
        // SAFETY: each pointer NULL or writable (caller contract).
        unsafe {
            if !out_len.is_null() {
                *out_len = size;
            }
            if !out_count.is_null() {
                *out_count = candidates.len();
            }
        }
        POLYLOCK_OK
    })
}

/// Wait until the leader differs from the one seen (`seen_term`, 0 for "nobody"), at most
/// `wait_ms` (-1 forever): `POLYLOCK_OK` with the new leader's term in `*out_term` (0: nobody
/// leads now), or `POLYLOCK_TIMEOUT`. Blocks the calling thread.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_next_change(
    election: *mut polylock_election,
    seen_term: u64,
    wait_ms: i64,
    out_term: *mut u64,
) -> polylock_result {
    let wait = match wait_arg(wait_ms) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let mut change: Option<u64> = None;
    // SAFETY: forwarded contract.
    let r = unsafe {
        with(
            election,
            |e| async move {
                let now = e.leader().await?;
                let now_term = now.as_ref().map_or(0, |l| l.term);
                if now_term != seen_term {
                    return Ok(Some(now_term)); // changed already
                }
                Ok(e.next_change(now.as_ref(), wait)
                    .await?
                    .map(|next| next.map_or(0, |l| l.term)))
            },
            &mut change,
        )
    };
    // SAFETY: forwarded contract on `out_term`.
    unsafe { term_or_timeout(r, change, out_term) }
}
