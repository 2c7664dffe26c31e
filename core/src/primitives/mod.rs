//! The primitives, each written once over the backend traits: the lock (every lock-like kind,
//! reentrant, mutex, read and write), the read-write lock that pairs two of them, the semaphores,
//! the count-down latch and the leader election.

pub(crate) mod election;
pub(crate) mod fence;
pub(crate) mod latch;
pub(crate) mod lock;
pub(crate) mod multi;
pub(crate) mod one;
pub(crate) mod permit_semaphore;
pub(crate) mod read_write;
pub(crate) mod semaphore;
