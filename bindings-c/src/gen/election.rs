// Generated from core/api/election.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! `polylock_election`: A candidate in a leader election (Curator's LeaderLatch on ZooKeeper,
//! etcd's concurrency.Election, a Redisson lock plus a leader record on Redis).

use std::ffi::c_char;

use polylock::{Election, Wait};

use crate::client::{new_handle, polylock_client};
use crate::result::{
    boundary, null, on, polylock_result, put, put_leader, put_texts, term_or_timeout, text,
    POLYLOCK_OK,
};

/// A candidate in a leader election (Curator's LeaderLatch on ZooKeeper, etcd's
/// concurrency.Election, a Redisson lock plus a leader record on Redis). Opaque and thread-safe; it
/// keeps its client alive.
pub struct polylock_election {
    inner: Election,
}

/// A candidate in the election `name` (a znode path on ZooKeeper) that campaigns as `identity`
/// (non-empty UTF-8, at most 1024 bytes). `POLYLOCK_UNSUPPORTED` on SQL and RedLock clients. Free
/// it with `polylock_election_free`.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_new(
    client: *mut polylock_client,
    name: *const c_char,
    identity: *const c_char,
    out: *mut *mut polylock_election,
) -> polylock_result {
    // SAFETY: caller contract.
    let identity = match unsafe { text(identity, "identity") } {
        Ok(v) => v.to_string(),
        Err(r) => return r,
    };
    // SAFETY: forwarded contract.
    unsafe {
        new_handle(client, name, out, |c, n| {
            Ok(polylock_election {
                inner: c.election(n, &identity)?,
            })
        })
    }
}

/// Free a candidate (a leader it still is stays leader until its client closes: resign first). NULL
/// is allowed.
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

/// Whether this candidate leads now (false once its leadership is lost). Local: no round trip.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_is_leader(
    election: *mut polylock_election,
    out: *mut bool,
) -> polylock_result {
    boundary(|| {
        // SAFETY: caller contract.
        let Some(h) = (unsafe { election.as_ref() }) else {
            return null("election");
        };
        // SAFETY: caller contract on `out`.
        unsafe { put(out, h.inner.is_leader()) }
    })
}

/// Campaign until this candidate leads: its term, or none when the wait ran out (the candidacy is
/// then withdrawn). Leading already: the same term. `wait_ms`: -1 forever, 0 one try, a positive
/// number of ms. Blocks the calling thread. `POLYLOCK_OK` with the term in `*out_term`,
/// `POLYLOCK_TIMEOUT` when the wait ran out.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_campaign(
    election: *mut polylock_election,
    wait_ms: i64,
    out_term: *mut u64,
) -> polylock_result {
    let mut term: Option<u64> = None;
    // SAFETY: forwarded contract.
    let r = unsafe {
        on(election, "election", &mut term, |h| {
            let wait = Wait::from_millis(wait_ms, "wait_ms")?;
            let inner = h.inner.clone();
            Ok(async move { Ok(inner.campaign(wait).await?.map(|l| l.term)) })
        })
    };
    // SAFETY: forwarded contract on `out_term`.
    unsafe { term_or_timeout(r, term, out_term) }
}

/// Stop leading: true if this candidate led; LOCK_LOST if its leadership had been lost meanwhile.
/// The answer goes to `*out`.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_resign(
    election: *mut polylock_election,
    out: *mut bool,
) -> polylock_result {
    // SAFETY: forwarded contract.
    unsafe {
        on(election, "election", out, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.resign().await })
        })
    }
}

/// The leader now (any client may ask): its identity and term, or none. `*out_has` false when there
/// is none; otherwise its identity is copied into `buf` (at most `len` bytes, NUL-terminated when
/// `len` > 0; the full length in `*out_len`, as snprintf counts) and its term into `*out_term`.
/// `buf`, `out_len` and `out_term` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_leader(
    election: *mut polylock_election,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
    out_term: *mut u64,
    out_has: *mut bool,
) -> polylock_result {
    let mut answer = None;
    // SAFETY: forwarded contract.
    let r = unsafe {
        on(election, "election", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.leader().await })
        })
    };
    // SAFETY: forwarded contract on the out-parameters.
    unsafe { put_leader(r, answer, buf, len, out_len, out_term, out_has) }
}

/// The candidates' identities in their order, the leader first (ZooKeeper and etcd queue their
/// candidates; Redis keeps no queue and lists the leader only). Each is followed by a NUL byte; the
/// list is copied into `buf` only when all of it fits in `len` bytes (else `buf` is left as it was:
/// call again with `*out_len` bytes); `*out_len` gets the bytes the whole list takes and
/// `*out_count` their number. `buf`, `out_len` and `out_count` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_candidates(
    election: *mut polylock_election,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
    out_count: *mut usize,
) -> polylock_result {
    let mut answer = Vec::new();
    // SAFETY: forwarded contract.
    let r = unsafe {
        on(election, "election", &mut answer, |h| {
            let inner = h.inner.clone();
            Ok(async move { inner.candidates().await })
        })
    };
    // SAFETY: forwarded contract on the out-parameters.
    unsafe { put_texts(r, &answer, buf, len, out_len, out_count) }
}

/// Wait until the leader differs from the one seen (named by its term, 0 for nobody): the leader
/// then (none: nobody leads), or no change when the wait ran out. `wait_ms`: -1 forever, 0 one try,
/// a positive number of ms. Blocks the calling thread. `POLYLOCK_OK` with the leader's term then in
/// `*out_term` (0: nobody leads), `POLYLOCK_TIMEOUT` when the wait ran out.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_next_change(
    election: *mut polylock_election,
    seen_term: u64,
    wait_ms: i64,
    out_term: *mut u64,
) -> polylock_result {
    let mut term: Option<u64> = None;
    // SAFETY: forwarded contract.
    let r = unsafe {
        on(election, "election", &mut term, |h| {
            let wait = Wait::from_millis(wait_ms, "wait_ms")?;
            let inner = h.inner.clone();
            Ok(async move {
                Ok(inner
                    .next_change_after(seen_term, wait)
                    .await?
                    .map(|l| l.map_or(0, |l| l.term)))
            })
        })
    };
    // SAFETY: forwarded contract on `out_term`.
    unsafe { term_or_timeout(r, term, out_term) }
}
