//! Leader election on ZooKeeper (Curator's LeaderLatch nodes), etcd (concurrency.Election keys)
//! and Redis (a Redisson lock plus a leader record), against the real servers of
//! scripts/servers.sh: one leader at a time, terms that rise, observers that see every leader
//! in order, a lost leadership told, withdrawn candidacies that leave nothing behind, and typed
//! errors.

mod common;
#[path = "etcd_common/mod.rs"]
mod etcd_common;

use std::time::{Duration, Instant};

use polylock::{Client, Election, ErrorKind, Leader, Wait};

const WITHIN: Duration = Duration::from_secs(10);

/// Wait until exactly one of `cands` leads; its index. Fails on two leaders at once.
async fn the_one_leader(cands: &[Election]) -> usize {
    let until = Instant::now() + WITHIN;
    loop {
        let leading: Vec<usize> = (0..cands.len()).filter(|&i| cands[i].is_leader()).collect();
        assert!(leading.len() <= 1, "two leaders at once: {leading:?}");
        if let [i] = leading[..] {
            return i;
        }
        assert!(Instant::now() < until, "no leader within {WITHIN:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Follow the leader of `observer`'s election until it has seen `n` leaders; the leaders seen.
fn observe(observer: Election, n: usize) -> tokio::task::JoinHandle<Vec<Leader>> {
    tokio::spawn(async move {
        let mut seen: Option<Leader> = None;
        let mut leaders = Vec::new();
        while leaders.len() < n {
            let change = observer
                .next_change(seen.as_ref(), Wait::For(WITHIN))
                .await
                .unwrap()
                .expect("a change within the wait");
            if let Some(l) = &change {
                leaders.push(l.clone());
            }
            seen = change;
        }
        leaders
    })
}

/// Three candidates on three clients and an observer on a fourth: one leader at a time, each
/// leader's identity and term as any client reads them, terms that rise, the observer sees the
/// same leaders in the same order; when the last resigns, nobody leads.
async fn one_leader_at_a_time(clients: Vec<Client>, name: &str) {
    let observer = clients[0].election(name, "observer").unwrap();
    assert_eq!(observer.leader().await.unwrap(), None);
    let watching = observe(observer.clone(), 3);
    let cands: Vec<Election> = (1..4)
        .map(|i| {
            clients[i]
                .election(name, &format!("candidate-{i}"))
                .unwrap()
        })
        .collect();
    let campaigns: Vec<_> = cands
        .iter()
        .map(|c| {
            let c = c.clone();
            tokio::spawn(async move { c.campaign(Wait::For(WITHIN * 2)).await })
        })
        .collect();
    let mut order = Vec::new();
    let mut last_term = 0;
    for round in 0..3 {
        let i = the_one_leader(&cands).await;
        let leading = cands[i].leadership().unwrap();
        assert!(
            leading.term > last_term,
            "round {round}: term {} after {last_term}",
            leading.term
        );
        last_term = leading.term;
        let read = observer.leader().await.unwrap().expect("a leader");
        assert_eq!(
            read,
            Leader {
                identity: cands[i].identity().to_string(),
                term: leading.term
            }
        );
        if round == 0 {
            // A campaign by the leader changes nothing.
            let again = cands[i].campaign(Wait::Never).await.unwrap().unwrap();
            assert_eq!(again.term, leading.term);
        }
        order.push(read);
        // Lead long enough for the observer to look.
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(cands[i].resign().await.unwrap());
        assert!(!cands[i].is_leader());
        assert!(leading.lost.is_lost() || !cands[i].is_leader());
        assert!(
            !cands[i].resign().await.unwrap(),
            "a second resign has nothing to do"
        );
    }
    for c in campaigns {
        assert!(c.await.unwrap().unwrap().is_some());
    }
    assert_eq!(observer.leader().await.unwrap(), None);
    let seen = tokio::time::timeout(WITHIN, watching)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen, order, "the observer saw every leader, in order");
}

/// A campaign that waits in vain is withdrawn: nobody but the leader is left campaigning.
async fn a_timed_out_campaign_is_withdrawn(a: &Client, b: &Client, name: &str) -> Election {
    let leader = a.election(name, "first").unwrap();
    assert!(leader.campaign(Wait::Forever).await.unwrap().is_some());
    let other = b.election(name, "second").unwrap();
    let t = Instant::now();
    assert!(other
        .campaign(Wait::For(Duration::from_millis(300)))
        .await
        .unwrap()
        .is_none());
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert!(!other.is_leader());
    assert_eq!(leader.candidates().await.unwrap(), ["first"]);
    // A wait past what an Instant holds (Python's timeout=1e19) is a typed error, never a panic
    // (next_change took the deadline of an unchecked wait).
    for huge in [Duration::MAX, Duration::from_secs(u64::MAX / 2)] {
        let e = leader.next_change(None, Wait::For(huge)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        let e = other.campaign(Wait::For(huge)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    leader
}

/// Typed errors for bad identities.
fn bad_identities_are_typed_errors(c: &Client, name: &str) {
    for bad in [
        String::new(),
        "a\0b".to_string(),
        "x".repeat(polylock::MAX_IDENTITY_LEN + 1),
    ] {
        let e = c.election(name, &bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}: {e}");
    }
    assert_eq!(
        c.election("", "a").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

/// Wait until `e`'s leadership is told lost.
async fn told_lost(e: &Election, lost: &polylock::LostSignal) {
    let reason = tokio::time::timeout(WITHIN, lost.wait())
        .await
        .expect("the loss told within the wait");
    assert!(reason.is_some());
    assert!(!e.is_leader());
    assert_eq!(
        e.resign().await.unwrap_err().kind(),
        ErrorKind::LockLost,
        "resigning a lost leadership says so once"
    );
    assert!(!e.resign().await.unwrap());
}

// ---- ZooKeeper ----

async fn zk_clients(n: usize) -> Vec<Client> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(common::zk_client().await);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_one_leader_at_a_time() {
    let path = common::zk_path("election");
    one_leader_at_a_time(zk_clients(4).await, &path).await;
    common::zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_candidates_are_curators_latch_nodes_with_their_ids() {
    let c = zk_clients(2).await;
    let path = common::zk_path("election-format");
    let a = c[0].election(&path, "node-a").unwrap();
    let b = c[1].election(&path, "node-b").unwrap();
    let term = a.campaign(Wait::Forever).await.unwrap().unwrap().term;
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign(Wait::Forever).await })
    };
    let children = common::zk_children_until(&path, |c| c.len() == 2).await;
    let raw = common::zk_raw().await;
    let mut by_seq: Vec<(String, String, i64)> = Vec::new();
    for child in &children {
        let (uuid_and_rest, seq) = child.rsplit_once("-latch-").expect("a LeaderLatch node");
        assert!(
            uuid_and_rest.starts_with("_c_") && uuid_and_rest.len() == 3 + 36,
            "{child}"
        );
        assert_eq!(seq.len(), 10, "{child}");
        let (data, stat) = raw.get_data(&format!("{path}/{child}")).await.unwrap();
        by_seq.push((
            seq.to_string(),
            String::from_utf8(data).unwrap(),
            stat.czxid,
        ));
    }
    by_seq.sort();
    assert_eq!(by_seq[0].1, "node-a");
    assert_eq!(
        by_seq[0].2 as u64, term,
        "the term is the leader node's czxid"
    );
    assert_eq!(by_seq[1].1, "node-b");
    assert_eq!(a.candidates().await.unwrap(), ["node-a", "node-b"]);
    a.resign().await.unwrap();
    let next = waiting.await.unwrap().unwrap().unwrap();
    assert!(next.term > term);
    assert_eq!(b.leader().await.unwrap().unwrap().identity, "node-b");
    b.resign().await.unwrap();
    common::zk_children_until(&path, |c| c.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_an_expired_session_ends_leadership_and_the_next_leads() {
    let c = zk_clients(2).await;
    let path = common::zk_path("election-lost");
    let a = c[0].election(&path, "a").unwrap();
    let b = c[1].election(&path, "b").unwrap();
    let first = a.campaign(Wait::Forever).await.unwrap().unwrap();
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign(Wait::For(WITHIN)).await })
    };
    common::zk_children_until(&path, |c| c.len() == 2).await;
    c[0].debug_close_zk_session().await.unwrap();
    told_lost(&a, &first.lost).await;
    let next = waiting.await.unwrap().unwrap().expect("b leads");
    assert!(next.term > first.term);
    assert_eq!(b.leader().await.unwrap().unwrap().identity, "b");
    b.resign().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_timed_out_campaigns_and_bad_input() {
    let c = zk_clients(2).await;
    let path = common::zk_path("election-timeout");
    let leader = a_timed_out_campaign_is_withdrawn(&c[0], &c[1], &path).await;
    assert_eq!(
        common::zk_children(&path).await.len(),
        1,
        "the withdrawn node is gone"
    );
    leader.resign().await.unwrap();
    bad_identities_are_typed_errors(&c[0], &path);
}

// ---- etcd ----

async fn etcd_clients(n: usize) -> Vec<Client> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(etcd_common::client().await);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_one_leader_at_a_time() {
    let name = etcd_common::unique("election");
    one_leader_at_a_time(etcd_clients(4).await, &name).await;
    assert!(etcd_common::keys(&name).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_candidates_are_election_keys_and_etcdctl_sees_the_leader() {
    let c = etcd_clients(2).await;
    let name = etcd_common::unique("election-format");
    let a = c[0].election(&name, "node-a").unwrap();
    let term = a.campaign(Wait::Forever).await.unwrap().unwrap().term;
    let keys = etcd_common::keys(&name).await;
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].key, format!("{name}/{:x}", keys[0].lease));
    assert_eq!(keys[0].value, "node-a");
    assert_eq!(keys[0].create_revision as u64, term);
    // etcdctl's own election on the same name: a candidate behind ours, leading once we resign.
    let mut elect = etcd_common::etcdctl()
        .args(["elect", &name, "from-etcdctl"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run etcdctl elect");
    etcd_common::wait_keys(&name, 2, WITHIN).await;
    assert_eq!(a.candidates().await.unwrap(), ["node-a", "from-etcdctl"]);
    let observer = c[1].election(&name, "observer").unwrap();
    assert_eq!(observer.leader().await.unwrap().unwrap().identity, "node-a");
    // etcdctl's observer (`elect -l`) names our candidate's key and proposal as the leader.
    let mut listen = etcd_common::etcdctl()
        .args(["elect", "-l", &name])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run etcdctl elect -l");
    let mut shown = String::new();
    {
        use std::io::BufRead;
        let mut out = std::io::BufReader::new(listen.stdout.take().unwrap());
        out.read_line(&mut shown).unwrap();
        out.read_line(&mut shown).unwrap();
    }
    listen.kill().unwrap();
    listen.wait().unwrap();
    assert_eq!(
        shown,
        format!("{}\nnode-a\n", keys[0].key),
        "etcdctl elect -l"
    );
    a.resign().await.unwrap();
    let next = observer
        .next_change(
            Some(&polylock::Leader {
                identity: "node-a".into(),
                term,
            }),
            Wait::For(WITHIN),
        )
        .await
        .unwrap()
        .expect("a change")
        .expect("a leader");
    assert_eq!(next.identity, "from-etcdctl");
    assert!(next.term > term);
    // Our candidate waits behind etcdctl's leader.
    assert!(a
        .campaign(Wait::For(Duration::from_millis(200)))
        .await
        .unwrap()
        .is_none());
    // Interrupted, etcdctl resigns and ends its session; our campaign then leads.
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(elect.id() as i32, libc::SIGINT) };
    elect.wait().unwrap();
    let again = a.campaign(Wait::For(WITHIN)).await.unwrap().expect("leads");
    assert!(again.term > next.term);
    a.resign().await.unwrap();
    assert!(etcd_common::keys(&name).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_a_deleted_key_ends_leadership_and_timed_out_campaigns_leave_nothing() {
    let c = etcd_clients(2).await;
    let name = etcd_common::unique("election-lost");
    let leader = a_timed_out_campaign_is_withdrawn(&c[0], &c[1], &name).await;
    let keys = etcd_common::keys(&name).await;
    assert_eq!(keys.len(), 1, "the withdrawn key is gone");
    let lost = leader.leadership().unwrap().lost;
    etcd_common::raw()
        .await
        .delete(keys[0].key.as_str(), None)
        .await
        .unwrap();
    told_lost(&leader, &lost).await;
    bad_identities_are_typed_errors(&c[0], &name);
}

// ---- Redis ----

async fn redis_clients(n: usize, watchdog: Duration) -> Vec<Client> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(common::client_with(watchdog).await);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_one_leader_at_a_time() {
    let name = common::unique("election");
    let clients = redis_clients(4, Duration::from_secs(30)).await;
    let c0 = clients[0].clone();
    one_leader_at_a_time(clients, &name).await;
    let mut raw = common::raw().await;
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{name}*"))
        .query_async(&mut raw)
        .await
        .unwrap();
    // The fencing counter stays (terms must keep rising); the lock and the record are gone.
    assert_eq!(left, [format!("redisson_lock_token:{{{name}}}")]);
    common::assert_no_channels_left(&c0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_the_leader_is_a_redisson_lock_with_a_record_beside_it() {
    let c = redis_clients(2, Duration::from_secs(30)).await;
    let name = common::unique("election-format");
    let a = c[0].election(&name, "node-a").unwrap();
    let term = a.campaign(Wait::Forever).await.unwrap().unwrap().term;
    let mut raw = common::raw().await;
    let lock: Vec<(String, i64)> = redis::cmd("HGETALL")
        .arg(&name)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(lock.len(), 1);
    assert_eq!(lock[0].1, 1, "one Redisson hold");
    let record: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("polylock_leader:{{{name}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(record["holder"], lock[0].0);
    assert_eq!(record["identity"], "node-a");
    assert_eq!(record["term"], term.to_string());
    let ttl: i64 = redis::cmd("PTTL")
        .arg(format!("polylock_leader:{{{name}}}"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(
        ttl > 0 && ttl <= 30_000,
        "the record lives as long as the lock: {ttl}"
    );
    // A plain lock on the same name (as a Redisson RLock user would take it) waits behind it.
    let lock_user = c[1].lock(&name).unwrap();
    assert!(lock_user
        .try_acquire(polylock::owner::fresh(), Some(Duration::from_secs(30)))
        .await
        .unwrap()
        .is_none());
    a.resign().await.unwrap();
    // A holder that is not a candidate shows as its stored owner.
    let me = polylock::owner::fresh();
    lock_user
        .try_acquire(me, Some(Duration::from_secs(30)))
        .await
        .unwrap()
        .unwrap();
    let shown = a.leader().await.unwrap().unwrap();
    assert!(shown.identity.ends_with(&format!(":{me}")), "{shown:?}");
    lock_user.release(me).await.unwrap();
    assert_eq!(a.leader().await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_deleted_lock_ends_leadership_and_timed_out_campaigns_leave_nothing() {
    let c = redis_clients(2, Duration::from_millis(1500)).await;
    let name = common::unique("election-lost");
    let leader = a_timed_out_campaign_is_withdrawn(&c[0], &c[1], &name).await;
    let lost = leader.leadership().unwrap().lost;
    let mut raw = common::raw().await;
    let _: i64 = redis::cmd("DEL")
        .arg(&name)
        .query_async(&mut raw)
        .await
        .unwrap();
    told_lost(&leader, &lost).await;
    assert_eq!(
        leader.leader().await.unwrap(),
        None,
        "a record without its lock leads nobody"
    );
    bad_identities_are_typed_errors(&c[0], &name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_and_redlock_have_no_election() {
    let url = std::env::var("POLYLOCK_PG_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock".into());
    let pg = Client::connect(&url)
        .await
        .expect("connect to the test PostgreSQL");
    assert_eq!(
        pg.election("x", "a").unwrap_err().kind(),
        ErrorKind::Unsupported
    );
    pg.close().await.unwrap();
}
