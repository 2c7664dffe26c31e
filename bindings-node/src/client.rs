//! `NativeClient`: connecting (through a slot, since a Promise cannot carry a native class from
//! another thread), handing out lock handles, closing, and the lost-event stream.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use polylock::args::millis_f64 as ms;
use polylock::{runtime, Client, ClientOptions};

use crate::boundary::entry;
use crate::driver::promise;
use crate::gen::election::NativeElection;
use crate::gen::fence::NativeFence;
use crate::gen::latch::NativeLatch;
use crate::gen::permit_semaphore::NativePermitSemaphore;
use crate::gen::semaphore::NativeSemaphore;
use crate::lock::NativeLock;
use crate::outcome::{failed, outcome, sync_err};

/// The connect options that are not durations (index.js checked their types).
#[napi(object)]
pub struct ConnectExtra {
    /// The service name operators see (`None`: the URL's, `POLYLOCK_SERVICE`, the program's).
    pub service: Option<String>,
    /// Globs of the lock names that get metric series of their own.
    pub metric_names: Option<Vec<String>>,
    /// The runtime operators see: `node 22.3.0`.
    pub runtime: Option<String>,
}

/// Client options from durations in ms (watchdog, connect, command, session, fair wait) and the
/// other options.
fn options_of(d: [f64; 5], extra: ConnectExtra) -> Result<ClientOptions> {
    (|| {
        Ok::<_, polylock::Error>(ClientOptions {
            watchdog_timeout: ms(d[0], "watchdogTimeoutMs")?,
            connect_timeout: ms(d[1], "connectTimeoutMs")?,
            command_timeout: ms(d[2], "commandTimeoutMs")?,
            session_timeout: ms(d[3], "sessionTimeoutMs")?,
            fair_wait_timeout: ms(d[4], "fairWaitTimeoutMs")?,
            metric_names: extra.metric_names.unwrap_or_default(),
            service: extra.service,
            runtime: extra.runtime,
            ..ClientOptions::default()
        })
    })()
    .map_err(sync_err)
}

/// Resolve the connect Promise, leaving the client in the slot.
fn settle<'e>(
    env: &'e Env,
    slot: &ClientSlot,
    connect: impl std::future::Future<Output = polylock::Result<Client>> + Send + 'static,
) -> Result<Object<'e>> {
    let slot = slot.inner.clone();
    promise(env, async move {
        match connect.await {
            Ok(c) => {
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                outcome(true, None)
            }
            Err(e) => failed(&e),
        }
    })
}

/// Connect; `durations` in ms and `extra` (see `options_of`). Resolves `{ ok }` and then
/// `take_client()` returns the client.
#[napi]
pub fn connect<'e>(
    env: &'e Env,
    url: String,
    durations: Vec<f64>,
    extra: ConnectExtra,
    slot: &ClientSlot,
) -> Result<Object<'e>> {
    entry(|| {
        let options = options_of(five(&durations)?, extra)?;
        settle(env, slot, async move {
            Client::connect_with(&url, options).await
        })
    })
}

/// Connect a RedLock over independent Redis masters; as `connect`.
#[napi]
pub fn connect_redlock<'e>(
    env: &'e Env,
    urls: Vec<String>,
    durations: Vec<f64>,
    extra: ConnectExtra,
    slot: &ClientSlot,
) -> Result<Object<'e>> {
    entry(|| {
        let options = options_of(five(&durations)?, extra)?;
        settle(env, slot, async move {
            Client::connect_redlock_with(&urls, options).await
        })
    })
}

fn five(d: &[f64]) -> Result<[f64; 5]> {
    d.try_into()
        .map_err(|_| Error::from_reason("INTERNAL\u{1}five durations expected"))
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
    pub fn new() -> Result<Self> {
        entry(|| {
            Ok(ClientSlot {
                inner: Arc::default(),
            })
        })
    }

    /// The connected client (once).
    #[napi]
    pub fn take(&self) -> Result<NativeClient> {
        entry(|| {
            self.inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .map(|inner| NativeClient { inner })
                .ok_or_else(|| Error::from_reason("INTERNAL\u{1}no client in the slot"))
        })
    }
}

/// A lost hold, as delivered to `watchLost` callbacks.
#[napi(object)]
pub struct LostEventJs {
    /// The lock's name.
    pub name: String,
    /// The kind of lock: `reentrant`, `mutex`, `read`, `write`, `fair`, or `permit`.
    pub kind: String,
    /// The owner (one acquisition of a flow, see index.js) whose hold was lost.
    pub owner: f64,
    /// Why: `EXPIRED`, `DELETED`, `RENEWAL_FAILED`, `SESSION_EXPIRED` or `CLIENT_CLOSED` (core's
    /// stable names, as every runtime says them).
    pub reason: String,
}

/// A client (see `index.js`).
#[napi]
pub struct NativeClient {
    inner: Client,
}

#[napi]
impl NativeClient {
    /// A lock handle of any kind: `reentrant`, `mutex`, `read`, `write` or `fair`.
    #[napi]
    pub fn lock(&self, name: Utf16String, kind: String) -> Result<NativeLock> {
        entry(|| {
            let name = polylock::text_from_utf16(&name, "lock name").map_err(sync_err)?;
            let kind = polylock::LockKind::from_name(&kind).map_err(sync_err)?;
            self.inner
                .lock_of_kind(&name, kind)
                .map(NativeLock::new)
                .map_err(sync_err)
        })
    }

    /// A semaphore.
    #[napi]
    pub fn semaphore(&self, name: Utf16String) -> Result<NativeSemaphore> {
        entry(|| {
            let name = polylock::text_from_utf16(&name, "lock name").map_err(sync_err)?;
            self.inner
                .semaphore(&name)
                .map(NativeSemaphore::new)
                .map_err(sync_err)
        })
    }

    /// A semaphore of expiring permits (Redis).
    #[napi]
    pub fn permit_semaphore(&self, name: Utf16String) -> Result<NativePermitSemaphore> {
        entry(|| {
            let name = polylock::text_from_utf16(&name, "lock name").map_err(sync_err)?;
            self.inner
                .permit_expirable_semaphore(&name)
                .map(NativePermitSemaphore::new)
                .map_err(sync_err)
        })
    }

    /// A candidate in the leader election `name`, campaigning as `identity`.
    #[napi]
    pub fn election(&self, name: Utf16String, identity: Utf16String) -> Result<NativeElection> {
        entry(|| {
            let name = polylock::text_from_utf16(&name, "lock name").map_err(sync_err)?;
            let identity = polylock::text_from_utf16(&identity, "identity").map_err(sync_err)?;
            self.inner
                .election(&name, &identity)
                .map(NativeElection::new)
                .map_err(sync_err)
        })
    }

    /// A count-down latch.
    #[napi]
    pub fn count_down_latch(&self, name: Utf16String) -> Result<NativeLatch> {
        entry(|| {
            let name = polylock::text_from_utf16(&name, "lock name").map_err(sync_err)?;
            self.inner
                .count_down_latch(&name)
                .map(NativeLatch::new)
                .map_err(sync_err)
        })
    }

    /// The fence of `name`: fenced writes of Redis commands (Redis only).
    #[napi]
    pub fn fence(&self, name: Utf16String) -> Result<NativeFence> {
        entry(|| {
            let name = polylock::text_from_utf16(&name, "lock name").map_err(sync_err)?;
            self.inner
                .fence(&name)
                .map(NativeFence::new)
                .map_err(sync_err)
        })
    }

    /// Close: release held locks; later calls fail.
    #[napi]
    pub fn close<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let c = self.inner.clone();
            promise(env, async move {
                match c.close().await {
                    Ok(()) => outcome(true, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Close now, blocking the calling thread (for the process's `exit` event, where nothing
    /// asynchronous runs any more). Errors are ignored: the process is ending.
    #[napi]
    pub fn close_sync(&self) -> Result<()> {
        entry(|| {
            let c = self.inner.clone();
            let _ = runtime::block_on(async move { c.close().await });
            Ok(())
        })
    }

    /// True while the connection to ZooKeeper (or etcd) is down but the session may live.
    #[napi(getter)]
    pub fn suspended(&self) -> Result<bool> {
        entry(|| Ok(self.inner.is_suspended()))
    }

    /// This client's metrics alone, in the Prometheus text format.
    #[napi]
    pub fn metrics_text(&self) -> Result<String> {
        entry(|| Ok(self.inner.metrics_text()))
    }

    /// This client's random id.
    #[napi(getter)]
    pub fn id(&self) -> Result<String> {
        entry(|| Ok(self.inner.id().to_string()))
    }

    /// Call `callback(event)` for every hold of this client that is lost from now on. The
    /// callback is weak: it never keeps the process alive by itself.
    #[napi]
    pub fn watch_lost(&self, callback: Function<LostEventJs, ()>) -> Result<()> {
        entry(|| {
            let tsfn: ThreadsafeFunction<LostEventJs, (), LostEventJs, Status, false, true> =
                callback
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
                                kind: ev.kind.name().to_string(),
                                owner: ev.owner as f64,
                                reason: ev.reason.name().to_string(),
                            };
                            tsfn.call(js, ThreadsafeFunctionCallMode::NonBlocking);
                        }
                        Err(RecvError::Lagged(_)) => continue,
                        Err(RecvError::Closed) => return,
                    }
                }
            });
            Ok(())
        })
    }
}
