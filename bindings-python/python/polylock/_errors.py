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


class LockTimeoutError(PolylockError, TimeoutError):
    code, number = "TIMEOUT", 3


class NotOwnerError(PolylockError, RuntimeError):
    code, number = "NOT_OWNER", 4


class LockLostError(PolylockError):
    code, number = "LOCK_LOST", 5


class PolylockConnectionError(PolylockError, ConnectionError):
    code, number = "CONNECTION", 6


class AuthError(PolylockError, PermissionError):
    code, number = "AUTH", 7


class BackendError(PolylockError):
    code, number = "BACKEND", 8


class InvalidArgumentError(PolylockError, ValueError):
    code, number = "INVALID_ARGUMENT", 2


class InvalidStateError(PolylockError, RuntimeError):
    code, number = "INVALID_STATE", 9


class InternalError(PolylockError):
    code, number = "INTERNAL", 10


class OperationCancelledError(PolylockError):
    code, number = "CANCELLED", 12


class UnsupportedError(PolylockError, NotImplementedError):
    code, number = "UNSUPPORTED", 13


class UpgradeNotSupportedError(PolylockError, RuntimeError):
    """The caller holds the read lock of a read-write lock and asked for its write lock. Redisson
    and Curator would wait forever there; polylock raises at once. Release the read lock first,
    or take the write lock first and then the read lock (a downgrade)."""

    code, number = "UPGRADE_NOT_SUPPORTED", 14


class NotReplicatedError(PolylockError):
    """Fewer replicas than the URL's ``wait_replicas`` acknowledged an acquire in time (Redis
    ``WAIT``); the lock was given back."""

    code, number = "NOT_REPLICATED", 15


__all__ = [
    "PolylockError",
    "LockTimeoutError",
    "NotOwnerError",
    "LockLostError",
    "PolylockConnectionError",
    "AuthError",
    "BackendError",
    "InvalidArgumentError",
    "InvalidStateError",
    "InternalError",
    "OperationCancelledError",
    "UnsupportedError",
    "UpgradeNotSupportedError",
    "NotReplicatedError",
]
