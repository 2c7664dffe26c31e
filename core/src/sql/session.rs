//! What both session-lock backends share: the idle pool of lock connections, the connections of
//! held locks (by the server's id of the connection, which is also the hold's node), and the
//! keep-alive that notices a held connection that was killed or dropped.

use foldhash::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Poll;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{Slot, Slots};
use crate::backend::{Gone, GoneNotice};
use crate::model::error::{Error, Result};

/// A connection that can hold session locks.
#[async_trait]
pub(crate) trait SessionConn: Send + Sync + 'static {
    /// The server's id of the connection (MySQL's connection id, PostgreSQL's backend pid).
    fn id(&self) -> u64;
    /// Whether the connection still answers.
    async fn ping(&mut self) -> bool;
    /// True once the driver knows the connection is closed.
    fn is_closed(&self) -> bool;
    /// Close it politely.
    async fn close(self);
}

/// A lock connection lent to a statement that runs in the acquiring caller's own task (a task of
/// its own would cost a hand-over between threads on every acquire). If the acquire is dropped
/// before the statement answered, `undo` gets the connection and makes the future, spawned on the
/// runtime, that makes the server end the statement and gives back whatever the statement took.
/// `undo` may borrow: it runs only then, so an acquire that ends normally clones nothing for it.
pub(crate) struct InFlight<C: SessionConn, U: FnOnce(C, Slot) -> BoxFuture<'static, ()>> {
    lent: Option<(C, Slot)>,
    undo: Option<U>,
}

impl<C: SessionConn, U: FnOnce(C, Slot) -> BoxFuture<'static, ()>> InFlight<C, U> {
    pub(crate) fn new(conn: C, slot: Slot, undo: U) -> InFlight<C, U> {
        InFlight {
            lent: Some((conn, slot)),
            undo: Some(undo),
        }
    }

    /// The connection, for the statement.
    pub(crate) fn conn(&mut self) -> &mut C {
        &mut self.lent.as_mut().expect("lent").0
    }

    /// The statement answered: the connection and its place are the caller's again.
    pub(crate) fn finish(mut self) -> (C, Slot) {
        self.lent.take().expect("lent")
    }
}

impl<C: SessionConn, U: FnOnce(C, Slot) -> BoxFuture<'static, ()>> Drop for InFlight<C, U> {
    fn drop(&mut self) {
        if let (Some((conn, slot)), Some(undo)) = (self.lent.take(), self.undo.take()) {
            crate::runtime::spawn_clean_up(undo(conn, slot));
        }
    }
}

/// Run `statement` to its answer; past `deadline` (if any), the future that `cancel` makes
/// first makes the server end it, and the answer it then gives is returned.
///
/// A cancel ends only the statement the server is running when it arrives: one that lands
/// before the server has begun the statement (still in flight, or between its parse and its
/// run) is dropped, and the statement then waits for the lock with no deadline, for good if
/// the holder waits on this caller. So while no answer has come, the cancel is sent again,
/// after 250 ms and then at most every 2 s.
///
/// The cancel future is made (and boxed) only when it is needed: a driver's cancel request is
/// a whole connect (tens of KB of state), which would otherwise be part of every acquire's
/// future and be copied with it on each call.
pub(crate) async fn answer_by<'c, T>(
    mut statement: std::pin::Pin<&mut impl Future<Output = T>>,
    deadline: Option<Instant>,
    mut cancel: impl FnMut() -> BoxFuture<'c, ()>,
) -> T {
    let Some(d) = deadline else {
        return statement.await;
    };
    // The timer is armed only when the caller may sleep (see `runtime::polled_again_soon`): a
    // try answered while its caller polls costs no wake-up of the runtime's driver thread.
    let timer = tokio::time::sleep_until(d.into());
    tokio::pin!(timer);
    let answered = std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = statement.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        if crate::runtime::polled_again_soon() {
            return Poll::Pending;
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await;
    if let Some(out) = answered {
        return out;
    }
    let mut again = Duration::from_millis(250);
    loop {
        cancel().await;
        if let Ok(out) = tokio::time::timeout(again, statement.as_mut()).await {
            return out;
        }
        again = (again * 2).min(Duration::from_secs(2));
    }
}

/// One held connection: the locks held on it (a PostgreSQL writer's downgrade puts the read
/// lock on its writer's connection) and the notice told when it is found dead.
pub(crate) struct Held<C> {
    pub(crate) conn: tokio::sync::Mutex<Option<C>>,
    /// Holds on this connection.
    refs: Mutex<u32>,
    /// Told by the keep-alive when the connection is found dead (nothing reads an idle
    /// connection); cleared when it holds nothing any more (its holds ended normally).
    notice: GoneNotice,
}

impl<C> Held<C> {
    /// The connection, once no other statement uses it: at once when it is free (the common
    /// case, without the wait queue's future), else in turn.
    pub(crate) async fn conn(&self) -> tokio::sync::MutexGuard<'_, Option<C>> {
        match self.conn.try_lock() {
            Ok(g) => g,
            Err(_) => self.conn.lock().await,
        }
    }

    /// How a hold on this connection learns that the connection is gone: no task per hold.
    pub(crate) fn gone(&self) -> Gone {
        Gone::Notice(self.notice.clone())
    }
}

/// A held connection and its place under the cap.
type HeldEntry<C> = (Arc<Held<C>>, Slot);

/// The lock connections of one client.
pub(crate) struct Pool<C: SessionConn> {
    pub(crate) slots: Arc<Slots>,
    idle: Mutex<Vec<(C, Slot)>>,
    held: Mutex<HashMap<u64, HeldEntry<C>>>,
    stop: CancellationToken,
    /// Set with `stop` when the pool closes: read on every release, where a cancellation
    /// token's look would take its lock.
    closed: AtomicBool,
    /// Longest wait of a keep-alive ping.
    ping_timeout: Duration,
}

impl<C: SessionConn> Pool<C> {
    pub(crate) fn new(slots: Arc<Slots>, ping_timeout: Duration) -> Arc<Pool<C>> {
        Arc::new(Pool {
            slots,
            idle: Mutex::default(),
            held: Mutex::default(),
            stop: CancellationToken::new(),
            closed: AtomicBool::new(false),
            ping_timeout,
        })
    }

    /// An idle connection (true) or a place for a new one (false).
    pub(crate) fn take_idle(&self) -> Result<Option<(C, Slot)>> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some((c, slot)) = idle.pop() {
            if !c.is_closed() {
                return Ok(Some((c, slot)));
            }
            drop(slot);
        }
        Ok(None)
    }

    /// A place under the cap for a new connection.
    pub(crate) fn new_slot(&self) -> Result<Slot> {
        self.slots.take()
    }

    /// Give back a connection that holds nothing.
    pub(crate) fn put_back(&self, conn: C, slot: Slot) {
        if conn.is_closed() || self.closed.load(Ordering::Acquire) {
            return;
        }
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((conn, slot));
    }

    /// Keep `conn` for the lock it now holds; its id is the hold's node.
    pub(crate) fn hold(&self, conn: C, slot: Slot) -> (String, Gone) {
        let id = conn.id();
        let held = Arc::new(Held {
            conn: tokio::sync::Mutex::new(Some(conn)),
            refs: Mutex::new(1),
            notice: GoneNotice::default(),
        });
        let gone = held.gone();
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, (held, slot));
        (id.to_string(), gone)
    }

    /// The held connection of a node.
    pub(crate) fn held(&self, node: &str) -> Option<Arc<Held<C>>> {
        let id: u64 = node.parse().ok()?;
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .map(|(h, _)| h.clone())
    }

    /// One more lock on a held connection (a downgrade).
    pub(crate) fn add_ref(&self, held: &Held<C>) {
        *held.refs.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }

    /// One lock fewer on the held connection of `node`; when none is left, the connection goes
    /// back to the idle pool (`healthy`) or is closed.
    pub(crate) async fn unref(&self, node: &str, healthy: bool) {
        let Ok(id) = node.parse::<u64>() else {
            return;
        };
        let entry = {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            let Some((h, _)) = held.get(&id) else {
                return;
            };
            let mut refs = h.refs.lock().unwrap_or_else(|e| e.into_inner());
            *refs = refs.saturating_sub(1);
            if *refs > 0 && healthy {
                return;
            }
            drop(refs);
            held.remove(&id)
        };
        let Some((h, slot)) = entry else {
            return;
        };
        h.notice.clear(); // its holds ended: a later close of the connection is nobody's loss
        let conn = h.conn().await.take();
        if let Some(conn) = conn {
            if healthy {
                self.put_back(conn, slot);
            } else {
                conn.close().await;
            }
        }
    }

    /// Ping every held connection once per `period`; a dead one is reported through its holds'
    /// `gone` futures (and closed). Holds the pool only weakly between rounds.
    pub(crate) fn start_keepalive(self: &Arc<Self>, period: Duration) {
        let pool: Weak<Pool<C>> = Arc::downgrade(self);
        let stop = self.stop.clone();
        crate::runtime::handle().spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(period) => {}
                }
                let Some(pool) = pool.upgrade() else {
                    return;
                };
                let held: Vec<Arc<Held<C>>> = pool
                    .held
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .values()
                    .map(|(h, _)| h.clone())
                    .collect();
                let limit = pool.ping_timeout.min(period);
                drop(pool);
                for h in held {
                    // A connection in use (a release, a downgrade) answers for itself.
                    let Ok(mut guard) = h.conn.try_lock() else {
                        continue;
                    };
                    let alive = match guard.as_mut() {
                        Some(c) => tokio::time::timeout(limit, c.ping()).await.unwrap_or(false),
                        None => false,
                    };
                    if !alive {
                        if let Some(c) = guard.take() {
                            drop(c); // dead: nothing to say goodbye to
                        }
                        h.notice.tell();
                    }
                }
            }
        });
    }

    /// Close every connection (the client closes; its holds were dropped first).
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.stop.cancel();
        let idle: Vec<(C, Slot)> =
            std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        for (c, _slot) in idle {
            c.close().await;
        }
        let held: Vec<(Arc<Held<C>>, Slot)> = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, v)| v)
            .collect();
        for (h, _slot) in held {
            h.notice.clear();
            if let Some(c) = h.conn().await.take() {
                c.close().await;
            }
        }
    }
}

/// The error of a node that names no held connection.
pub(crate) fn unknown_node(node: &str) -> Error {
    Error::internal(format!("no held connection {node}"))
}
