//! Synchronous connections for callers blocked in [`runtime::block_on`] on threads of their own
//! (C, Python and Java calls).
//!
//! Such a caller writes its script and reads the reply itself, so the reply wakes it straight
//! from the socket, with no hand-off to a runtime thread and back: that hand-off cost a blocked
//! caller tens of microseconds per round trip. A connection is taken for one call and put back;
//! idle ones are kept up to a bound.
//!
//! On plain TCP the connection is polylock's own socket, spoken through redis-rs's command
//! packing and polylock's reply framing ([`resp`]), so that a caller with a [`SpinPermit`] can
//! poll the socket for its reply for a moment before it sleeps in `recv`. A script's reply
//! comes back in a few tens of microseconds on a local network; a thread that slept for it
//! pays the scheduler's wake-up on top (measured here: 6 µs of a 24 µs PING). TLS and
//! Unix-socket URLs use redis-rs's connection as it is.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::{ConnectionAddr, ConnectionLike, RedisError, RedisResult, Value};

use super::task_conn::{Connector, TaskConns};
use crate::driver::resp;
use crate::runtime::{self, SpinPermit};

/// Idle synchronous connections kept per client.
const MAX_IDLE_SYNC: usize = 64;

pub(super) struct SyncConns {
    client: redis::Client,
    idle: std::sync::Mutex<Vec<SyncConn>>,
    connect_timeout: Duration,
    command_timeout: Duration,
    /// The connections of calls that run as runtime tasks (plain TCP only).
    tasks: Option<TaskConns>,
}

impl SyncConns {
    pub(super) fn new(
        client: redis::Client,
        connect_timeout: Duration,
        command_timeout: Duration,
    ) -> SyncConns {
        let tasks = tcp_connector(&client, connect_timeout, command_timeout)
            .map(|connect| TaskConns::new(connect, command_timeout));
        SyncConns {
            client,
            idle: Default::default(),
            connect_timeout,
            command_timeout,
            tasks,
        }
    }

    /// The connections of calls that run as runtime tasks; `None` for TLS and Unix sockets.
    pub(super) fn tasks(&self) -> Option<&TaskConns> {
        self.tasks.as_ref()
    }

    /// Run `f` on an idle connection, or a new one, and keep it if it is still good.
    pub(super) fn run<T>(
        &self,
        f: impl FnOnce(&mut dyn ConnectionLike) -> RedisResult<T>,
    ) -> RedisResult<T> {
        debug_assert!(runtime::on_blocking_caller());
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = match idle {
            Some(c) => c,
            None => self.connect()?,
        };
        let result = f(conn.as_mut());
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        match &result {
            // The server went away (restart, failover): the idle ones are most likely dead too.
            Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() => {
                idle.clear()
            }
            _ if conn.is_open() && idle.len() < MAX_IDLE_SYNC => idle.push(conn),
            _ => {}
        }
        result
    }

    /// Close the idle connections (the client is being closed).
    pub(super) fn clear(&self) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
        if let Some(tasks) = &self.tasks {
            tasks.clear();
        }
    }

    /// How long a reply may take.
    pub(super) fn command_timeout(&self) -> Duration {
        self.command_timeout
    }

    /// A function that makes a plain TCP connection like this pool's (connected, authenticated,
    /// its database selected) and hands over its socket: a host loop's connection. `None` for TLS
    /// and Unix-socket URLs.
    pub(super) fn stream_connector(
        &self,
    ) -> Option<Box<dyn FnOnce() -> io::Result<TcpStream> + Send>> {
        let connect = tcp_connector(&self.client, self.connect_timeout, self.command_timeout)?;
        Some(Box::new(move || connect()))
    }

    fn connect(&self) -> RedisResult<SyncConn> {
        let info = self.client.get_connection_info();
        if let ConnectionAddr::Tcp(host, port) = info.addr() {
            return TcpConn::connect(
                (host.as_str(), *port),
                info.redis_settings(),
                self.connect_timeout,
                self.command_timeout,
            )
            .map(|c| Box::new(c) as SyncConn);
        }
        let c = self
            .client
            .get_connection_with_timeout(self.connect_timeout)?;
        c.set_read_timeout(Some(self.command_timeout))?;
        c.set_write_timeout(Some(self.command_timeout))?;
        Ok(Box::new(c))
    }
}

/// What makes a plain TCP connection like a pool's (connected, authenticated, its database
/// selected) and hands over its socket. `None` for TLS and Unix-socket URLs.
fn tcp_connector(
    client: &redis::Client,
    connect: Duration,
    command: Duration,
) -> Option<Connector> {
    let info = client.get_connection_info();
    let ConnectionAddr::Tcp(host, port) = info.addr() else {
        return None;
    };
    let (host, port) = (host.clone(), *port);
    let settings = info.redis_settings().clone();
    Some(Arc::new(move || {
        TcpConn::connect((host.as_str(), port), &settings, connect, command)
            .map(|c| c.stream)
            .map_err(|e| io::Error::other(e.to_string()))
    }))
}

/// One synchronous connection: polylock's own ([`TcpConn`]) on plain TCP, redis-rs's otherwise.
pub(super) type SyncConn = Box<dyn ConnectionLike + Send>;

/// A RESP2 connection over a TCP socket of our own. Replies are framed and parsed by
/// [`resp`] (server errors by redis-rs's parser); bytes read past one reply are kept for the
/// next.
struct TcpConn {
    stream: TcpStream,
    /// Bytes read and not yet parsed.
    input: Vec<u8>,
    /// redis-rs's parser, for the replies [`resp::parse`] leaves to it (server errors).
    errors: redis::Parser,
    db: i64,
    /// False after any I/O or protocol error: the stream may be out of step with its replies
    /// (a late reply to a timed-out request), so the connection is dropped, not reused.
    open: bool,
}

impl TcpConn {
    fn connect(
        addr: (&str, u16),
        settings: &redis::RedisConnectionInfo,
        connect_timeout: Duration,
        command_timeout: Duration,
    ) -> RedisResult<TcpConn> {
        let mut last_error = None;
        let mut stream = None;
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&a, connect_timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last_error = Some(e),
            }
        }
        let stream = match (stream, last_error) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(e.into()),
            (None, None) => {
                return Err(RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "the Redis host name resolved to no address",
                )))
            }
        };
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(command_timeout))?;
        stream.set_write_timeout(Some(command_timeout))?;
        let mut conn = TcpConn {
            stream,
            input: Vec::with_capacity(256),
            errors: redis::Parser::new(),
            db: settings.db(),
            open: true,
        };
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
            auth.query::<()>(&mut conn)?;
        }
        if conn.db != 0 {
            redis::cmd("SELECT").arg(conn.db).query::<()>(&mut conn)?;
        }
        Ok(conn)
    }

    fn send(&mut self, cmd: &[u8]) -> RedisResult<()> {
        if !self.open {
            return Err(io::Error::from(io::ErrorKind::NotConnected).into());
        }
        (&self.stream).write_all(cmd).map_err(|e| {
            self.open = false;
            e.into()
        })
    }

    /// Read one reply, polling the socket first while `permit` allows.
    fn read(&mut self, permit: &SpinPermit) -> RedisResult<Value> {
        let reply = self.read_reply(permit);
        if reply.is_err() {
            self.open = false;
        }
        reply
    }

    fn read_reply(&mut self, permit: &SpinPermit) -> RedisResult<Value> {
        let mut reader = SpinReader {
            stream: &self.stream,
            spin_until: permit.deadline(),
        };
        let mut buf = [0u8; 4096];
        loop {
            if let Some((reply, n)) = resp::next_reply(&self.input, &mut self.errors)? {
                self.input.drain(..n);
                return reply;
            }
            match reader.read(&mut buf)? {
                0 => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
                n => self.input.extend_from_slice(&buf[..n]),
            }
        }
    }
}

impl ConnectionLike for TcpConn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.send(cmd)?;
        self.read(&SpinPermit::take())
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.send(cmd)?;
        let permit = SpinPermit::take();
        let mut replies = Vec::with_capacity(count);
        for i in 0..offset + count {
            let reply = self.read(&permit)?;
            if i >= offset {
                replies.push(reply);
            }
        }
        Ok(replies)
    }

    fn get_db(&self) -> i64 {
        self.db
    }

    fn check_connection(&mut self) -> bool {
        redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        self.open
    }
}

/// Reads the socket, first without sleeping until `spin_until` (yielding the CPU between tries),
/// then sleeping in `recv` within the socket's read timeout.
struct SpinReader<'a> {
    stream: &'a TcpStream,
    spin_until: Option<Instant>,
}

impl Read for SpinReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(until) = self.spin_until {
            match crate::driver::recv_until(self.stream, buf, until)? {
                Some(n) => return Ok(n),
                None => self.spin_until = None,
            }
        }
        let mut stream = self.stream;
        loop {
            // A signal (a Python caller's Ctrl-C) interrupts the recv: the reply is still on its
            // way, so wait on; the host handles the signal once the call returns.
            match stream.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                done => return done,
            }
        }
    }
}
