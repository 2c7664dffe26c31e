//! THE process-wide tokio runtime of polylock.
//!
//! Every binding runs its work here; none builds a runtime of its own. The runtime is created on
//! first use with named worker threads. It is fork-aware: a child process gets a fresh runtime
//! (the parent's threads do not exist in the child), and clients created before the fork refuse
//! to work in the child instead of hanging (see [`crate::Client`]).

use std::cell::Cell;
use std::future::Future;
use std::sync::mpsc;
use std::sync::Mutex;
use std::task::Poll;
use std::time::Duration;

use tokio::runtime::{Builder, Handle, Runtime};

use crate::model::error::{Error, ErrorKind, Result};
use crate::model::identity::process_id;

static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

thread_local! {
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
    /// Set while this (non-runtime) thread drives a future in [`block_on`].
    static BLOCKING_CALLER: Cell<bool> = const { Cell::new(false) };
    /// Set while this thread polls a future that it will poll again without sleeping first.
    static POLLED_AGAIN_SOON: Cell<bool> = const { Cell::new(false) };
}

/// True while the future being polled will be polled again before its thread sleeps: a caller
/// that polls for its answer is polling it (see [`SpinPermit`]), and it looks once more with
/// this false before it sleeps. A future may then put off arming a timer that only bounds a
/// long wait: arming one ahead of the runtime's next timer wakes the runtime's driver thread to
/// set its sleep again (a write to its wake-up descriptor and a thread's wake-up), which a
/// statement answered while its caller polls never needs.
pub(crate) fn polled_again_soon() -> bool {
    POLLED_AGAIN_SOON.with(|p| p.get())
}

/// Poll with [`polled_again_soon`] saying `again_soon` (false: the thread may sleep after it).
fn polling<T>(again_soon: bool, poll: impl FnOnce() -> T) -> T {
    let was = POLLED_AGAIN_SOON.with(|p| p.replace(again_soon));
    let out = poll();
    POLLED_AGAIN_SOON.with(|p| p.set(was));
    out
}

/// zookeeper-client spawns its tasks through the `spawns` crate, which finds tokio through a
/// table the linker collects (linkme). A C program linked against the static library
/// (libpolylock.a) does not carry that table's entries, since the linker takes from an archive
/// only the objects something refers to, and the ZooKeeper client then panicked with "no
/// spawner". Every thread that runs polylock's futures names polylock's runtime as its spawner
/// instead: the runtime's workers when they start, any other thread (a blocked caller, a host
/// loop driving a call) on its first call.
#[cfg(feature = "zookeeper")]
pub(crate) fn name_spawner() {
    struct Polylock;
    impl spawns_core::Spawn for Polylock {
        fn spawn(&self, task: spawns_core::Task) {
            let spawns_core::Task { future, .. } = task;
            handle().spawn(Box::into_pin(future));
        }
    }
    static POLYLOCK: Polylock = Polylock;
    thread_local! {
        static NAMED: Cell<bool> = const { Cell::new(false) };
    }
    if !NAMED.with(|n| n.replace(true)) {
        // For the thread's whole life: the scope is never left.
        std::mem::forget(spawns_core::enter(&POLYLOCK));
    }
}

#[cfg(not(feature = "zookeeper"))]
pub(crate) fn name_spawner() {}

/// The handle of the process-wide runtime, created on first use (again in a forked child).
pub fn handle() -> Handle {
    name_spawner();
    let pid = process_id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner_pid, rt)) = *slot {
        if owner_pid == pid {
            return rt.handle().clone();
        }
        // A forked child: the parent's worker threads are gone, so that runtime can neither run
        // nor be dropped safely. It is leaked on purpose and a new one is built below.
    }
    // polylock's TLS uses ring. With ZooKeeper's TLS compiled in, aws-lc-rs is linked too (see
    // core/Cargo.toml), and rustls then wants one provider named as the process default.
    #[cfg(feature = "tls")]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = Builder::new_multi_thread()
        .worker_threads(worker_threads())
        .thread_name("polylock-worker")
        .on_thread_start(|| {
            ON_WORKER.with(|w| w.set(true));
            name_spawner();
        })
        .enable_all()
        .build()
        .expect("failed to start the polylock runtime");
    let rt: &'static Runtime = Box::leak(Box::new(rt));
    *slot = Some((pid, rt));
    rt.handle().clone()
}

/// Clean-ups in flight in this process: what cancelled or failed operations left on a server
/// being removed (a SQL wait cancelled on the server, a contender node deleted). A client's
/// `close` waits for them, so that a process that closes its clients as it ends (every binding
/// does, from its exit hook) cancels its server-side waits before it is gone.
struct CleanUps {
    /// The process they were counted in (a forked child starts with none).
    pid: std::sync::atomic::AtomicU32,
    running: std::sync::atomic::AtomicUsize,
    done: tokio::sync::Notify,
}

static CLEAN_UPS: CleanUps = CleanUps {
    pid: std::sync::atomic::AtomicU32::new(0),
    running: std::sync::atomic::AtomicUsize::new(0),
    done: tokio::sync::Notify::const_new(),
};

/// Run `fut`, a clean-up, on polylock's runtime, counted until it ends (see
/// [`clean_ups_finished`]).
pub(crate) fn spawn_clean_up<F>(fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    use std::sync::atomic::Ordering::SeqCst;
    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            if CLEAN_UPS.running.fetch_sub(1, SeqCst) == 1 {
                CLEAN_UPS.done.notify_waiters();
            }
        }
    }
    let pid = process_id();
    if CLEAN_UPS.pid.swap(pid, SeqCst) != pid {
        CLEAN_UPS.running.store(0, SeqCst); // the parent's, before a fork: not ours to wait for
    }
    CLEAN_UPS.running.fetch_add(1, SeqCst);
    let counted = Counted;
    handle().spawn(async move {
        let _counted = counted;
        fut.await;
    });
}

/// Wait until no clean-up of this process is running, at most `limit`; false if some still were.
pub(crate) async fn clean_ups_finished(limit: Duration) -> bool {
    use std::sync::atomic::Ordering::SeqCst;
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let notified = CLEAN_UPS.done.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if CLEAN_UPS.running.load(SeqCst) == 0 || CLEAN_UPS.pid.load(SeqCst) != process_id() {
            return true;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return false;
        }
    }
}

fn worker_threads() -> usize {
    if let Some(n) = std::env::var("POLYLOCK_WORKER_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return n;
    }
    std::thread::available_parallelism()
        .map(|n| n.get().clamp(1, 4))
        .unwrap_or(2)
}

/// True while the calling thread is blocked in [`block_on`], driving the future itself. Such a
/// thread is the caller's own, so the future may do blocking I/O on it (the Redis backend then
/// talks on a connection of the caller's thread: no hand-off to a runtime thread and back).
pub(crate) fn on_blocking_caller() -> bool {
    BLOCKING_CALLER.with(|b| b.get())
}

/// Drive `fut` as if no blocked caller drove it: its Redis requests go through the runtime's
/// multiplexed connections, where several can be in flight at once and each can be cut off by a
/// timeout, never through a caller's blocking connection (RedLock asks N servers at once).
pub(crate) async fn off_blocking_caller<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(move |cx| {
        let was = BLOCKING_CALLER.with(|b| b.replace(false));
        let out = fut.as_mut().poll(cx);
        BLOCKING_CALLER.with(|b| b.set(was));
        out
    })
    .await
}

/// Run `fut` in polylock's runtime: right here if the caller already runs in it (a task of it,
/// or a blocked caller driving a future with it entered), else as a task of it, awaited. The
/// sockets and timers `fut` opens are then registered with polylock's runtime, and live as long
/// as the client, not as long as an async caller's own runtime (a connection opened from a
/// `current_thread` runtime that ended would fail, and a lock held on it would be lost).
pub(crate) async fn in_polylock<T, F>(fut: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let ours = handle();
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.id() == ours.id() => fut.await,
        _ => ours.spawn(fut).await.unwrap_or_else(|e| {
            Err(match e.is_panic() {
                true => panicked(),
                false => Error::internal(format!("polylock's runtime cancelled a task: {e}")),
            })
        }),
    }
}

/// True on a thread of polylock's runtime (where a blocking call would deadlock).
pub fn on_runtime_thread() -> bool {
    ON_WORKER.with(|w| w.get())
}

fn refuse_on_worker() -> Result<()> {
    if on_runtime_thread() {
        return Err(Error::state(
            "blocking polylock call made on a polylock runtime thread (for example inside a lost \
             callback); use the async API there, or hand the work to another thread",
        ));
    }
    Ok(())
}

/// Run `fut` on the runtime and block the calling thread until it is done.
///
/// Refuses (with `InvalidState`) on a runtime thread instead of deadlocking. Works from any other
/// thread, including one inside another async runtime. A panic in `fut` becomes an `Internal`
/// error rather than unwinding into the caller.
pub fn block_on<F>(fut: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    refuse_on_worker()?;
    if tokio::runtime::Handle::try_current().is_err() {
        // The common case (a C, Python or Java thread): drive the future on this thread. The
        // runtime's threads still run the connections, but a reply wakes this thread directly,
        // instead of waking a worker that then wakes this thread.
        let h = handle();
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| spin_block_on(&h, fut)))
            .map_err(|_| panicked());
    }
    // Inside another runtime, Handle::block_on would panic: hand the future over instead.
    spawn(fut)?.wait()
}

/// Drive `fut` on this thread for up to `limit`, as [`block_on`] does: its output, or `None` when
/// the time ran out and it still waits (drive it again, or drop it to cancel it: polylock's
/// futures are cancel-safe). For a binding whose blocking calls must look at the host's
/// interrupts every so often (Python's signals) without handing the wait to another thread: a
/// release wakes this thread directly, and the waiter's next attempt runs on its own connection.
pub fn block_on_for<F: Future>(
    fut: std::pin::Pin<&mut F>,
    limit: Duration,
) -> Result<Option<F::Output>> {
    refuse_on_worker()?;
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::state(
            "block_on_for drives a future on a thread of its caller's own, not inside a runtime",
        ));
    }
    let h = handle();
    let until = std::time::Instant::now() + limit;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        spin_block_on_until(&h, fut, Some(until))
    }))
    .map_err(|_| panicked())
}

/// Start `fut` on the runtime and return a [`Pending`] to wait for it with a bound, or cancel it.
/// Bindings use this to poll for host interrupts (Python's Ctrl-C) while a call blocks.
pub fn spawn<F>(fut: F) -> Result<Pending<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    refuse_on_worker()?;
    let (tx, rx) = mpsc::sync_channel(1);
    let task = handle().spawn(async move {
        let out = fut.await;
        let _ = tx.send(out);
    });
    Ok(Pending { rx, task })
}

/// A future running on the runtime, waited for from a host thread.
pub struct Pending<T> {
    rx: mpsc::Receiver<T>,
    task: tokio::task::JoinHandle<()>,
}

impl<T> Pending<T> {
    /// Block until the result is ready.
    pub fn wait(self) -> Result<T> {
        self.rx.recv().map_err(|_| panicked())
    }

    /// Block up to `timeout`; `Ok(None)` if it is not ready yet.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<Option<T>> {
        match self.rx.recv_timeout(timeout) {
            Ok(v) => Ok(Some(v)),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(panicked()),
        }
    }

    /// Cancel the future (it is dropped on the runtime, which runs its cleanup) and wait until it
    /// is gone. Returns the result instead if it finished first.
    pub fn cancel(self) -> Option<T> {
        self.task.abort();
        self.rx.recv().ok()
    }
}

fn panicked() -> Error {
    Error::new(
        ErrorKind::Internal,
        "a polylock task panicked; this is a bug, please report it",
    )
}

/// How long a blocked caller polls for its wake-up (or its reply) before it sleeps, unless the
/// environment says otherwise (`POLYLOCK_SPIN_US`; `0` turns polling off).
const SPIN: Duration = Duration::from_micros(150);
/// The most `POLYLOCK_SPIN_US` may ask for.
const MAX_SPIN: Duration = Duration::from_millis(10);

fn spin() -> Duration {
    static SPIN_FOR: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN_FOR.get_or_init(|| spin_from(std::env::var("POLYLOCK_SPIN_US").ok().as_deref()))
}

/// The polling time a `POLYLOCK_SPIN_US` value asks for: microseconds up to [`MAX_SPIN`]; the
/// default when unset or not a number.
fn spin_from(value: Option<&str>) -> Duration {
    match value.map(|v| v.trim().parse::<u64>()) {
        Some(Ok(us)) => Duration::from_micros(us).min(MAX_SPIN),
        Some(Err(_)) => {
            tracing::warn!("POLYLOCK_SPIN_US is not a number of microseconds; using {SPIN:?}");
            SPIN
        }
        None => SPIN,
    }
}

/// Blocked callers currently polling (see [`SpinPermit`]).
static SPINNERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn max_spinners() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)))
}

/// Leave to poll for a little while instead of sleeping at once. A lock round trip is tens of
/// microseconds, about what waking a sleeping thread costs on a busy machine, so a caller that
/// polls gets its answer sooner. Only up to half the cores' worth of callers poll at a time:
/// more would eat the CPU the server and the runtime need.
pub(crate) struct SpinPermit {
    granted: bool,
}

impl SpinPermit {
    pub(crate) fn take() -> SpinPermit {
        use std::sync::atomic::Ordering;
        SpinPermit {
            granted: SPINNERS.fetch_add(1, Ordering::AcqRel) < max_spinners() && !spin().is_zero(),
        }
    }

    /// Until when to poll, from now; `None` without leave.
    pub(crate) fn deadline(&self) -> Option<std::time::Instant> {
        self.granted.then(|| {
            POLLED_WAITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::time::Instant::now() + spin()
        })
    }
}

static POLLED_WAITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many waits for a reply or a wake-up, in this process so far, polled before sleeping
/// (see `POLYLOCK_SPIN_US`): a diagnostic, which stays 0 when polling is off.
pub fn polled_waits() -> u64 {
    POLLED_WAITS.load(std::sync::atomic::Ordering::Relaxed)
}

impl Drop for SpinPermit {
    fn drop(&mut self) {
        SPINNERS.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Await `fut` (a statement on a connection registered with polylock's runtime), counted in
/// `in_flight`. When it is the only one there and its caller is a task (a blocked caller polls by
/// itself), the first time it would sleep it waits a moment without giving its thread up, and is
/// polled again as soon as it is woken: its socket's readiness reaches it through polylock's
/// runtime, and a worker that went to sleep meanwhile pays its own wake-up on top. Bounded as
/// blocked callers are (`POLYLOCK_SPIN_US`, and at most half the cores at once); with several
/// in flight the thread has other work, and none polls.
///
/// A future of its own rather than an `async fn`: an `async fn` keeps its argument and the pinned
/// copy it awaits side by side in its state, and a driver's statement is a kilobyte, copied into
/// every acquire's (boxed) future.
pub(crate) fn await_alone<F: Future>(
    in_flight: &std::sync::atomic::AtomicUsize,
    fut: F,
) -> AwaitAlone<'_, F> {
    AwaitAlone {
        fut,
        in_flight,
        counted: None,
    }
}

/// Takes one back from a statement count when the statement ends (or is dropped).
struct Counted<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

pin_project_lite::pin_project! {
    /// The future of [`await_alone`].
    pub(crate) struct AwaitAlone<'a, F> {
        #[pin]
        fut: F,
        in_flight: &'a std::sync::atomic::AtomicUsize,
        // Set on the first poll, when the statement starts.
        counted: Option<Counted<'a>>,
    }
}

impl<F: Future> Future for AwaitAlone<'_, F> {
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<F::Output> {
        use std::sync::atomic::Ordering;
        let mut this = self.project();
        // Only the first poll may poll for the answer, and only if the statement is alone.
        let mut permit = None;
        if this.counted.is_none() {
            let alone = this.in_flight.fetch_add(1, Ordering::AcqRel) == 0;
            *this.counted = Some(Counted(this.in_flight));
            permit = (alone && !on_blocking_caller()).then(SpinPermit::take);
        }
        let Some(until) = permit.as_ref().and_then(SpinPermit::deadline) else {
            return polling(false, || this.fut.as_mut().poll(cx));
        };
        let woken = FlagWaker::new(Then::Wake(cx.waker().clone()));
        let waker = std::task::Waker::from(woken.clone());
        let mut flagged = std::task::Context::from_waker(&waker);
        if let Poll::Ready(v) = polling(true, || this.fut.as_mut().poll(&mut flagged)) {
            return Poll::Ready(v);
        }
        while !woken.take_woken() && std::time::Instant::now() < until {
            std::thread::yield_now();
        }
        drop(permit);
        polling(false, || this.fut.as_mut().poll(&mut flagged))
    }
}

/// A waker that notes it was woken, then passes the wake-up on: a caller that polls for a
/// moment before it gives its thread up watches the note.
struct FlagWaker {
    woken: std::sync::atomic::AtomicBool,
    then: Then,
}

/// Where a [`FlagWaker`] passes its wake-up.
enum Then {
    /// A blocked caller's thread, parked once its polling time ran out.
    Unpark(std::thread::Thread),
    /// A task's own waker.
    Wake(std::task::Waker),
}

impl FlagWaker {
    fn new(then: Then) -> std::sync::Arc<FlagWaker> {
        std::sync::Arc::new(FlagWaker {
            woken: false.into(),
            then,
        })
    }

    /// Whether it was woken since the last look, clearing the note.
    fn take_woken(&self) -> bool {
        self.woken.swap(false, std::sync::atomic::Ordering::Acquire)
    }
}

impl std::task::Wake for FlagWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.woken.store(true, std::sync::atomic::Ordering::Release);
        match &self.then {
            Then::Unpark(thread) => thread.unpark(),
            Then::Wake(waker) => waker.wake_by_ref(),
        }
    }
}

/// Poll `fut` on this thread inside the runtime's context. While it waits, poll again for a short
/// while (yielding the CPU in between) before parking, with a [`SpinPermit`].
fn spin_block_on<F: Future>(h: &Handle, fut: F) -> F::Output {
    let fut = std::pin::pin!(fut);
    spin_block_on_until(h, fut, None).expect("no deadline")
}

/// [`spin_block_on`] up to `until`: `None` if the future still waits then (it can be driven
/// again, or dropped).
fn spin_block_on_until<F: Future>(
    h: &Handle,
    mut fut: std::pin::Pin<&mut F>,
    until: Option<std::time::Instant>,
) -> Option<F::Output> {
    let _ctx = h.enter();
    struct Caller(bool);
    impl Drop for Caller {
        fn drop(&mut self) {
            BLOCKING_CALLER.with(|b| b.set(self.0));
        }
    }
    let _caller = Caller(BLOCKING_CALLER.with(|b| b.replace(true)));
    let waker = FlagWaker::new(Then::Unpark(std::thread::current()));
    let w = std::task::Waker::from(waker.clone());
    let mut cx = std::task::Context::from_waker(&w);
    // Where polling is on, a poll that leaves the future waiting is followed by polling (or by
    // one more look before sleeping). The leave to poll is taken after the poll: the future may
    // poll by itself inside it (a Redis caller's own connection does), with the same leave.
    let polls_again = !spin().is_zero();
    loop {
        if let std::task::Poll::Ready(v) = polling(polls_again, || fut.as_mut().poll(&mut cx)) {
            return Some(v);
        }
        let mut permit = Some(SpinPermit::take());
        let spin_until = permit.as_ref().and_then(SpinPermit::deadline);
        let mut looked_last = !polls_again;
        while !waker.take_woken() {
            if spin_until.is_some_and(|t| std::time::Instant::now() < t) {
                std::thread::yield_now();
            } else if !looked_last {
                // About to sleep: one more look, in which a future arms what it put off.
                looked_last = true;
                if let std::task::Poll::Ready(v) = polling(false, || fut.as_mut().poll(&mut cx)) {
                    return Some(v);
                }
            } else {
                // A caller that sleeps polls no more: its leave goes to another (a caller
                // parked for a long wait kept it, and no other call could poll meanwhile).
                permit = None;
                match until {
                    None => std::thread::park(),
                    Some(t) => {
                        let now = std::time::Instant::now();
                        if now >= t {
                            return None;
                        }
                        std::thread::park_timeout(t - now);
                    }
                }
            }
        }
        drop(permit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_put_off_while_the_caller_polls_is_armed_before_it_sleeps() {
        // A future that arms its timer only when `polled_again_soon` is false (as a SQL try
        // does): the blocked caller's polls first say it will poll again, and before it sleeps
        // it looks once more with false, so the timer is armed and the wait ends. Without
        // that last look the caller would sleep with no timer armed and never wake.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let out = block_on(async {
                let mut looks = Vec::new();
                let timer = tokio::time::sleep(Duration::from_millis(30));
                tokio::pin!(timer);
                std::future::poll_fn(|cx| {
                    looks.push(polled_again_soon());
                    if polled_again_soon() {
                        return std::task::Poll::Pending;
                    }
                    timer.as_mut().poll(cx)
                })
                .await;
                looks
            });
            let _ = tx.send(out);
        });
        let looks = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the caller slept with its timer never armed")
            .unwrap();
        assert_eq!(looks.first(), Some(&true), "{looks:?}");
        assert!(looks.contains(&false), "{looks:?}");
        assert!(
            !polled_again_soon(),
            "the flag is this thread's and was put back"
        );
    }

    #[test]
    fn spin_time_comes_from_the_environment_within_bounds() {
        assert_eq!(spin_from(None), SPIN);
        assert_eq!(spin_from(Some("0")), Duration::ZERO);
        assert_eq!(spin_from(Some(" 40 ")), Duration::from_micros(40));
        assert_eq!(spin_from(Some("99999999")), MAX_SPIN);
        assert_eq!(spin_from(Some("fast")), SPIN);
        assert_eq!(spin_from(Some("-5")), SPIN);
    }
}
