//! Running polylock's calls on a host's own event loop (Node's libuv loop; the binding supplies
//! the loop's primitives through [`LoopHost`]).
//!
//! The lock logic is written once as Rust futures: each is a state machine that issues commands
//! and waits for their replies, and none of it knows which thread polls it. The tokio runtime is
//! one host for those machines; a [`Driver`] is another. A driver polls the futures of its calls
//! on the loop's thread, and gives each Redis server they talk to a connection of the loop's own:
//! a non-blocking socket the loop watches. A command is written to that socket from the JS (or
//! other host) call itself, its reply is read in the loop's readiness callback, which completes
//! the waiting future and polls it on at once, so an uncontended lock call crosses no thread.
//!
//! What stays on the runtime: connecting (the connection is made there, authenticated, then
//! handed over), timers, pub/sub wake-ups of waiters, the watchdog's renewals; a future woken
//! from there is queued and the host is asked to run the driver once ([`Driver::new`]'s `wake`,
//! e.g. `uv_async_send`). Commands issued while the host settles a batch of results are written
//! with one write after it ([`Driver::callback`]).

pub(crate) mod resp;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::runtime;

/// The file descriptor (socket) a host watches.
#[cfg(unix)]
pub type Fd = std::os::fd::RawFd;
#[cfg(not(unix))]
pub type Fd = i64;

/// What a host loop does for a [`Driver`], called on the loop's thread only.
pub trait LoopHost {
    /// Watch `fd` for readability, and for writability too while `write` (called again for the
    /// same `fd` to change that).
    fn watch(&self, fd: Fd, write: bool) -> io::Result<()>;
    /// Stop watching `fd` (its socket is about to close).
    fn unwatch(&self, fd: Fd);
    /// Keep the host process alive (calls of the user are in flight) or let it end.
    fn keep_alive(&self, yes: bool);
    /// Have the loop call [`Driver::flush`] soon, after the callbacks it is running now (see
    /// [`Driver::defer_writes`]); false when the host cannot, and commands are written at once.
    fn flush_soon(&self) -> bool {
        false
    }
}

/// The state a driver shares with wakers on other threads.
struct Shared {
    ready: Mutex<Vec<usize>>,
    /// Asks the host to run [`Driver::woken`] on the loop (any thread); `None` once closed.
    wake: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// Connections made on the runtime, waiting to be adopted by the loop.
    adopt: Mutex<Vec<(u64, io::Result<TcpStream>)>>,
}

impl Shared {
    fn wake_host(&self) {
        if let Some(w) = &*self.wake.lock().unwrap_or_else(|e| e.into_inner()) {
            w();
        }
    }
}

thread_local! {
    /// The driver whose futures this thread is polling now.
    static CURRENT: RefCell<Option<Rc<Inner>>> = const { RefCell::new(None) };
    /// The driver (its shared state) in a turn on this thread: a wake-up from inside the turn
    /// needs no host wake, the turn polls it before it ends.
    static TURNING: Cell<usize> = const { Cell::new(0) };
}

struct TaskWaker {
    shared: Arc<Shared>,
    id: usize,
}

impl std::task::Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.shared
            .ready
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.id);
        if TURNING.with(|t| t.get()) != Arc::as_ptr(&self.shared) as usize {
            self.shared.wake_host();
        }
    }
}

struct Task {
    /// `None` while it is being polled.
    fut: Option<Pin<Box<dyn Future<Output = ()>>>>,
    waker: Waker,
    serial: u64,
}

/// Names a call spawned on a [`Driver`] (to cancel it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskId {
    index: usize,
    serial: u64,
}

/// The loop-side half of a connection's reply slots.
struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    reply: Option<redis::RedisResult<redis::Value>>,
    waker: Option<Waker>,
}

impl Slot {
    fn fill(&self, reply: redis::RedisResult<redis::Value>) {
        let waker = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.reply = Some(reply);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The reply of one command sent on a loop connection.
pub(crate) struct Reply {
    slot: Arc<Slot>,
    /// Set on a timeout: the connection is out of step and is closed at the end of the turn.
    broken: Arc<AtomicBool>,
    shared: Arc<Shared>,
    timeout: Duration,
}

impl Reply {
    /// The reply, or an I/O error when the connection failed or `timeout` ran out.
    pub(crate) async fn get(self) -> redis::RedisResult<redis::Value> {
        let wait = std::future::poll_fn(|cx| {
            let mut s = self.slot.state.lock().unwrap_or_else(|e| e.into_inner());
            match s.reply.take() {
                Some(r) => Poll::Ready(r),
                None => {
                    if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        s.waker = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
            }
        });
        match tokio::time::timeout(self.timeout, wait).await {
            Ok(r) => r,
            Err(_) => {
                self.broken.store(true, Ordering::Release);
                self.shared.wake_host();
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no reply within the command timeout ({:?})", self.timeout),
                )
                .into())
            }
        }
    }
}

/// What a caller gives to have a connection made when the loop has none to a server yet.
pub(crate) struct ConnectSpec {
    /// Makes the connection (blocking; run on the runtime's blocking threads): connected,
    /// authenticated, its database selected, nothing in flight.
    pub(crate) connect: Box<dyn FnOnce() -> io::Result<TcpStream> + Send>,
    /// False once the client that wants it is closed: the connection is then closed too.
    pub(crate) alive: Arc<dyn Fn() -> bool + Send + Sync>,
    /// How long a reply may take.
    pub(crate) timeout: Duration,
}

/// A loop connection: one socket, commands written in order, replies matched in order.
struct Conn {
    stream: TcpStream,
    fd: Fd,
    out: Vec<u8>,
    replies: Replies,
    broken: Arc<AtomicBool>,
    alive: Arc<dyn Fn() -> bool + Send + Sync>,
    timeout: Duration,
    want_write: bool,
    /// Commands added to `out` since the last write.
    unsent: usize,
}

/// Where a server's connection stands on this loop.
enum ConnState {
    Connecting,
    /// The last attempt failed at this time; the next is not tried before a second has passed.
    Failed(Instant),
    Open(Box<Conn>),
}

const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// How long one callback of the host's loop goes on reading replies that arrive while it polls.
pub const FOLLOW_UP_FOR: Duration = Duration::from_millis(1);

/// While a batch settles, its commands are written every this many, not all at its end: the
/// server starts on the first ones while the loop still settles the rest (measured with 64 Node
/// handles: one write per batch 45k pairs/s, every 16 commands 78k; every command 61k).
const FLUSH_EVERY: usize = 16;

struct Inner {
    shared: Arc<Shared>,
    host: Box<dyn LoopHost>,
    tasks: RefCell<Vec<Option<Task>>>,
    free: RefCell<Vec<usize>>,
    conns: RefCell<HashMap<u64, ConnState>>,
    /// Calls of the user in flight (they keep the host alive).
    in_flight: Cell<usize>,
    batch: Cell<bool>,
    closed: Cell<bool>,
    rt: tokio::runtime::Handle,
    /// The client liveness and reply timeout of connections being made.
    pending_specs: RefCell<HashMap<u64, PendingSpec>>,
    poll_in_calls: Cell<bool>,
    follow_up: Cell<bool>,
    defer_writes: Cell<bool>,
    /// The host was asked to call [`Driver::flush`] and has not yet.
    flush_asked: Cell<bool>,
    /// Writes to the sockets (diagnostics).
    writes: Cell<u64>,
    /// Calls that waited for their reply inside [`Driver::spawn`] (diagnostics).
    waited_in_calls: Cell<u64>,
    serial: Cell<u64>,
    /// What a read takes from a socket before its replies are framed (kept: zeroing 16 KiB
    /// for every read showed in the profile of a call).
    read_buf: RefCell<Box<[u8]>>,
}

type PendingSpec = (Arc<dyn Fn() -> bool + Send + Sync>, Duration);

/// Polls polylock's futures on a host loop's thread and owns the loop's connections. Not `Send`:
/// it lives on the loop's thread; only its `wake` is called from elsewhere.
pub struct Driver {
    inner: Rc<Inner>,
}

impl Driver {
    /// A driver on the calling thread's loop. `wake` is called from any thread when futures
    /// became ready there: the host must then call [`Driver::woken`] on the loop soon (it may
    /// coalesce several wakes into one call).
    pub fn new(host: Box<dyn LoopHost>, wake: Box<dyn Fn() + Send + Sync>) -> Driver {
        Driver {
            inner: Rc::new(Inner {
                shared: Arc::new(Shared {
                    ready: Mutex::new(Vec::new()),
                    wake: Mutex::new(Some(wake)),
                    adopt: Mutex::new(Vec::new()),
                }),
                host,
                tasks: RefCell::new(Vec::new()),
                free: RefCell::new(Vec::new()),
                conns: RefCell::new(HashMap::new()),
                in_flight: Cell::new(0),
                batch: Cell::new(false),
                closed: Cell::new(false),
                rt: runtime::handle(),
                pending_specs: RefCell::new(HashMap::new()),
                poll_in_calls: Cell::new(false),
                follow_up: Cell::new(true),
                defer_writes: Cell::new(false),
                flush_asked: Cell::new(false),
                writes: Cell::new(0),
                waited_in_calls: Cell::new(0),
                serial: Cell::new(0),
                read_buf: RefCell::new(vec![0; 16 * 1024].into_boxed_slice()),
            }),
        }
    }

    /// Run `fut` on the loop: it is polled at once (its first command is written before this
    /// returns, or with the batch's write when called while a batch settles), and `done` gets
    /// its output on the loop's thread. Until then it keeps the host alive.
    pub fn spawn<T: 'static>(
        &self,
        fut: impl Future<Output = T> + 'static,
        done: impl FnOnce(T) + 'static,
    ) -> TaskId {
        let inner = &self.inner;
        let serial = inner.serial.get() + 1;
        inner.serial.set(serial);
        if inner.closed.get() {
            return TaskId {
                index: usize::MAX,
                serial,
            };
        }
        let task = async move { done(fut.await) };
        let id = {
            let mut tasks = inner.tasks.borrow_mut();
            let id = inner.free.borrow_mut().pop().unwrap_or_else(|| {
                tasks.push(None);
                tasks.len() - 1
            });
            tasks[id] = Some(Task {
                fut: Some(Box::pin(task)),
                waker: Waker::from(Arc::new(TaskWaker {
                    shared: inner.shared.clone(),
                    id,
                })),
                serial,
            });
            id
        };
        inner.in_flight.set(inner.in_flight.get() + 1);
        if inner.in_flight.get() == 1 {
            inner.host.keep_alive(true);
        }
        inner.turn(Some(id));
        if !inner.batch.get() {
            inner.sweep();
            if inner.defer_writes.get() && inner.flush_later() {
                // Written with the commands of the calls made after it, at the host's flush.
                return TaskId { index: id, serial };
            }
            inner.flush_all();
            // Where the host asks for it, wait a moment for the reply right here (see `spin`).
            // Not on Node: a Promise settled inside the call that made it runs its reactions
            // before the loop runs again, and a program calling in a loop would starve the
            // loop's timers and I/O. asyncio runs a settled future's callbacks on the loop's
            // next round, whatever settled it.
            // Only a call alone in flight waits: with others in flight the loop has their
            // replies to read meanwhile, and waiting for each call in turn would serialize them.
            if inner.poll_in_calls.get() && inner.in_flight.get() == 1 {
                inner.waited_in_calls.set(inner.waited_in_calls.get() + 1);
                let ready = inner.spin();
                if !ready.is_empty() {
                    inner.read_and_turn(ready);
                    inner.flush_all();
                }
            }
        }
        TaskId { index: id, serial }
    }

    /// Let [`Driver::spawn`] wait a moment for the replies of the call it starts before it
    /// returns (hosts whose settled futures never run code inside the call: asyncio).
    pub fn poll_in_calls(&self, yes: bool) {
        self.inner.poll_in_calls.set(yes);
    }

    /// Let [`Driver::spawn`] leave the commands of the call it starts unwritten until the host
    /// calls [`Driver::flush`] (asked with [`LoopHost::flush_soon`]), or until [`FLUSH_EVERY`]
    /// wait on a connection: where the host runs many callers in one round of its loop (asyncio
    /// resumes every task whose reply a read brought), their commands go out in one write, and
    /// the server reads them with one read, instead of a write and a wake of the server each.
    /// Worth it only while other calls are in flight (the loop goes round for their replies
    /// anyway); a call alone is written at once and may wait for its reply (see
    /// [`Driver::poll_in_calls`]).
    pub fn defer_writes(&self, yes: bool) {
        self.inner.defer_writes.set(yes);
    }

    /// Write what calls left unwritten (see [`Driver::defer_writes`]).
    pub fn flush(&self) {
        let inner = &self.inner;
        inner.flush_asked.set(false);
        if !inner.batch.get() {
            inner.flush_all();
        }
    }

    /// Whether a callback goes on reading replies that arrive while it polls (see
    /// [`Driver::callback`]; on by default). Worth it where the batch's own settlements issue
    /// the next commands inside the callback (Node runs the reactions of its Promises there);
    /// not where they run only on the loop's next round (asyncio), whose callers would wait
    /// for the spin.
    pub fn follow_up(&self, yes: bool) {
        self.inner.follow_up.set(yes);
    }

    /// Drop the call `id` (a cancelled wait): its future is dropped as any dropped future (the
    /// core leaves nothing behind), `done` never runs. False if it had finished.
    pub fn cancel(&self, id: TaskId) -> bool {
        let inner = &self.inner;
        let task = {
            let mut tasks = inner.tasks.borrow_mut();
            match tasks.get_mut(id.index) {
                Some(slot @ Some(_)) if slot.as_ref().is_some_and(|t| t.serial == id.serial) => {
                    slot.take()
                }
                _ => None,
            }
        };
        let Some(task) = task else { return false };
        inner.free.borrow_mut().push(id.index);
        {
            let _rt = inner.rt.enter();
            drop(task);
        }
        inner.call_ended();
        if !inner.batch.get() {
            inner.flush_all();
        }
        true
    }

    /// The host calls this after a `wake`: adopt connections made on the runtime, poll the
    /// futures woken from other threads.
    pub fn woken(&self) {
        self.inner.adopt();
        self.inner.turn(None);
    }

    /// The host calls this when `fd` is readable or writable: replies are read and the futures
    /// waiting for them polled on.
    pub fn io_ready(&self, fd: Fd, readable: bool, writable: bool) {
        let inner = &self.inner;
        let key = inner
            .conns
            .borrow()
            .iter()
            .find(|(_, c)| matches!(c, ConnState::Open(c) if c.fd == fd))
            .map(|(k, _)| *k);
        let Some(key) = key else { return };
        let _turning = inner.turning();
        if writable {
            inner.flush(key);
        }
        if readable {
            inner.read(key);
        }
        inner.turn(None);
    }

    /// One callback of the host's loop (a socket ready, a wake): `f` (calling
    /// [`Driver::io_ready`] or [`Driver::woken`]) as one batch, then, while replies to what a
    /// batch wrote arrive within a moment's polling (see `spin`), more batches that read them,
    /// for up to [`FOLLOW_UP_FOR`]; then the loop runs its timers and other I/O. `scope` wraps
    /// each batch's work (Node: a handle scope and a callback scope, whose closing runs the
    /// reactions of the Promises settled inside); commands issued meanwhile are written after
    /// it, every [`FLUSH_EVERY`] or all at its end.
    pub fn callback(&self, scope: &dyn Fn(&mut dyn FnMut()), f: impl FnOnce(&Driver)) {
        let inner = &self.inner;
        let started = Instant::now();
        let mut first = Some(f);
        let mut ready = Vec::new();
        loop {
            inner.batch.set(true);
            scope(&mut || match first.take() {
                Some(f) => f(self),
                None => inner.read_and_turn(std::mem::take(&mut ready)),
            });
            inner.batch.set(false);
            inner.sweep();
            inner.flush_all();
            if !inner.follow_up.get() || started.elapsed() >= FOLLOW_UP_FOR {
                return; // left for the loop's next poll of the sockets (still readable)
            }
            ready = inner.spin();
            if ready.is_empty() {
                return;
            }
        }
    }

    /// Calls of the user in flight.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.get()
    }

    /// What the driver holds, for diagnostics: calls in flight, and per connection its state
    /// and the replies it waits for.
    pub fn describe(&self) -> String {
        let inner = &self.inner;
        let conns: Vec<String> = inner
            .conns
            .borrow()
            .iter()
            .map(|(k, c)| match c {
                ConnState::Connecting => format!("{k}: connecting"),
                ConnState::Failed(at) => format!("{k}: failed {:?} ago", at.elapsed()),
                ConnState::Open(c) => format!(
                    "{k}: open fd {} waiting {} unsent {} broken {}",
                    c.fd,
                    c.replies.pending.len(),
                    c.out.len(),
                    c.broken.load(Ordering::Acquire)
                ),
            })
            .collect();
        format!(
            "{} calls in flight, {} tasks, {} ready, {} calls waited for their reply inside the call; {}",
            inner.in_flight.get(),
            inner.tasks.borrow().iter().filter(|t| t.is_some()).count(),
            inner.shared.ready.lock().map_or(0, |r| r.len()),
            inner.waited_in_calls.get(),
            conns.join("; ")
        )
    }

    /// Writes made to the loop's sockets so far (diagnostics: how well commands share writes).
    pub fn writes(&self) -> u64 {
        self.inner.writes.get()
    }

    /// Open loop connections (tests: they close with their clients).
    pub fn connections(&self) -> usize {
        self.inner
            .conns
            .borrow()
            .values()
            .filter(|c| matches!(c, ConnState::Open(_)))
            .count()
    }

    /// The loop is going away: drop every future (each cleans up as a dropped future does), stop
    /// watching and close every connection, refuse wakes. Results never come.
    pub fn close(&self) {
        let inner = &self.inner;
        if inner.closed.replace(true) {
            return;
        }
        *inner.shared.wake.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let tasks = std::mem::take(&mut *inner.tasks.borrow_mut());
        if tasks.iter().any(Option::is_some) {
            let _rt = inner.rt.enter();
            drop(tasks);
        }
        let conns = std::mem::take(&mut *inner.conns.borrow_mut());
        for (_, c) in conns {
            if let ConnState::Open(c) = c {
                inner.host.unwatch(c.fd);
                (*c).fail_all(io::ErrorKind::ConnectionAborted);
            }
        }
        if inner.in_flight.replace(0) > 0 {
            inner.host.keep_alive(false);
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.close();
    }
}

impl Inner {
    /// Poll `first` (if given) and every woken future until none is ready.
    fn turn(self: &Rc<Self>, first: Option<usize>) {
        runtime::name_spawner();
        let _turning = self.turning();
        if let Some(id) = first {
            self.poll(id);
        }
        loop {
            let ids =
                std::mem::take(&mut *self.shared.ready.lock().unwrap_or_else(|e| e.into_inner()));
            if ids.is_empty() {
                break;
            }
            for id in ids {
                self.poll(id);
            }
        }
    }

    fn poll(self: &Rc<Self>, id: usize) {
        let (mut fut, waker) = {
            let mut tasks = self.tasks.borrow_mut();
            match tasks.get_mut(id) {
                Some(Some(t)) => match t.fut.take() {
                    Some(f) => (f, t.waker.clone()),
                    None => return,
                },
                _ => return,
            }
        };
        let ready = {
            let _rt = self.rt.enter();
            struct Current(Option<Rc<Inner>>);
            impl Drop for Current {
                fn drop(&mut self) {
                    CURRENT.with(|c| *c.borrow_mut() = self.0.take());
                }
            }
            let _current = Current(CURRENT.with(|c| c.borrow_mut().replace(self.clone())));
            fut.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_ready()
        };
        let mut tasks = self.tasks.borrow_mut();
        if ready {
            if let Some(slot) = tasks.get_mut(id) {
                *slot = None;
                self.free.borrow_mut().push(id);
            }
            drop(tasks);
            drop(fut);
            self.call_ended();
        } else if let Some(Some(t)) = tasks.get_mut(id) {
            t.fut = Some(fut);
        }
    }

    /// Have the host call [`Driver::flush`] soon, unless it was asked already; false when it
    /// cannot (then write now).
    fn flush_later(&self) -> bool {
        if !self.flush_asked.get() {
            if !self.host.flush_soon() {
                return false;
            }
            self.flush_asked.set(true);
        }
        true
    }

    /// A call finished or was cancelled: with none left in flight the host may end.
    fn call_ended(&self) {
        let n = self.in_flight.get().saturating_sub(1);
        self.in_flight.set(n);
        if n == 0 && !self.closed.get() {
            self.host.keep_alive(false);
        }
    }

    /// Read what arrived on the connections `keys` and poll the futures it completes.
    fn read_and_turn(self: &Rc<Self>, keys: Vec<u64>) {
        let _turning = self.turning();
        for key in keys {
            self.read(key);
        }
        self.turn(None);
    }

    /// Wait a moment, polling, for replies to what was just written: a reply on a local network
    /// comes back in tens of microseconds, about what it costs the host loop to sleep in the
    /// kernel and be woken for it, so the loop gets it sooner without a round through its poll.
    /// Bounded by the spin time of blocked callers (`POLYLOCK_SPIN_US`, default 150 µs; 0 turns
    /// it off) and their permits (at most half the cores poll at once). The connections that
    /// have bytes to read; none when the time ran out first.
    fn spin(&self) -> Vec<u64> {
        let waiting: Vec<(u64, Fd)> = self
            .conns
            .borrow()
            .iter()
            .filter_map(|(k, c)| match c {
                ConnState::Open(c) if !c.replies.pending.is_empty() && c.out.is_empty() => {
                    Some((*k, c.fd))
                }
                _ => None,
            })
            .collect();
        if waiting.is_empty() {
            return Vec::new();
        }
        let permit = runtime::SpinPermit::take();
        let Some(until) = permit.deadline() else {
            return Vec::new();
        };
        loop {
            let ready: Vec<u64> = waiting
                .iter()
                .filter(|(_, fd)| readable_now(*fd))
                .map(|(k, _)| *k)
                .collect();
            if !ready.is_empty() || Instant::now() >= until {
                return ready;
            }
            // Give the core away between looks, as blocked callers do: where the server runs
            // on this machine it may be waiting for this very core to answer.
            std::thread::yield_now();
        }
    }

    /// Mark this thread as in a turn of this driver until the guard drops: wake-ups meanwhile
    /// (a reply read, a future polled) are run by the turn, without a host wake.
    /// When the outermost guard drops, futures woken after the section's last poll (a write
    /// that failed and failed its replies, say) are handed to the host's wake, never left behind.
    fn turning(&self) -> impl Drop + '_ {
        struct Turning<'a> {
            previous: usize,
            shared: &'a Shared,
        }
        impl Drop for Turning<'_> {
            fn drop(&mut self) {
                TURNING.with(|t| t.set(self.previous));
                let me = self.shared as *const Shared as usize;
                if self.previous != me
                    && !self
                        .shared
                        .ready
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .is_empty()
                {
                    self.shared.wake_host();
                }
            }
        }
        Turning {
            previous: TURNING.with(|t| t.replace(Arc::as_ptr(&self.shared) as usize)),
            shared: &self.shared,
        }
    }

    /// Send `cmd` on the loop's connection `key`; `None` when there is none (yet): one is then
    /// made from `spec` in the background and the caller takes the runtime's path meanwhile.
    fn send(
        self: &Rc<Self>,
        key: u64,
        cmd: &[u8],
        spec: impl FnOnce() -> Option<ConnectSpec>,
    ) -> Option<Reply> {
        if self.closed.get() {
            return None;
        }
        let mut conns = self.conns.borrow_mut();
        match conns.get_mut(&key) {
            Some(ConnState::Open(c)) if !c.broken.load(Ordering::Acquire) => {
                let slot = Arc::new(Slot {
                    state: Mutex::new(SlotState::default()),
                });
                c.out.extend_from_slice(cmd);
                c.replies.pending.push_back(slot.clone());
                c.unsent += 1;
                let reply = Reply {
                    slot,
                    broken: c.broken.clone(),
                    shared: self.shared.clone(),
                    timeout: c.timeout,
                };
                if c.unsent >= FLUSH_EVERY {
                    drop(conns);
                    self.flush(key);
                }
                return Some(reply);
            }
            Some(ConnState::Open(_)) | Some(ConnState::Connecting) => return None,
            Some(ConnState::Failed(at)) if at.elapsed() < RECONNECT_AFTER => return None,
            _ => {}
        }
        let spec = spec()?;
        conns.insert(key, ConnState::Connecting);
        drop(conns);
        let ConnectSpec {
            connect,
            alive,
            timeout,
        } = spec;
        self.pending_specs
            .borrow_mut()
            .insert(key, (alive, timeout));
        let shared = Arc::downgrade(&self.shared);
        self.rt.spawn_blocking(move || {
            let made = connect();
            if let Some(shared) = shared.upgrade() {
                shared
                    .adopt
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((key, made));
                shared.wake_host();
            }
        });
        None
    }

    /// Take over the connections made on the runtime.
    fn adopt(&self) {
        let made =
            std::mem::take(&mut *self.shared.adopt.lock().unwrap_or_else(|e| e.into_inner()));
        for (key, result) in made {
            let Some((alive, timeout)) = self.pending_specs.borrow_mut().remove(&key) else {
                continue;
            };
            let conn = result.and_then(|stream| {
                stream.set_nonblocking(true)?;
                let fd = raw_fd(&stream);
                self.host.watch(fd, false)?;
                Ok(Conn {
                    stream,
                    fd,
                    out: Vec::new(),
                    replies: Replies::default(),
                    broken: Arc::new(AtomicBool::new(false)),
                    alive,
                    timeout,
                    want_write: false,
                    unsent: 0,
                })
            });
            let state = match conn {
                Ok(c) => ConnState::Open(Box::new(c)),
                Err(e) => {
                    tracing::debug!("polylock: no loop connection ({e}); calls take the runtime");
                    ConnState::Failed(Instant::now())
                }
            };
            self.conns.borrow_mut().insert(key, state);
        }
    }

    fn flush_all(&self) {
        let keys: Vec<u64> = self
            .conns
            .borrow()
            .iter()
            .filter(|(_, c)| matches!(c, ConnState::Open(c) if !c.out.is_empty() || c.want_write))
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            self.flush(k);
        }
    }

    /// Write what `key` has to send; watch for writability while some is left.
    fn flush(&self, key: u64) {
        let mut conns = self.conns.borrow_mut();
        let Some(ConnState::Open(c)) = conns.get_mut(&key) else {
            return;
        };
        let mut failed = None;
        c.unsent = 0;
        while !c.out.is_empty() {
            match (&c.stream).write(&c.out) {
                Ok(0) => {
                    failed = Some(io::ErrorKind::WriteZero);
                    break;
                }
                Ok(n) => {
                    c.out.drain(..n);
                    self.writes.set(self.writes.get() + 1);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    failed = Some(e.kind());
                    break;
                }
            }
        }
        if let Some(kind) = failed {
            drop(conns);
            self.drop_conn(key, kind);
            return;
        }
        let want = !c.out.is_empty();
        if want != c.want_write {
            c.want_write = want;
            let fd = c.fd;
            drop(conns);
            if self.host.watch(fd, want).is_err() {
                self.drop_conn(key, io::ErrorKind::Other);
            }
        }
    }

    /// Read what arrived on `key` and complete the replies it holds.
    fn read(&self, key: u64) {
        let mut conns = self.conns.borrow_mut();
        let Some(ConnState::Open(c)) = conns.get_mut(&key) else {
            return;
        };
        let mut buf = self.read_buf.borrow_mut();
        let mut failed = None;
        loop {
            match (&c.stream).read(&mut buf) {
                Ok(0) => {
                    failed = Some(io::ErrorKind::UnexpectedEof);
                    break;
                }
                Ok(n) => {
                    if let Err(kind) = c.replies.take(&buf[..n]) {
                        failed = Some(kind);
                        break;
                    }
                    if n < buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    failed = Some(e.kind());
                    break;
                }
            }
        }
        drop(conns);
        if let Some(kind) = failed {
            self.drop_conn(key, kind);
        }
    }

    /// Close `key`'s connection: its waiting replies fail with `kind` (an I/O error, so the
    /// caller's error is a typed connection error), and the next call makes a new one.
    fn drop_conn(&self, key: u64, kind: io::ErrorKind) {
        let old = self
            .conns
            .borrow_mut()
            .insert(key, ConnState::Failed(Instant::now() - RECONNECT_AFTER));
        if let Some(ConnState::Open(c)) = old {
            self.host.unwatch(c.fd);
            (*c).fail_all(kind);
        }
    }

    /// Close the connections of closed clients and those a timeout left out of step.
    fn sweep(&self) {
        let gone: Vec<(u64, bool)> = self
            .conns
            .borrow()
            .iter()
            .filter_map(|(k, c)| match c {
                ConnState::Open(c) if !(c.alive)() => Some((*k, true)),
                ConnState::Open(c) if c.broken.load(Ordering::Acquire) => Some((*k, false)),
                _ => None,
            })
            .collect();
        for (key, closed) in gone {
            if closed {
                if let Some(ConnState::Open(c)) = self.conns.borrow_mut().remove(&key) {
                    self.host.unwatch(c.fd);
                    (*c).fail_all(io::ErrorKind::ConnectionAborted);
                }
            } else {
                self.drop_conn(key, io::ErrorKind::TimedOut);
            }
        }
    }
}

/// The replies a connection waits for, matched in order with the bytes read (no socket here).
#[derive(Default)]
struct Replies {
    input: Vec<u8>,
    pending: VecDeque<Arc<Slot>>,
    /// redis-rs's parser, for the replies [`resp::parse`] leaves to it (server errors); kept
    /// from reply to reply rather than made for each.
    parser: redis::Parser,
}

impl Replies {
    /// Add `bytes` to what was read and complete every whole reply, in order. An error when
    /// the bytes are not RESP2 or hold a reply nobody asked for (the connection is then out of
    /// step).
    fn take(&mut self, bytes: &[u8]) -> Result<(), io::ErrorKind> {
        self.input.extend_from_slice(bytes);
        let mut at = 0;
        let result = loop {
            match resp::next_reply(&self.input[at..], &mut self.parser) {
                Ok(Some((reply, n))) => {
                    at += n;
                    match self.pending.pop_front() {
                        Some(slot) => slot.fill(reply),
                        None => break Err(io::ErrorKind::InvalidData), // a reply nobody asked for
                    }
                }
                Ok(None) => break Ok(()),
                Err(bad) => {
                    tracing::warn!("polylock: a loop connection read bad RESP ({bad})");
                    break Err(io::ErrorKind::InvalidData);
                }
            }
        };
        self.input.drain(..at);
        result
    }

    /// Fail every waiting reply with `kind` (the connection is gone).
    fn fail_all(&mut self, kind: io::ErrorKind) {
        for slot in self.pending.drain(..) {
            slot.fill(Err(io::Error::new(
                kind,
                "the connection closed before the reply came",
            )
            .into()));
        }
    }
}

impl Conn {
    /// Fail what it waits for and close it (the socket closes as it drops).
    fn fail_all(mut self, kind: io::ErrorKind) {
        self.replies.fail_all(kind);
    }
}

/// True when the socket has bytes to read (or an error to report), without reading them.
/// `poll` with no timeout: it reads the socket's state without taking the socket's lock, which
/// a peeking `recv` takes, and which the kernel delivering the reply then has to wait for.
#[cfg(unix)]
fn readable_now(fd: Fd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd of our own; the descriptor is an open socket of a connection.
    unsafe { libc::poll(&mut pfd, 1, 0) > 0 }
}

#[cfg(not(unix))]
fn readable_now(_fd: Fd) -> bool {
    false
}

/// `recv` that does not wait: `WouldBlock` when nothing has arrived.
#[cfg(unix)]
fn recv_now(stream: &impl std::os::fd::AsRawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buf`, which outlives the call; the descriptor
    // belongs to `stream`, borrowed for the call.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Read `stream` without sleeping until something arrives or `until` passes, yielding the CPU
/// between tries: `Some(n)` bytes read (0: the peer closed), `None` when the time ran out.
#[cfg(unix)]
pub(crate) fn recv_until(
    stream: &impl std::os::fd::AsRawFd,
    buf: &mut [u8],
    until: Instant,
) -> io::Result<Option<usize>> {
    loop {
        match recv_now(stream, buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if Instant::now() >= until {
            return Ok(None);
        }
        std::thread::yield_now();
    }
}

/// Elsewhere nothing polls: the caller sleeps at once.
#[cfg(not(unix))]
pub(crate) fn recv_until<S>(
    _stream: &S,
    _buf: &mut [u8],
    _until: Instant,
) -> io::Result<Option<usize>> {
    Ok(None)
}

#[cfg(unix)]
fn raw_fd(s: &TcpStream) -> Fd {
    use std::os::fd::AsRawFd;
    s.as_raw_fd()
}

#[cfg(not(unix))]
fn raw_fd(_s: &TcpStream) -> Fd {
    -1
}

/// On a driver's thread while it polls a future: send `cmd` on the loop's connection `key`
/// (made from `spec` when missing). `None` off a driver, or while there is no connection yet:
/// the caller then takes the runtime's path.
pub(crate) fn send(
    key: u64,
    cmd: &[u8],
    spec: impl FnOnce() -> Option<ConnectSpec>,
) -> Option<Reply> {
    CURRENT.with(|c| {
        let current = c.borrow();
        let inner = current.as_ref()?;
        inner.send(key, cmd, spec)
    })
}

/// True while a driver polls a future on this thread.
pub(crate) fn on_driver() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn slot() -> Arc<Slot> {
        Arc::new(Slot {
            state: Mutex::new(SlotState::default()),
        })
    }

    fn reply_of(s: &Slot) -> Option<redis::RedisResult<Value>> {
        s.state.lock().unwrap().reply.take()
    }

    /// The replies of an acquire (nil: granted), a reentrant acquire (nil), a contended acquire
    /// (the holder's remaining lease), a NOSCRIPT error and a release (1), as Redis sent them.
    const RECORDED: &[u8] =
        b"$-1\r\n$-1\r\n:29998\r\n-NOSCRIPT No matching script. Please use EVAL.\r\n:1\r\n";

    #[test]
    fn recorded_replies_split_anywhere_complete_their_requests_in_order() {
        for chunk in 1..=RECORDED.len() {
            let mut r = Replies::default();
            let slots: Vec<_> = (0..5).map(|_| slot()).collect();
            r.pending.extend(slots.iter().cloned());
            for piece in RECORDED.chunks(chunk) {
                r.take(piece).unwrap();
            }
            assert!(r.pending.is_empty() && r.input.is_empty(), "chunk {chunk}");
            assert_eq!(reply_of(&slots[0]).unwrap().unwrap(), Value::Nil);
            assert_eq!(reply_of(&slots[1]).unwrap().unwrap(), Value::Nil);
            assert_eq!(reply_of(&slots[2]).unwrap().unwrap(), Value::Int(29998));
            let e = reply_of(&slots[3])
                .unwrap()
                .unwrap()
                .extract_error()
                .unwrap_err();
            assert_eq!(
                e.kind(),
                redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
            );
            assert_eq!(reply_of(&slots[4]).unwrap().unwrap(), Value::Int(1));
        }
    }

    #[test]
    fn a_reply_lost_with_its_connection_fails_its_request_typed() {
        let mut r = Replies::default();
        let slots: Vec<_> = (0..3).map(|_| slot()).collect();
        r.pending.extend(slots.iter().cloned());
        // The first reply arrives, the second is cut off mid-frame, the connection closes.
        r.take(b":1\r\n$5\r\nab").unwrap();
        assert!(reply_of(&slots[1]).is_none());
        r.fail_all(io::ErrorKind::UnexpectedEof);
        assert_eq!(reply_of(&slots[0]).unwrap().unwrap(), Value::Int(1));
        for s in &slots[1..] {
            let e = reply_of(s).unwrap().unwrap_err();
            assert!(e.is_io_error(), "{e}");
        }
    }

    #[test]
    fn a_reply_nobody_asked_for_or_garbage_puts_the_connection_out_of_step() {
        let mut r = Replies::default();
        assert_eq!(r.take(b":1\r\n"), Err(io::ErrorKind::InvalidData));
        let mut r = Replies::default();
        r.pending.push_back(slot());
        assert_eq!(r.take(b"!x\r\n"), Err(io::ErrorKind::InvalidData));
    }

    #[test]
    fn a_waiter_is_woken_when_its_reply_arrives_whichever_order_the_waiters_polled() {
        struct Count(std::sync::atomic::AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let mut r = Replies::default();
        let slots: Vec<_> = (0..2).map(|_| slot()).collect();
        r.pending.extend(slots.iter().cloned());
        let counts: Vec<_> = (0..2)
            .map(|_| Arc::new(Count(Default::default())))
            .collect();
        // The second waiter registers first.
        for i in [1, 0] {
            slots[i].state.lock().unwrap().waker = Some(Waker::from(counts[i].clone()));
        }
        r.take(b":10\r\n").unwrap();
        assert_eq!(counts[0].0.load(Ordering::SeqCst), 1);
        assert_eq!(counts[1].0.load(Ordering::SeqCst), 0);
        r.take(b":20\r\n").unwrap();
        assert_eq!(counts[1].0.load(Ordering::SeqCst), 1);
        assert_eq!(reply_of(&slots[1]).unwrap().unwrap(), Value::Int(20));
    }
}
