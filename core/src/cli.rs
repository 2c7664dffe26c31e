//! The `polylock` command: run a command under a distributed lock, inspect a lock, or force it
//! open. [`main`] is the whole command (the `polylock` binary calls it, and so does the Python
//! package's console script).
//!
//! Exit codes (sysexits.h): the command's own code, or 64 usage error, 69 server unreachable,
//! 70 internal error, 75 `--wait` ran out, 76 the lock was lost while the command ran (with
//! `--on-lost kill`), 77 credentials refused, 126/127 the command could not be run, 128+N the
//! command died of signal N.

/// The process's exit code (0 to 255).
type ExitCode = u8;
use std::time::Duration;

use crate::{
    AcquireOptions, Client, ClientOptions, Error, ErrorKind, Lock, LockKind, LostSignal, MultiLock,
    OwnerId, Permit, PermitExpirableSemaphore, Permits, Semaphore, Wait,
};
use clap::{Parser, Subcommand, ValueEnum};
use tokio::signal::unix::{signal, SignalKind};

const EX_USAGE: u8 = 64;
const EX_UNAVAILABLE: u8 = 69;
const EX_SOFTWARE: u8 = 70;
const EX_TEMPFAIL: u8 = 75;
const EX_LOST: u8 = 76;
const EX_NOPERM: u8 = 77;

#[derive(Parser, Debug)]
#[command(
    name = "polylock",
    version,
    about = "Distributed locks on Redis (Redisson-compatible) and ZooKeeper (Curator-compatible)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Debug)]
struct Target {
    /// Lock server: redis://[user:password@]host:port[/db], rediss://...,
    /// zk://[user:password@]host:port[,host:port...][/chroot] (the name is then a znode path),
    /// etcd://[user:password@]host:port[,host:port...] (etcd's own lock, as `etcdctl lock`),
    /// mysql://user:password@host:port/db (GET_LOCK) or postgres://user:password@host:port/db
    /// (advisory locks; ?mode=table on either: ShedLock's lease table); also redis+sentinel://,
    /// redis+cluster://, zks://, etcds://. Every form and its options: the URL table in
    /// docs/src/contract.md#urls.
    /// Given 3 or more times (redis:// URLs of independent masters): a RedLock across them.
    #[arg(long, env = "POLYLOCK_URL", default_value = "redis://127.0.0.1:6379")]
    url: Vec<String>,
    /// Lock name (a reentrant lock; with --shared or --exclusive, a read-write lock). Given
    /// several times: a multi-lock that takes all of them or none.
    #[arg(long, value_name = "NAME", required_unless_present_any = ["read", "write"])]
    name: Vec<String>,
    /// The read half of the read-write lock NAME: shared with other readers.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["name", "write"])]
    read: Option<String>,
    /// The write half of the read-write lock NAME: exclusive of readers and writers.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["name", "read"])]
    write: Option<String>,
    /// With --name: take the read half of a read-write lock (flock's word).
    #[arg(long, short = 's', requires = "name", conflicts_with = "exclusive")]
    shared: bool,
    /// With --name: take the write half of a read-write lock (flock's word).
    #[arg(long, short = 'x', requires = "name")]
    exclusive: bool,
    /// With --name: a fair lock, granted in the order of asking (Redisson's RFairLock; every
    /// ZooKeeper lock is fair already). `status --fair` lists its queue.
    #[arg(long, requires = "name", conflicts_with_all = ["shared", "exclusive"])]
    fair: bool,
}

impl Target {
    /// The locks' names and kind, from whichever option named them.
    fn locks(&self) -> (Vec<&str>, LockKind) {
        let names = || self.name.iter().map(String::as_str).collect();
        match (&self.read, &self.write) {
            (Some(n), _) => (vec![n.as_str()], LockKind::Read),
            (_, Some(n)) => (vec![n.as_str()], LockKind::Write),
            _ if self.shared => (names(), LockKind::Read),
            _ if self.exclusive => (names(), LockKind::Write),
            _ if self.fair => (names(), LockKind::Fair),
            _ => (names(), LockKind::Reentrant),
        }
    }

    /// One handle per name.
    fn handles(&self, client: &Client) -> Result<Vec<Lock>, Error> {
        let (names, kind) = self.locks();
        names.iter().map(|n| client.lock_of_kind(n, kind)).collect()
    }

    /// The lock, or the multi-lock over every name.
    fn handle(&self, client: &Client) -> Result<Lock, Error> {
        let mut locks = self.handles(client)?;
        if locks.len() == 1 {
            return Ok(locks.remove(0));
        }
        MultiLock::new(locks)
    }

    /// The name, or the names joined by commas.
    fn name(&self) -> String {
        self.locks().0.join(",")
    }

    /// Only one name: a semaphore.
    fn single_name(&self) -> Result<&str, Error> {
        match self.locks().0.as_slice() {
            [one] => Ok(one),
            _ => Err(Error::new(
                ErrorKind::InvalidArgument,
                "--permits takes one --name: a semaphore, not a multi-lock",
            )),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum OnLost {
    /// Send the command SIGTERM (SIGKILL after --grace) and exit 76.
    Kill,
    /// Only warn on stderr; the command keeps running.
    Ignore,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Acquire the lock, run CMD with POLYLOCK_NAME and POLYLOCK_FENCING_TOKEN set, release it when
    /// CMD exits, and exit with CMD's code. With several --name: all of them or none, and
    /// POLYLOCK_FENCING_TOKENS holds their tokens, comma-separated in the order given.
    Run {
        #[command(flatten)]
        target: Target,
        /// Wait at most this long for the lock (e.g. 30s, 2m); exit 75 if it ran out.
        /// Default: wait forever.
        #[arg(long, value_parser = duration)]
        wait: Option<Duration>,
        /// Fixed lease: the lock expires after it even while CMD runs (no watchdog).
        #[arg(long, value_parser = duration)]
        lease: Option<Duration>,
        /// Watchdog lease, renewed every third of it while polylock runs.
        #[arg(long, value_parser = duration, default_value = "30s")]
        watchdog: Duration,
        /// Take one of N permits of the semaphore NAME instead of a lock: at most N commands run at
        /// once across machines. On Redis the permits expire (renewed while polylock runs), so a
        /// killed polylock never keeps one; on ZooKeeper they are leases of its session.
        #[arg(long, value_name = "N", conflicts_with_all = ["read", "write", "shared", "exclusive"])]
        permits: Option<u32>,
        /// What to do if the lock is lost while CMD runs.
        #[arg(long, value_enum, default_value_t = OnLost::Kill)]
        on_lost: OnLost,
        /// After SIGTERM on a lost lock, how long CMD gets before SIGKILL.
        #[arg(long, value_parser = duration, default_value = "10s")]
        grace: Duration,
        /// The command and its arguments.
        #[arg(required = true, last = true, value_name = "CMD")]
        cmd: Vec<std::ffi::OsString>,
    },
    /// Print one line of JSON: locked, the mode of a read-write lock, holders with counts and
    /// modes, remaining TTL in ms (Redis, etcd), and the contenders waiting in order (ZooKeeper,
    /// etcd; on etcd each contender is `<lease id>@<create revision> ttl=<seconds left>s`). With
    /// --permits: the semaphore's free and taken permits.
    Status {
        #[command(flatten)]
        target: Target,
        /// NAME is a semaphore (as taken by `run --permits`).
        #[arg(long, conflicts_with_all = ["read", "write", "shared", "exclusive"])]
        permits: bool,
    },
    /// Delete the lock whoever holds it (Redisson's forceUnlock) and wake its waiters.
    Unlock {
        #[command(flatten)]
        target: Target,
        /// Required: this frees a lock another process may be relying on.
        #[arg(long)]
        force: bool,
    },
}

fn duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 500ms, 30s, 2m)"))?;
    if d.is_zero() {
        return Err("must be positive".into());
    }
    if d > crate::MAX_DURATION {
        return Err("is longer than the 10-year limit".into());
    }
    Ok(d)
}

/// Run the command line `args` (the program name first, as `std::env::args_os()` gives it) and
/// return the process's exit code (sysexits.h, see the module's help).
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EX_USAGE } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match crate::runtime::block_on(run(cli)) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) | Err(e) => fail(&e),
    }
}

fn fail(e: &Error) -> ExitCode {
    eprintln!("polylock: {e}");
    match e.kind() {
        ErrorKind::InvalidArgument | ErrorKind::Unsupported => EX_USAGE,
        ErrorKind::Connection => EX_UNAVAILABLE,
        ErrorKind::Timeout => EX_TEMPFAIL,
        ErrorKind::LockLost => EX_LOST,
        ErrorKind::Auth => EX_NOPERM,
        _ => EX_SOFTWARE,
    }
}

async fn connect(urls: &[String], watchdog: Duration) -> Result<Client, Error> {
    let options = ClientOptions {
        watchdog_timeout: watchdog,
        ..ClientOptions::default()
    };
    match urls {
        [one] => Client::connect_with(one, options).await,
        many => Client::connect_redlock_with(many, options).await,
    }
}

async fn run(cli: Cli) -> Result<ExitCode, Error> {
    let (url, watchdog) = match &cli.command {
        Command::Status { target, .. } | Command::Unlock { target, .. } => {
            (target.url.clone(), Duration::from_secs(30))
        }
        Command::Run {
            target, watchdog, ..
        } => (target.url.clone(), *watchdog),
    };
    if let Command::Unlock {
        target,
        force: false,
    } = &cli.command
    {
        eprintln!(
            "polylock: refusing to unlock '{}' without --force: it frees the lock whoever holds it",
            target.name()
        );
        return Ok(EX_USAGE);
    }
    let client = connect(&url, watchdog).await?;
    let result = run_with(&client, cli.command).await;
    // Every way out closes the client: its holds and waiting nodes are removed now, and a
    // ZooKeeper session ends before the process does (its nodes would stay for the session
    // timeout otherwise, and the next waiter would queue behind them).
    let closed = client.close().await;
    match (result, closed) {
        (Ok(code), Ok(())) => Ok(code),
        (Ok(code), Err(e)) => {
            eprintln!("polylock: closing the client: {e}");
            Ok(code)
        }
        (Err(e), _) => Err(e),
    }
}

async fn run_with(client: &Client, command: Command) -> Result<ExitCode, Error> {
    match command {
        Command::Status {
            target,
            permits: true,
        } => {
            let name = target.single_name()?;
            let st = match client.permit_expirable_semaphore(name) {
                Ok(s) => s.status().await?,
                Err(e) if e.kind() == ErrorKind::Unsupported => {
                    client.semaphore(name)?.status().await?
                }
                Err(e) => return Err(e),
            };
            let holders: Vec<_> = st
                .holders
                .iter()
                .map(|h| serde_json::json!({"id": h.id, "expires_in_ms": h.expires_in.map(|d| d.as_millis() as u64)}))
                .collect();
            let line = serde_json::json!({
                "name": st.name,
                "available": st.available,
                "permits": st.permits,
                "taken": holders.len(),
                "holders": holders,
            });
            println!("{line}");
            Ok(0)
        }
        Command::Status { target, .. } => {
            // One line per name.
            for lock in target.handles(client)? {
                let st = lock.status().await?;
                let holders: Vec<_> = st
                    .holders
                    .iter()
                    .map(|h| serde_json::json!({"owner": h.owner, "count": h.count, "mode": h.mode.word()}))
                    .collect();
                let line = serde_json::json!({
                    "name": st.name,
                    "locked": st.locked,
                    "mode": st.mode.map(|m| m.word()),
                    "holders": holders,
                    "ttl_ms": st.ttl.map(|d| d.as_millis() as u64),
                    "waiters": st.waiters,
                });
                println!("{line}");
            }
            Ok(0)
        }
        Command::Unlock { target, .. } => {
            for lock in target.handles(client)? {
                let was = lock.force_unlock().await?;
                println!(
                    "{}",
                    serde_json::json!({"name": lock.name(), "unlocked": was})
                );
            }
            Ok(0)
        }
        Command::Run {
            target,
            wait,
            lease,
            permits,
            on_lost,
            grace,
            cmd,
            ..
        } => {
            let how = Take {
                wait: wait.map_or(Wait::Forever, Wait::For),
                lease,
                permits,
            };
            run_command(client, target, how, on_lost, grace, cmd).await
        }
    }
}

struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Signals, Error> {
        let s = |k| {
            signal(k).map_err(|e| Error::new(ErrorKind::Internal, format!("signal handler: {e}")))
        };
        Ok(Signals {
            int: s(SignalKind::interrupt())?,
            term: s(SignalKind::terminate())?,
            hup: s(SignalKind::hangup())?,
            quit: s(SignalKind::quit())?,
        })
    }

    async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
            _ = self.quit.recv() => libc::SIGQUIT,
        }
    }
}

/// How `run` takes what it holds.
struct Take {
    wait: Wait,
    lease: Option<Duration>,
    permits: Option<u32>,
}

/// What `run` holds while its command runs: a lock's hold, or one permit of a semaphore.
enum Held {
    Lock {
        lock: Lock,
        owner: OwnerId,
        lost: LostSignal,
        token: u64,
    },
    /// Every lock of a multi-lock.
    Multi {
        lock: Lock,
        owner: OwnerId,
        lost: LostSignal,
        tokens: Vec<u64>,
    },
    /// An expiring permit (Redis).
    Permit {
        semaphore: PermitExpirableSemaphore,
        permit: Permit,
    },
    /// A lease of the session (ZooKeeper).
    Lease {
        semaphore: Semaphore,
        permits: Permits,
    },
}

impl Held {
    async fn take(client: &Client, target: &Target, how: &Take) -> Result<Held, Error> {
        let Some(n) = how.permits else {
            let lock = target.handle(client)?;
            let owner = crate::owner::fresh();
            let options = AcquireOptions {
                wait: how.wait,
                lease: how.lease,
            };
            let held = lock.acquire(owner, options).await?;
            if !lock.is_multi() {
                return Ok(Held::Lock {
                    lock,
                    owner,
                    lost: held.lost,
                    token: held.fencing_token,
                });
            }
            // The tokens in the order the names were given.
            let members = lock.members();
            let (names, kind) = target.locks();
            let tokens = names
                .iter()
                .map(|n| {
                    members
                        .iter()
                        .find(|m| m.name() == *n && m.kind() == kind)
                        .and_then(|m| m.fencing_token(owner))
                        .unwrap_or(0)
                })
                .collect();
            return Ok(Held::Multi {
                lock,
                owner,
                lost: held.lost,
                tokens,
            });
        };
        let name = target.single_name()?;
        if n == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "--permits must be at least 1",
            ));
        }
        let differs = |set: Option<i64>| {
            if let Some(set) = set.filter(|set| *set != n as i64) {
                eprintln!(
                    "polylock: warning: semaphore '{name}' was set to {set} permits before; using those, not {n}"
                );
            }
        };
        match client.permit_expirable_semaphore(name) {
            Ok(semaphore) => {
                if !semaphore.try_set_permits(n).await? {
                    differs(semaphore.status().await?.permits);
                }
                let permit = semaphore.acquire(how.lease, how.wait).await?;
                Ok(Held::Permit { semaphore, permit })
            }
            Err(e) if e.kind() == ErrorKind::Unsupported => {
                if how.lease.is_some() {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        "a semaphore's leases on ZooKeeper last while the session lives; drop --lease",
                    ));
                }
                let semaphore = client.semaphore(name)?;
                if !semaphore.try_set_permits(n).await? {
                    differs(semaphore.status().await?.permits);
                }
                let permits = semaphore.acquire(1, how.wait).await?;
                Ok(Held::Lease { semaphore, permits })
            }
            Err(e) => Err(e),
        }
    }

    fn lost(&self) -> Option<LostSignal> {
        match self {
            Held::Lock { lost, .. } | Held::Multi { lost, .. } => Some(lost.clone()),
            Held::Permit { permit, .. } => Some(permit.lost.clone()),
            Held::Lease { permits, .. } => permits.lost.clone(),
        }
    }

    /// What the command learns of its hold: the fencing token of a lock, the id of a permit.
    fn env(&self) -> (&'static str, String) {
        match self {
            Held::Lock { token, .. } => ("POLYLOCK_FENCING_TOKEN", token.to_string()),
            Held::Multi { tokens, .. } => (
                "POLYLOCK_FENCING_TOKENS",
                tokens
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            Held::Permit { permit, .. } => ("POLYLOCK_PERMIT", permit.id.clone()),
            Held::Lease { permits, .. } => ("POLYLOCK_PERMITS", permits.count.to_string()),
        }
    }

    async fn release(&self) -> Result<(), Error> {
        match self {
            Held::Lock { lock, owner, .. } | Held::Multi { lock, owner, .. } => {
                lock.release(*owner).await.map(drop)
            }
            Held::Permit { semaphore, permit } => semaphore.release(&permit.id).await,
            Held::Lease { semaphore, permits } => permits.release(semaphore).await,
        }
    }
}

async fn run_command(
    client: &Client,
    target: Target,
    how: Take,
    on_lost: OnLost,
    grace: Duration,
    cmd: Vec<std::ffi::OsString>,
) -> Result<ExitCode, Error> {
    let mut signals = Signals::new()?;
    // A signal while waiting: stop waiting (dropping the wait leaves nothing behind).
    let held = tokio::select! {
        r = Held::take(client, &target, &how) => r?,
        sig = signals.next() => return Ok(128 + sig as u8),
    };
    let (key, value) = held.env();
    let mut child = match tokio::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .env("POLYLOCK_NAME", target.name())
        .env(key, value)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("polylock: cannot run {:?}: {e}", cmd[0]);
            let _ = held.release().await;
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Ok(code);
        }
    };
    let pid = child.id().map(|p| p as libc::pid_t);
    let send = |sig: i32| {
        if let Some(pid) = pid {
            // SAFETY: kill(2) with our own child's pid; no memory is involved.
            unsafe { libc::kill(pid, sig) };
        }
    };
    let signal = held.lost();
    let mut lost = signal.is_none();
    let mut kill_deadline: Option<tokio::time::Instant> = None;
    let status = loop {
        let lost_wait = async {
            match (&signal, lost) {
                (Some(s), false) => s.wait().await,
                _ => std::future::pending().await,
            }
        };
        let killer = async {
            match kill_deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            status = child.wait() => break status,
            reason = lost_wait => {
                let Some(reason) = reason else {
                    lost = true; // the hold ended without a loss: stop watching
                    continue;
                };
                lost = true;
                match on_lost {
                    OnLost::Kill => {
                        eprintln!("polylock: lock '{}' lost ({}: {}); stopping the command", target.name(), reason.name(), reason.describe());
                        send(libc::SIGTERM);
                        kill_deadline = Some(tokio::time::Instant::now() + grace);
                    }
                    OnLost::Ignore => {
                        eprintln!("polylock: warning: lock '{}' lost ({}: {}); the command keeps running", target.name(), reason.name(), reason.describe());
                    }
                }
            }
            _ = killer => {
                send(libc::SIGKILL);
                kill_deadline = None;
            }
            sig = signals.next() => send(sig),
        }
    };
    let status = status
        .map_err(|e| Error::new(ErrorKind::Internal, format!("waiting for the command: {e}")))?;
    let is_lost = || signal.as_ref().is_some_and(|s| s.is_lost());
    let was_lost = is_lost();
    match held.release().await {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::LockLost => {
            if !was_lost {
                eprintln!("polylock: {e}");
            }
        }
        Err(e) => eprintln!("polylock: release failed: {e}"),
    }
    if (was_lost || is_lost()) && on_lost == OnLost::Kill {
        return Ok(EX_LOST);
    }
    use std::os::unix::process::ExitStatusExt;
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
        _ => EX_SOFTWARE,
    })
}
