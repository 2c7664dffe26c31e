//! A worker of the randomized checker (`faults/chaos.py`) on the Rust core: the same operations,
//! drawn from the same mulberry32 generator, as `faults/chaos_worker.py` (which documents the
//! output). Each actor is a task with an owner of its own; the actors share one client per backend
//! and one handle per primitive. A cancelled wait is a dropped acquire future (`tokio::time::timeout`).
//!
//! `chaos_worker PLAN WORKER_ID SEED SECONDS ACTORS`

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use polylock::{
    owner, AcquireOptions, Client, ClientOptions, ErrorKind, Lock, OwnerId, Semaphore, Wait,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// mulberry32, as the other workers have it.
struct Rng(u32);

impl Rng {
    fn u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(0x6D2B_79F5);
        let mut t = self.0;
        t = (t ^ (t >> 15)).wrapping_mul(t | 1);
        t = (t.wrapping_add((t ^ (t >> 7)).wrapping_mul(t | 61))) ^ t;
        t ^ (t >> 14)
    }
}

fn fnv(mut h: u32, v: u32) -> u32 {
    for k in 0..4 {
        h = (h ^ ((v >> (8 * k)) & 0xff)).wrapping_mul(0x0100_0193);
    }
    h
}

fn emit(v: Value) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

#[derive(Clone)]
struct Prim {
    backend: String,
    id: String,
    kind: String,
    name: String,
    permits: u32,
}

struct Plan {
    resource: String,
    watchdog: Duration,
    session: Duration,
    urls: Vec<(String, String)>,
    lease: HashMap<String, bool>,
    prims: Vec<Prim>,
}

impl Plan {
    fn read(path: &str) -> Result<Plan, Box<dyn std::error::Error>> {
        let mut plan = Plan {
            resource: String::new(),
            watchdog: Duration::from_secs(3),
            session: Duration::from_secs(8),
            urls: Vec::new(),
            lease: HashMap::new(),
            prims: Vec::new(),
        };
        for line in std::fs::read_to_string(path)?.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            match f[0] {
                "resource" => plan.resource = f[1].to_string(),
                "watchdog_ms" => plan.watchdog = Duration::from_millis(f[1].parse()?),
                "session_ms" => plan.session = Duration::from_millis(f[1].parse()?),
                "backend" => {
                    plan.urls.push((f[1].to_string(), f[2].to_string()));
                    plan.lease.insert(f[1].to_string(), f[3] == "1");
                }
                "prim" => plan.prims.push(Prim {
                    backend: f[1].to_string(),
                    id: f[2].to_string(),
                    kind: f[3].to_string(),
                    name: f[4].to_string(),
                    permits: f[5].parse()?,
                }),
                _ => {}
            }
        }
        Ok(plan)
    }
}

/// A primitive's handle.
enum Handle {
    Lock(Lock),
    Rw(Lock, Lock),
    Sem(Semaphore),
}

/// The actor's connection to the resource.
struct Conn {
    r: BufReader<tokio::net::tcp::OwnedReadHalf>,
    w: tokio::net::tcp::OwnedWriteHalf,
}

impl Conn {
    async fn ask(&mut self, op: &str, prim: &str, sid: &str, token: u64, mode: &str) -> bool {
        let line = format!("{op} {prim} {sid} {token} {mode}\n");
        if self.w.write_all(line.as_bytes()).await.is_err() {
            return false;
        }
        let mut reply = String::new();
        let _ = self.r.read_line(&mut reply).await;
        reply.trim() == "OK"
    }
}

/// One operation's ten draws, read as every worker reads them.
struct Op {
    what: &'static str,
    prim: Option<Prim>,
    write_mode: bool,
    wait_ms: u64,
    lease_ms: Option<u64>,
    writes: u32,
    permits: u32,
    sleeps: [u64; 4],
    reenter: bool,
    cancel_ms: u64,
    api: u32,
    idle_ms: u64,
}

impl Op {
    fn new(d: &[u32; 10], plan: &Plan, prims: &[Prim]) -> Op {
        let sel = d[0] % 100;
        let pick = |f: &dyn Fn(&Prim) -> bool| -> Vec<Prim> {
            prims.iter().filter(|p| f(p)).cloned().collect()
        };
        let excl = |p: &Prim| p.kind == "lock" || p.kind == "fair";
        let (what, cands) = match sel {
            0..=39 => ("section", pick(&excl)),
            40..=49 => ("try", pick(&excl)),
            50..=61 => ("cancel", prims.to_vec()),
            62..=79 => ("rw", pick(&|p| p.kind == "rw")),
            80..=94 => ("sem", pick(&|p| p.kind == "sem")),
            _ => ("idle", Vec::new()),
        };
        let prim = (!cands.is_empty()).then(|| cands[d[1] as usize % cands.len()].clone());
        let lease_ok = prim
            .as_ref()
            .is_some_and(|p| plan.lease.get(&p.backend).copied().unwrap_or(false));
        Op {
            what,
            write_mode: (d[1] >> 16) % 3 == 0,
            wait_ms: 100 + (d[2] % 2400) as u64,
            lease_ms: (lease_ok && d[3] % 100 < 35).then(|| 150 + ((d[3] >> 8) % 900) as u64),
            writes: 1 + d[4] % 3,
            permits: match &prim {
                Some(p) if p.kind == "sem" => 1 + (d[4] >> 8) % p.permits,
                _ => 1,
            },
            sleeps: [0, 1, 2, 3].map(|i| 10 + (((d[5] >> (8 * i)) & 0xff) % 70) as u64),
            reenter: d[6] % 100 < 30,
            cancel_ms: 30 + (d[7] % 600) as u64,
            api: d[8] % 2,
            idle_ms: 10 + (d[9] % 40) as u64,
            prim,
        }
    }
}

fn kind_of(e: &polylock::Error) -> String {
    format!("{:?}", e.kind())
}

struct Actor {
    name: String,
    handles: Arc<HashMap<String, Handle>>,
    conn: Conn,
    owner: OwnerId,
    n: u32,
}

impl Actor {
    fn op(&self, what: &str, prim: &Option<Prim>, result: &str) {
        emit(json!({"t": "op", "actor": self.name, "op": what,
                    "prim": prim.as_ref().map(|p| p.id.clone()), "result": result}));
    }

    fn error(&self, what: &str, prim: &Option<Prim>, error: &str, message: String) {
        emit(json!({"t": "error", "actor": self.name, "op": what,
                    "prim": prim.as_ref().map(|p| p.id.clone()), "error": error, "message": message}));
    }

    fn sid(&mut self) -> String {
        self.n += 1;
        format!("{}-{}", self.name, self.n)
    }

    async fn one(&mut self, o: &Op) {
        let Some(p) = o.prim.clone() else {
            tokio::time::sleep(Duration::from_millis(o.idle_ms)).await;
            self.op("idle", &None, "ok");
            return;
        };
        let handles = self.handles.clone();
        match &handles[&p.id] {
            Handle::Sem(s) => self.sem(o, s).await,
            Handle::Lock(l) => self.lock(o, l, "x").await,
            Handle::Rw(r, w) => {
                if o.write_mode {
                    self.lock(o, w, "w").await
                } else {
                    self.lock(o, r, "r").await
                }
            }
        }
    }

    /// Release, trying again when the server did not answer: (outcome, told).
    async fn release(&self, lock: &Lock) -> (String, bool) {
        let mut last = String::new();
        for _ in 0..20 {
            match lock.release(self.owner).await {
                Ok(_) => return ("ok".into(), false),
                Err(e) if e.kind() == ErrorKind::LockLost => return ("LockLost".into(), true),
                Err(e) if e.kind() == ErrorKind::NotOwner => return ("NotOwner".into(), false),
                Err(e) => {
                    last = kind_of(&e);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        (format!("error {last}"), false)
    }

    async fn lock(&mut self, o: &Op, lock: &Lock, mode: &str) {
        let lease = o.lease_ms.map(Duration::from_millis);
        let got = match o.what {
            "try" => lock.try_acquire(self.owner, lease).await,
            "cancel" => {
                // Dropping the acquire future midway (a timeout, or a select! that another
                // branch won) is how a Rust caller cancels.
                let fut = lock.acquire(
                    self.owner,
                    AcquireOptions {
                        wait: Wait::Forever,
                        lease,
                    },
                );
                let cancel = Duration::from_millis(o.cancel_ms);
                let out = if o.api == 0 {
                    tokio::time::timeout(cancel, fut).await.ok()
                } else {
                    tokio::select! {
                        r = fut => Some(r),
                        _ = tokio::time::sleep(cancel) => None,
                    }
                };
                match out {
                    None => {
                        self.op("cancel", &o.prim, "cancelled");
                        // What the client knows (the server's side is cleaned up in the
                        // background; the checker looks at the servers at the end).
                        if lock.fencing_token(self.owner).is_some() {
                            self.error(
                                "cancel",
                                &o.prim,
                                "HeldAfterCancel",
                                "the owner holds the lock after a dropped acquire".into(),
                            );
                        }
                        return;
                    }
                    Some(r) => r.map(Some),
                }
            }
            _ => match lock
                .acquire(
                    self.owner,
                    AcquireOptions {
                        wait: Wait::For(Duration::from_millis(o.wait_ms)),
                        lease,
                    },
                )
                .await
            {
                Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
                r => r.map(Some),
            },
        };
        let held = match got {
            Ok(Some(h)) => h,
            Ok(None) => {
                self.op(
                    o.what,
                    &o.prim,
                    if o.what == "try" { "busy" } else { "timeout" },
                );
                return;
            }
            Err(e) => {
                self.error(o.what, &o.prim, &kind_of(&e), e.to_string());
                tokio::time::sleep(Duration::from_millis(100)).await;
                return;
            }
        };
        self.op(o.what, &o.prim, "acquired");
        let prim = o.prim.as_ref().map(|p| p.id.clone()).unwrap_or_default();
        let token = held.fencing_token;
        let sid = self.sid();
        let mut told = false;
        'section: {
            if !self.conn.ask("BEGIN", &prim, &sid, token, mode).await {
                break 'section;
            }
            for i in 0..o.writes as usize {
                tokio::time::sleep(Duration::from_millis(o.sleeps[i])).await;
                let mut inner = false;
                if i == 0 && o.reenter {
                    match lock.try_acquire(self.owner, lease).await {
                        Ok(Some(a)) => {
                            inner = true;
                            if a.hold_count != 2 && !held.lost.is_lost() {
                                self.error(
                                    "reenter",
                                    &o.prim,
                                    "HoldCount",
                                    format!("hold count {} inside a re-entry", a.hold_count),
                                );
                            }
                        }
                        Ok(None) => self.error(
                            "reenter",
                            &o.prim,
                            "NotReentered",
                            "a re-entrant try failed".into(),
                        ),
                        Err(e) if e.kind() == ErrorKind::LockLost => told = true,
                        Err(e) => self.error("reenter", &o.prim, &kind_of(&e), e.to_string()),
                    }
                }
                let ok = self.conn.ask("WRITE", &prim, &sid, token, mode).await;
                if inner {
                    let (r, t) = self.release(lock).await;
                    told |= t;
                    self.op("reenter", &o.prim, &r);
                }
                if !ok || told {
                    break 'section;
                }
            }
            tokio::time::sleep(Duration::from_millis(o.sleeps[3])).await;
            self.conn.ask("END", &prim, &sid, token, mode).await;
        }
        told |= held.lost.is_lost();
        let (result, t) = self.release(lock).await; // after a loss too: the client forgets the hold
        told |= t;
        emit(
            json!({"t": "section", "id": sid, "prim": prim, "told": told, "release": result,
                    "lease": o.lease_ms}),
        );
        self.op("release", &o.prim, &result);
    }

    async fn sem(&mut self, o: &Op, sem: &Semaphore) {
        let wait = if o.what == "cancel" {
            Wait::Forever
        } else {
            Wait::For(Duration::from_millis(o.wait_ms))
        };
        let fut = sem.acquire(o.permits, wait);
        let got = if o.what == "cancel" {
            match tokio::time::timeout(Duration::from_millis(o.cancel_ms), fut).await {
                Ok(r) => r,
                Err(_) => {
                    self.op("cancel", &o.prim, "cancelled");
                    return;
                }
            }
        } else {
            fut.await
        };
        let permits = match got {
            Ok(p) => p,
            Err(e) if e.kind() == ErrorKind::Timeout => {
                self.op(o.what, &o.prim, "timeout");
                return;
            }
            Err(e) => {
                self.error(o.what, &o.prim, &kind_of(&e), e.to_string());
                tokio::time::sleep(Duration::from_millis(100)).await;
                return;
            }
        };
        self.op(o.what, &o.prim, "acquired");
        let prim = o.prim.as_ref().map(|p| p.id.clone()).unwrap_or_default();
        let sid = self.sid();
        if self
            .conn
            .ask("BEGIN", &prim, &sid, o.permits as u64, "s")
            .await
        {
            for i in 0..o.writes as usize {
                tokio::time::sleep(Duration::from_millis(o.sleeps[i])).await;
                self.conn
                    .ask("WRITE", &prim, &sid, o.permits as u64, "s")
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(o.sleeps[3])).await;
            self.conn
                .ask("END", &prim, &sid, o.permits as u64, "s")
                .await;
        }
        let mut told = permits.is_lost();
        let mut result = String::new();
        for _ in 0..20 {
            match permits.release(sem).await {
                Ok(()) => result = "ok".into(),
                Err(e) if e.kind() == ErrorKind::LockLost => {
                    result = "LockLost".into();
                    told = true;
                }
                Err(e) => {
                    result = format!("error {}", kind_of(&e));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            }
            break;
        }
        emit(
            json!({"t": "section", "id": sid, "prim": prim, "told": told, "release": result,
                    "permits": o.permits}),
        );
        self.op("release", &o.prim, &result);
    }
}

async fn actor(
    name: String,
    seed: u32,
    plan: Arc<Plan>,
    handles: Arc<HashMap<String, Handle>>,
    prims: Vec<Prim>,
    deadline: Instant,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let (r, w) = TcpStream::connect(&plan.resource).await?.into_split();
    let mut a = Actor {
        name,
        handles,
        conn: Conn {
            r: BufReader::new(r),
            w,
        },
        owner: owner::fresh(),
        n: 0,
    };
    let mut rng = Rng(seed);
    let (mut digest, mut ops) = (0x811c_9dc5u32, 0u32);
    while Instant::now() < deadline {
        let d: [u32; 10] = std::array::from_fn(|_| rng.u32());
        if ops < 64 {
            digest = d.iter().fold(digest, |h, v| fnv(h, *v));
        }
        ops += 1;
        let o = Op::new(&d, &plan, &prims);
        a.one(&o).await;
    }
    emit(json!({"t": "done", "actor": a.name, "ops": ops, "digest": format!("{digest:08x}")}));
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, wid, seed, seconds, actors, ..] = &args[..] else {
        return Err("usage: chaos_worker PLAN WORKER_ID SEED SECONDS ACTORS".into());
    };
    let plan = Arc::new(Plan::read(path).map_err(|e| e.to_string())?);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds.parse()?);
    let options = ClientOptions {
        watchdog_timeout: plan.watchdog,
        session_timeout: plan.session,
        ..ClientOptions::default()
    };
    let mut clients = HashMap::new();
    for (b, url) in &plan.urls {
        clients.insert(b.clone(), Client::connect_with(url, options.clone()).await?);
    }
    let mut handles = HashMap::new();
    for p in &plan.prims {
        let c = &clients[&p.backend];
        let h = match p.kind.as_str() {
            "lock" => c.lock(&p.name).map(Handle::Lock),
            "fair" => c.fair_lock(&p.name).map(Handle::Lock),
            "rw" => c
                .read_write_lock(&p.name)
                .map(|rw| Handle::Rw(rw.read_lock(), rw.write_lock())),
            _ => match c.semaphore(&p.name) {
                Ok(s) => s.try_set_permits(p.permits).await.map(|_| Handle::Sem(s)),
                Err(e) => Err(e),
            },
        };
        match h {
            Ok(h) => {
                handles.insert(p.id.clone(), h);
            }
            Err(e) if e.kind() == ErrorKind::Unsupported => emit(
                json!({"t": "op", "actor": "-", "op": "handle", "prim": p.id, "result": "unsupported"}),
            ),
            Err(e) => return Err(e.into()),
        }
    }
    let prims: Vec<Prim> = plan
        .prims
        .iter()
        .filter(|p| handles.contains_key(&p.id))
        .cloned()
        .collect();
    let handles = Arc::new(handles);
    let seed: u32 = seed.parse()?;
    let mut tasks = Vec::new();
    for i in 0..actors.parse::<u32>()? {
        let s = seed.wrapping_add((i + 1).wrapping_mul(0x9E37_79B9));
        tasks.push(tokio::spawn(actor(
            format!("{wid}.{i}"),
            s,
            plan.clone(),
            handles.clone(),
            prims.clone(),
            deadline,
        )));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    for c in clients.values() {
        c.close().await?;
    }
    Ok(())
}
