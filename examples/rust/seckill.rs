//! The flash sale of seed 002 in Rust: a stock of N items in Redis, M buyer processes, and one
//! distributed lock so that no item is sold twice.
//!
//!     cargo run --example seckill -- --stock 100 --buyers 4
//!
//! Each purchase: lock, read the stock, pause (the window in which an unlocked sale oversells),
//! write stock - 1 as a fenced write (it runs only if no later holder of the lock wrote), unlock.
//! Inside the lock a buyer also checks that its fencing token is greater
//! than the last one written, and counts sold items with a plain read-modify-write. The
//! coordinator exits non-zero on any oversell, any lost update, or any buyer error.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use polylock::{blocking::Client, owner, AcquireOptions};
use redis::Commands;

#[derive(Parser)]
struct Args {
    /// Redis URL.
    #[arg(
        long,
        env = "POLYLOCK_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    url: String,
    /// Lock server, if not the Redis that holds the stock (e.g. zk://127.0.0.1:2181).
    #[arg(long)]
    lock_url: Option<String>,
    /// Name of the sale (lock `seckill:<name>`, or `/seckill/<name>` on ZooKeeper; stock
    /// `seckill:<name>:stock`).
    #[arg(long, default_value = "goods")]
    name: String,
    /// Pause inside the critical section, in milliseconds.
    #[arg(long, default_value_t = 1)]
    delay_ms: u64,
    #[command(subcommand)]
    role: Option<Role>,
    /// Items in stock.
    #[arg(long, default_value_t = 100)]
    stock: i64,
    /// Buyer processes.
    #[arg(long, default_value_t = 4)]
    buyers: usize,
    /// Buyer: write each critical section as `start_us end_us fencing_token` (wall clock, µs
    /// since the epoch) to this file, for the demo's overlap check and timeline.
    #[arg(long)]
    sections: Option<std::path::PathBuf>,
    /// Buyer: connect, then wait until this wall-clock time (ms since the epoch) before buying, so
    /// that buyers started at different speeds start together.
    #[arg(long)]
    start_at: Option<u64>,
}

/// Microseconds on the machine's monotonic clock (CLOCK_MONOTONIC): what every buyer of the demo
/// stamps its sections with, read the same way in every runtime, so they compare across processes
/// (the runtimes' wall clocks do not agree to the millisecond: Node's, for one, can be off by more).
fn section_us() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u128 * 1_000_000 + ts.tv_nsec as u128 / 1_000
}

/// Wall-clock microseconds since the epoch (the coordinated start).
fn epoch_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
}

/// Sleep until `at` (ms since the epoch), if it is in the future.
fn wait_until(at: Option<u64>) {
    if let Some(at) = at {
        let now = (epoch_us() / 1000) as u64;
        if at > now {
            std::thread::sleep(Duration::from_millis(at - now));
        }
    }
}

#[derive(Subcommand)]
enum Role {
    /// One buyer process: buy until the stock is gone (or --max purchases).
    Buyer {
        /// Stop after this many purchases.
        #[arg(long)]
        max: Option<u64>,
    },
}

fn main() {
    let args = Args::parse();
    let result = match args.role {
        Some(Role::Buyer { max }) => buyer(&args, max),
        None => coordinator(&args),
    };
    if let Err(e) = result {
        eprintln!("seckill: {e}");
        std::process::exit(1);
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn keys(name: &str) -> (String, String, String, String) {
    let base = format!("seckill:{name}");
    (
        base.clone(),
        format!("{base}:stock"),
        format!("{base}:sold"),
        format!("{base}:last-token"),
    )
}

fn buyer(args: &Args, max: Option<u64>) -> Res<()> {
    let (lock_name, stock_key, sold_key, token_key) = keys(&args.name);
    let lock_url = args.lock_url.as_deref().unwrap_or(&args.url);
    let lock_name = if lock_url.starts_with("zk://") {
        format!("/seckill/{}", args.name)
    } else {
        lock_name
    };
    let client = Client::connect(lock_url)?;
    // Each sale is a fenced write on the Redis of the stock (the lock may be elsewhere): a buyer
    // whose lease ended while it was paused cannot sell after a later buyer did.
    let fence = if lock_url == args.url {
        None
    } else {
        Some(Client::connect(&args.url)?)
    };
    let fence = fence.as_ref().unwrap_or(&client);
    let lock = client.lock(&lock_name)?;
    let mut redis = redis::Client::open(args.url.as_str())?.get_connection()?;
    let me = owner::current_thread();
    let (mut bought, mut waits) = (0u64, Vec::new());
    let mut sections = Vec::new();
    wait_until(args.start_at);
    loop {
        if max.is_some_and(|m| bought >= m) {
            break;
        }
        let asked = Instant::now();
        let held = lock.acquire(me, AcquireOptions::forever())?;
        let start = section_us();
        waits.push(asked.elapsed());
        let stock: i64 = redis.get(&stock_key)?;
        if stock <= 0 {
            sections.push((start, section_us(), held.fencing_token));
            lock.release(me)?;
            break;
        }
        let last: u64 = redis.get::<_, Option<u64>>(&token_key)?.unwrap_or(0);
        if held.fencing_token <= last {
            return Err(format!(
                "fencing token {} after {last}: sections out of order",
                held.fencing_token
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(args.delay_ms));
        let sold: i64 = redis.get::<_, Option<i64>>(&sold_key)?.unwrap_or(0);
        let set = |key: &str, value: String| vec![b"SET".to_vec(), key.into(), value.into_bytes()];
        fence.fenced_write(
            &lock_name,
            held.fencing_token,
            &[
                set(&stock_key, (stock - 1).to_string()),
                set(&sold_key, (sold + 1).to_string()),
                set(&token_key, held.fencing_token.to_string()),
            ],
        )?;
        sections.push((start, section_us(), held.fencing_token));
        lock.release(me)?;
        bought += 1;
    }
    if let Some(path) = &args.sections {
        let text: String = sections
            .iter()
            .map(|(s, e, t)| format!("{s} {e} {t}\n"))
            .collect();
        std::fs::write(path, text)?;
    }
    waits.sort();
    let pct = |p: f64| {
        waits
            .get(((waits.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or_default()
    };
    println!(
        "{{\"purchases\":{bought},\"wait_p50_ms\":{:.3},\"wait_p99_ms\":{:.3}}}",
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3
    );
    client.close()?;
    Ok(())
}

fn coordinator(args: &Args) -> Res<()> {
    let (_, stock_key, sold_key, token_key) = keys(&args.name);
    let mut redis = redis::Client::open(args.url.as_str())?.get_connection()?;
    redis.del::<_, ()>(&[&stock_key, &sold_key, &token_key])?;
    redis.set::<_, _, ()>(&stock_key, args.stock)?;
    let exe = std::env::current_exe()?;
    let started = Instant::now();
    let children: Vec<_> = (0..args.buyers)
        .map(|_| {
            let mut c = Command::new(&exe);
            if let Some(l) = &args.lock_url {
                c.args(["--lock-url", l]);
            }
            c.args([
                "--url",
                &args.url,
                "--name",
                &args.name,
                "--delay-ms",
                &args.delay_ms.to_string(),
                "buyer",
            ])
            .stdout(Stdio::piped())
            .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut total = 0u64;
    let mut failed = 0;
    println!(
        "{:<8} {:>10} {:>12} {:>12}",
        "buyer", "purchases", "wait p50 ms", "wait p99 ms"
    );
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output()?;
        let line = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value = match (out.status.success(), serde_json::from_str(line.trim())) {
            (true, Ok(v)) => v,
            _ => {
                failed += 1;
                eprintln!("buyer {i} failed: {}", out.status);
                continue;
            }
        };
        let n = v["purchases"].as_u64().unwrap_or(0);
        total += n;
        println!(
            "{:<8} {:>10} {:>12.3} {:>12.3}",
            i,
            n,
            v["wait_p50_ms"].as_f64().unwrap_or(0.0),
            v["wait_p99_ms"].as_f64().unwrap_or(0.0)
        );
    }
    let stock: i64 = redis.get(&stock_key)?;
    let sold: i64 = redis.get::<_, Option<i64>>(&sold_key)?.unwrap_or(0);
    let oversold = (total as i64 - args.stock).max(0) + (-stock).max(0);
    println!(
        "sold = {total} of {}, stock left = {stock}, sold counter = {sold}, oversold = {oversold}, {:.2?}",
        args.stock,
        started.elapsed()
    );
    if failed > 0 || oversold > 0 || sold != total as i64 || total as i64 + stock != args.stock {
        return Err("the sale went wrong (see above)".into());
    }
    Ok(())
}
