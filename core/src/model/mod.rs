//! What every layer shares and nothing above it: names and their validation, owners, durations
//! and options, arguments as each runtime passes them, the outcomes of lock calls, the lost
//! signal, and the one error table.
//!
//! Nothing here talks to a server.

pub mod args;
pub mod error;
pub(crate) mod identity;
pub(crate) mod kind;
pub(crate) mod lost;
pub(crate) mod names;
pub(crate) mod options;
pub(crate) mod outcome;
pub mod owner;
pub mod secret;
pub mod shown;
