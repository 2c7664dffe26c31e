//! What a Java candidate has beyond its generated glue (gen/election.rs): the wait for a lost
//! leadership, behind `DistributedLeaderLatch`'s listener.

use jni::objects::{JClass, JObject};
use jni::sys::jlong;
use jni::JNIEnv;

use crate::error::entry;
use crate::gen::election::handle;
use crate::wait::{start, Won};

/// Start a wait that completes `future` when the current leadership ends: 1 when it was lost
/// (session expired, lease not renewed, key deleted), 0 when it ended otherwise (resigned) or
/// there is none. Returns the cancel handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_electionLostAsync<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    election: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let leading = handle(election)?.leadership();
        start(env, &future, async move {
            Ok(Won::value(match leading {
                Some(l) => i64::from(l.lost.wait().await.is_some()),
                None => 0,
            }))
        })
    })
}
