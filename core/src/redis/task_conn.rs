//! Connections for calls that run as tasks of polylock's runtime (async Rust callers that spawn
//! there, and every binding call that runs on the runtime).
//!
//! Such a call, on the shared multiplexed connection, hands its command to that connection's
//! task and is handed the reply back: two wake-ups of another task, often on the other worker
//! thread, per round trip (a pair took about 3x as long as from a blocked thread). Here a call
//! takes a connection for itself, writes its command from its own task and reads the reply
//! there, woken straight by the runtime's I/O driver, like a blocked caller's [`SyncConns`]; the
//! connection is put back afterwards. At most [`MAX_TASK_CONNS`] are open per client: a call
//! that finds none idle and the cap reached takes the multiplexed connection, where any number
//! can be in flight at once.
//!
//! The sockets are made (connected, authenticated, the database selected) by the same code as
//! the synchronous ones, on a blocking thread, and registered with polylock's runtime only: a
//! socket registered with a caller's own runtime would die with that runtime.
//!
//! [`SyncConns`]: super::sync_conn::SyncConns

use std::io;
use std::net::TcpStream as StdStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::{RedisResult, Value};
use tokio::net::TcpStream;

use crate::driver::resp;
use crate::runtime::SpinPermit;

/// Task connections open at once per client (idle or in use).
pub(super) const MAX_TASK_CONNS: usize = 16;

/// Makes a connected, authenticated socket.
pub(super) type Connector = Arc<dyn Fn() -> io::Result<StdStream> + Send + Sync>;

pub(super) struct TaskConns {
    connect: Connector,
    idle: Mutex<Vec<TaskConn>>,
    /// Open connections, idle or lent.
    open: Arc<AtomicUsize>,
    /// Calls waiting for a reply on these connections.
    in_flight: Arc<AtomicUsize>,
    command_timeout: Duration,
}

impl TaskConns {
    pub(super) fn new(connect: Connector, command_timeout: Duration) -> TaskConns {
        TaskConns {
            connect,
            idle: Mutex::default(),
            open: Arc::default(),
            in_flight: Arc::default(),
            command_timeout,
        }
    }

    /// Send one command (packed by `packed`, only when it is sent here) and read its reply on a
    /// connection of this call's own: `None` when the call should take the multiplexed
    /// connection instead (not on a runtime thread, or every connection is in use and the cap is
    /// reached).
    pub(super) async fn request(
        &self,
        packed: impl FnOnce() -> Vec<u8>,
    ) -> Option<RedisResult<Value>> {
        if !crate::runtime::on_runtime_thread() {
            return None;
        }
        let mut conn = match self.take().await? {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        let alone = self.in_flight.fetch_add(1, Ordering::AcqRel) == 0;
        let calls = Counted(self.in_flight.clone());
        let cmd = packed();
        let deadline = tokio::time::Instant::now() + self.command_timeout;
        let reply = conn.request(&cmd, alone, deadline).await;
        drop(calls);
        match &reply {
            // The server went away (restart, failover): the idle ones are most likely dead too.
            Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() => {
                self.clear()
            }
            _ if conn.open => self.idle().push(conn),
            _ => {}
        }
        Some(reply)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<TaskConn>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection, or a new one under the cap (`None` at the cap).
    async fn take(&self) -> Option<RedisResult<TaskConn>> {
        if let Some(c) = self.idle().pop() {
            return Some(Ok(c));
        }
        let open = self.open.clone();
        if open.fetch_add(1, Ordering::AcqRel) >= MAX_TASK_CONNS {
            open.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let count = Counted(open);
        let connect = self.connect.clone();
        let made = tokio::task::spawn_blocking(move || connect()).await;
        let stream = match made {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Some(Err(e.into())),
            Err(_) => return Some(Err(io::Error::other("connecting panicked").into())),
        };
        let stream = stream
            .set_nonblocking(true)
            .and_then(|()| TcpStream::from_std(stream));
        Some(match stream {
            Ok(stream) => Ok(TaskConn {
                stream,
                input: Vec::with_capacity(256),
                errors: redis::Parser::new(),
                open: true,
                _count: count,
            }),
            Err(e) => Err(e.into()),
        })
    }

    /// Close the idle connections (the client closes, or the server went away).
    pub(super) fn clear(&self) {
        self.idle().clear();
    }
}

/// One open connection (or call in flight), counted while it lives.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

struct TaskConn {
    stream: TcpStream,
    /// Bytes read and not yet parsed.
    input: Vec<u8>,
    /// redis-rs's parser, for the replies [`resp::parse`] leaves to it (server errors).
    errors: redis::Parser,
    /// False after any error: the stream may be out of step with its replies, so it is dropped.
    open: bool,
    _count: Counted,
}

impl TaskConn {
    /// Write `cmd`, read its reply. `alone`: no other call of this client waits on a task
    /// connection, so this one may poll the socket for its reply for a moment (with a
    /// [`SpinPermit`], as a blocked caller does) before the task sleeps: a worker that sleeps in
    /// the I/O driver pays the machine's wake-up on top of each round trip (on this project's
    /// VM a pair took 150-165 us that way, against 57 us from a blocked caller that polls).
    /// With several calls in flight the worker has other work, and none polls.
    ///
    /// A call that never sleeps never arms a timer: the command timeout (`deadline`) bounds the
    /// sleeps only.
    async fn request(
        &mut self,
        cmd: &[u8],
        alone: bool,
        deadline: tokio::time::Instant,
    ) -> RedisResult<Value> {
        // Dropped half way (a cancelled call), the connection goes with the future: a late
        // reply can never be read as another call's.
        self.open = false;
        let mut at = 0;
        while at < cmd.len() {
            match self.stream.try_write(&cmd[at..]) {
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    within(deadline, self.stream.writable()).await?
                }
                Err(e) => return Err(e.into()),
            }
        }
        let mut permit = alone.then(SpinPermit::take);
        let mut spin = permit.as_ref().and_then(SpinPermit::deadline);
        loop {
            if let Some((reply, n)) = resp::next_reply(&self.input, &mut self.errors)? {
                // One command, one reply: anything after it is out of step.
                self.open = n == self.input.len();
                self.input.clear();
                return reply;
            }
            match self.stream.try_read_buf(&mut self.input) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => match spin.take() {
                    Some(until) => {
                        // Once: then the reply is there, or the task sleeps for it. What the
                        // spin saw arrive is read straight from the socket: until tokio's I/O
                        // driver (asleep on another worker) has marked the socket readable,
                        // `try_read` answers WouldBlock without reading.
                        let mut buf = [0u8; 4096];
                        match crate::driver::recv_until(&self.stream, &mut buf, until)? {
                            Some(0) => {
                                return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into())
                            }
                            Some(n) => self.input.extend_from_slice(&buf[..n]),
                            None => {}
                        }
                        drop(permit.take());
                    }
                    None => within(deadline, self.stream.readable()).await?,
                },
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// `wait` (a socket's readiness), bounded by the command timeout's `deadline`.
async fn within(
    deadline: tokio::time::Instant,
    wait: impl std::future::Future<Output = io::Result<()>>,
) -> io::Result<()> {
    match tokio::time::timeout_at(deadline, wait).await {
        Ok(ready) => ready,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no reply from Redis within the command timeout",
        )),
    }
}
