//! `polylock serve` is safe to leave running: on loopback it refuses a Host header that is not a
//! loopback name or address (a web page reaching it through DNS rebinding), it bounds its
//! connections and closes idle ones (open sockets cannot exhaust its file descriptors or keep
//! `/metrics` from answering), it caps `/events` subscribers, and it takes its token from the
//! Authorization header or a percent-decoded `?token=`. Requests are written by hand on a TCP
//! socket, so the test sees exactly what is sent.

mod common;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// How long serve waits for a request's header (HEADER_TIMEOUT in core/src/cli/serve.rs): the
/// bound of every wait below that depends on serve closing an idle connection.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// serve's default --max-connections.
const MAX_CONNECTIONS: usize = 256;
/// serve's cap on /events subscribers.
const MAX_SUBSCRIBERS: usize = 64;

/// A `polylock serve` on a free loopback port, killed at the end.
struct Serve {
    child: Child,
    addr: SocketAddr,
    _stdout: BufReader<ChildStdout>,
}

impl Serve {
    fn start(args: &[&str]) -> Serve {
        Serve::start_with(args, None, &[])
    }

    /// With `nofile`: the open-file limit serve runs with (its soft RLIMIT_NOFILE).
    fn start_with(args: &[&str], nofile: Option<u64>, env: &[(&str, &str)]) -> Serve {
        let exe =
            std::env::var("POLYLOCK_TEST_CLI").unwrap_or(env!("CARGO_BIN_EXE_polylock").into());
        let pattern = format!("{}:*", unique("serve"));
        let mut command = Command::new(exe);
        command
            .env_remove("POLYLOCK_SERVE_TOKEN")
            .envs(env.iter().copied())
            .args(["serve", "--url", &url(), "--match", &pattern])
            .args(["--listen", "127.0.0.1:0", "--interval", "200ms"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        if let Some(n) = nofile {
            // SAFETY: setrlimit(2) between fork and exec, with a struct on the stack.
            unsafe {
                command.pre_exec(move || {
                    let mut lim: libc::rlimit = std::mem::zeroed();
                    libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
                    lim.rlim_cur = n.min(lim.rlim_max);
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line
            .strip_prefix("polylock serve: http://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("serve did not say where it listens: {line:?}"))
            .parse()
            .unwrap();
        Serve {
            child,
            addr,
            _stdout: stdout,
        }
    }

    /// A request on a new connection: its status code and body (the connection is closed after
    /// the response; `/events` is read up to its first event only).
    fn get(&self, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(HEADER_TIMEOUT)).unwrap();
        s.write_all(self.request(path, headers).as_bytes()).unwrap();
        read_response(&mut s)
    }

    fn request(&self, path: &str, headers: &[(&str, &str)]) -> String {
        let mut req = format!("GET {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("Connection: close\r\n\r\n");
        req
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Read a response: the status code, and the body up to the end of the connection, or up to
/// the first server-sent event.
fn read_response(s: &mut TcpStream) -> (u16, String) {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            if head.contains("text/event-stream") && body.contains("\n\n") {
                break;
            }
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!(
                "reading the response: {e}; got {:?}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    let text = String::from_utf8_lossy(&got).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// The open-file limit of this test process, raised to its hard limit (it opens over a
/// thousand sockets).
fn raise_own_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit with a struct on the stack.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur
    }
}

/// Whether the server has closed `s` (end of stream or reset), without waiting.
fn closed_by_server(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    match (&*s).read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(_) => true,
    }
}

/// DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends requests with
/// `Host: evil.example`. On loopback, serve answers only loopback names and addresses and the
/// names given with --allow-host.
#[test]
fn on_loopback_a_foreign_host_header_is_refused() {
    let serve = Serve::start(&[]);
    let port = serve.addr.port();
    for path in ["/", "/metrics", "/api/locks", "/events"] {
        for host in [
            "evil.example",
            &format!("evil.example:{port}"),
            "127.0.0.1.nip.io",
        ] {
            let (status, _) = serve.get(path, &[("Host", host)]);
            assert_eq!(status, 403, "{path} with Host {host}");
        }
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "LOCALHOST".to_string(),
        format!("app.localhost:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.2".to_string(),
    ] {
        let (status, _) = serve.get("/metrics", &[("Host", &host)]);
        assert_eq!(status, 200, "Host {host}");
    }
    let serve = Serve::start(&["--allow-host", "locks.example", "--allow-host", "x.test"]);
    for (host, want) in [
        ("locks.example", 200),
        ("Locks.Example:9464", 200),
        ("x.test", 200),
        ("evil.example", 403),
    ] {
        let (status, _) = serve.get("/metrics", &[("Host", host)]);
        assert_eq!(status, want, "Host {host} with --allow-host");
    }
}

/// `?token=` is percent-decoded (the page sends encodeURIComponent's form; a `+` is a plus), and
/// an Authorization header, when present, is the credential (its scheme in any case).
/// A request's path, its headers and the status it must get.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);

#[test]
fn the_token_is_read_from_the_header_or_a_percent_decoded_query() {
    let token = "a/b+c=d e%";
    let serve = Serve::start_with(&[], None, &[("POLYLOCK_SERVE_TOKEN", token)]);
    let cases: &[Case] = &[
        ("/metrics", &[], 401),
        ("/metrics?token=a%2Fb%2Bc%3Dd%20e%25", &[], 200),
        ("/metrics?x=1&token=a/b+c=d%20e%25", &[], 200),
        ("/metrics?token=a%2Fb%20c%3Dd%20e%25", &[], 401),
        ("/metrics?token=wrong", &[], 401),
        ("/metrics", &[("Authorization", "Bearer a/b+c=d e%")], 200),
        ("/metrics", &[("authorization", "bearer a/b+c=d e%")], 200),
        ("/metrics", &[("Authorization", "Bearer wrong")], 401),
        (
            "/metrics?token=a%2Fb%2Bc%3Dd%20e%25",
            &[("Authorization", "Basic Zm9vOmJhcg==")],
            401,
        ),
        (
            "/metrics?token=wrong",
            &[("Authorization", "Bearer a/b+c=d e%")],
            200,
        ),
    ];
    for (path, headers, want) in cases {
        let (status, _) = serve.get(path, headers);
        assert_eq!(status, *want, "{path} {headers:?}");
    }
}

/// 1,100 connections opened and left idle, against a serve whose open-file limit is the usual
/// 1024: serve keeps at most --max-connections (the idle ones beyond are closed, the oldest
/// first), and `/metrics` on a new connection still gets its answer.
#[test]
fn idle_connections_do_not_keep_metrics_from_answering() {
    let room = raise_own_nofile();
    assert!(room >= 1300, "this test needs 1300 open files, has {room}");
    let serve = Serve::start_with(&[], Some(1024), &[]);
    let mut idle = Vec::new();
    for _ in 0..1100 {
        let s = TcpStream::connect_timeout(&serve.addr, HEADER_TIMEOUT).unwrap();
        idle.push(s);
    }
    let started = Instant::now();
    let (status, body) = serve.get("/metrics", &[]);
    assert_eq!(status, 200);
    assert!(body.contains("polylock_exporter_scan_ok 1"), "{body}");
    assert!(
        started.elapsed() < HEADER_TIMEOUT,
        "{:?}",
        started.elapsed()
    );
    // Bounded: everything beyond the limit was closed by serve (the limit is all it keeps).
    let until = Instant::now() + HEADER_TIMEOUT;
    let closed = loop {
        let closed = idle.iter().filter(|s| closed_by_server(s)).count();
        if closed >= idle.len() - MAX_CONNECTIONS || Instant::now() > until {
            break closed;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        closed >= idle.len() - MAX_CONNECTIONS,
        "{closed} of {} idle connections closed",
        idle.len()
    );
    let (status, _) = serve.get("/api/locks", &[]);
    assert_eq!(status, 200);
}

/// A connection that sends nothing, or only part of a request header, is closed once the
/// header timeout has passed.
#[test]
fn a_connection_without_a_full_request_header_is_closed() {
    let serve = Serve::start(&[]);
    let mut silent = TcpStream::connect(serve.addr).unwrap();
    let mut partial = TcpStream::connect(serve.addr).unwrap();
    partial
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: ")
        .unwrap();
    let until = Instant::now() + HEADER_TIMEOUT + Duration::from_secs(5);
    for s in [&mut silent, &mut partial] {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = [0u8; 1024];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {} // a 408 may come first
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
            assert!(
                Instant::now() < until,
                "still open after the header timeout"
            );
        }
    }
}

/// At most 64 `/events` subscribers: the next one gets 503 until one leaves.
#[test]
fn events_subscribers_are_capped() {
    let serve = Serve::start(&[]);
    let mut subscribers = Vec::new();
    for _ in 0..MAX_SUBSCRIBERS {
        let mut s = TcpStream::connect(serve.addr).unwrap();
        s.set_read_timeout(Some(HEADER_TIMEOUT)).unwrap();
        s.write_all(serve.request("/events", &[]).as_bytes())
            .unwrap();
        let (status, body) = read_response(&mut s);
        assert_eq!(status, 200);
        assert!(body.contains("data: {"), "{body}");
        subscribers.push(s);
    }
    let (status, _) = serve.get("/events", &[]);
    assert_eq!(status, 503);
    // The other routes still answer.
    assert_eq!(serve.get("/metrics", &[]).0, 200);
    drop(subscribers.pop());
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _) = serve.get("/events", &[]);
        if status == 200 {
            break;
        }
        assert!(Instant::now() < until, "a subscriber left; still {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
