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
Every call that touches the network or waits releases the GIL.
"""

from __future__ import annotations

from . import _errors, _native
from ._client import Client, connect, connect_redlock
from ._errors import (
    AuthError,
    BackendError,
    InternalError,
    InvalidArgumentError,
    InvalidStateError,
    LockLostError,
    LockTimeoutError,
    NotOwnerError,
    OperationCancelledError,
    PolylockConnectionError,
    PolylockError,
    UnsupportedError,
    UpgradeNotSupportedError,
    NotReplicatedError,
)
from ._lock import Lock, MultiLock, ReadWriteLock
from ._semaphore import CountDownLatch, PermitExpirableSemaphore, Semaphore

__version__: str = _native.VERSION

__all__ = ["connect", "connect_redlock", "Client", "Lock", "MultiLock", "ReadWriteLock", "Semaphore", "PermitExpirableSemaphore", "CountDownLatch"]
__all__ += _errors.__all__
