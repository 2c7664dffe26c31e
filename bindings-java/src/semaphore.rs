//! The calls on a semaphore: Redisson's `RSemaphore` / Curator's `InterProcessSemaphoreV2`
//! (`DistributedSemaphore`, its `Lease`s). Waiting acquires complete a `NativeFuture` (see
//! `wait`). (Redisson's `RPermitExpirableSemaphore`, `DistributedPermitExpirableSemaphore`, has
//! its natives generated from core/api/permit_semaphore.toml.)
//!
//! A `Lease` is a handle on the `Permits` of one acquire (a `Box<LeaseHandle>` as a `long`), so
//! that returning it gives back exactly its own ZooKeeper leases (and reports their loss), not
//! any of this client's.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jint, jlong, JNI_FALSE};
use jni::JNIEnv;
use polylock::{Permits, Semaphore, Wait};

use crate::client::client;
use crate::convert::{block, jbool, permits, string};
use crate::error::{entry, Result};
use crate::wait::{start, Won};

/// The core handle of the semaphore `name` (name checked, no round trip).
fn semaphore(env: &mut JNIEnv, handle: jlong, name: &JString) -> Result<Semaphore> {
    let c = client(handle)?;
    c.semaphore(&string(env, name, "semaphore name")?)
}

/// The permits of one acquire, behind a `Lease`.
struct LeaseHandle {
    semaphore: Semaphore,
    permits: Permits,
}

impl LeaseHandle {
    fn into_raw(semaphore: Semaphore, permits: Permits) -> jlong {
        Box::into_raw(Box::new(LeaseHandle { semaphore, permits })) as jlong
    }

    /// Take back a handle from `into_raw`.
    ///
    /// # Safety
    /// `lease` came from `into_raw` and is taken back once.
    unsafe fn from_raw(lease: jlong) -> Box<LeaseHandle> {
        // SAFETY: see above.
        unsafe { Box::from_raw(lease as *mut LeaseHandle) }
    }

    async fn give_back(self) -> Result<()> {
        self.permits.release(&self.semaphore).await
    }
}

/// What Java gets for permits taken: 1, or a lease handle when `lease` is true.
fn taken(s: Semaphore, p: Permits, lease: bool) -> Won {
    if lease {
        let handle = LeaseHandle::into_raw(s, p);
        // SAFETY: run only if Java never takes (or refuses) the handle, which it then forgets.
        Won::value(handle).give_back(async move {
            let _ = unsafe { LeaseHandle::from_raw(handle) }.give_back().await;
        })
    } else {
        Won::value(1).give_back(async move {
            let _ = p.release(&s).await;
        })
    }
}

/// Check a semaphore's name (and that the server has semaphores: `Unsupported`).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_validateSemaphore<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) {
    entry(&mut env, (), |env| semaphore(env, handle, &name).map(drop))
}

/// Set the number of permits if nobody set it yet; true if this call set it.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreTrySetPermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    n: jint,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |env| {
        let n = polylock::args::permits_from_i64(n.into(), "permits")?;
        let s = semaphore(env, handle, &name)?;
        Ok(jbool(block(async move { s.try_set_permits(n).await })?))
    })
}

/// Add permits (or take free ones away with a negative `delta`).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreAddPermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    delta: jint,
) {
    entry(&mut env, (), |env| {
        let s = semaphore(env, handle, &name)?;
        block(async move { s.add_permits(delta.into()).await })
    })
}

/// The permits free now.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreAvailable<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let s = semaphore(env, handle, &name)?;
        block(async move { s.available_permits().await })
    })
}

/// One try for `n` permits: 0 if they were not free, else 1, or a lease handle when `lease`.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreTryAcquire<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    n: jint,
    lease: jboolean,
) -> jlong {
    entry(&mut env, 0, |env| {
        let s = semaphore(env, handle, &name)?;
        let n = permits(n)?;
        let t = s.clone();
        match block(async move { t.try_acquire(n, Wait::Never).await })? {
            None => Ok(0),
            Some(p) if lease != JNI_FALSE => Ok(LeaseHandle::into_raw(s, p)),
            Some(_) => Ok(1),
        }
    })
}

/// Start a waiting acquire of `n` permits that completes `future` with 1 (or a lease handle when
/// `lease`), or TIMEOUT; permits got as it was cancelled are given back. Returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreAcquireAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    n: jint,
    wait_ms: jlong,
    lease: jboolean,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let s = semaphore(env, handle, &name)?;
        let (n, wait) = (permits(n)?, Wait::from_millis(wait_ms, "wait time")?);
        let lease = lease != JNI_FALSE;
        start(env, &future, async move {
            let p = s.acquire(n, wait).await?;
            Ok(taken(s, p, lease))
        })
    })
}

/// Give back `n` permits (Redis: anyone may; ZooKeeper: `n` of this client's leases).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreRelease<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    n: jint,
) {
    entry(&mut env, (), |env| {
        let s = semaphore(env, handle, &name)?;
        let n = permits(n)?;
        block(async move { s.release(n).await })
    })
}

/// Take every permit free now; how many.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreDrain<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let s = semaphore(env, handle, &name)?;
        block(async move { s.drain_permits().await })
    })
}

/// The permits this client holds (ZooKeeper leases; 0 on Redis). Local.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreHeld<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jint {
    entry(&mut env, 0, |env| {
        let s = semaphore(env, handle, &name)?;
        Ok(s.held_permits().min(i32::MAX as u32) as jint)
    })
}

/// Give back a lease's permits (exactly its own leases on ZooKeeper) and free its handle, which
/// is freed however the release ends.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_leaseReturn<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lease: jlong,
) {
    entry(&mut env, (), |_| {
        if lease == 0 {
            return Ok(());
        }
        // SAFETY: a handle from `semaphoreTryAcquire`/`semaphoreAcquireAsync` that Java returns
        // once (Lease.close is idempotent).
        let handle = unsafe { LeaseHandle::from_raw(lease) };
        block(async move { handle.give_back().await })
    })
}

/// Whether a lease's permits were lost (ZooKeeper: its session ended). Local.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_leaseIsLost<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lease: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        if lease == 0 {
            return Ok(JNI_FALSE);
        }
        // SAFETY: a live handle (Java checks that the lease is not returned, under its lock).
        let handle = unsafe { &*(lease as *const LeaseHandle) };
        Ok(jbool(handle.permits.is_lost()))
    })
}
