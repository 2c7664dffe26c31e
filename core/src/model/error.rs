//! The one error table of polylock.
//!
//! Every binding maps [`ErrorKind`] to its own idiom (C result codes, Python exception classes, JS
//! `code` strings, Java exceptions). The numeric codes and names below are stable: a code is never
//! reused for another meaning, and new kinds only ever get new numbers. The table is
//! `core/api/errors.toml`: `scripts/gen-bindings.py` writes the kinds here and each binding's
//! copy from it, so a new kind is one entry there.

use std::fmt;
use std::time::Duration;

// BEGIN generated from core/api/errors.toml by `python3 scripts/gen-bindings.py`: do not edit
/// What went wrong, with a stable numeric code and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u32)]
pub enum ErrorKind {
    /// A required pointer/handle was NULL (only produced by the C ABI; Java throws
    /// NullPointerException).
    NullParameter = 1,
    /// An argument was malformed: empty or oversized name, NUL or non-UTF-8 text, bad duration,
    /// malformed URL, ...
    InvalidArgument = 2,
    /// The lock was not acquired within the allowed wait.
    Timeout = 3,
    /// The caller released a lock it does not hold.
    NotOwner = 4,
    /// The lock was held, but its lease ended (expired, deleted, session lost) before the release.
    LockLost = 5,
    /// The server could not be reached or stopped answering.
    Connection = 6,
    /// The server refused the credentials.
    Auth = 7,
    /// The server answered with an error polylock did not expect.
    Backend = 8,
    /// The call is not valid in the current state (closed client, used after fork, blocking call
    /// from a polylock runtime thread, ...).
    InvalidState = 9,
    /// A bug in polylock (an invariant did not hold).
    Internal = 10,
    /// A panic was caught at a language boundary (a bug, please report it).
    Panic = 11,
    /// The operation was cancelled by the caller (abort signal, interrupt, task cancellation).
    Cancelled = 12,
    /// The backend does not support this operation (for example a semaphore mutex on Redis, a lease
    /// on ZooKeeper).
    Unsupported = 13,
    /// An owner that holds the read half of a read-write lock asked for the write half. Neither
    /// Redisson nor Curator can ever grant that (they wait forever); polylock says so at once.
    /// Release the read lock first, or take the write lock first and downgrade.
    UpgradeNotSupported = 14,
    /// Fewer replicas than the client asks for (the URL's `wait_replicas`) acknowledged an acquire
    /// in time (Redis `WAIT`); the lock was given back.
    NotReplicated = 15,
    /// A fenced write carried a fencing token smaller than one the resource already accepted for
    /// the name: a holder whose lease ended wrote late, and the resource refused it (nothing of the
    /// write was applied).
    StaleToken = 16,
}

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 16] = [
        ErrorKind::NullParameter,
        ErrorKind::InvalidArgument,
        ErrorKind::Timeout,
        ErrorKind::NotOwner,
        ErrorKind::LockLost,
        ErrorKind::Connection,
        ErrorKind::Auth,
        ErrorKind::Backend,
        ErrorKind::InvalidState,
        ErrorKind::Internal,
        ErrorKind::Panic,
        ErrorKind::Cancelled,
        ErrorKind::Unsupported,
        ErrorKind::UpgradeNotSupported,
        ErrorKind::NotReplicated,
        ErrorKind::StaleToken,
    ];

    /// The stable upper-case name (`NOT_OWNER`); bindings derive their identifiers from it
    /// (`POLYLOCK_NOT_OWNER`, `ERR_POLYLOCK_NOT_OWNER`, `Code.NOT_OWNER`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::NullParameter => "NULL_PARAMETER",
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::Timeout => "TIMEOUT",
            ErrorKind::NotOwner => "NOT_OWNER",
            ErrorKind::LockLost => "LOCK_LOST",
            ErrorKind::Connection => "CONNECTION",
            ErrorKind::Auth => "AUTH",
            ErrorKind::Backend => "BACKEND",
            ErrorKind::InvalidState => "INVALID_STATE",
            ErrorKind::Internal => "INTERNAL",
            ErrorKind::Panic => "PANIC",
            ErrorKind::Cancelled => "CANCELLED",
            ErrorKind::Unsupported => "UNSUPPORTED",
            ErrorKind::UpgradeNotSupported => "UPGRADE_NOT_SUPPORTED",
            ErrorKind::NotReplicated => "NOT_REPLICATED",
            ErrorKind::StaleToken => "STALE_TOKEN",
        }
    }

    /// A short static description, for places that cannot carry the detailed message.
    pub fn description(self) -> &'static str {
        match self {
            ErrorKind::NullParameter => "a required pointer argument was NULL",
            ErrorKind::InvalidArgument => "an argument was invalid",
            ErrorKind::Timeout => "the lock was not acquired within the allowed wait",
            ErrorKind::NotOwner => "the lock is not held by this owner",
            ErrorKind::LockLost => "the lock was lost before it was released",
            ErrorKind::Connection => "the lock server could not be reached",
            ErrorKind::Auth => "the lock server refused the credentials",
            ErrorKind::Backend => "the lock server returned an unexpected error",
            ErrorKind::InvalidState => "the call is not valid in the current state",
            ErrorKind::Internal => "internal error in polylock",
            ErrorKind::Panic => "a panic was caught at the language boundary",
            ErrorKind::Cancelled => "the operation was cancelled",
            ErrorKind::Unsupported => "the backend does not support this operation",
            ErrorKind::UpgradeNotSupported => "a read lock cannot be upgraded to the write lock; release the read lock first",
            ErrorKind::NotReplicated => "too few replicas acknowledged the acquire in time; the lock was given back",
            ErrorKind::StaleToken => "the fencing token is older than one the resource already accepted; the write was refused",
        }
    }
}
// END generated (errors)

impl ErrorKind {
    /// The stable numeric code (0 is reserved for success in the C ABI).
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The kind for a numeric code, if any.
    pub fn from_code(code: u32) -> Option<ErrorKind> {
        ErrorKind::ALL.iter().copied().find(|k| k.code() == code)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A polylock error: a stable [`ErrorKind`] plus a message saying what went wrong and what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// `Result` with polylock's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind`. Any URL in `message` is shown without its secrets
    /// ([`crate::redact_text`]): every message that reaches a user passes here.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: crate::model::secret::redact_text(&message.into()),
        }
    }

    /// The stable kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The detailed message.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    pub(crate) fn state(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidState, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, message)
    }

    pub(crate) fn timeout(name: &str, waited: Option<Duration>) -> Error {
        match waited {
            Some(d) if !d.is_zero() => Error::new(
                ErrorKind::Timeout,
                format!("lock '{name}' is held by another owner; not acquired within {d:?}"),
            ),
            _ => Error::new(
                ErrorKind::Timeout,
                format!("lock '{name}' is held by another owner"),
            ),
        }
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Unsupported, message)
    }

    pub(crate) fn not_owner(name: &str, owner: u64) -> Error {
        Error::new(
            ErrorKind::NotOwner,
            format!("lock '{name}' is not held by owner {owner}; only the owner that acquired it can release it"),
        )
    }
}
