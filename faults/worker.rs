//! A worker of the fault harness (`faults/harness.py`), on the Rust core: takes the lock, runs a
//! critical section against the harness's fenced resource (BEGIN, three WRITEs, END, each with
//! the fencing token), releases, and prints one JSON line per section on stdout:
//! `{"token":N,"refused":bool,"told":bool,"lost":"reason"|null,"release":"ok"|"<error kind>"}`.
//! A failed acquire prints `{"acquire_error":"<kind>"}`. With `POLYLOCK_FAULT_ELECTION=1` it
//! campaigns in the election NAME instead, leads for one section (its term as the token) and
//! resigns.
//!
//! `fault_worker URL NAME RESOURCE(host:port) SECONDS WATCHDOG_MS`

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use polylock::{
    owner, AcquireOptions, Client, ClientOptions, ErrorKind, HoldState, LostSignal, Wait,
};

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
        println!(
            "{{\"worker\":\"{me}\",\"token\":{token},\"refused\":{refused},\"told\":{told},\"lost\":{lost},\"release\":\"{release}\"}}"
        );
        std::io::stdout().flush()?;
        tokio::time::sleep(Duration::from_millis(5 + (token % 20))).await;
    }
    client.close().await?;
    Ok(())
}
