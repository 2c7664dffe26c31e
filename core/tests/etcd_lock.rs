//! The etcd lock (etcd's concurrency.Mutex format) against a real etcd: the key format, re-entry,
//! owners of one client, FIFO, fencing tokens, the lost signal, cleanup of timed-out and
//! cancelled waits, the read-write lock, the semaphore, status and typed errors.

mod etcd_common;
#[path = "common/sem.rs"]
#[allow(dead_code)]
mod sem;

use std::time::{Duration, Instant};

use etcd_common::*;
use polylock::{
    owner, AcquireOptions, Client, ErrorKind, HoldMode, HoldState, MultiLock, Released, Wait,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_per_holder_in_etcds_format_and_reentry_in_the_client() {
    let c = client().await;
    let name = unique("format");
    let lock = c.lock(&name).unwrap();
    let me = owner::fresh();
    let a = lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    let b = lock.acquire(me, AcquireOptions::forever()).await.unwrap();
    assert_eq!((a.hold_count, b.hold_count), (1, 2));
    assert_eq!(a.fencing_token, b.fencing_token);
    let k = keys(&name).await;
    assert_eq!(k.len(), 1, "one key per holder: {k:?}");
    // concurrency.Mutex: NAME/<session lease id in lowercase hex>, on the lease; its value (empty
    // in etcd's Go client, read by nobody) is the holder's identity.
    assert_ne!(k[0].lease, 0, "attached to a lease");
    assert_eq!(k[0].key, format!("{name}/{:x}", k[0].lease));
    assert_eq!(k[0].value, c.identity());
    assert_eq!(
        a.fencing_token, k[0].create_revision as u64,
        "token = create revision"
    );
    assert_eq!(lock.release(me).await.unwrap(), Released::StillHeld(1));
    assert!(lock.is_locked().await.unwrap());
    assert_eq!(lock.release(me).await.unwrap(), Released::Freed);
    assert!(keys(&name).await.is_empty());
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(
        lock.release(me).await.unwrap_err().kind(),
        ErrorKind::NotOwner
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_owners_of_one_client_exclude_each_other_with_a_lease_each() {
    let c = client().await;
    let name = unique("owners");
    let lock = c.lock(&name).unwrap();
    let (a, b) = (owner::fresh(), owner::fresh());
    let held = lock.acquire(a, AcquireOptions::forever()).await.unwrap();
    assert!(
        lock.try_acquire(b, None).await.unwrap().is_none(),
        "b is excluded"
    );
    assert_eq!(keys(&name).await.len(), 1, "b's try left no key");
    let l2 = lock.clone();
    let waiter = tokio::spawn(async move {
        l2.acquire(b, AcquireOptions::wait_for(Duration::from_secs(10)))
            .await
    });
    let k = wait_keys(&name, 2, Duration::from_secs(5)).await;
    assert_eq!(k.len(), 2, "b queued: {k:?}");
    assert_ne!(k[0].lease, k[1].lease, "a lease per contender of one name");
    assert_eq!(k[1].key, format!("{name}/{:x}", k[1].lease));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "b waits while a holds");
    lock.release(a).await.unwrap();
    let got = waiter.await.unwrap().unwrap();
    assert!(got.fencing_token > held.fencing_token);
    assert_eq!(lock.fencing_token(b), Some(got.fencing_token));
    lock.release(b).await.unwrap();
    assert!(keys(&name).await.is_empty());
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_or_cancelled_wait_leaves_no_key() {
    let (c1, c2) = (client().await, client().await);
    let name = unique("cleanup");
    let (l1, l2) = (c1.lock(&name).unwrap(), c2.lock(&name).unwrap());
    l1.acquire(1, AcquireOptions::forever()).await.unwrap();
    let t = Instant::now();
    let e = l2
        .acquire(2, AcquireOptions::wait_for(Duration::from_millis(300)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert!(t.elapsed() >= Duration::from_millis(300));
    // Gone before the call returned, on the server, seen by another client (etcdctl).
    assert_eq!(etcdctl_keys(&name).len(), 1, "only the holder's key");
    // A cancelled wait (its future dropped) deletes its key in the background.
    let l3 = l2.clone();
    let task = tokio::spawn(async move { l3.acquire(3, AcquireOptions::forever()).await });
    assert_eq!(wait_keys(&name, 2, Duration::from_secs(5)).await.len(), 2);
    task.abort();
    let left = wait_keys(&name, 1, Duration::from_secs(3)).await;
    assert_eq!(
        left.len(),
        1,
        "the cancelled waiter's key is gone: {left:?}"
    );
    assert_eq!(etcdctl_keys(&name).len(), 1);
    // The next waiter is not stuck behind a leftover.
    let l4 = l2.clone();
    let next = tokio::spawn(async move {
        l4.acquire(4, AcquireOptions::wait_for(Duration::from_secs(10)))
            .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let released = Instant::now();
    l1.release(1).await.unwrap();
    next.await.unwrap().unwrap();
    // Woken by its watch on the released key, well before its 10 s wait would end.
    assert!(released.elapsed() < Duration::from_secs(5));
    l2.release(4).await.unwrap();
    assert!(etcdctl_keys(&name).is_empty());
    c1.close().await.unwrap();
    c2.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_get_the_lock_in_fifo_order_with_rising_tokens() {
    let holder = client().await;
    let name = unique("fifo");
    let first = holder
        .lock(&name)
        .unwrap()
        .acquire(1, AcquireOptions::forever())
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut clients = Vec::new();
    for i in 0..3u64 {
        let c = client().await;
        let lock = c.fair_lock(&name).unwrap();
        let tx = tx.clone();
        tokio::spawn(async move {
            let got = lock
                .acquire(10 + i, AcquireOptions::forever())
                .await
                .unwrap();
            tx.send((i, got.fencing_token)).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            lock.release(10 + i).await.unwrap();
        });
        // Queue in this order: the next waiter asks once this one's key is on the server.
        assert_eq!(
            wait_keys(&name, 2 + i as usize, Duration::from_secs(5))
                .await
                .len(),
            2 + i as usize
        );
        clients.push(c);
    }
    holder.lock(&name).unwrap().release(1).await.unwrap();
    let mut order = Vec::new();
    let mut last = first.fencing_token;
    for _ in 0..3 {
        let (i, token) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(token > last, "tokens rise: {token} after {last}");
        last = token;
        order.push(i);
    }
    assert_eq!(order, [0, 1, 2]);
    assert!(wait_keys(&name, 0, Duration::from_secs(3)).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_deleted_by_someone_else_is_told_as_lost() {
    let c = client().await;
    let name = unique("deleted");
    let lock = c.lock(&name).unwrap();
    let got = lock.acquire(7, AcquireOptions::forever()).await.unwrap();
    let k = keys(&name).await;
    raw().await.delete(k[0].key.as_str(), None).await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(3), got.lost.wait())
        .await
        .expect("told within 3 s");
    assert!(reason.is_some(), "lost, not released");
    assert!(matches!(got.lost.state(), HoldState::Lost(_)));
    assert_eq!(
        lock.release(7).await.unwrap_err().kind(),
        ErrorKind::LockLost
    );
    // The lock works again afterwards.
    lock.acquire(7, AcquireOptions::try_once()).await.unwrap();
    lock.release(7).await.unwrap();
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_lease_loses_every_hold_and_a_new_lease_follows() {
    let c = client_ttl(2).await;
    let (n1, n2) = (unique("revoked-a"), unique("revoked-b"));
    let h1 = c
        .lock(&n1)
        .unwrap()
        .acquire(1, AcquireOptions::forever())
        .await
        .unwrap();
    let h2 = c
        .lock(&n2)
        .unwrap()
        .acquire(1, AcquireOptions::forever())
        .await
        .unwrap();
    let lease = keys(&n1).await[0].lease;
    assert_eq!(
        keys(&n2).await[0].lease,
        lease,
        "one session lease for both names"
    );
    raw().await.lease_revoke(lease).await.unwrap();
    for h in [&h1, &h2] {
        tokio::time::timeout(Duration::from_secs(5), h.lost.wait())
            .await
            .expect("told within 5 s")
            .expect("lost");
    }
    assert_eq!(
        c.lock(&n1).unwrap().release(1).await.unwrap_err().kind(),
        ErrorKind::LockLost
    );
    let again = c
        .lock(&n1)
        .unwrap()
        .acquire(2, AcquireOptions::try_once())
        .await
        .unwrap();
    let k = keys(&n1).await;
    assert_ne!(k[0].lease, lease, "a new lease");
    assert!(again.fencing_token > h1.fencing_token);
    c.close().await.unwrap();
    assert!(keys(&n1).await.is_empty(), "close revokes the leases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_readers_share_writers_exclude_in_one_queue() {
    let (c1, c2, c3) = (client().await, client().await, client().await);
    let name = unique("rw");
    let (rw1, rw2, rw3) = (
        c1.read_write_lock(&name).unwrap(),
        c2.read_write_lock(&name).unwrap(),
        c3.read_write_lock(&name).unwrap(),
    );
    rw1.read_lock()
        .acquire(1, AcquireOptions::forever())
        .await
        .unwrap();
    rw2.read_lock()
        .acquire(2, AcquireOptions::try_once())
        .await
        .unwrap();
    let k = keys(&name).await;
    assert_eq!(k.len(), 2);
    assert!(k.iter().all(|k| k.value == "polylock:read"));
    assert!(rw3
        .write_lock()
        .try_acquire(3, None)
        .await
        .unwrap()
        .is_none());
    // A writer queues behind the readers; a later reader queues behind the writer.
    let w = rw3.write_lock();
    let writer = tokio::spawn(async move { w.acquire(3, AcquireOptions::forever()).await });
    assert_eq!(wait_keys(&name, 3, Duration::from_secs(5)).await.len(), 3);
    let r = rw1.read_lock();
    let late_reader = tokio::spawn(async move { r.acquire(4, AcquireOptions::forever()).await });
    assert_eq!(wait_keys(&name, 4, Duration::from_secs(5)).await.len(), 4);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!writer.is_finished() && !late_reader.is_finished());
    let st = rw1.read_lock().status().await.unwrap();
    assert_eq!(st.mode, Some(HoldMode::Read));
    assert_eq!((st.holders.len(), st.waiters.len()), (2, 2));
    rw1.read_lock().release(1).await.unwrap();
    rw2.read_lock().release(2).await.unwrap();
    writer.await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !late_reader.is_finished(),
        "the late reader waits for the writer"
    );
    // An upgrade is refused at once; a downgrade keeps the key's place.
    rw3.read_lock()
        .acquire(3, AcquireOptions::try_once())
        .await
        .unwrap();
    rw3.write_lock().release(3).await.unwrap();
    late_reader.await.unwrap().unwrap();
    let k = keys(&name).await;
    assert_eq!(k.len(), 2, "{k:?}");
    assert!(k.iter().all(|k| k.value == "polylock:read"), "{k:?}");
    assert_eq!(
        rw1.write_lock()
            .acquire(4, AcquireOptions::try_once())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::UpgradeNotSupported
    );
    rw3.read_lock().release(3).await.unwrap();
    rw1.read_lock().release(4).await.unwrap();
    assert!(keys(&name).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_the_n_first_keys_hold() {
    let (c1, c2) = (client().await, client().await);
    let name = unique("sem");
    let (s1, s2) = (c1.semaphore(&name).unwrap(), c2.semaphore(&name).unwrap());
    assert!(s1.try_set_permits(2).await.unwrap());
    assert!(!s2.try_set_permits(5).await.unwrap());
    s1.acquire(2, Wait::Forever).await.unwrap();
    assert_eq!(s2.available_permits().await.unwrap(), 0);
    let e = s2.acquire(1, Wait::For(Duration::from_millis(200))).await;
    assert_eq!(e.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(keys(&name).await.len(), 2, "the timed-out wait left no key");
    let s = s2.clone();
    let waiter = tokio::spawn(async move { s.acquire(1, Wait::Forever).await });
    assert_eq!(wait_keys(&name, 3, Duration::from_secs(5)).await.len(), 3);
    s1.release(1).await.unwrap();
    tokio::time::timeout(Duration::from_secs(3), waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let st = s1.status().await.unwrap();
    assert_eq!(
        (st.permits, st.available, st.holders.len()),
        (Some(2), 0, 2)
    );
    s1.release(1).await.unwrap();
    s2.release(1).await.unwrap();
    assert!(keys(&name).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_acquires_of_every_permit_take_turns() {
    let name = unique("sem-all");
    sem::two_acquires_of_every_permit_take_turns(&client().await, &client().await, &name).await;
    assert!(keys(&name).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lists_contenders_in_order_with_lease_ids_and_ttl() {
    let (c1, c2) = (client().await, client().await);
    let name = unique("status");
    c1.lock(&name)
        .unwrap()
        .acquire(1, AcquireOptions::forever())
        .await
        .unwrap();
    let l2 = c2.lock(&name).unwrap();
    let w = tokio::spawn(async move { l2.acquire(2, AcquireOptions::forever()).await });
    let k = wait_keys(&name, 2, Duration::from_secs(5)).await;
    let st = c1.lock(&name).unwrap().status().await.unwrap();
    assert!(st.locked);
    assert_eq!(st.holders.len(), 1);
    let owner = &st.holders[0].owner;
    assert!(
        owner.starts_with(&format!("{:x}@{} ttl=", k[0].lease, k[0].create_revision)),
        "{owner}"
    );
    assert_eq!(st.waiters.len(), 1);
    assert!(st.waiters[0].starts_with(&format!("{:x}@{}", k[1].lease, k[1].create_revision)));
    // Each key's value is its client's identity (etcdctl reads keys and revisions only).
    assert_eq!(st.holders[0].identity.as_deref(), Some(c1.identity()));
    assert_eq!(st.waiter_identities, vec![Some(c2.identity().to_string())]);
    assert_eq!(k[0].value, c1.identity());
    let ttl = st.ttl.expect("the holder's lease TTL");
    assert!(
        ttl <= Duration::from_secs(10) && ttl > Duration::ZERO,
        "{ttl:?}"
    );
    assert!(c1.lock(&name).unwrap().force_unlock().await.unwrap());
    w.await.unwrap().unwrap();
    c2.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_names_a_lock_whose_keys_lie_under_this_ones_prefix() {
    // etcd's Mutex reads the whole prefix `name/`: the keys of a lock `name/sub` lie there, and
    // an owner of `name` would queue behind them.
    let (c1, c2) = (client().await, client().await);
    let name = unique("prefix");
    let sub = format!("{name}/sub");
    let l1 = c1.lock(&name).unwrap();
    l1.acquire(1, AcquireOptions::forever()).await.unwrap();
    assert!(l1.status().await.unwrap().shared_with.is_empty());
    let l2 = c2.lock(&sub).unwrap();
    l2.acquire(2, AcquireOptions::forever()).await.unwrap();
    wait_keys(&name, 2, Duration::from_secs(5)).await;
    assert_eq!(
        l1.status().await.unwrap().shared_with,
        std::slice::from_ref(&sub)
    );
    assert!(l2.status().await.unwrap().shared_with.is_empty());
    l1.release(1).await.unwrap();
    l2.release(2).await.unwrap();
    c1.close().await.unwrap();
    c2.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lock_takes_all_or_none_on_etcd() {
    let (c1, c2) = (client().await, client().await);
    let (a, b) = (unique("multi-a"), unique("multi-b"));
    let m1 = MultiLock::new(vec![c1.lock(&a).unwrap(), c1.lock(&b).unwrap()]).unwrap();
    m1.acquire(1, AcquireOptions::forever()).await.unwrap();
    c2.lock(&b).unwrap(); // a handle alone takes nothing
    let m2 = MultiLock::new(vec![c2.lock(&a).unwrap(), c2.lock(&b).unwrap()]).unwrap();
    assert!(m2.try_acquire(2, None).await.unwrap().is_none());
    assert_eq!((keys(&a).await.len(), keys(&b).await.len()), (1, 1));
    m1.release(1).await.unwrap();
    m2.acquire(2, AcquireOptions::try_once()).await.unwrap();
    m2.release(2).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_urls_dead_servers_wrong_passwords_and_missing_kinds_are_typed_errors() {
    for bad in ["etcd://", "etcd://h", "etcd://h:1?x=1", "etcds://h:1"] {
        let e = Client::connect(bad).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}: {e}");
    }
    let e = Client::connect("etcd://127.0.0.1:1").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    let tls =
        std::env::var("POLYLOCK_ETCD_TLS_URL").expect("POLYLOCK_ETCD_TLS_URL (servers.sh env)");
    let wrong = tls.replacen(":polylock-pw@", ":wrong@", 1);
    let e = Client::connect(&wrong).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert!(
        !e.message().contains("wrong"),
        "no password in messages: {e}"
    );
    let c = client().await;
    let name = unique("kinds");
    let e = c
        .lock(&name)
        .unwrap()
        .acquire(
            1,
            AcquireOptions::forever().with_lease(Duration::from_secs(5)),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert_eq!(c.mutex(&name).unwrap_err().kind(), ErrorKind::Unsupported);
    assert_eq!(
        c.permit_expirable_semaphore(&name).unwrap_err().kind(),
        ErrorKind::Unsupported
    );
    assert_eq!(
        c.count_down_latch(&name).unwrap_err().kind(),
        ErrorKind::Unsupported
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_password_lock_and_release() {
    let tls =
        std::env::var("POLYLOCK_ETCD_TLS_URL").expect("POLYLOCK_ETCD_TLS_URL (servers.sh env)");
    let c = Client::connect(&tls).await.unwrap();
    let name = unique("tls");
    let lock = c.lock(&name).unwrap();
    let got = lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    assert!(got.fencing_token > 0);
    assert!(lock.is_locked().await.unwrap());
    lock.release(1).await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
    c.close().await.unwrap();
}
