//! The native addon behind the `polylock` npm package (the JS wrapper is `index.js`).
//!
//! Nothing blocks the event loop: every call runs on polylock's one runtime and settles a Promise
//! through a napi deferred. No napi async runtime is used (core owns the only runtime). Calls
//! resolve an [`Outcome`] object rather than rejecting, so the JS side can build a
//! `PolylockError` with the stable `code` of core's error table.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};

use napi_derive::napi;
use polylock::{runtime, AcquireOptions, Client, ClientOptions, ErrorKind, Lock, Wait};

/// The result of one native call, as the JS wrapper reads it.
#[napi(object)]
pub struct Outcome {
    /// False when the call failed; `code` and `message` say why.
    pub ok: bool,
    /// The boolean answer of the call (acquired / was locked / ...).
    pub value: bool,
    /// A number answer (hold count, remaining lease in ms, fencing token), if any.
    pub number: Option<f64>,
    /// The stable error name (`NOT_OWNER`, ...), when `ok` is false.
    pub code: Option<String>,
    /// What went wrong and what to do.
    pub message: Option<String>,
}

fn outcome(value: bool, number: Option<f64>) -> Outcome {
    Outcome {
        ok: true,
        value,
        number,
        code: None,
        message: None,
    }
}

fn failed(e: &polylock::Error) -> Outcome {
    Outcome {
        ok: false,
        value: false,
        number: None,
        code: Some(e.kind().name().to_string()),
        message: Some(e.message().to_string()),
    }
}

/// A synchronous error for the JS wrapper: `CODE\u{1}message`.
fn sync_err(e: polylock::Error) -> Error {
    Error::from_reason(format!("{}\u{1}{}", e.kind().name(), e.message()))
}

fn ms(v: f64, what: &str) -> std::result::Result<Duration, polylock::Error> {
    if !v.is_finite() || v <= 0.0 {
        return Err(polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must be a positive number of milliseconds, got {v}"),
        ));
    }
    Duration::try_from_secs_f64(v / 1e3).map_err(|_| {
        polylock::Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} {v} is too large"),
        )
    })
}

/// Spawn `fut` on polylock's runtime; its outcome settles the returned Promise.
fn promise<F>(env: &Env, fut: F) -> Result<Object<'_>>
where
    F: std::future::Future<Output = Outcome> + Send + 'static,
{
    let (deferred, promise) = env.create_deferred::<Outcome, _>()?;
    runtime::handle().spawn(async move {
        let o = fut.await;
        deferred.resolve(move |_| Ok(o));
    });
    Ok(promise)
}

/// A process-wide fresh owner id (never reused); the JS wrapper gives one to each lock handle.
#[napi]
pub fn fresh_owner() -> f64 {
    polylock::owner::fresh() as f64
}

/// The crate version.
#[napi]
pub fn version() -> String {
    polylock::VERSION.to_string()
}

/// Connect; durations in ms. Resolves `{ ok }` and then `take_client()` returns the client.
#[napi]
pub fn connect<'e>(
    env: &'e Env,
    url: String,
    watchdog_ms: f64,
    connect_ms: f64,
    command_ms: f64,
    session_ms: f64,
    slot: &ClientSlot,
) -> Result<Object<'e>> {
    let options = (|| {
        Ok::<_, polylock::Error>(ClientOptions {
            watchdog_timeout: ms(watchdog_ms, "watchdogTimeoutMs")?,
            connect_timeout: ms(connect_ms, "connectTimeoutMs")?,
            command_timeout: ms(command_ms, "commandTimeoutMs")?,
            session_timeout: ms(session_ms, "sessionTimeoutMs")?,
        })
    })()
    .map_err(sync_err)?;
    let slot = slot.inner.clone();
    promise(env, async move {
        match Client::connect_with(&url, options).await {
            Ok(c) => {
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                outcome(true, None)
            }
            Err(e) => failed(&e),
        }
    })
}

/// Receives the client of a `connect` call (a Promise cannot carry a native class from another
/// thread).
#[napi]
pub struct ClientSlot {
    inner: Arc<Mutex<Option<Client>>>,
}

#[napi]
impl ClientSlot {
    /// An empty slot.
    #[napi(constructor)]
    pub fn new() -> Self {
        ClientSlot {
            inner: Arc::default(),
        }
    }

    /// The connected client (once).
    #[napi]
    pub fn take(&self) -> Result<NativeClient> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .map(|inner| NativeClient { inner })
            .ok_or_else(|| Error::from_reason("INTERNAL\u{1}no client in the slot"))
    }
}

impl Default for ClientSlot {
    fn default() -> Self {
        Self::new()
    }
}

/// A lost hold, as delivered to `watchLost` callbacks.
#[napi(object)]
pub struct LostEventJs {
    /// The lock's name.
    pub name: String,
    /// The owner (lock handle) whose hold was lost.
    pub owner: f64,
    /// Why (`Expired`, `Deleted`, `RenewalFailed`, `SessionExpired`, `ClientClosed`).
    pub reason: String,
}

/// A client (see `index.js`).
#[napi]
pub struct NativeClient {
    inner: Client,
}

#[napi]
impl NativeClient {
    /// A reentrant lock handle.
    #[napi]
    pub fn lock(&self, name: String) -> Result<NativeLock> {
        self.inner
            .lock(&name)
            .map(|inner| NativeLock { inner })
            .map_err(sync_err)
    }

    /// A non-reentrant ZooKeeper mutex.
    #[napi]
    pub fn mutex(&self, path: String) -> Result<NativeLock> {
        self.inner
            .mutex(&path)
            .map(|inner| NativeLock { inner })
            .map_err(sync_err)
    }

    /// Close: release held locks; later calls fail.
    #[napi]
    pub fn close<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let c = self.inner.clone();
        promise(env, async move {
            match c.close().await {
                Ok(()) => outcome(true, None),
                Err(e) => failed(&e),
            }
        })
    }

    /// This client's random id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_string()
    }

    /// Call `callback(event)` for every hold of this client that is lost from now on. The
    /// callback is weak: it never keeps the process alive by itself.
    #[napi]
    pub fn watch_lost(&self, callback: Function<LostEventJs, ()>) -> Result<()> {
        let tsfn: ThreadsafeFunction<LostEventJs, (), LostEventJs, Status, false, true> = callback
            .build_threadsafe_function()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        let mut events = self.inner.lost_events();
        runtime::handle().spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(ev) => {
                        let js = LostEventJs {
                            name: ev.name.to_string(),
                            owner: ev.owner as f64,
                            reason: format!("{:?}", ev.reason),
                        };
                        tsfn.call(js, ThreadsafeFunctionCallMode::NonBlocking);
                    }
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                }
            }
        });
        Ok(())
    }
}

/// Cancels one in-flight acquire (for `AbortSignal`).
#[napi]
pub struct CancelToken {
    inner: Arc<TokenState>,
}

#[derive(Default)]
struct TokenState {
    cancelled: std::sync::atomic::AtomicBool,
    done: std::sync::atomic::AtomicBool,
    wake: tokio::sync::Notify,
}

#[napi]
impl CancelToken {
    /// A token for one call.
    #[napi(constructor)]
    pub fn new() -> Self {
        CancelToken {
            inner: Arc::default(),
        }
    }

    /// Cancel the call: the wait is dropped (leaving no node or field behind) and a hold that
    /// arrives anyway is given back. False if the call had already finished.
    #[napi]
    pub fn cancel(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.wake.notify_one();
        !self.inner.done.load(Ordering::SeqCst)
    }
}

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}

/// A lock handle (see `index.js`); every call names its owner.
#[napi]
pub struct NativeLock {
    inner: Lock,
}

#[napi]
impl NativeLock {
    /// The lock's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// Acquire: resolves `value` true when held, false when `waitMs` ran out; a cancelled
    /// token resolves `{ ok: false, code: "CANCELLED" }`.
    #[napi]
    pub fn acquire<'e>(
        &self,
        env: &'e Env,
        owner: f64,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        token: &CancelToken,
    ) -> Result<Object<'e>> {
        let wait = match wait_ms {
            None => Wait::Forever,
            Some(0.0) => Wait::Never,
            Some(w) => Wait::For(ms(w, "waitMs").map_err(sync_err)?),
        };
        let lease = lease_ms
            .map(|l| ms(l, "leaseMs"))
            .transpose()
            .map_err(sync_err)?;
        let owner = owner as u64;
        let lock = self.inner.clone();
        let token = token.inner.clone();
        promise(env, async move {
            use std::sync::atomic::Ordering;
            let aborted = || {
                failed(&polylock::Error::new(
                    ErrorKind::Cancelled,
                    "the acquire was aborted",
                ))
            };
            if token.cancelled.load(Ordering::SeqCst) {
                return aborted();
            }
            // Dropping the acquire future (the cancel branch) is cancel-safe in core.
            let result = tokio::select! {
                r = lock.acquire(owner, AcquireOptions { wait, lease }) => Some(r),
                _ = token.wake.notified() => None,
            };
            token.done.store(true, Ordering::SeqCst);
            match result {
                None => aborted(),
                Some(Ok(_)) if token.cancelled.load(Ordering::SeqCst) => {
                    let _ = lock.release(owner).await; // aborted as it arrived: give it back
                    aborted()
                }
                Some(Ok(_)) => outcome(true, None),
                Some(Err(e)) if e.kind() == ErrorKind::Timeout => outcome(false, None),
                Some(Err(e)) => failed(&e),
            }
        })
    }

    /// Release one hold of `owner`.
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, owner: f64) -> Result<Object<'e>> {
        let lock = self.inner.clone();
        promise(env, async move {
            match lock.release(owner as u64).await {
                Ok(r) => outcome(r == polylock::Released::Freed, None),
                Err(e) => failed(&e),
            }
        })
    }

    /// Whether anybody holds the lock.
    #[napi]
    pub fn is_locked<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let lock = self.inner.clone();
        promise(env, async move {
            match lock.is_locked().await {
                Ok(b) => outcome(b, None),
                Err(e) => failed(&e),
            }
        })
    }

    /// Delete the lock whoever holds it.
    #[napi]
    pub fn force_unlock<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let lock = self.inner.clone();
        promise(env, async move {
            match lock.force_unlock().await {
                Ok(b) => outcome(b, None),
                Err(e) => failed(&e),
            }
        })
    }

    /// Remaining lease in ms (`number`), none if free or without a lease.
    #[napi]
    pub fn remaining_lease<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let lock = self.inner.clone();
        promise(env, async move {
            match lock.remaining_lease().await {
                Ok(d) => outcome(d.is_some(), d.map(|d| d.as_millis() as f64)),
                Err(e) => failed(&e),
            }
        })
    }

    /// The fencing token of `owner`'s hold, if it holds one (no round trip).
    #[napi]
    pub fn fencing_token(&self, owner: f64) -> Option<f64> {
        self.inner.fencing_token(owner as u64).map(|t| t as f64)
    }

    /// True if `owner`'s hold was lost and not yet released.
    #[napi]
    pub fn is_lost(&self, owner: f64) -> bool {
        self.inner
            .lost_signal(owner as u64)
            .is_some_and(|s| s.is_lost())
    }
}
