"""polylock: distributed locks on Redis (Redisson-compatible) and ZooKeeper (Curator-compatible).

    import polylock
    client = polylock.connect("redis://127.0.0.1:6379")      # or "zk://127.0.0.1:2181"
    with client.lock("goods"):                                # reentrant per thread
        ...
    async with client.lock("goods"):                          # reentrant per asyncio task
        ...
    rw = client.read_write_lock("catalog")                    # many readers or one writer
    with rw.read_lock():
        ...
    with polylock.MultiLock([client.lock("a"), client.lock("b")]):   # all or none
        ...

Locks are shaped like ``threading.Lock``: ``acquire(blocking=True, timeout=-1)`` returns a bool,
``release()`` raises ``NotOwnerError`` (a ``RuntimeError``) when the caller does not hold it.
Every bounded acquire says "not acquired" with ``False``; every wait takes ``None`` or ``-1``
for "forever". Every call that touches the network or waits releases the GIL. The contract that
every runtime shares (and every URL form): docs/src/contract.md.

Metrics: :mod:`polylock.metrics` (``polylock.metrics.register()`` for prometheus_client). The
core's events (a lock lost, a renewal failed, a connection suspended: WARNING; every acquire and
release: DEBUG) go to ``logging.getLogger("polylock")`` and its children, with the lock's name in
the record's ``lock`` attribute.
"""

from __future__ import annotations

from . import _errors, _native, fence, metrics
from ._client import Client, connect, connect_redlock
# BEGIN generated from core/api/errors.toml by `python3 scripts/gen-bindings.py`: do not edit
from ._errors import (
    AuthError,
    BackendError,
    InternalError,
    InvalidArgumentError,
    InvalidStateError,
    LockLostError,
    LockTimeoutError,
    NotOwnerError,
    NotReplicatedError,
    OperationCancelledError,
    PolylockConnectionError,
    PolylockError,
    StaleTokenError,
    UnsupportedError,
    UpgradeNotSupportedError,
)
# END generated (errors)
from ._election import Election, Leader
from ._lock import Lock, MultiLock, ReadWriteLock
from ._lost import LostEvent
from ._semaphore import CountDownLatch, PermitExpirableSemaphore, Semaphore

__version__: str = _native.VERSION


def error_table() -> "list[tuple[int, str, type[PolylockError]]]":
    """polylock's one error table, as Python carries it: each kind's stable number, its name
    (an error's ``code``) and the exception class raised for it (PANIC, a bug caught at the
    boundary, is an ``InternalError`` whose ``code`` says ``"PANIC"``; NULL_PARAMETER is C's)."""
    return [(n, name, getattr(_errors, cls)) for n, name, cls in _native.error_table()]

__all__ = ["connect", "connect_redlock", "error_table", "fence", "metrics", "Client", "Lock", "MultiLock", "ReadWriteLock", "Semaphore", "PermitExpirableSemaphore", "CountDownLatch", "LostEvent", "Election", "Leader"]
__all__ += _errors.__all__
