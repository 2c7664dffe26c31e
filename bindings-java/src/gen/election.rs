// Generated from core/api/election.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! The JNI entry points of `Native.election*`: A candidate in a leader election (Curator's
//! LeaderLatch on ZooKeeper, etcd's concurrency.Election, a Redisson lock plus a leader record on
//! Redis). An election is a native handle (a `Box<Election>` from `electionNew`, freed once by
//! `electionFree`); a waiting call completes a `NativeFuture`.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jlong, jobjectArray, JNI_FALSE};
use jni::JNIEnv;
use polylock::{Election, Wait};

use crate::client::client;
use crate::convert::{block, jbool, string, string_array};
use crate::error::{entry, Result};
use crate::handle::{borrow, free, into_handle};
use crate::wait::{start, Won};

/// The election behind a handle from `electionNew` (NativeHandle keeps it alive during the call).
pub(crate) fn handle<'a>(handle: jlong) -> Result<&'a Election> {
    borrow(handle, "the leader latch")
}

/// An election for `name` on the client `client`; its handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    client_handle: jlong,
    name: JString<'l>,
    identity: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let c = client(client_handle)?;
        let name = string(env, &name, "election name")?;
        let identity = string(env, &identity, "participant id")?;
        Ok(into_handle(c.election(&name, &identity)?))
    })
}

/// Free an election's handle (0 is allowed).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionFree<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    election: jlong,
) {
    entry(&mut env, (), |_| {
        free::<Election>(election);
        Ok(())
    })
}

/// The term (a fencing token, greater for every new leader) while this candidate leads, else none.
/// -1 for none. Local: no round trip.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionTerm<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    election: jlong,
) -> jlong {
    entry(&mut env, -1, |_| {
        let v = handle(election)?.term();
        Ok(v.map_or(-1, |v| v.min(i64::MAX as u64) as jlong))
    })
}

/// Campaign until this candidate leads: its term, or none when the wait ran out (the candidacy is
/// then withdrawn). Leading already: the same term.
/// Started: completes `future` with the term, or 0 when the wait ran out; returns the cancel
/// handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionCampaignAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    election: jlong,
    wait_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let wait = Wait::from_millis(wait_ms, "wait time")?;
        let inner = handle(election)?.clone();
        start(env, &future, async move {
            Ok(match inner.campaign(wait).await? {
                Some(l) => Won::value(l.term as i64).give_back(async move {
                    let _ = inner.resign().await;
                }),
                None => Won::value(0),
            })
        })
    })
}

/// Stop leading: true if this candidate led; LOCK_LOST if its leadership had been lost meanwhile.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionResign<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    election: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let inner = handle(election)?.clone();
        Ok(jbool(block(async move { inner.resign().await })?))
    })
}

/// The leader now (any client may ask): its identity and term, or none.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionLeader<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    election: jlong,
) -> jobjectArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let inner = handle(election)?.clone();
        match block(async move { inner.leader().await })? {
            Some(l) => string_array(env, &[l.identity, l.term.to_string()]),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// The candidates' identities in their order, the leader first (ZooKeeper and etcd queue their
/// candidates; Redis keeps no queue and lists the leader only).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionCandidates<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    election: jlong,
) -> jobjectArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let inner = handle(election)?.clone();
        let v = block(async move { inner.candidates().await })?;
        string_array(env, &v)
    })
}
