//! The `polylock` command: run a command under a distributed lock, hold a lock from a shell,
//! inspect whatever a name holds, or force a lock open. [`main`] is the whole command (the
//! `polylock` binary calls it, and so does the Python package's console script).
//!
//! Exit codes (sysexits.h): the command's own code, or 64 usage error, 69 server unreachable,
//! 70 internal error, 75 the lock was not had (`-n`, or `--wait` ran out; `-E N` changes it),
//! 76 the lock was lost while the command ran (with `--on-lost kill`), 77 credentials refused,
//! 126/127 the command could not be run, 128+N the command died of signal N.

/// `println!` for what polylock shows: the line with every character a terminal would obey
/// escaped (names, holders and server messages are written by others; see `model::shown`).
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", $crate::model::shown::escape(&format!($($arg)*)))
    };
}

/// `eprintln!` the same way as [`say`].
macro_rules! tell {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::model::shown::escape(&format!($($arg)*)))
    };
}

mod serve;
mod top;
mod view;

/// The process's exit code (0 to 255).
type ExitCode = u8;
use std::io::Write as _;
use std::time::Duration;

use crate::{
    AcquireOptions, Client, ClientOptions, Election, Error, ErrorKind, Leader, Lock, LockKind,
    LockStatus, LostSignal, MultiLock, OwnerId, Permit, PermitExpirableSemaphore, Permits,
    Semaphore, SemaphoreStatus, Wait,
};
use clap::{ArgGroup, CommandFactory, Parser, Subcommand, ValueEnum};
use serde_json::{json, Value};
use tokio::signal::unix::{signal, SignalKind};

const EX_USAGE: u8 = 64;
const EX_UNAVAILABLE: u8 = 69;
const EX_SOFTWARE: u8 = 70;
const EX_TEMPFAIL: u8 = 75;
const EX_LOST: u8 = 76;
const EX_NOPERM: u8 = 77;

/// The server used when neither `--url` nor `POLYLOCK_URL` names one.
const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// Every URL form, shown after the help of each command that takes `--url`.
const URL_FORMS: &str = "\
URL forms (--url, else $POLYLOCK_URL, else redis://127.0.0.1:6379):
  redis://[user:password@]host:port[/db]            one Redis (Redisson's formats)
  rediss://...[#insecure]                           the same over TLS (#insecure: no verification)
  redis+sentinel://[user:password@]h1:26379,h2:26379/<master>[/db]
                                                    the master a Sentinel group names
                                                    (rediss+sentinel://; ?sentinel_user=&sentinel_password=)
  redis+cluster://[user:password@]h1:7000,h2:7001   a Redis Cluster (rediss+cluster://)
      every Redis URL also takes ?wait_replicas=N[&wait_timeout=50ms]
  zk://[user:password@]h1:2181[,h2:2181...][/chroot][?session_timeout_ms=N][&acl=open|creator]
                                                    ZooKeeper (Curator's formats; NAME is a znode path)
  zks://...?tls_ca_file=PATH[&tls_cert_file=PATH&tls_key_file=PATH]   ZooKeeper over TLS
  etcd://[user:password@]h1:2379[,h2:2379...][?ttl=SECONDS]    etcd (etcd's own lock, as etcdctl lock)
  etcds://...?tls_ca_file=PATH[&tls_cert_file=PATH&tls_key_file=PATH]  etcd over TLS
  mysql://user:password@host:3306/db                MySQL or MariaDB GET_LOCK (also mariadb://)
  postgres://user:password@host:5432/db             PostgreSQL advisory locks (also postgresql://)
      SQL URLs also take ?mode=table[&table=shedlock] (ShedLock's lease table),
      ?fencing=sequence|table|none, ?max_connections=N, and TLS: mysql://...?require_ssl=true
      [&sslrootcert=ca.pem], postgres://...?sslmode=verify-full[&sslrootcert=ca.pem]
  --url three or more times (redis:// URLs of independent masters): a RedLock across them
Every form and its options: the URL table in docs/src/contract.md#urls";

/// What the exit codes mean, after the top-level help.
const EXIT_CODES: &str = "\
Exit codes: the command's own (128+N if it died of signal N); 64 usage error; 69 server
unreachable; 70 internal error; 75 the lock was not had (-n, or --wait ran out; -E N changes
it); 76 the lock was lost while the command ran (--on-lost kill); 77 credentials refused;
126/127 the command could not be run / was not found.

Run once across hosts (cron on every host, one of them runs the job, the others exit 0):
  polylock run -n -E 0 nightly-report -- ./report.sh";

#[derive(Parser, Debug)]
#[command(
    name = "polylock",
    version,
    about = "Distributed locks for shells and cron: Redis (Redisson's formats), ZooKeeper \
             (Curator's), etcd (etcdctl lock's), MySQL/MariaDB and PostgreSQL",
    after_help = EXIT_CODES
)]
struct Cli {
    /// Say on stderr which server is used and where its URL came from, and who holds a lock
    /// that could not be had.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Debug)]
#[command(group(
    ArgGroup::new("names")
        .required(true)
        .multiple(true)
        .args(["lock_name", "name", "read", "write", "pattern"])
))]
struct Target {
    /// Lock server; given 3 or more times (redis:// URLs of independent masters), a RedLock
    /// across them. Default: $POLYLOCK_URL, else redis://127.0.0.1:6379. Forms: below.
    #[arg(long, value_name = "URL")]
    url: Vec<String>,
    /// The name: a reentrant lock (a ZooKeeper znode path on zk://), or with --shared,
    /// --exclusive or --fair that kind of lock.
    #[arg(value_name = "NAME")]
    lock_name: Option<String>,
    /// `status` only: every name that matches this pattern instead (Redis: a SCAN MATCH glob,
    /// `orders:*`; ZooKeeper: the children of the pattern's parent, `/locks/*`; etcd: the keys
    /// under its literal prefix). Free names are left out.
    #[arg(long = "match", value_name = "PATTERN", conflicts_with_all = ["lock_name", "name", "read", "write"])]
    pattern: Option<String>,
    /// A name, as the positional NAME. Given several times: a multi-lock that takes all of them
    /// or none.
    #[arg(long, value_name = "NAME")]
    name: Vec<String>,
    /// The read half of the read-write lock NAME: shared with other readers.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["name", "lock_name", "write"])]
    read: Option<String>,
    /// The write half of the read-write lock NAME: exclusive of readers and writers.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["name", "lock_name", "read"])]
    write: Option<String>,
    /// The read half of the read-write lock NAME (flock's word).
    #[arg(long, short = 's', conflicts_with_all = ["exclusive", "read", "write"])]
    shared: bool,
    /// The write half of the read-write lock NAME (flock's word).
    #[arg(long, short = 'x', conflicts_with_all = ["read", "write"])]
    exclusive: bool,
    /// A fair lock, granted in the order of asking (Redisson's RFairLock; every ZooKeeper and
    /// etcd lock is fair already). `status --fair` lists its queue.
    #[arg(long, conflicts_with_all = ["shared", "exclusive", "read", "write"])]
    fair: bool,
}

/// What `top` and `serve` look at, and how often.
#[derive(clap::Args, Debug)]
struct ViewArgs {
    /// Lock server (redis://, zk://, etcd:// and their TLS forms). Default: $POLYLOCK_URL, else
    /// redis://127.0.0.1:6379.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The names to show (Redis: a SCAN MATCH glob, `orders:*`; ZooKeeper: the children of the
    /// pattern's parent, `/locks/*`; etcd: the keys under its literal prefix).
    #[arg(long = "match", value_name = "PATTERN")]
    pattern: String,
    /// How often to read the server again.
    #[arg(long, value_parser = duration, default_value = "1s", value_name = "DURATION")]
    interval: Duration,
    /// Read at most this many names.
    #[arg(long, value_name = "N", default_value_t = view::DEFAULT_LIMIT)]
    limit: usize,
}

/// The URLs given with --url, else $POLYLOCK_URL, else the default; and where they came from.
fn server_urls(given: &[String]) -> (Vec<String>, UrlSource) {
    if !given.is_empty() {
        return (given.to_vec(), UrlSource::Flag);
    }
    match std::env::var("POLYLOCK_URL") {
        Ok(u) if !u.trim().is_empty() => (vec![u.trim().to_string()], UrlSource::Env),
        _ => (vec![DEFAULT_URL.to_string()], UrlSource::Default),
    }
}

/// A leader election: its server and name.
#[derive(clap::Args, Debug)]
struct ElectionTarget {
    /// Lock server (redis://, zk://, etcd:// and their TLS forms; not SQL or RedLock).
    /// Default: $POLYLOCK_URL, else redis://127.0.0.1:6379. Forms: below.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The election's name (a znode path on zk://).
    #[arg(value_name = "NAME")]
    name: String,
}

impl ElectionTarget {
    fn urls(&self) -> (Vec<String>, UrlSource) {
        server_urls(self.url.as_slice())
    }
}

/// Where the URLs of a command came from (said on `--verbose`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UrlSource {
    Flag,
    Env,
    Default,
}

impl Target {
    /// The names given as the positional NAME and as --name, in that order.
    fn plain_names(&self) -> Vec<&str> {
        self.lock_name
            .iter()
            .chain(&self.name)
            .map(String::as_str)
            .collect()
    }

    /// The locks' names and kind, from whichever option named them.
    fn locks(&self) -> (Vec<&str>, LockKind) {
        match (&self.read, &self.write) {
            (Some(n), _) => (vec![n.as_str()], LockKind::Read),
            (_, Some(n)) => (vec![n.as_str()], LockKind::Write),
            _ if self.shared => (self.plain_names(), LockKind::Read),
            _ if self.exclusive => (self.plain_names(), LockKind::Write),
            _ if self.fair => (self.plain_names(), LockKind::Fair),
            _ => (self.plain_names(), LockKind::Reentrant),
        }
    }

    /// True when no option chose the kind of lock (`status` then reads what the name holds).
    fn kind_given(&self) -> bool {
        self.read.is_some() || self.write.is_some() || self.shared || self.exclusive || self.fair
    }

    /// The URLs to connect to, and where they came from.
    fn urls(&self) -> (Vec<String>, UrlSource) {
        server_urls(&self.url)
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
                "--permits takes one name: a semaphore, not a multi-lock",
            )),
        }
    }

    /// --shared, --exclusive and --fair qualify a name given as NAME or --name.
    fn check(&self) -> Result<(), Error> {
        if self.pattern.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "--match lists names for `status`; name the lock to take or unlock",
            ));
        }
        if (self.shared || self.exclusive || self.fair) && self.plain_names().is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "--shared, --exclusive and --fair go with a NAME (or --name)",
            ));
        }
        Ok(())
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum OnLost {
    /// Send the command's process group (the command and every process it started) SIGTERM,
    /// SIGKILL after --grace, and exit 76.
    Kill,
    /// Only warn on stderr; the command keeps running.
    Ignore,
}

/// How `run` and `lock` take the lock.
#[derive(clap::Args, Debug)]
struct HoldArgs {
    #[command(flatten)]
    target: Target,
    /// Wait at most this long for the lock (e.g. 30s, 2m; 0 = one try, as -n). Default: wait
    /// forever.
    #[arg(long, short = 'w', value_parser = wait_duration, value_name = "DURATION")]
    wait: Option<Duration>,
    /// One try: if another holder has the lock, exit at once with the conflict code (flock's
    /// -n; the same as --wait 0).
    #[arg(long, short = 'n', conflicts_with = "wait")]
    no_wait: bool,
    /// The exit code when the lock was not had (-n, or --wait ran out); nothing is printed
    /// then unless --verbose. 0 makes "another host has it" a success for cron (flock's -E).
    #[arg(long, short = 'E', value_name = "N", default_value_t = EX_TEMPFAIL)]
    conflict_exit_code: u8,
    /// Fixed lease: the lock expires after it even while CMD runs (no watchdog).
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    lease: Option<Duration>,
    /// Watchdog lease, renewed every third of it while polylock runs.
    #[arg(long, value_parser = duration, default_value = "30s", value_name = "DURATION")]
    watchdog: Duration,
    /// Take one of N permits of the semaphore NAME instead of a lock: at most N commands run at
    /// once across machines. On Redis the permits expire (renewed while polylock runs), so a
    /// killed polylock never keeps one; on ZooKeeper and etcd they are leases of its session.
    #[arg(long, value_name = "N", conflicts_with_all = ["read", "write", "shared", "exclusive", "fair"])]
    permits: Option<u32>,
    /// What to do if the lock is lost while CMD runs (or while `lock` holds it: it exits 76).
    #[arg(long, value_enum, default_value_t = OnLost::Kill)]
    on_lost: OnLost,
    /// After SIGTERM on a lost lock, how long CMD's process group gets before SIGKILL (also
    /// for the processes CMD leaves running when it exits: they are stopped before the lock is
    /// released).
    #[arg(long, value_parser = duration, default_value = "10s", value_name = "DURATION")]
    grace: Duration,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Acquire the lock, run CMD with POLYLOCK_NAME and POLYLOCK_FENCING_TOKEN set, release it
    /// when CMD exits, and exit with CMD's code. With several names: all of them or none, and
    /// POLYLOCK_FENCING_TOKENS holds their tokens, comma-separated in the order given. CMD runs
    /// in a process group of its own: signals polylock receives, and the SIGTERM of a lost lock,
    /// reach every process it started.
    #[command(after_help = URL_FORMS)]
    Run {
        #[command(flatten)]
        hold: HoldArgs,
        /// The command and its arguments.
        #[arg(required = true, last = true, value_name = "CMD")]
        cmd: Vec<std::ffi::OsString>,
    },
    /// Acquire the lock and hold it. With CMD, as `run`. Without, print one line of JSON (name,
    /// key, owner, fencing_token) and hold the lock until SIGINT or SIGTERM, then release it and
    /// exit 0 (as `etcdctl lock NAME` does); exit 76 if it is lost meanwhile.
    #[command(after_help = URL_FORMS)]
    Lock {
        #[command(flatten)]
        hold: HoldArgs,
        /// The command and its arguments (optional).
        #[arg(last = true, value_name = "CMD")]
        cmd: Vec<std::ffi::OsString>,
    },
    /// Print one line of JSON per name: what it holds ("kind": lock, read-write lock, fair lock,
    /// semaphore, or free), whether it is locked, the mode of a read-write lock, the holders with
    /// counts and modes, the remaining TTL in ms (Redis, etcd), and the contenders waiting in
    /// order (ZooKeeper, etcd, a Redis fair lock). A semaphore shows its free and taken permits.
    /// --read/--write/--fair/--permits read the name as that kind instead; --election reads it
    /// as a leader election (its leader, term and candidates in order, as `leader` prints).
    #[command(after_help = URL_FORMS)]
    Status {
        #[command(flatten)]
        target: Target,
        /// Read NAME as a semaphore (as taken by `run --permits`).
        #[arg(long, conflicts_with_all = ["read", "write", "shared", "exclusive", "fair"])]
        permits: bool,
        /// Read NAME as a leader election (as taken by `elect`).
        #[arg(long, conflicts_with_all = ["read", "write", "shared", "exclusive", "fair", "permits"])]
        election: bool,
        /// Print JSON (one line per name). It is the only output format; the flag says so in
        /// scripts.
        #[arg(long)]
        json: bool,
        /// With --match: read at most this many names.
        #[arg(long, value_name = "N", default_value_t = view::DEFAULT_LIMIT)]
        limit: usize,
    },
    /// A live view of the locks whose names match PATTERN, redrawn every second in the style of
    /// `top`: each name's kind, holders (service@host/pid and runtime), how long the hold has
    /// been seen, its waiters and the next one, its lease. `s` switches the order (longest hold,
    /// most waiters), `q` quits.
    #[command(after_help = URL_FORMS)]
    Top {
        #[command(flatten)]
        view: ViewArgs,
        /// The order of the rows.
        #[arg(long, value_enum, default_value_t = top::SortBy::Hold)]
        sort: top::SortBy,
    },
    /// Serve the locks whose names match PATTERN over HTTP, read-only: /metrics (Prometheus
    /// text: per name held, holders, waiters, the oldest hold's age, the lease left, semaphore
    /// permits), /api/locks (JSON), /events (server-sent events) and / (a live page). Listens
    /// on 127.0.0.1:9464 unless told otherwise; with --token every request needs it
    /// (`Authorization: Bearer TOKEN`, or `?token=TOKEN` percent-encoded, for the page). On a
    /// loopback address a request whose Host is not localhost, a name under .localhost or a
    /// loopback address is refused (403: a web page reaching serve through DNS rebinding);
    /// --allow-host adds names. Runs until SIGINT or SIGTERM.
    #[command(after_help = URL_FORMS)]
    Serve {
        #[command(flatten)]
        view: ViewArgs,
        /// Address and port to listen on.
        #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9464")]
        listen: std::net::SocketAddr,
        /// A bearer token every request must carry. Default: $POLYLOCK_SERVE_TOKEN, else none.
        #[arg(
            long,
            value_name = "TOKEN",
            env = "POLYLOCK_SERVE_TOKEN",
            hide_env_values = true
        )]
        token: Option<String>,
        /// Also accept requests whose Host header names HOST (a name or address clients use to
        /// reach serve, as a reverse proxy or a DNS name of this machine; the port is ignored).
        /// Repeatable. Given with a non-loopback --listen, the Host check applies there too.
        #[arg(long, value_name = "HOST")]
        allow_host: Vec<String>,
        /// The most connections served at once (every /events subscriber holds one; at most 64
        /// subscribers, or half of N). At the limit a new connection closes the oldest one that
        /// is not in the middle of a request. Lowered to fit the open-file limit (ulimit -n, less
        /// 64). A connection that sends no full request header within 10 s (of opening, or of
        /// its previous response) is closed.
        #[arg(
            long,
            value_name = "N",
            default_value_t = serve::DEFAULT_MAX_CONNECTIONS,
            value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
        )]
        max_connections: usize,
    },
    /// Delete the lock whoever holds it (Redisson's forceUnlock) and wake its waiters.
    #[command(after_help = URL_FORMS)]
    Unlock {
        #[command(flatten)]
        target: Target,
        /// Required: this frees a lock another process may be relying on.
        #[arg(long)]
        force: bool,
    },
    /// Campaign in the leader election NAME (Curator's LeaderLatch on ZooKeeper, etcd's
    /// election, a Redisson lock plus a leader record on Redis), run CMD while leading with
    /// POLYLOCK_NAME and POLYLOCK_TERM set (the term rises with every new leader: a fencing
    /// token), resign when CMD exits, and exit with CMD's code. If leadership is lost while CMD
    /// runs, CMD's process group gets SIGTERM (SIGKILL after --grace) and polylock exits 76.
    #[command(after_help = URL_FORMS)]
    Elect {
        #[command(flatten)]
        target: ElectionTarget,
        /// The identity others see as the leader. Default: <host>-<pid>.
        #[arg(long, value_name = "ID")]
        identity: Option<String>,
        /// Campaign at most this long (0 = only if nobody leads); exit with the conflict code
        /// if not elected by then. Default: campaign until elected.
        #[arg(long, short = 'w', value_parser = wait_duration, value_name = "DURATION")]
        wait: Option<Duration>,
        /// The exit code when not elected within --wait.
        #[arg(long, short = 'E', value_name = "N", default_value_t = EX_TEMPFAIL)]
        conflict_exit_code: u8,
        /// Watchdog lease of the leadership (Redis), renewed every third of it while polylock
        /// runs.
        #[arg(long, value_parser = duration, default_value = "30s", value_name = "DURATION")]
        watchdog: Duration,
        /// After SIGTERM on a lost leadership, how long CMD's process group gets before SIGKILL.
        #[arg(long, value_parser = duration, default_value = "10s", value_name = "DURATION")]
        grace: Duration,
        /// The command and its arguments.
        #[arg(required = true, last = true, value_name = "CMD")]
        cmd: Vec<std::ffi::OsString>,
    },
    /// Print who leads the election NAME as one line of JSON (name, leader, term, candidates in
    /// order; leader and term null when nobody leads). With --watch, a line per change until
    /// SIGINT or SIGTERM.
    #[command(after_help = URL_FORMS)]
    Leader {
        #[command(flatten)]
        target: ElectionTarget,
        /// Follow the election: print a line whenever the leader changes.
        #[arg(long)]
        watch: bool,
    },
    /// Print this command's reference as Markdown (docs/src/cli.md is its output).
    #[command(hide = true)]
    HelpMarkdown,
}

/// The default identity of `elect`: the host's name and the process id.
fn default_identity() -> String {
    format!("{}-{}", crate::host_name(), std::process::id())
}

/// One line of `leader`.
fn leader_line(name: &str, leader: Option<&Leader>, candidates: &[String]) -> Value {
    json!({
        "name": name,
        "leader": leader.map(|l| l.identity.as_str()),
        "term": leader.map(|l| l.term),
        "candidates": candidates,
    })
}

/// `leader NAME [--watch]`.
async fn show_leader(election: &Election, watch: bool) -> Result<ExitCode, Error> {
    let mut signals = Signals::new()?;
    let mut seen = election.leader().await?;
    say!(
        "{}",
        leader_line(
            election.name(),
            seen.as_ref(),
            &election.candidates().await?
        )
    );
    let _ = std::io::stdout().flush();
    if !watch {
        return Ok(0);
    }
    loop {
        let change = tokio::select! {
            c = election.next_change(seen.as_ref(), Wait::Forever) => c?,
            _ = signals.next() => break,
        };
        let Some(now) = change else { continue };
        say!(
            "{}",
            leader_line(election.name(), now.as_ref(), &election.candidates().await?)
        );
        let _ = std::io::stdout().flush();
        seen = now;
    }
    Ok(0)
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

/// A wait: like [`duration`], and zero means one try.
fn wait_duration(s: &str) -> Result<Duration, String> {
    if s.trim().trim_end_matches(|c: char| c.is_ascii_alphabetic()) == "0" {
        return Ok(Duration::ZERO);
    }
    duration(s)
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
            // clap quotes what it could not take, a URL with its password among them (the help
            // is polylock's own text, shown as written).
            let text = match e.use_stderr() {
                true => crate::model::secret::redact_text(&e.render().to_string()),
                false => e.render().to_string(),
            };
            if e.use_stderr() {
                eprint!("{text}");
            } else {
                print!("{text}");
            }
            return code;
        }
    };
    if let Command::HelpMarkdown = cli.command {
        print!("{}", help_markdown());
        return 0;
    }
    match crate::runtime::block_on(run(cli)) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) | Err(e) => fail(&e),
    }
}

/// The command's reference in Markdown, from the clap definition itself: the top-level help and
/// each visible command's long help, verbatim.
fn help_markdown() -> String {
    let mut top = Cli::command().term_width(100);
    top.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         <!-- Generated by `polylock help-markdown` from the clap definition in core/src/cli.rs;\n\
         scripts/docs.sh fails when this file differs from its output. Do not edit by hand. -->\n\n",
    );
    let mut section = |title: &str, cmd: &mut clap::Command| {
        let help = cmd.render_long_help().to_string();
        let help: Vec<&str> = help.lines().map(str::trim_end).collect();
        out.push_str(&format!(
            "## `{title}`\n\n```text\n{}\n```\n\n",
            help.join("\n").trim_end()
        ));
    };
    section("polylock", &mut top.clone());
    let names: Vec<String> = top
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .map(|c| c.get_name().to_string())
        .collect();
    for name in names {
        let mut sub = top
            .find_subcommand_mut(&name)
            .expect("a listed subcommand")
            .clone();
        section(&format!("polylock {name}"), &mut sub);
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

fn fail(e: &Error) -> ExitCode {
    // Each message masked the URL it knew; any other URL in it is masked here.
    tell!(
        "polylock: {}",
        crate::model::secret::redact_text(&e.to_string())
    );
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
    let verbose = cli.verbose;
    let ((urls, source), watchdog) = match &cli.command {
        Command::Status { target, .. } => {
            if target.pattern.is_none() {
                target.check()?;
            }
            (target.urls(), Duration::from_secs(30))
        }
        Command::Unlock { target, .. } => {
            target.check()?;
            (target.urls(), Duration::from_secs(30))
        }
        Command::Top { view, .. } | Command::Serve { view, .. } => {
            (server_urls(view.url.as_slice()), Duration::from_secs(30))
        }
        Command::Run { hold, .. } | Command::Lock { hold, .. } => {
            hold.target.check()?;
            (hold.target.urls(), hold.watchdog)
        }
        Command::Elect {
            target, watchdog, ..
        } => (target.urls(), *watchdog),
        Command::Leader { target, .. } => (target.urls(), Duration::from_secs(30)),
        Command::HelpMarkdown => unreachable!("handled before the runtime starts"),
    };
    if let Command::Unlock {
        target,
        force: false,
    } = &cli.command
    {
        tell!(
            "polylock: refusing to unlock '{}' without --force: it frees the lock whoever holds it",
            target.name()
        );
        return Ok(EX_USAGE);
    }
    // A command that runs something under a lock hears SIGINT/SIGTERM/SIGHUP from the start (before -v names the server): one
    // that arrives while connecting ends it with 128+N like one that arrives while waiting (the
    // default action would kill it with nothing said).
    let mut signals = match &cli.command {
        Command::Run { .. } | Command::Lock { .. } | Command::Elect { .. } => Some(Signals::new()?),
        _ => None,
    };
    if verbose {
        let from = match source {
            UrlSource::Flag => "--url",
            UrlSource::Env => "POLYLOCK_URL",
            UrlSource::Default => "the default: no --url and no POLYLOCK_URL",
        };
        let shown: Vec<String> = urls.iter().map(|u| crate::redact_url(u)).collect();
        tell!("polylock: server {} (from {from})", shown.join(" "));
    }
    let client = match signals.as_mut() {
        Some(s) => tokio::select! {
            c = connect(&urls, watchdog) => c?,
            sig = s.next() => return Ok(128 + sig as u8),
        },
        None => connect(&urls, watchdog).await?,
    };
    let result = run_with(&client, cli.command, verbose, signals).await;
    // Every way out closes the client: its holds and waiting nodes are removed now, and a
    // ZooKeeper session ends before the process does (its nodes would stay for the session
    // timeout otherwise, and the next waiter would queue behind them).
    let closed = client.close().await;
    match (result, closed) {
        (Ok(code), Ok(())) => Ok(code),
        (Ok(code), Err(e)) => {
            tell!("polylock: closing the client: {e}");
            Ok(code)
        }
        (Err(e), _) => Err(e),
    }
}

/// One line of `status` for a lock.
fn lock_line(kind: &str, st: &LockStatus) -> Value {
    let holders: Vec<_> = st
        .holders
        .iter()
        .map(|h| {
            json!({
                "owner": h.owner,
                "count": h.count,
                "mode": h.mode.word(),
                "identity": h.identity.as_deref().map(crate::identity_value),
            })
        })
        .collect();
    let waiter_identities: Vec<Value> = st
        .waiter_identities
        .iter()
        .map(|i| i.as_deref().map_or(Value::Null, crate::identity_value))
        .collect();
    json!({
        "name": st.name,
        "kind": kind,
        "locked": st.locked,
        "mode": st.mode.map(|m| m.word()),
        "holders": holders,
        "ttl_ms": st.ttl.map(|d| d.as_millis() as u64),
        "waiters": st.waiters,
        "waiter_identities": waiter_identities,
        "shared_with": st.shared_with,
    })
}

/// One line of `status` for a semaphore.
fn semaphore_line(kind: &str, st: &SemaphoreStatus) -> Value {
    let holders: Vec<_> = st
        .holders
        .iter()
        .map(|h| json!({"id": h.id, "expires_in_ms": h.expires_in.map(|d| d.as_millis() as u64)}))
        .collect();
    json!({
        "name": st.name,
        "kind": kind,
        "available": st.available,
        "permits": st.permits,
        "taken": holders.len(),
        "holders": holders,
    })
}

/// The semaphore stored under `name`, read as expiring permits where the server has them (Redis)
/// and as a semaphore elsewhere; `None` when the server cannot read it as one.
async fn read_semaphore(client: &Client, name: &str) -> Option<(&'static str, SemaphoreStatus)> {
    match client.permit_expirable_semaphore(name) {
        Ok(s) => {
            let st = s.status().await.ok()?;
            let kind = if st.holders.is_empty() {
                "semaphore"
            } else {
                "expiring semaphore"
            };
            Some((kind, st))
        }
        Err(_) => {
            let st = client.semaphore(name).ok()?.status().await.ok()?;
            Some(("semaphore", st))
        }
    }
}

/// Whatever `name` holds, said as one line: a semaphore, a read-write lock, a fair lock with
/// its queue (Redis), a lock, or nothing ("free").
async fn status_of_any(client: &Client, name: &str) -> Result<Value, Error> {
    // A semaphore first: on etcd a semaphore's permit keys would read as a lock's contenders.
    let semaphore = read_semaphore(client, name).await;
    if let Some((kind, st)) = &semaphore {
        if st.available != 0 || st.permits.is_some_and(|p| p != 0) || !st.holders.is_empty() {
            return Ok(semaphore_line(kind, st));
        }
    }
    // On Redis the fair lock's read is the lock's (hash and TTL) plus its queue. Servers whose
    // every lock is fair (ZooKeeper, etcd), or that have no fair lock (SQL, RedLock), read the lock.
    let lock = match client.queues_waiters() {
        true => client.lock(name)?,
        false => match client.fair_lock(name) {
            Ok(fair) => fair,
            Err(e) if e.kind() == ErrorKind::Unsupported => client.lock(name)?,
            Err(e) => return Err(e),
        },
    };
    match lock.status().await {
        Ok(mut st) => {
            // PostgreSQL's readers hold a shared advisory lock, which only a read-write lock's
            // read shows as such (a writer and a plain lock are the same exclusive lock there).
            if st.locked && st.mode.is_none() {
                if let Ok(read) = client.lock_of_kind(name, LockKind::Read) {
                    match read.status().await {
                        Ok(rw) if rw.mode == Some(crate::HoldMode::Read) => st = rw,
                        _ => {}
                    }
                }
            }
            let kind = if st.mode.is_some() {
                "read-write lock"
            } else if lock.kind() == LockKind::Fair && !st.waiters.is_empty() {
                "fair lock"
            } else if st.locked || !st.waiters.is_empty() {
                "lock"
            } else {
                "free"
            };
            Ok(lock_line(kind, &st))
        }
        // The name holds something a lock's read cannot take (a Redis string: a semaphore whose
        // permits are all taken, or a count-down latch): the semaphore's read said what it is.
        Err(e) if e.kind() == ErrorKind::Backend => match semaphore {
            Some((kind, st)) => Ok(semaphore_line(kind, &st)),
            None => Err(e),
        },
        Err(e) => Err(e),
    }
}

async fn run_with(
    client: &Client,
    command: Command,
    verbose: bool,
    signals: Option<Signals>,
) -> Result<ExitCode, Error> {
    match command {
        Command::Top { view, sort } => {
            top::top(client, &view.pattern, view.interval, sort, view.limit).await
        }
        Command::Serve {
            view,
            listen,
            token,
            allow_host,
            max_connections,
        } => {
            let options = serve::Options {
                listen,
                token: token.filter(|t| !t.is_empty()),
                allow_hosts: allow_host,
                interval: view.interval,
                limit: view.limit,
                max_connections,
            };
            serve::serve(client, &view.pattern, options).await
        }
        Command::Status {
            target:
                Target {
                    pattern: Some(pattern),
                    ..
                },
            limit,
            ..
        } => {
            for line in view::scan(client, &pattern, limit).await? {
                say!("{line}");
            }
            Ok(0)
        }
        Command::Status {
            target,
            election: true,
            ..
        } => {
            for name in target.locks().0 {
                let e = client.election(name, "observer")?;
                let mut line =
                    leader_line(name, e.leader().await?.as_ref(), &e.candidates().await?);
                line["kind"] = json!("election");
                say!("{line}");
            }
            Ok(0)
        }
        Command::Status {
            target,
            permits: true,
            ..
        } => {
            let name = target.single_name()?;
            let (kind, st) = match client.permit_expirable_semaphore(name) {
                Ok(s) => ("expiring semaphore", s.status().await?),
                Err(e) if e.kind() == ErrorKind::Unsupported => {
                    ("semaphore", client.semaphore(name)?.status().await?)
                }
                Err(e) => return Err(e),
            };
            say!("{}", semaphore_line(kind, &st));
            Ok(0)
        }
        Command::Status { target, .. } => {
            // One line per name.
            if target.kind_given() {
                let (_, kind) = target.locks();
                for lock in target.handles(client)? {
                    let st = lock.status().await?;
                    let word = match kind {
                        LockKind::Read | LockKind::Write => "read-write lock",
                        other => other.word(),
                    };
                    say!("{}", lock_line(word, &st));
                }
            } else {
                for name in target.locks().0 {
                    say!("{}", status_of_any(client, name).await?);
                }
            }
            Ok(0)
        }
        Command::Unlock { target, .. } => {
            for lock in target.handles(client)? {
                let was = lock.force_unlock().await?;
                say!("{}", json!({"name": lock.name(), "unlocked": was}));
            }
            Ok(0)
        }
        Command::Run { hold, cmd } | Command::Lock { hold, cmd } => {
            let how = Take {
                wait: match (hold.no_wait, hold.wait) {
                    (true, _) => Wait::Never,
                    (false, Some(d)) if d.is_zero() => Wait::Never,
                    (false, Some(d)) => Wait::For(d),
                    (false, None) => Wait::Forever,
                },
                lease: hold.lease,
                permits: hold.permits,
            };
            let mut signals = match signals {
                Some(s) => s,
                None => Signals::new()?,
            };
            // A signal while waiting: stop waiting (dropping the wait leaves nothing behind).
            let held = tokio::select! {
                r = Held::take(client, &hold.target, &how) => r,
                sig = signals.next() => return Ok(128 + sig as u8),
            };
            let held = match held {
                Ok(held) => held,
                Err(e) if e.kind() == ErrorKind::Timeout => {
                    if verbose {
                        tell!("polylock: {e}");
                        for name in hold.target.locks().0 {
                            if let Ok(line) = status_of_any(client, name).await {
                                tell!("polylock: {line}");
                            }
                        }
                    }
                    return Ok(hold.conflict_exit_code);
                }
                Err(e) => return Err(e),
            };
            if cmd.is_empty() {
                hold_until_signal(client, &hold.target, held, signals, hold.on_lost).await
            } else {
                run_command(
                    &hold.target.name(),
                    held,
                    signals,
                    hold.on_lost,
                    hold.grace,
                    cmd,
                )
                .await
            }
        }
        Command::Elect {
            target,
            identity,
            wait,
            conflict_exit_code,
            grace,
            cmd,
            ..
        } => {
            let identity = identity.unwrap_or_else(default_identity);
            let election = client.election(&target.name, &identity)?;
            let wait = match wait {
                Some(d) if d.is_zero() => Wait::Never,
                Some(d) => Wait::For(d),
                None => Wait::Forever,
            };
            let mut signals = match signals {
                Some(s) => s,
                None => Signals::new()?,
            };
            // A signal while campaigning: stop (dropping the campaign withdraws it).
            let leading = tokio::select! {
                r = election.campaign(wait) => r?,
                sig = signals.next() => return Ok(128 + sig as u8),
            };
            let Some(leading) = leading else {
                if verbose {
                    if let Ok(Some(l)) = election.leader().await {
                        tell!(
                            "polylock: '{}' leads '{}' (term {})",
                            l.identity,
                            target.name,
                            l.term
                        );
                    }
                }
                return Ok(conflict_exit_code);
            };
            let held = Held::Leader {
                election,
                lost: leading.lost,
                term: leading.term,
            };
            run_command(&target.name, held, signals, OnLost::Kill, grace, cmd).await
        }
        Command::Leader { target, watch } => {
            let election = client.election(&target.name, "observer")?;
            show_leader(&election, watch).await
        }
        Command::HelpMarkdown => Ok(0),
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
    /// The leadership of an election.
    Leader {
        election: Election,
        lost: LostSignal,
        term: u64,
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
                tell!(
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
                        "a semaphore's permits on ZooKeeper and etcd last while the session lives; drop --lease",
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
            Held::Leader { lost, .. } => Some(lost.clone()),
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
            Held::Leader { term, .. } => ("POLYLOCK_TERM", term.to_string()),
        }
    }

    /// One line of JSON saying what is held (`lock` without a command prints it).
    async fn describe(&self, client: &Client, target: &Target) -> Value {
        match self {
            Held::Lock {
                lock, owner, token, ..
            } => {
                let (key, holder) = identity(client, lock, *owner).await;
                json!({"name": lock.name(), "key": key, "owner": holder, "fencing_token": token})
            }
            Held::Multi { owner, tokens, .. } => json!({
                "name": target.name(),
                "names": target.locks().0,
                "owner": format!("{}:{}", client.id(), owner),
                "fencing_tokens": tokens,
            }),
            Held::Permit { permit, .. } => json!({"name": target.name(), "permit": permit.id}),
            Held::Lease { permits, .. } => json!({"name": target.name(), "permits": permits.count}),
            Held::Leader { election, term, .. } => {
                json!({"name": election.name(), "leader": election.identity(), "term": term})
            }
        }
    }

    async fn release(&self) -> Result<(), Error> {
        match self {
            Held::Lock { lock, owner, .. } | Held::Multi { lock, owner, .. } => {
                lock.release(*owner).await.map(drop)
            }
            Held::Permit { semaphore, permit } => semaphore.release(&permit.id).await,
            Held::Lease { semaphore, permits } => permits.release(semaphore).await,
            Held::Leader { election, .. } => election.resign().await.map(drop),
        }
    }
}

/// `lock NAME` without a command: say what is held (one line of JSON on stdout), then hold it
/// until SIGINT, SIGTERM, SIGHUP or SIGQUIT, and release it.
async fn hold_until_signal(
    client: &Client,
    target: &Target,
    held: Held,
    mut signals: Signals,
    on_lost: OnLost,
) -> Result<ExitCode, Error> {
    say!("{}", held.describe(client, target).await);
    let _ = std::io::stdout().flush();
    let mut signal = held.lost();
    let lost = loop {
        let lost_wait = async {
            match &signal {
                Some(s) => s.wait().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            reason = lost_wait => {
                let Some(reason) = reason else {
                    signal = None; // the hold ended without a loss: stop watching
                    continue;
                };
                if on_lost == OnLost::Kill {
                    tell!("polylock: lock '{}' lost ({})", target.name(), reason.describe());
                    break true;
                }
                tell!("polylock: warning: lock '{}' lost ({}); holding on until a signal", target.name(), reason.describe());
                signal = None;
            }
            _ = signals.next() => break false,
        }
    };
    match held.release().await {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::LockLost && lost => {}
        Err(e) if e.kind() == ErrorKind::LockLost && on_lost == OnLost::Kill => {
            tell!("polylock: {e}");
            return Ok(EX_LOST);
        }
        Err(e) => tell!("polylock: release failed: {e}"),
    }
    Ok(if lost { EX_LOST } else { 0 })
}

/// What `lock` prints of a lock's hold: the key (or node) that holds it on the server, and the
/// holder as the server stores it: `<client id>:<owner id>` on Redis, the node name on
/// ZooKeeper, `<lease id>@<create revision>` on etcd, the connection (or ShedLock's `locked_by`)
/// on SQL. Where several readers hold and cannot be told apart: the name and polylock's owner.
async fn identity(client: &Client, lock: &Lock, owner: OwnerId) -> (String, String) {
    let name = lock.name().to_string();
    let ours = format!("{}:{}", client.id(), owner);
    let Ok(st) = lock.status().await else {
        return (name, ours);
    };
    if st.holders.iter().any(|h| h.owner == ours) {
        return (name, ours); // Redis: the hash NAME, field <client id>:<owner id>
    }
    let [only] = st.holders.as_slice() else {
        return (name, ours);
    };
    if let Some((lease, _)) = only.owner.split_once('@') {
        let rev = only.owner.split_whitespace().next().unwrap_or(&only.owner);
        return (format!("{name}/{lease}"), rev.to_string()); // etcd: NAME/<lease hex>
    }
    if only.owner.starts_with("_c_") {
        let node = format!("{}/{}", name.trim_end_matches('/'), only.owner);
        return (node, only.owner.clone()); // ZooKeeper: the holder's node
    }
    (name, only.owner.clone())
}

/// Whether a process group still has a member.
fn group_alive(group: libc::pid_t) -> bool {
    // SAFETY: kill(2) with signal 0 checks only; no memory is involved.
    unsafe { libc::kill(-group, 0) == 0 }
}

/// End what is left of the command's process group: SIGTERM, and SIGKILL to whatever still runs
/// `grace` later. Processes are looked at every 20 ms until then (the group's members are not
/// children of polylock once their parent ended, so there is nothing to wait on).
async fn end_group(group: libc::pid_t, grace: Duration) {
    if !group_alive(group) {
        return;
    }
    // SAFETY: kill(2) of the command's process group.
    unsafe { libc::kill(-group, libc::SIGTERM) };
    let deadline = tokio::time::Instant::now() + grace;
    while group_alive(group) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if group_alive(group) {
        // SAFETY: as above.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        while group_alive(group) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Polylock's terminal, when its job is the terminal's foreground: the command's group takes the
/// terminal while it runs and gives it back after.
#[derive(Clone, Copy)]
struct ForegroundTerminal {
    ours: libc::pid_t,
}

impl ForegroundTerminal {
    fn of_stdin() -> Option<ForegroundTerminal> {
        // SAFETY: isatty, tcgetpgrp and getpgrp read process state only.
        unsafe {
            let ours = libc::getpgrp();
            (libc::isatty(0) == 1 && libc::tcgetpgrp(0) == ours)
                .then_some(ForegroundTerminal { ours })
        }
    }

    fn give_to(&self, group: libc::pid_t) {
        Self::set(group);
    }

    fn take_back(&self) {
        Self::set(self.ours);
    }

    fn set(group: libc::pid_t) {
        // SAFETY: SIGTTOU is ignored around tcsetpgrp (a background group calling it would be
        // stopped), then its old disposition restored; no memory is shared.
        unsafe {
            let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            libc::tcsetpgrp(0, group);
            libc::signal(libc::SIGTTOU, old);
        }
    }
}

async fn run_command(
    name: &str,
    held: Held,
    mut signals: Signals,
    on_lost: OnLost,
    grace: Duration,
    cmd: Vec<std::ffi::OsString>,
) -> Result<ExitCode, Error> {
    let (key, value) = held.env();
    let mut command = tokio::process::Command::new(&cmd[0]);
    command
        .args(&cmd[1..])
        .env("POLYLOCK_NAME", name)
        .env(key, value)
        // The command's environment is polylock's (POLYLOCK_URL included), but for serve's token.
        .env_remove("POLYLOCK_SERVE_TOKEN");
    // The command runs in a process group of its own, so that a loss, the grace's end, a signal
    // to polylock and polylock's own end reach every process it started (a shell script's
    // children too), not only the first.
    let terminal = ForegroundTerminal::of_stdin();
    // SAFETY: the closure runs in the forked child before exec and calls only setpgid, signal and
    // tcsetpgrp, which are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if terminal.is_some() {
                // Polylock's terminal job was in the foreground: its group is now the command's,
                // so that it reads the terminal and gets the terminal's Ctrl-C.
                libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, libc::getpid());
                libc::signal(libc::SIGTTOU, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            tell!("polylock: cannot run {:?}: {e}", cmd[0]);
            let _ = held.release().await;
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Ok(code);
        }
    };
    let group = child.id().map(|p| p as libc::pid_t);
    if let (Some(t), Some(g)) = (&terminal, group) {
        t.give_to(g); // also here: whichever of parent and child comes first
    }
    let send = |sig: i32| {
        if let Some(g) = group {
            // SAFETY: kill(2) of the command's own process group; no memory is involved.
            unsafe { libc::kill(-g, sig) };
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
                        tell!("polylock: lock '{name}' lost ({}: {}); stopping the command", reason.name(), reason.describe());
                        send(libc::SIGTERM);
                        kill_deadline = Some(tokio::time::Instant::now() + grace);
                    }
                    OnLost::Ignore => {
                        tell!("polylock: warning: lock '{name}' lost ({}: {}); the command keeps running", reason.name(), reason.describe());
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
    // What the command left running in its group must not outlive the lock: SIGTERM, then
    // SIGKILL after the grace, before the lock is released.
    if let Some(g) = group {
        end_group(g, grace).await;
    }
    if let Some(t) = &terminal {
        t.take_back();
    }
    let is_lost = || signal.as_ref().is_some_and(|s| s.is_lost());
    let was_lost = is_lost();
    match held.release().await {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::LockLost => {
            if !was_lost {
                tell!("polylock: {e}");
            }
        }
        Err(e) => tell!("polylock: release failed: {e}"),
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
