//! The primitives, each written once over the backend traits: the lock (every lock-like kind,
//! reentrant, mutex, read and write) and the read-write lock that pairs two of them.

pub(crate) mod lock;
pub(crate) mod read_write;
