"""polylock's exceptions: one base class, one subclass per kind of core's error table.

Each also subclasses the builtin a Python user would catch: ``LockTimeoutError`` is a
``TimeoutError``, ``InvalidArgumentError`` a ``ValueError``, ``PolylockConnectionError`` a
``ConnectionError``, ``NotOwnerError`` a ``RuntimeError`` (like ``threading.Lock.release``).
"""

from __future__ import annotations


class PolylockError(Exception):
    """Base of every polylock error. ``code`` is the stable name (``"NOT_OWNER"``), ``number`` the
    stable number of core's error table (the C result code)."""

    code: str = "INTERNAL"
    number: int = 10

    def __init__(self, message: str, code: str | None = None, number: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if number is not None:
            self.number = number


# BEGIN generated from core/api/errors.toml (classes) by `python3 scripts/gen-bindings.py`: do not edit


class InvalidArgumentError(PolylockError, ValueError):
    """An argument was malformed: empty or oversized name, NUL or non-UTF-8 text, bad duration,
    malformed URL, ... Raised for NULL_PARAMETER too (its ``code`` says which)."""

    code, number = "INVALID_ARGUMENT", 2


class LockTimeoutError(PolylockError, TimeoutError):
    """The lock was not acquired within the allowed wait."""

    code, number = "TIMEOUT", 3


class NotOwnerError(PolylockError, RuntimeError):
    """The caller released a lock it does not hold."""

    code, number = "NOT_OWNER", 4


class LockLostError(PolylockError):
    """The lock was held, but its lease ended (expired, deleted, session lost) before the
    release."""

    code, number = "LOCK_LOST", 5


class PolylockConnectionError(PolylockError, ConnectionError):
    """The server could not be reached or stopped answering."""

    code, number = "CONNECTION", 6


class AuthError(PolylockError, PermissionError):
    """The server refused the credentials."""

    code, number = "AUTH", 7


class BackendError(PolylockError):
    """The server answered with an error polylock did not expect."""

    code, number = "BACKEND", 8


class InvalidStateError(PolylockError, RuntimeError):
    """The call is not valid in the current state (closed client, used after fork, blocking call
    from a polylock runtime thread, ...)."""

    code, number = "INVALID_STATE", 9


class InternalError(PolylockError):
    """A bug in polylock (an invariant did not hold). Raised for PANIC too (its ``code`` says
    which)."""

    code, number = "INTERNAL", 10


class OperationCancelledError(PolylockError):
    """The operation was cancelled by the caller (abort signal, interrupt, task cancellation)."""

    code, number = "CANCELLED", 12


class UnsupportedError(PolylockError, NotImplementedError):
    """The backend does not support this operation (for example a semaphore mutex on Redis, a lease
    on ZooKeeper)."""

    code, number = "UNSUPPORTED", 13


class UpgradeNotSupportedError(PolylockError, RuntimeError):
    """An owner that holds the read half of a read-write lock asked for the write half. Neither
    Redisson nor Curator can ever grant that (they wait forever); polylock says so at once. Release
    the read lock first, or take the write lock first and downgrade."""

    code, number = "UPGRADE_NOT_SUPPORTED", 14


class NotReplicatedError(PolylockError):
    """Fewer replicas than the client asks for (the URL's ``wait_replicas``) acknowledged an acquire
    in time (Redis ``WAIT``); the lock was given back."""

    code, number = "NOT_REPLICATED", 15


class StaleTokenError(PolylockError, RuntimeError):
    """A fenced write carried a fencing token smaller than one the resource already accepted for the
    name: a holder whose lease ended wrote late, and the resource refused it (nothing of the write
    was applied)."""

    code, number = "STALE_TOKEN", 16


# END generated (errors, classes)


# BEGIN generated from core/api/errors.toml (names) by `python3 scripts/gen-bindings.py`: do not edit
__all__ = [
    "PolylockError",
    "InvalidArgumentError",
    "LockTimeoutError",
    "NotOwnerError",
    "LockLostError",
    "PolylockConnectionError",
    "AuthError",
    "BackendError",
    "InvalidStateError",
    "InternalError",
    "OperationCancelledError",
    "UnsupportedError",
    "UpgradeNotSupportedError",
    "NotReplicatedError",
    "StaleTokenError",
]
# END generated (errors, names)
