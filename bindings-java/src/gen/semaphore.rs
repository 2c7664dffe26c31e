// Generated from core/api/semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit; change the
// table or the generator and run it again (CI fails on a difference).
//! The JNI entry points of `Native.semaphore*`: A counting semaphore (Redisson's RSemaphore on
//! Redis, Curator's InterProcessSemaphoreV2 on ZooKeeper, a lease per permit on etcd). On Redis
//! permits belong to nobody: anyone may release them, and a crashed holder's permits are not given
//! back (the semaphore of expiring permits gives them back). On ZooKeeper and etcd they are leases
//! of this client, freed when its session ends. A semaphore is a native handle (a `Box<Semaphore>`
//! from `semaphoreNew`, freed once by `semaphoreFree`); a waiting call completes a `NativeFuture`.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jlong, JNI_FALSE};
use jni::JNIEnv;
use polylock::{Permits, Semaphore, Wait};

use crate::client::client;
use crate::convert::{block, jbool, string};
use crate::error::{entry, Result};
use crate::handle::{borrow, free, into_handle};
use crate::wait::{start, Won};

/// The semaphore behind a handle from `semaphoreNew` (NativeHandle keeps it alive during the call).
pub(crate) fn handle<'a>(handle: jlong) -> Result<&'a Semaphore> {
    borrow(handle, "this semaphore handle")
}

/// A semaphore for `name` on the client `client`; its handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreNew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    client_handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let c = client(client_handle)?;
        let name = string(env, &name, "semaphore name")?;
        Ok(into_handle(c.semaphore(&name)?))
    })
}

/// Free a semaphore's handle (0 is allowed).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreFree<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
) {
    entry(&mut env, (), |_| {
        free::<Semaphore>(semaphore);
        Ok(())
    })
}

/// The permits of one acquire, behind a Java `Lease` (a `Box<LeaseHandle>` as a `long`).
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

/// What Java gets for permits taken: 1, or a lease handle when `lease` is true; given back if the
/// call was cancelled meanwhile.
fn taken(semaphore: Semaphore, p: Permits, lease: bool) -> Won {
    if lease {
        let handle = LeaseHandle::into_raw(semaphore, p);
        // SAFETY: run only if Java never takes (or refuses) the handle, which it then forgets.
        Won::value(handle).give_back(async move {
            let _ = unsafe { LeaseHandle::from_raw(handle) }.give_back().await;
        })
    } else {
        Won::value(1).give_back(async move {
            let _ = p.release(&semaphore).await;
        })
    }
}

/// Give back a lease's permits (exactly its own leases on ZooKeeper and etcd) and free its
/// handle, which is freed however the release ends.
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
        // SAFETY: a handle from a try or a wait that Java returns once (Lease.close is
        // idempotent).
        let handle = unsafe { LeaseHandle::from_raw(lease) };
        block(async move { handle.give_back().await })
    })
}

/// Whether a lease's permits were lost (ZooKeeper, etcd: its session ended). Local.
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

/// How many permits this client holds (its leases on ZooKeeper and etcd; 0 on Redis). Local: no
/// round trip.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreHeldPermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
) -> jlong {
    entry(&mut env, 0, |_| {
        let v = handle(semaphore)?.held_permits();
        Ok(jlong::from(v))
    })
}

/// Set the number of permits if nobody set it yet; true if this call set it.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreTrySetPermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
    permits: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        let permits = polylock::args::permits_from_i64(permits, "permits")?;
        let inner = handle(semaphore)?.clone();
        Ok(jbool(block(async move {
            inner.try_set_permits(permits).await
        })?))
    })
}

/// Add permits, or take free ones away with a negative `delta`.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreAddPermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
    delta: jlong,
) {
    entry(&mut env, (), |_| {
        let inner = handle(semaphore)?.clone();
        block(async move { inner.add_permits(delta).await })
    })
}

/// Take `permits` permits (at least 1) at once, waiting up to the wait; nothing is taken when it
/// runs out. On ZooKeeper and etcd they are leases of this client.
/// Started: completes `future` with 1, or a lease handle when `lease` (TIMEOUT when the wait ran
/// out); returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreAcquireAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
    permits: jlong,
    wait_ms: jlong,
    lease: jboolean,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let permits = polylock::args::permits_from_i64(permits, "permits")?;
        let wait = Wait::from_millis(wait_ms, "wait time")?;
        let inner = handle(semaphore)?.clone();
        start(env, &future, async move {
            let p = inner.acquire(permits, wait).await?;
            Ok(taken(inner, p, lease != JNI_FALSE))
        })
    })
}

/// One try for `permits` permits (all or none).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreTryAcquire<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
    permits: jlong,
    lease: jboolean,
) -> jlong {
    entry(&mut env, 0, |_| {
        let permits = polylock::args::permits_from_i64(permits, "permits")?;
        let giver = handle(semaphore)?.clone();
        let inner = handle(semaphore)?.clone();
        match block(async move { inner.try_acquire(permits, Wait::Never).await })? {
            None => Ok(0),
            Some(p) if lease != JNI_FALSE => Ok(LeaseHandle::into_raw(giver, p)),
            Some(_) => Ok(1),
        }
    })
}

/// Give back `permits` permits (at least 1). Redis: anyone may. ZooKeeper and etcd: that many of
/// this client's leases, NOT_OWNER if it holds fewer.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreRelease<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
    permits: jlong,
) {
    entry(&mut env, (), |_| {
        let permits = polylock::args::permits_from_i64(permits, "permits")?;
        let inner = handle(semaphore)?.clone();
        block(async move { inner.release(permits).await })
    })
}

/// The permits free now.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreAvailablePermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
) -> jlong {
    entry(&mut env, 0, |_| {
        let inner = handle(semaphore)?.clone();
        block(async move { inner.available_permits().await })
    })
}

/// Take every permit free now; how many (on ZooKeeper and etcd, leases of this client).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_semaphoreDrainPermits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    semaphore: jlong,
) -> jlong {
    entry(&mut env, 0, |_| {
        let inner = handle(semaphore)?.clone();
        block(async move { inner.drain_permits().await })
    })
}
