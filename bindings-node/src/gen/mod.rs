//! The glue generated from the tables of core/api/ by `python3 scripts/gen-bindings.py`: do not edit.

pub(crate) mod election;
pub(crate) mod fence;
pub(crate) mod latch;
pub(crate) mod lock;
pub(crate) mod permit_semaphore;
pub(crate) mod semaphore;
