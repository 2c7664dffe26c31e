//! Owner identity.
//!
//! A lock is held by an *owner*: the pair of the client's random id (one UUID per [`crate::Client`])
//! and a local owner id chosen by the caller. Redis stores it as `<client uuid>:<owner id>`, exactly
//! like Redisson's `<clientId>:<threadId>`. Core never reads thread identity itself; each binding
//! picks the owner (a thread, an asyncio task, a JS handle, a C-supplied integer).

use std::sync::atomic::{AtomicU64, Ordering};

/// A local owner id, unique within one client.
pub type OwnerId = u64;

static NEXT: AtomicU64 = AtomicU64::new(1);

/// A process-wide fresh owner id, never handed out twice in this process (unlike OS thread ids,
/// which are reused). Bindings use it for per-thread, per-task and per-handle owners.
pub fn fresh() -> OwnerId {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

thread_local! {
    static CURRENT: OwnerId = fresh();
}

/// The owner id of the calling thread: assigned from [`fresh`] on first use, stable for the
/// thread's life, never reused by another thread.
pub fn current_thread() -> OwnerId {
    CURRENT.with(|id| *id)
}

/// The stored owner field for a client id and a local owner.
pub(crate) fn field(client_id: &str, owner: OwnerId) -> String {
    let mut s = String::with_capacity(client_id.len() + 21);
    s.push_str(client_id);
    s.push(':');
    s.push_str(&owner.to_string());
    s
}
