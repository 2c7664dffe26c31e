//! A worker of the fault harness (`faults/harness.py`), on the Rust core: takes the lock, runs a
//! critical section against the harness's fenced resource (BEGIN, three WRITEs, END, each with
//! the fencing token), releases, and prints one JSON line per section on stdout:
//! `{"token":N,"refused":bool,"told":bool,"lost":"reason"|null,"release":"ok"|"<error kind>"}`.
//! A failed acquire prints `{"acquire_error":"<kind>"}`. With `POLYLOCK_FAULT_ELECTION=1` it
//! campaigns in the election NAME instead, leads for one section (its term as the token) and
//! resigns.
//!
//! With `POLYLOCK_FAULT_FENCES=REDIS_URL,PG_URL,MYSQL_URL` every step of a section also writes
//! through the real fences under its token: a fenced `RPUSH {NAME}:fenced TOKEN` on that Redis,
//! and in PostgreSQL and MariaDB the guard row (`polylock::fence`) and an insert into
//! `polylock_faults_fenced` in one transaction; the section's line gains
//! `"fenced":{"redis":[accepted,refused],"postgres":[..],"mysql":[..]},"fence_errors":N`.
//!
//! `fault_worker URL NAME RESOURCE(host:port) SECONDS WATCHDOG_MS`

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use polylock::{
    owner, AcquireOptions, Client, ClientOptions, ErrorKind, Fence, HoldState, LostSignal, Wait,
};

/// A SQL driver's error as polylock's (a fence error of the row).
fn driver(e: impl std::fmt::Display) -> polylock::Error {
    polylock::Error::new(ErrorKind::Backend, e.to_string())
}

/// The real fences a section writes through, and what each did: [accepted, refused].
struct Fences {
    _client: Client,
    redis: Fence,
    pg: tokio_postgres::Client,
    my: mysql_async::Conn,
    counts: [[u32; 2]; 3],
    errors: u32,
}

impl Fences {
    async fn open(urls: &str, name: &str) -> Result<Fences, Box<dyn std::error::Error>> {
        let [redis, pg, my] = urls.split(',').collect::<Vec<_>>()[..] else {
            return Err("POLYLOCK_FAULT_FENCES: REDIS_URL,PG_URL,MYSQL_URL".into());
        };
        let client = Client::connect(redis).await?;
        let redis = client.fence(name)?;
        let (pg, conn) =
            tokio_postgres::connect(pg.split('?').next().unwrap_or(pg), tokio_postgres::NoTls)
                .await?;
        tokio::spawn(conn);
        let my = mysql_async::Conn::from_url(my).await?;
        Ok(Fences {
            _client: client,
            redis,
            pg,
            my,
            counts: [[0; 2]; 3],
            errors: 0,
        })
    }

    fn count(&mut self, at: usize, r: polylock::Result<()>) {
        match r {
            Ok(()) => self.counts[at][0] += 1,
            Err(e) if e.kind() == ErrorKind::StaleToken => self.counts[at][1] += 1,
            Err(e) => {
                eprintln!("fence error: {e}");
                self.errors += 1;
            }
        }
    }

    /// One write through each fence under `token`.
    async fn write(&mut self, name: &str, token: u64) {
        let key = format!("{{{name}}}:fenced");
        let r = self
            .redis
            .write(
                token,
                &[vec![
                    b"RPUSH".to_vec(),
                    key.into_bytes(),
                    token.to_string().into_bytes(),
                ]],
            )
            .await
            .map(drop);
        self.count(0, r);
        let r = async {
            let tx = self.pg.transaction().await.map_err(driver)?;
            polylock::fence::postgres(&tx, name, token).await?;
            tx.execute(
                "INSERT INTO polylock_faults_fenced (name, token) VALUES ($1, $2)",
                &[&name, &(token as i64)],
            )
            .await
            .map_err(driver)?;
            tx.commit().await.map_err(driver)
        }
        .await;
        self.count(1, r);
        let r = async {
            let mut tx = self
                .my
                .start_transaction(Default::default())
                .await
                .map_err(driver)?;
            if let Err(e) = polylock::fence::mysql(&mut tx, name, token).await {
                let _ = tx.rollback().await;
                return Err(e);
            }
            tx.exec_drop(
                "INSERT INTO polylock_faults_fenced (name, token) VALUES (?, ?)",
                (name, token),
            )
            .await
            .map_err(driver)?;
            tx.commit().await.map_err(driver)
        }
        .await;
        self.count(2, r);
    }

    /// The counts as a JSON member, and zero them for the next section.
    fn take(&mut self) -> String {
        let c = std::mem::take(&mut self.counts);
        let errors = std::mem::take(&mut self.errors);
        format!(
            ",\"fenced\":{{\"redis\":[{},{}],\"postgres\":[{},{}],\"mysql\":[{},{}]}},\"fence_errors\":{errors}",
            c[0][0], c[0][1], c[1][0], c[1][1], c[2][0], c[2][1]
        )
    }
}

/// One request to the resource; true when it was accepted.
fn ask(conn: &mut (BufReader<TcpStream>, TcpStream), line: &str) -> std::io::Result<bool> {
    conn.1.write_all(format!("{line}\n").as_bytes())?;
    let mut reply = String::new();
    conn.0.read_line(&mut reply)?;
    Ok(reply.trim() == "OK")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, name, resource, seconds, watchdog] = &args[..] else {
        return Err("usage: fault_worker URL NAME RESOURCE SECONDS WATCHDOG_MS".into());
    };
    let me = format!("rust-{}", std::process::id());
    let options = ClientOptions {
        watchdog_timeout: Duration::from_millis(watchdog.parse()?),
        session_timeout: Duration::from_secs(4),
        ..ClientOptions::default()
    };
    let end = Instant::now() + Duration::from_secs_f64(seconds.parse()?);
    let client = loop {
        match Client::connect_with(url, options.clone()).await {
            Ok(c) => break c,
            Err(e) if Instant::now() < end => {
                println!("{{\"acquire_error\":\"{:?}\"}}", e.kind());
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e.into()),
        }
    };
    let lock = client.lock(name)?;
    let election = match std::env::var("POLYLOCK_FAULT_ELECTION").as_deref() {
        Ok("1") => Some(client.election(name, &me)?),
        _ => None,
    };
    let mut fences = match std::env::var("POLYLOCK_FAULT_FENCES") {
        Ok(urls) if !urls.is_empty() => Some(Fences::open(&urls, name).await?),
        _ => None,
    };
    let stream = TcpStream::connect(resource)?;
    let mut conn = (BufReader::new(stream.try_clone()?), stream);
    let owner = owner::fresh();
    while Instant::now() < end {
        let wait = Duration::from_secs(2);
        let acquired: polylock::Result<Option<(u64, LostSignal)>> = match &election {
            Some(e) => e
                .campaign(Wait::For(wait))
                .await
                .map(|l| l.map(|l| (l.term, l.lost))),
            None => lock
                .acquire(owner, AcquireOptions::wait_for(wait))
                .await
                .map(|h| Some((h.fencing_token, h.lost))),
        };
        let (token, lost_signal) = match acquired {
            Ok(Some(held)) => held,
            Ok(None) => continue,
            Err(e) => {
                if e.kind() != ErrorKind::Timeout {
                    println!("{{\"acquire_error\":\"{:?}\"}}", e.kind());
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                continue;
            }
        };
        let mut refused = false;
        let steps = ["BEGIN", "WRITE", "WRITE", "WRITE", "END"];
        for (i, step) in steps.iter().enumerate() {
            if let Some(f) = fences.as_mut() {
                f.write(name, token).await;
            }
            let conn = &mut conn;
            let line = format!("{step} {me} {token}");
            if !tokio::task::block_in_place(|| ask(conn, &line))? {
                refused = true;
                break;
            }
            if i + 1 < steps.len() {
                tokio::time::sleep(Duration::from_millis(40)).await;
            }
        }
        if refused {
            // The woken holder goes on with its work: one more write through every fence (a pause
            // may have fallen between two fences' writes of a step, leaving a fence no late write).
            if let Some(f) = fences.as_mut() {
                f.write(name, token).await;
            }
        }
        // A release the server did not answer is tried again.
        let mut release = String::new();
        for _ in 0..20 {
            let released = match &election {
                Some(e) => e.resign().await.map(drop),
                None => lock.release(owner).await.map(drop),
            };
            release = match released {
                Ok(()) => "ok".to_string(),
                Err(e) => format!("{:?}", e.kind()),
            };
            if release == "ok" || release == "LockLost" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let lost = match lost_signal.state() {
            HoldState::Lost(r) => format!("\"{r:?}\""),
            _ => "null".into(),
        };
        let told = lost != "null" || release == "LockLost";
        let fenced = fences.as_mut().map(Fences::take).unwrap_or_default();
        println!(
            "{{\"worker\":\"{me}\",\"token\":{token},\"refused\":{refused},\"told\":{told},\"lost\":{lost},\"release\":\"{release}\"{fenced}}}"
        );
        std::io::stdout().flush()?;
        tokio::time::sleep(Duration::from_millis(5 + (token % 20))).await;
    }
    client.close().await?;
    Ok(())
}
