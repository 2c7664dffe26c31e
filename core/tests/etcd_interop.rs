//! polylock and the real `etcdctl lock` (etcd's concurrency.Mutex) exclude each other on one
//! name, both ways; a polylock waiter behind etcdctl wakes within milliseconds of its release;
//! etcdctl's ETCD_LOCK_REV is below the fencing token polylock gets next.

mod etcd_common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use etcd_common::*;
use polylock::{owner, AcquireOptions};
use tokio::io::{AsyncBufReadExt, BufReader};

/// `etcdctl lock NAME -- sh -c SCRIPT`, its stdout piped.
fn etcdctl_lock(name: &str, script: &str) -> tokio::process::Child {
    let mut cmd = etcdctl();
    cmd.args(["lock", name, "--", "sh", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .expect("run etcdctl (scripts/servers.sh install)")
}

/// etcdctl's `ETCD_LOCK_KEY ETCD_LOCK_REV` line.
async fn first_line(child: &mut tokio::process::Child) -> (String, i64) {
    let out = child.stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("etcdctl printed its lock within 10 s")
        .unwrap()
        .expect("a line");
    let (key, rev) = line.split_once(' ').expect("KEY REV");
    (key.to_string(), rev.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_lock_waits_while_polylock_holds() {
    let c = client().await;
    let name = unique("interop-a");
    let lock = c.lock(&name).unwrap();
    let me = owner::fresh();
    let held = lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    let mut ctl = etcdctl_lock(&name, "echo \"$ETCD_LOCK_KEY $ETCD_LOCK_REV\"");
    // etcdctl queues behind polylock's key and runs nothing while polylock holds.
    let k = wait_keys(&name, 2, Duration::from_secs(5)).await;
    assert_eq!(k.len(), 2, "etcdctl queued: {k:?}");
    assert_eq!(k[0].create_revision as u64, held.fencing_token);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(ctl.try_wait().unwrap().is_none(), "etcdctl waits");
    let released = Instant::now();
    lock.release(me).await.unwrap();
    let (key, rev) = first_line(&mut ctl).await;
    let waited = released.elapsed();
    assert!(ctl.wait().await.unwrap().success());
    assert_eq!(key, k[1].key, "etcdctl's key is the one that queued");
    assert_eq!(
        key,
        format!("{name}/{:x}", k[1].lease),
        "same format both sides"
    );
    assert!(rev as u64 > held.fencing_token);
    assert!(
        waited < Duration::from_secs(3),
        "etcdctl ran {waited:?} after the release"
    );
    assert!(wait_keys(&name, 0, Duration::from_secs(3)).await.is_empty());
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_waits_while_etcdctl_holds_and_wakes_at_its_release() {
    let c = client().await;
    let name = unique("interop-b");
    let mut ctl = etcdctl_lock(&name, "echo \"$ETCD_LOCK_KEY $ETCD_LOCK_REV\"; sleep 1");
    let (key, lock_rev) = first_line(&mut ctl).await;
    let lock = c.lock(&name).unwrap();
    assert!(
        lock.try_acquire(1, None).await.unwrap().is_none(),
        "etcdctl holds"
    );
    assert_eq!(keys(&name).await.len(), 1, "the try left no key");
    let st = lock.status().await.unwrap();
    let lease = keys(&name).await[0].lease;
    assert!(
        st.holders[0].owner.starts_with(&format!("{lease:x}@")),
        "{st:?}"
    );
    // Watch etcdctl's key from now on: the moment of its release, as the server tells it.
    let mut raw = raw().await;
    let mut stream = raw.watch(key.as_str(), None).await.unwrap();
    let deleted = tokio::spawn(async move {
        loop {
            let r = stream.message().await.unwrap().unwrap();
            if r.events()
                .iter()
                .any(|e| e.event_type() == etcd_client::EventType::Delete)
            {
                return Instant::now();
            }
        }
    });
    let l = lock.clone();
    let waiter = tokio::spawn(async move {
        let got = l
            .acquire(2, AcquireOptions::wait_for(Duration::from_secs(15)))
            .await;
        (got, Instant::now())
    });
    let (got, acquired_at) = waiter.await.unwrap();
    let got = got.unwrap();
    let deleted_at = deleted.await.unwrap();
    assert!(ctl.wait().await.unwrap().success());
    let late = acquired_at.saturating_duration_since(deleted_at);
    println!("polylock acquired {late:?} after etcdctl's key was deleted");
    // Without the watch the waiter would wait out its 15 s: half of it is the bound.
    assert!(
        late < Duration::from_millis(7500),
        "woken {late:?} after the release"
    );
    assert!(
        lock_rev < got.fencing_token as i64,
        "ETCD_LOCK_REV {lock_rev} is below polylock's token {}",
        got.fencing_token
    );
    lock.release(2).await.unwrap();
    assert!(keys(&name).await.is_empty());
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_readers_exclude_etcdctl_and_etcdctl_excludes_readers() {
    let c = client().await;
    let name = unique("interop-rw");
    let rw = c.read_write_lock(&name).unwrap();
    rw.read_lock()
        .acquire(1, AcquireOptions::forever())
        .await
        .unwrap();
    rw.read_lock()
        .acquire(2, AcquireOptions::try_once())
        .await
        .unwrap();
    let mut ctl = etcdctl_lock(&name, "echo \"$ETCD_LOCK_KEY $ETCD_LOCK_REV\"; sleep 0.5");
    assert_eq!(wait_keys(&name, 3, Duration::from_secs(5)).await.len(), 3);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        ctl.try_wait().unwrap().is_none(),
        "etcdctl waits for both readers"
    );
    rw.read_lock().release(1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(ctl.try_wait().unwrap().is_none(), "and for the second");
    rw.read_lock().release(2).await.unwrap();
    first_line(&mut ctl).await;
    // etcdctl holds now: a reader (a newer key) waits for it.
    assert!(rw.read_lock().try_acquire(3, None).await.unwrap().is_none());
    rw.read_lock()
        .acquire(3, AcquireOptions::wait_for(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(ctl.wait().await.unwrap().success());
    rw.read_lock().release(3).await.unwrap();
    c.close().await.unwrap();
}
