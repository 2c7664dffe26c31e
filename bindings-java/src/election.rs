//! The calls on a candidate in a leader election, behind `DistributedLeaderLatch`. A candidate is
//! a native handle (a `Box<Election>`: one owner for its whole life); the campaign and the wait
//! for a lost leadership complete a `NativeFuture`.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jlong, jobjectArray, JNI_FALSE};
use jni::JNIEnv;
use polylock::{Election, Wait};

use crate::client::client;
use crate::convert::{block, jbool, string};
use crate::error::{entry, jni_error, Result};
use crate::handle::{borrow, free, into_handle};
use crate::wait::{start, Won};

/// The candidate behind a handle from `electionNew`.
fn election<'a>(handle: jlong) -> Result<&'a Election> {
    // Freed by DistributedLeaderLatch.close, after its last call.
    borrow(handle, "the leader latch")
}

/// A candidate in the election `name` that campaigns as `id`; its handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    id: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let c = client(handle)?;
        let name = string(env, &name, "election path")?;
        let id = string(env, &id, "participant id")?;
        Ok(into_handle(c.election(&name, &id)?))
    })
}

/// Free a candidate's handle (Java resigns first).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionFree<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) {
    entry(&mut env, (), |_| {
        free::<Election>(handle);
        Ok(())
    })
}

/// Start a campaign that completes `future` with the term when elected, 0 when `wait_ms` ran
/// out. A result cancelled as it arrived is resigned. Returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionCampaignAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    wait_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let e = election(handle)?.clone();
        let wait = Wait::from_millis(wait_ms, "wait time")?;
        start(env, &future, async move {
            Ok(match e.campaign(wait).await? {
                Some(l) => Won::value(l.term as i64).give_back(async move {
                    let _ = e.resign().await;
                }),
                None => Won::value(0),
            })
        })
    })
}

/// Start a wait that completes `future` when the current leadership ends: 1 when it was lost
/// (session expired, lease not renewed, key deleted), 0 when it ended otherwise (resigned) or
/// there is none. Returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionLostAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let leading = election(handle)?.leadership();
        start(env, &future, async move {
            Ok(Won::value(match leading {
                Some(l) => i64::from(l.lost.wait().await.is_some()),
                None => 0,
            }))
        })
    })
}

/// Stop leading; true if this candidate led.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionResign<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let e = election(handle)?.clone();
        Ok(jbool(block(async move { e.resign().await })?))
    })
}

/// The term while leading, else -1 (local).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionTerm<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) -> jlong {
    entry(&mut env, -1, |_| {
        Ok(election(handle)?
            .leadership()
            .map_or(-1, |l| l.term as jlong))
    })
}

/// The leader as `{identity, term}`, or null when nobody leads.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionLeader<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) -> jobjectArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let e = election(handle)?.clone();
        match block(async move { e.leader().await })? {
            Some(l) => string_array(env, &[l.identity, l.term.to_string()]),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// The candidates' ids in order, the leader first.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionCandidates<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) -> jobjectArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let e = election(handle)?.clone();
        let ids = block(async move { e.candidates().await })?;
        string_array(env, &ids)
    })
}

fn string_array(env: &mut JNIEnv, items: &[String]) -> Result<jobjectArray> {
    let array = env
        .new_object_array(items.len() as i32, "java/lang/String", JObject::null())
        .map_err(jni_error)?;
    for (i, item) in items.iter().enumerate() {
        let s = env.new_string(item).map_err(jni_error)?;
        env.set_object_array_element(&array, i as i32, &s)
            .map_err(jni_error)?;
        env.delete_local_ref(s).map_err(jni_error)?;
    }
    Ok(array.into_raw())
}
