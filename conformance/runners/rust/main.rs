//! The Rust runner of polylock's conformance suite (conformance/README.md): runs every scenario
//! of conformance/scenarios/*.json against the servers of scripts/servers.sh with the Rust API,
//! and prints `conformance rust: N passed, N failed, N not applicable`.
//!
//!   conformance [--scenarios DIR] [--only TEXT] [--jobs N] [--vocabulary]
//!
//! Built as an example of the core crate (`cargo build --workspace --example conformance`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use polylock::{
    AcquireOptions, Client, ClientOptions, CountDownLatch, Election, ErrorKind, HoldKind,
    LeaseChange, Lock, LostEvent, MultiLock, OwnerId, PermitExpirableSemaphore, RemainingLease,
    Semaphore, Wait,
};
use serde_json::{json, Value};

const RUNTIME: &str = "rust";

/// How this runtime says each concept of conformance/concepts.json (the contract table's column).
fn vocabulary() -> Value {
    json!({
        "connect": "`Client::connect(url).await?` (`Client::connect_redlock(&urls)`)",
        "owner": "an explicit `OwnerId` on every call (`polylock::owner::fresh()`, `owner::current_thread()`)",
        "acquire": "`lock.acquire(owner, AcquireOptions::wait_for(d)).await`",
        "wait_forever": "`Wait::Forever` (`AcquireOptions::forever()`)",
        "wait_none": "`Wait::Never` (`AcquireOptions::try_once()`, `lock.try_acquire(owner, lease)`)",
        "not_acquired": "`Err(e)` with `e.kind() == ErrorKind::Timeout` (`try_acquire`: `Ok(None)`)",
        "lease_watchdog": "`AcquireOptions { lease: None, .. }`",
        "lease_fixed": "`AcquireOptions::wait_for(d).with_lease(lease)`",
        "release": "`lock.release(owner).await` → `Released::StillHeld(n)` / `Released::Freed`",
        "reenter": "`lock.acquire(owner, ..)` again with the same owner",
        "hold_count": "`lock.hold_count(owner).await`",
        "is_locked": "`lock.is_locked().await`",
        "fencing_token": "`Acquired::fencing_token`, `lock.fencing_token(owner)`",
        "remaining_lease": "`lock.remaining_lease().await` → `RemainingLease::NotHeld` / `NoExpiry` / `Expires(d)`",
        "extend": "`lock.extend_lease(owner, LeaseChange::Add(d) | Set(d) | Reset).await`",
        "force_unlock": "`lock.force_unlock().await` → was it held",
        "lost_listener": "`client.lost_events()` (a stream of `LostEvent { name, kind, owner, reason }`), `Acquired::lost.wait().await`",
        "lost_reasons": "`LostReason::Expired`, `Deleted`, `RenewalFailed`, `SessionExpired`, `ClientClosed` (`.name()`: `EXPIRED`, ...)",
        "is_lost": "`lock.lost_signal(owner)` → `LostSignal::is_lost()`, `.state()`",
        "suspended": "`client.is_suspended()`",
        "section": "`client.with_lock(name, options, |held| async { .. }).await`",
        "timeout_error": "`Err(e)` with `e.kind() == ErrorKind::Timeout`",
        "base_error": "`polylock::Error`: `e.kind()` (`ErrorKind`), `e.kind().name()`, `e.kind().code()`",
        "not_owner_error": "`ErrorKind::NotOwner` (4)",
        "read_write": "`client.read_write_lock(name)?.read_lock()` / `.write_lock()`",
        "semaphore_acquire": "`sem.acquire(n, wait).await` → `Permits` (`Err` TIMEOUT)",
        "permit_acquire": "`pes.acquire(lease, wait).await` → `Permit { id, .. }` (`Err` TIMEOUT)",
        "latch_wait": "`latch.wait(wait).await` → `true` open / `false` not yet",
        "multi": "`MultiLock::new(vec![a, b])?` (a `Lock`)",
        "election": "`client.election(name, identity)?`: `campaign(wait).await` → `Some(Leadership { term, lost })`, `resign()`, `leader()` → `Some(Leader { identity, term })`, `candidates()`",
        "close": "`client.close().await`"
    })
}

#[derive(Clone)]
enum Handle {
    Lock(Lock),
    Sem(Semaphore),
    Permit(PermitExpirableSemaphore),
    Latch(CountDownLatch),
    Election(Election),
}

/// One running scenario instance.
struct Run {
    backend: String,
    urls: Vec<String>,
    options: ClientOptions,
    scenario: Value,
    prefix: String,
    zk: bool,
    clients: HashMap<String, Client>,
    owners: HashMap<String, OwnerId>,
    handles: HashMap<(String, String), Handle>,
    permits_set: HashMap<String, bool>,
    saved: HashMap<String, Value>,
    lost: HashMap<String, Arc<Mutex<Vec<LostEvent>>>>,
    bg: HashMap<String, (Value, tokio::task::JoinHandle<Result<Value, String>>)>,
}

/// The outcome of a step in the suite's words, or why the runner could not say.
type Outcome = Result<Value, String>;

fn err_word(e: &polylock::Error) -> Value {
    Value::String(format!("error:{}", e.kind().name()))
}

fn wait_of(step: &Value) -> Result<Wait, String> {
    match step.get("wait") {
        None => Ok(Wait::Forever),
        Some(Value::String(s)) if s == "forever" => Ok(Wait::Forever),
        Some(Value::String(s)) if s == "none" => Ok(Wait::Never),
        Some(Value::Number(n)) => Ok(Wait::For(Duration::from_millis(n.as_u64().unwrap_or(0)))),
        Some(other) => Err(format!("bad wait {other}")),
    }
}

fn ms_of(step: &Value, key: &str) -> Option<Duration> {
    step.get(key)
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
}

impl Run {
    fn actor_client(&self, actor: &str) -> Result<String, String> {
        let actors = self
            .scenario
            .get("actors")
            .cloned()
            .unwrap_or_else(|| json!({"a": "c1", "b": "c2", "c": "c3", "admin": "c4"}));
        actors
            .get(actor)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("no actor {actor}"))
    }

    fn owner(&mut self, actor: &str) -> OwnerId {
        *self
            .owners
            .entry(actor.to_string())
            .or_insert_with(polylock::owner::fresh)
    }

    async fn client(&mut self, actor: &str) -> Result<Result<Client, polylock::Error>, String> {
        let id = self.actor_client(actor)?;
        if let Some(c) = self.clients.get(&id) {
            return Ok(Ok(c.clone()));
        }
        let made = if self.urls.len() > 1 {
            Client::connect_redlock_with(&self.urls, self.options.clone()).await
        } else {
            Client::connect_with(&self.urls[0], self.options.clone()).await
        };
        if let Ok(c) = &made {
            self.clients.insert(id, c.clone());
        }
        Ok(made)
    }

    fn object(&self, obj: &str) -> Result<Value, String> {
        self.scenario
            .get("objects")
            .and_then(|o| o.get(obj))
            .cloned()
            .ok_or_else(|| format!("no object {obj}"))
    }

    fn name_of(&self, obj: &str) -> Result<String, String> {
        let o = self.object(obj)?;
        if let Some(lit) = o.get("literal").and_then(Value::as_str) {
            return Ok(lit.to_string());
        }
        let base = o
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| obj.to_lowercase());
        Ok(if self.zk {
            format!("/{}/{base}", self.prefix)
        } else {
            format!("{}:{base}", self.prefix)
        })
    }

    /// The actor's client's handle of `obj` (made on first use).
    async fn handle(
        &mut self,
        actor: &str,
        obj: &str,
    ) -> Result<Result<Handle, polylock::Error>, String> {
        let cid = self.actor_client(actor)?;
        if let Some(h) = self.handles.get(&(cid.clone(), obj.to_string())) {
            return Ok(Ok(h.clone()));
        }
        let client = match self.client(actor).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let o = self.object(obj)?;
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("lock");
        let name = self.name_of(obj)?;
        let made: Result<Handle, polylock::Error> = match ty {
            "lock" => client.lock(&name).map(Handle::Lock),
            "fair" => client.fair_lock(&name).map(Handle::Lock),
            "mutex" => client.mutex(&name).map(Handle::Lock),
            "read" => client
                .read_write_lock(&name)
                .map(|rw| Handle::Lock(rw.read_lock())),
            "write" => client
                .read_write_lock(&name)
                .map(|rw| Handle::Lock(rw.write_lock())),
            "semaphore" => client.semaphore(&name).map(Handle::Sem),
            "permit_semaphore" => client.permit_expirable_semaphore(&name).map(Handle::Permit),
            "latch" => client.count_down_latch(&name).map(Handle::Latch),
            "election" => client.election(&name, actor).map(Handle::Election),
            "multi" => {
                let mut members = Vec::new();
                for m in o
                    .get("of")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                {
                    let m = m.as_str().ok_or("bad member")?.to_string();
                    match Box::pin(self.handle(actor, &m)).await? {
                        Ok(Handle::Lock(l)) => members.push(l),
                        Ok(_) => return Err(format!("member {m} is not a lock")),
                        Err(e) => return Ok(Err(e)),
                    }
                }
                MultiLock::new(members).map(Handle::Lock)
            }
            other => return Err(format!("unknown object type {other}")),
        };
        let h = match made {
            Ok(h) => h,
            Err(e) => return Ok(Err(e)),
        };
        // An object's declared permits are set once, by whoever makes it first.
        if let Some(p) = o.get("permits").and_then(Value::as_u64) {
            if !self.permits_set.contains_key(obj) {
                self.permits_set.insert(obj.to_string(), true);
                let r = match &h {
                    Handle::Sem(s) => s.try_set_permits(p as u32).await.map(drop),
                    Handle::Permit(s) => s.try_set_permits(p as u32).await.map(drop),
                    _ => Ok(()),
                };
                if let Err(e) = r {
                    return Ok(Err(e));
                }
            }
        }
        self.handles.insert((cid, obj.to_string()), h.clone());
        Ok(Ok(h))
    }

    async fn lock_of(
        &mut self,
        actor: &str,
        obj: &str,
    ) -> Result<Result<Lock, polylock::Error>, String> {
        match self.handle(actor, obj).await? {
            Ok(Handle::Lock(l)) => Ok(Ok(l)),
            Ok(_) => Err(format!("{obj} is not a lock")),
            Err(e) => Ok(Err(e)),
        }
    }

    /// The (name, kind) pairs whose loss is `obj`'s: a lock's own (a fair lock on ZooKeeper or
    /// etcd is the ordinary lock, and says so), a multi-lock's members', a semaphore's permits.
    async fn watched(&mut self, actor: &str, obj: &str) -> Result<Vec<(String, HoldKind)>, String> {
        match self.handle(actor, obj).await? {
            Ok(Handle::Lock(l)) => Ok(l
                .members()
                .iter()
                .map(|m| (m.name().to_string(), HoldKind::Lock(m.kind())))
                .collect()),
            Ok(Handle::Permit(_)) | Ok(Handle::Sem(_)) => {
                Ok(vec![(self.name_of(obj)?, HoldKind::Permit)])
            }
            Ok(Handle::Latch(_)) => Err("a latch has no lost signal".into()),
            Ok(Handle::Election(_)) => Err("an election's loss is not a lock's lost signal".into()),
            Err(e) => Err(format!("{obj}: {e}")),
        }
    }

    async fn step(&mut self, step: &Value) -> Outcome {
        let op = step
            .get("op")
            .and_then(Value::as_str)
            .ok_or("step without op")?;
        if op == "sleep" {
            tokio::time::sleep(ms_of(step, "ms").unwrap_or_default()).await;
            return Ok(Value::Null);
        }
        let actor = step
            .get("actor")
            .and_then(Value::as_str)
            .ok_or("step without actor")?
            .to_string();
        let obj = step
            .get("on")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let owner = self.owner(&actor);
        macro_rules! lock {
            () => {
                match self.lock_of(&actor, &obj).await? {
                    Ok(l) => l,
                    Err(e) => return Ok(err_word(&e)),
                }
            };
        }
        macro_rules! handle {
            ($p:path) => {
                match self.handle(&actor, &obj).await? {
                    Ok($p(h)) => h,
                    Ok(_) => return Err(format!("{obj} is not that kind of object")),
                    Err(e) => return Ok(err_word(&e)),
                }
            };
        }
        macro_rules! word {
            ($r:expr, $ok:expr) => {
                match $r {
                    Ok(v) => $ok(v),
                    Err(e) => err_word(&e),
                }
            };
        }
        Ok(match op {
            "make" => match self.handle(&actor, &obj).await? {
                Ok(_) => json!("ok"),
                Err(e) => err_word(&e),
            },
            "acquire" => {
                let l = lock!();
                let options = AcquireOptions {
                    wait: wait_of(step)?,
                    lease: ms_of(step, "lease"),
                };
                match l.acquire(owner, options).await {
                    Ok(a) => json!({"outcome": "acquired", "token": a.fencing_token}),
                    Err(e) if e.kind() == ErrorKind::Timeout => json!("not_acquired"),
                    Err(e) => err_word(&e),
                }
            }
            "release" => word!(lock!().release(owner).await, |_| json!("ok")),
            "held" => word!(lock!().hold_count(owner).await, |n| json!(n)),
            "is_locked" => word!(lock!().is_locked().await, |b| json!(b)),
            "token" => match lock!().fencing_token(owner) {
                Some(t) => json!({"outcome": "token", "token": t}),
                None => json!("error:NOT_OWNER"),
            },
            "remaining_lease" => word!(lock!().remaining_lease().await, |r| match r {
                RemainingLease::NotHeld => json!("not_held"),
                RemainingLease::NoExpiry => json!("no_expiry"),
                RemainingLease::Expires(d) =>
                    json!({"outcome": "expires", "ms": d.as_millis() as u64}),
            }),
            "extend" => {
                let d = ms_of(step, "ms").ok_or("extend without ms")?;
                word!(
                    lock!().extend_lease(owner, LeaseChange::Set(d)).await,
                    |_| json!("ok")
                )
            }
            "force_unlock" => word!(lock!().force_unlock().await, |b| json!(b)),
            "is_lost" => {
                let l = lock!();
                json!(l.lost_signal(owner).is_some_and(|s| s.is_lost()))
            }
            "listen" => {
                let client = match self.client(&actor).await? {
                    Ok(c) => c,
                    Err(e) => return Ok(err_word(&e)),
                };
                let seen: Arc<Mutex<Vec<LostEvent>>> = Arc::default();
                let mut events = client.lost_events();
                let sink = seen.clone();
                tokio::spawn(async move {
                    while let Ok(ev) = events.recv().await {
                        sink.lock().unwrap().push(ev);
                    }
                });
                self.lost.insert(format!("{actor}/{obj}"), seen);
                json!("ok")
            }
            "wait_lost" => {
                let within = ms_of(step, "within").unwrap_or(Duration::from_secs(5));
                let seen = self
                    .lost
                    .get(&format!("{actor}/{obj}"))
                    .cloned()
                    .ok_or("wait_lost without listen")?;
                let watched = self.watched(&actor, &obj).await?;
                let deadline = Instant::now() + within;
                loop {
                    let hit = seen
                        .lock()
                        .unwrap()
                        .iter()
                        .find(|ev| {
                            watched
                                .iter()
                                .any(|(n, k)| **n == *ev.name && *k == ev.kind)
                                && (ev.owner == owner || ev.kind == HoldKind::Permit)
                        })
                        .map(|ev| ev.reason.name());
                    if let Some(reason) = hit {
                        break json!(format!("lost:{reason}"));
                    }
                    if Instant::now() >= deadline {
                        break json!("not_lost");
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            "section" => {
                let client = match self.client(&actor).await? {
                    Ok(c) => c,
                    Err(e) => return Ok(err_word(&e)),
                };
                let name = self.name_of(&obj)?;
                let options = AcquireOptions {
                    wait: wait_of(step)?,
                    lease: None,
                };
                word!(
                    client.with_lock(&name, options, |_held| async {}).await,
                    |_| json!("ran")
                )
            }
            "sem_set" => word!(
                handle!(Handle::Sem)
                    .try_set_permits(step["n"].as_u64().unwrap_or(0) as u32)
                    .await,
                |b| json!(b)
            ),
            "sem_acquire" => {
                let s = handle!(Handle::Sem);
                match s
                    .acquire(step["n"].as_u64().unwrap_or(1) as u32, wait_of(step)?)
                    .await
                {
                    Ok(_) => json!("acquired"),
                    Err(e) if e.kind() == ErrorKind::Timeout => json!("not_acquired"),
                    Err(e) => err_word(&e),
                }
            }
            "sem_release" => word!(
                handle!(Handle::Sem)
                    .release(step["n"].as_u64().unwrap_or(1) as u32)
                    .await,
                |_| json!("ok")
            ),
            "sem_available" => word!(handle!(Handle::Sem).available_permits().await, |n| json!(n)),
            "sem_add" => word!(
                handle!(Handle::Sem)
                    .add_permits(step["n"].as_i64().unwrap_or(0))
                    .await,
                |_| json!("ok")
            ),
            "sem_drain" => word!(handle!(Handle::Sem).drain_permits().await, |n| json!(n)),
            "permit_acquire" => {
                let s = handle!(Handle::Permit);
                match s.acquire(ms_of(step, "lease"), wait_of(step)?).await {
                    Ok(p) => json!({"outcome": "acquired", "id": p.id}),
                    Err(e) if e.kind() == ErrorKind::Timeout => json!("not_acquired"),
                    Err(e) => err_word(&e),
                }
            }
            "permit_release" => {
                let key = step.get("id").and_then(Value::as_str).ok_or("no id")?;
                let id = self
                    .saved
                    .get(key)
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("no saved permit {key}"))?
                    .to_string();
                word!(handle!(Handle::Permit).release(&id).await, |_| json!("ok"))
            }
            "permit_available" => {
                word!(
                    handle!(Handle::Permit).available_permits().await,
                    |n| json!(n)
                )
            }
            "latch_set" => word!(
                handle!(Handle::Latch)
                    .try_set_count(step["n"].as_u64().unwrap_or(1))
                    .await,
                |b| json!(b)
            ),
            "latch_count_down" => word!(handle!(Handle::Latch).count_down().await, |_| json!("ok")),
            "latch_count" => word!(handle!(Handle::Latch).count().await, |n| json!(n)),
            "latch_wait" => word!(
                handle!(Handle::Latch).wait(wait_of(step)?).await,
                |b: bool| json!(if b { "open" } else { "not_open" })
            ),
            "campaign" => word!(
                handle!(Handle::Election).campaign(wait_of(step)?).await,
                |l: Option<polylock::Leadership>| match l {
                    Some(l) => json!({"outcome": "leading", "token": l.term}),
                    None => json!("not_leading"),
                }
            ),
            "resign" => word!(handle!(Handle::Election).resign().await, |b| json!(b)),
            "is_leader" => json!(handle!(Handle::Election).is_leader()),
            "leader" => word!(handle!(Handle::Election).leader().await, |l: Option<
                polylock::Leader,
            >| match l {
                Some(l) => json!({"outcome": format!("leader:{}", l.identity), "token": l.term}),
                None => json!("none"),
            }),
            "candidates" => word!(handle!(Handle::Election).candidates().await, |c| json!(c)),
            "connect" => {
                let made = match step.get("url") {
                    Some(Value::Array(urls)) => {
                        let urls: Vec<&str> = urls.iter().filter_map(Value::as_str).collect();
                        Client::connect_redlock_with(&urls, self.options.clone()).await
                    }
                    Some(Value::String(url)) => {
                        Client::connect_with(url, self.options.clone()).await
                    }
                    _ => return Err("connect without url".into()),
                };
                match made {
                    Ok(c) => {
                        let _ = c.close().await;
                        json!("ok")
                    }
                    Err(e) => {
                        json!({"outcome": format!("error:{}", e.kind().name()), "message": e.message()})
                    }
                }
            }
            "suspended" => match self.client(&actor).await? {
                Ok(c) => json!(c.is_suspended()),
                Err(e) => err_word(&e),
            },
            "close" => match self.client(&actor).await? {
                Ok(c) => word!(c.close().await, |_| json!("ok")),
                Err(e) => err_word(&e),
            },
            "error_table" => {
                let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
                let numbered = ErrorKind::ALL
                    .iter()
                    .enumerate()
                    .all(|(i, k)| k.code() == i as u32 + 1);
                if numbered {
                    json!(names)
                } else {
                    json!("numbers out of order")
                }
            }
            other => return Err(format!("unknown op {other}")),
        })
    }
}

/// Compare an outcome with a step's expectation; `None` when it matches.
fn check(run: &mut Run, step: &Value, got: &Value) -> Option<String> {
    let expect = match step.get("expect") {
        Some(Value::Object(by)) => by
            .get(&run.backend)
            .or_else(|| by.get("*"))
            .cloned()
            .unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => return None,
    };
    let (word, extra) = match got {
        Value::Object(m) => (
            m.get("outcome").cloned().unwrap_or(Value::Null),
            got.clone(),
        ),
        v => (v.clone(), Value::Null),
    };
    // `token`: an assertion against a saved token.
    if step.get("op").and_then(Value::as_str) == Some("token") {
        let want = expect.as_str().unwrap_or_default();
        let t = extra.get("token").and_then(Value::as_u64);
        return compare_token(run, want, t).map(|e| format!("token: {e}"));
    }
    if word != expect {
        let msg = extra.get("message").and_then(Value::as_str).unwrap_or("");
        return Some(format!("expected {expect}, got {word} {msg}"));
    }
    if let Some(want) = step.get("message").and_then(Value::as_str) {
        let msg = extra.get("message").and_then(Value::as_str).unwrap_or("");
        if !msg.contains(want) {
            return Some(format!("the message does not name {want}: {msg}"));
        }
    }
    if let Some(secret) = step.get("absent").and_then(Value::as_str) {
        let msg = extra.get("message").and_then(Value::as_str).unwrap_or("");
        if msg.contains(secret) {
            return Some(format!("the error shows {secret:?}: {msg}"));
        }
    }
    if let Some(t) = extra.get("token").and_then(Value::as_u64) {
        if let Some(want) = step.get("token").and_then(Value::as_str) {
            if let Some(e) = compare_token(run, want, Some(t)) {
                return Some(format!("token: {e}"));
            }
        }
        if let Some(key) = step.get("save").and_then(Value::as_str) {
            run.saved.insert(key.to_string(), json!(t));
        }
    }
    if let Some(id) = extra.get("id") {
        if let Some(key) = step.get("save").and_then(Value::as_str) {
            run.saved.insert(key.to_string(), id.clone());
        }
    }
    if let Some(ms) = extra.get("ms").and_then(Value::as_u64) {
        if let Some(max) = step.get("max_ms").and_then(Value::as_u64) {
            if ms > max {
                return Some(format!("{ms} ms left, more than {max}"));
            }
        }
        if let Some(min) = step.get("min_ms").and_then(Value::as_u64) {
            if ms < min {
                return Some(format!("{ms} ms left, less than {min}"));
            }
        }
    }
    None
}

fn compare_token(run: &Run, want: &str, got: Option<u64>) -> Option<String> {
    let Some(got) = got else {
        return Some("no token".into());
    };
    let (op, key) = want.split_at(1);
    let Some(prev) = run.saved.get(key).and_then(Value::as_u64) else {
        return Some(format!("no saved token {key}"));
    };
    match op {
        ">" if got > prev => None,
        "=" if got == prev => None,
        _ => Some(format!("{got} is not {op} {prev}")),
    }
}

/// Run one scenario on one backend: `Ok(())` passed, `Err(why)` failed.
async fn run_instance(mut run: Run) -> Result<(), String> {
    let steps = run.scenario["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut result = Ok(());
    for (i, step) in steps.iter().enumerate() {
        let op = step["op"].as_str().unwrap_or("?").to_string();
        let actor = step["actor"].as_str().unwrap_or("").to_string();
        if op == "join" {
            let Some((bstep, task)) = run.bg.remove(&actor) else {
                result = Err(format!(
                    "step {i}: join without a background step of {actor}"
                ));
                break;
            };
            let got = match task.await {
                Ok(r) => r,
                Err(e) => Err(format!("the background step panicked: {e}")),
            };
            match got {
                Ok(got) => {
                    if let Some(why) = check(&mut run, &bstep, &got) {
                        result = Err(format!("step {i} (join {}): {why}", bstep["op"]));
                        break;
                    }
                }
                Err(e) => {
                    result = Err(format!("step {i} (join): {e}"));
                    break;
                }
            }
            continue;
        }
        if step.get("bg").and_then(Value::as_bool) == Some(true) {
            run.owner(&actor);
            // The step runs on a copy of what it needs: a clone of the handles it uses.
            let mut shadow = Run {
                backend: run.backend.clone(),
                urls: run.urls.clone(),
                options: run.options.clone(),
                scenario: run.scenario.clone(),
                prefix: run.prefix.clone(),
                zk: run.zk,
                clients: run.clients.clone(),
                owners: run.owners.clone(),
                handles: run.handles.clone(),
                permits_set: run.permits_set.clone(),
                saved: run.saved.clone(),
                lost: run.lost.clone(),
                bg: HashMap::new(),
            };
            // Make the handle now, so the background step finds it (and its client) ready.
            if let Some(obj) = step.get("on").and_then(Value::as_str) {
                if let Err(e) = run.handle(&actor, obj).await {
                    result = Err(format!("step {i}: {e}"));
                    break;
                }
                shadow.clients = run.clients.clone();
                shadow.handles = run.handles.clone();
                shadow.permits_set = run.permits_set.clone();
            }
            let s = step.clone();
            let task = tokio::spawn(async move { shadow.step(&s).await });
            run.bg.insert(actor, (step.clone(), task));
            continue;
        }
        match run.step(step).await {
            Ok(got) => {
                if let Some(why) = check(&mut run, step, &got) {
                    result = Err(format!(
                        "step {i} ({op} {}): {why}",
                        step["on"].as_str().unwrap_or("")
                    ));
                    break;
                }
            }
            Err(e) => {
                result = Err(format!("step {i} ({op}): runner: {e}"));
                break;
            }
        }
    }
    for (_, (_, task)) in run.bg.drain() {
        task.abort();
    }
    for (_, c) in run.clients.drain() {
        let _ = c.close().await;
    }
    result
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    if args.iter().any(|a| a == "--vocabulary") {
        // The error table itself comes from core: each kind's number, name and description.
        let errors: Vec<Value> = ErrorKind::ALL
            .iter()
            .map(|k| {
                json!({"number": k.code(), "name": k.name(), "description": k.description(),
                       "says": format!("`ErrorKind::{k:?}`")})
            })
            .collect();
        println!(
            "{}",
            json!({"runtime": RUNTIME, "says": vocabulary(), "errors": errors})
        );
        return;
    }
    let root = std::path::PathBuf::from(
        arg("--scenarios")
            .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance").to_string()),
    );
    let only = arg("--only");
    let jobs: usize = arg("--jobs").and_then(|j| j.parse().ok()).unwrap_or(4);
    let verbose = args.iter().any(|a| a == "-v");
    let suite: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("suite.json")).expect("suite.json"),
    )
    .expect("suite.json is JSON");
    let c = &suite["client"];
    let ms = |k: &str| Duration::from_millis(c[k].as_u64().unwrap_or(1000));
    let options = ClientOptions {
        watchdog_timeout: ms("watchdog_timeout_ms"),
        connect_timeout: ms("connect_timeout_ms"),
        command_timeout: ms("command_timeout_ms"),
        session_timeout: ms("session_timeout_ms"),
        fair_wait_timeout: ms("fair_wait_timeout_ms"),
        ..ClientOptions::default()
    };
    let mut files: Vec<_> = std::fs::read_dir(root.join("scenarios"))
        .expect("scenarios/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut instances = Vec::new();
    let (mut passed, mut failed, mut na) = (0u32, 0u32, 0u32);
    let pid = std::process::id();
    let mut serial = 0u32;
    for f in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&f).expect("read"))
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for sc in doc["scenarios"].as_array().cloned().unwrap_or_default() {
            let id = sc["id"].as_str().unwrap_or("?").to_string();
            if only.as_ref().is_some_and(|o| !id.contains(o.as_str())) {
                continue;
            }
            for b in sc["backends"].as_array().cloned().unwrap_or_default() {
                let b = b.as_str().unwrap_or("?").to_string();
                let na_of = &sc["not_applicable"];
                if na_of.get(RUNTIME).is_some() || na_of.get(format!("{RUNTIME}@{b}")).is_some() {
                    na += 1;
                    continue;
                }
                let spec = &suite["backends"][&b];
                let urls: Vec<String> = match spec.get("env").and_then(Value::as_str) {
                    None => vec![String::new()],
                    Some(var) => {
                        let v = std::env::var(var).unwrap_or_default();
                        let mut v: Vec<String> = if spec["list"].as_bool() == Some(true) {
                            v.split(',').map(str::to_string).collect()
                        } else {
                            vec![v]
                        };
                        if let Some(q) = spec.get("query").and_then(Value::as_str) {
                            for u in &mut v {
                                u.push(if u.contains('?') { '&' } else { '?' });
                                u.push_str(q);
                            }
                        }
                        v
                    }
                };
                serial += 1;
                instances.push((
                    format!("{id}@{b}"),
                    Run {
                        backend: b.clone(),
                        urls,
                        options: options.clone(),
                        scenario: sc.clone(),
                        prefix: format!("pc/{RUNTIME}-{pid}-{serial}"),
                        zk: spec["paths"].as_bool() == Some(true),
                        clients: HashMap::new(),
                        owners: HashMap::new(),
                        handles: HashMap::new(),
                        permits_set: HashMap::new(),
                        saved: HashMap::new(),
                        lost: HashMap::new(),
                        bg: HashMap::new(),
                    },
                ));
            }
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let results: Vec<(String, Result<(), String>)> = rt.block_on(async {
        let sem = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
        let mut tasks = Vec::new();
        for (label, run) in instances {
            let sem = sem.clone();
            tasks.push(tokio::spawn(async move {
                let _p = sem.acquire().await;
                let r = tokio::time::timeout(Duration::from_secs(120), run_instance(run))
                    .await
                    .unwrap_or_else(|_| Err("did not finish within 120 s".into()));
                (label, r)
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.expect("instance task"));
        }
        out
    });
    for (label, r) in results {
        match r {
            Ok(()) => {
                passed += 1;
                if verbose {
                    println!("ok   {label}");
                }
            }
            Err(why) => {
                failed += 1;
                println!("FAIL {label}: {why}");
            }
        }
    }
    println!("conformance {RUNTIME}: {passed} passed, {failed} failed, {na} not applicable");
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
