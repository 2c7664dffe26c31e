//! The state one client shares with every primitive it hands out.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::gate::Gates;
use super::Holds;
use crate::backend::{Backend, HoldOps, LockOps, SessionSink};
use crate::metrics::Metrics;
use crate::model::error::{Error, Result};
use crate::model::kind::{HoldKind, LockKind};
use crate::model::options::ClientOptions;
use crate::model::owner::OwnerId;

/// One client: its id, options, backend and holds, shared by its primitives.
pub(crate) struct ClientCore {
    pub(crate) id: String,
    /// The server(s), as a URL without credentials: the same for every client of them, in every
    /// process (the multi-lock orders its members by it).
    pub(crate) server: String,
    pub(crate) options: ClientOptions,
    /// Dropped with the client, except in a process forked after the client was made (see the
    /// `Drop`).
    pub(crate) backend: ManuallyDrop<Box<dyn Backend>>,
    pub(crate) holds: Holds,
    /// What its primitives record (crate::metrics).
    pub(crate) metrics: Arc<Metrics>,
    /// Who this client is, as one line of JSON (crate::model::identity).
    pub(crate) identity: String,
    /// One acquire or release at a time per hold key (see [`super::gate`]).
    pub(crate) gates: Gates,
    /// Wakes the watchdog (a fixed lease was added).
    pub(crate) wake: Arc<Notify>,
    /// Cancelled when the client closes: ends the watchdog and every waiting acquire.
    pub(crate) stop: CancellationToken,
    pid: u32,
    closed: AtomicBool,
    /// The connection is down but the session may still be alive (ZooKeeper).
    suspended: AtomicBool,
}

impl Drop for ClientCore {
    fn drop(&mut self) {
        if self.made_before_fork() {
            // A forked child (its exit hooks, its garbage collector) dropping a client of its
            // parent's: the backend's sockets are registered with the epoll instance of the
            // parent's runtime, which fork shares between both processes, so dropping them here
            // would deregister them for the parent too, whose next answer would then never be
            // read (a PostgreSQL release hung). Leaked instead: the child's copies of the parent's
            // sockets close when the child exits, which the parent does not notice.
            return;
        }
        // SAFETY: the only place the backend is dropped, once; nothing uses it afterwards.
        unsafe { ManuallyDrop::drop(&mut self.backend) }
    }
}

impl ClientCore {
    pub(crate) fn new(
        id: String,
        server: String,
        options: ClientOptions,
        backend: Box<dyn Backend>,
    ) -> Self {
        let metrics = Metrics::register_if(
            options.metrics,
            backend_label(backend.server()),
            options.metric_names.clone(),
        );
        let identity = crate::model::identity::identity_json(&options);
        ClientCore {
            metrics,
            identity,
            id,
            server,
            options,
            backend: ManuallyDrop::new(backend),
            holds: Holds::default(),
            gates: Gates::default(),
            wake: Arc::new(Notify::new()),
            stop: CancellationToken::new(),
            pid: crate::model::identity::process_id(),
            closed: AtomicBool::new(false),
            suspended: AtomicBool::new(false),
        }
    }

    /// True in a process forked after this client was made: the client is the parent's.
    pub(crate) fn made_before_fork(&self) -> bool {
        self.pid != crate::model::identity::process_id()
    }

    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.made_before_fork() {
            return Err(Error::state(
                "this polylock client was created before fork(); it cannot be used in the child \
                 process. Create a new client in the child",
            ));
        }
        if self.is_closed() {
            return Err(Error::state("the polylock client is closed"));
        }
        Ok(())
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Mark the client closed; false if it already was.
    pub(crate) fn set_closed(&self) -> bool {
        !self.closed.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::Acquire)
    }

    pub(crate) fn ops(&self, kind: LockKind) -> Result<Arc<dyn LockOps>> {
        self.backend.lock_ops(kind)
    }

    pub(crate) fn hold_ops(&self, kind: HoldKind) -> Result<Arc<dyn HoldOps>> {
        self.backend.hold_ops(kind)
    }

    /// Remove a hold of `owner` from the server whatever its count (it was lost, or its client
    /// closed).
    pub(crate) async fn drop_hold(
        &self,
        name: &str,
        kind: HoldKind,
        owner: OwnerId,
        node: Option<&str>,
    ) -> Result<bool> {
        self.hold_ops(kind)?.drop_hold(name, owner, node).await
    }
}

impl SessionSink for ClientCore {
    fn suspended(&self, yes: bool) {
        self.suspended.store(yes, Ordering::Release);
    }

    fn session_lost(&self) {
        if !self.is_closed() {
            self.holds.session_lost();
        }
    }
}

/// The `backend` label of a server's metrics.
fn backend_label(server: &str) -> &'static str {
    match server {
        "Redis" => "redis",
        "RedLock" => "redlock",
        "ZooKeeper" => "zookeeper",
        "etcd" => "etcd",
        "PostgreSQL" => "postgresql",
        "MySQL" | "MariaDB" | "MySQL/MariaDB" => "mysql",
        _ => "other",
    }
}
