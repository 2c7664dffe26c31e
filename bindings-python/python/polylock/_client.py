"""The client: connecting, handing out locks, the ``locked`` decorator, closing."""

from __future__ import annotations

import asyncio
import atexit
import functools
import inspect
import platform
import string
import threading
import weakref
from types import TracebackType
from typing import Any, Callable, Optional, Sequence, TypeVar, cast

from . import _native
from . import fence as _fence
from ._errors import InvalidArgumentError, LockLostError, LockTimeoutError
from ._lock import Lock, ReadWriteLock, _check_name, _timeout
from ._election import Election
from ._semaphore import CountDownLatch, PermitExpirableSemaphore, Semaphore
from ._lost import LostWatch

F = TypeVar("F", bound=Callable[..., Any])

# Clients not closed yet. At exit they are closed, so that the server forgets their holds and
# waits now (a ZooKeeper session would keep its nodes until it timed out).
_open_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    for client in list(_open_clients):
        try:
            client.close()
        except Exception:  # a client made before fork(), or a server gone: nothing more to do
            pass


# What operators see this client run in (``polylock status``, ``top``), next to host and pid.
_RUNTIME = f"python {platform.python_version()}"


def _options(
    service: Optional[str], metric_names: Optional[Sequence[str]], **durations: float
) -> _native.Options:
    for name, value in durations.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidArgumentError(f"{name} must be a number of seconds, got {value!r}")
    if service is not None and not isinstance(service, str):
        raise InvalidArgumentError(f"service must be a str, got {type(service).__name__}")
    names: list[str] = []
    if metric_names is not None:
        bad = isinstance(metric_names, str)  # one str would be taken for a list of characters
        try:
            names = [] if bad else list(metric_names)
        except TypeError:
            bad = True
        if bad or not all(isinstance(n, str) for n in names):
            raise InvalidArgumentError(
                f"metric_names must be a list of lock-name globs such as ['orders:*'], got {metric_names!r}"
            )
    d = durations
    return (
        float(d["watchdog_timeout"]),
        float(d["connect_timeout"]),
        float(d["command_timeout"]),
        float(d["session_timeout"]),
        float(d["fair_wait_timeout"]),
        names,
        service,
        _RUNTIME,
    )


def connect(
    url: str,
    *,
    watchdog_timeout: float = 30.0,
    connect_timeout: float = 5.0,
    command_timeout: float = 5.0,
    session_timeout: float = 10.0,
    fair_wait_timeout: float = 5.0,
    service: Optional[str] = None,
    metric_names: Optional[Sequence[str]] = None,
) -> "Client":
    """Connect to a lock server: ``redis://[user:password@]host:port[/db]``, ``rediss://...``,
    ``redis+sentinel://...``, ``redis+cluster://...``, ``zk://host:port[,...][/chroot]``,
    ``zks://...``, ``etcd://...``, ``mysql://...`` or ``postgres://...``; every form with its
    options is in the URL table, docs/src/contract.md#urls. Durations are in seconds;
    ``fair_wait_timeout`` is how long a fair lock's waiter that stopped asking keeps its place.

    ``service``: the name operators see this client under (``polylock status``); ``None``: a
    ``service`` in the URL, else ``$POLYLOCK_SERVICE``, else the program's name.
    ``metric_names``: globs of lock names (``["orders:*"]``, ``?`` one character) that get
    metric series of their own (a ``name`` label, see :mod:`polylock.metrics`); other names
    count only in their kind's and backend's series."""
    if not isinstance(url, str):
        raise InvalidArgumentError(f"url must be a str, got {type(url).__name__}")
    options = _options(
        service,
        metric_names,
        watchdog_timeout=watchdog_timeout,
        connect_timeout=connect_timeout,
        command_timeout=command_timeout,
        session_timeout=session_timeout,
        fair_wait_timeout=fair_wait_timeout,
    )
    return Client(_native.connect(url, options))


def connect_redlock(
    urls: "Sequence[str]",
    *,
    watchdog_timeout: float = 30.0,
    connect_timeout: float = 5.0,
    command_timeout: float = 5.0,
    service: Optional[str] = None,
    metric_names: Optional[Sequence[str]] = None,
) -> "Client":
    """A RedLock over 3 to 16 independent Redis masters (``redis://`` or ``rediss://`` URLs of
    different servers): its ``lock(name)`` is held while a majority of them hold it.

    A master that does not answer now is tried again every second as long as a majority answers;
    a wrong password on any of them raises ``AuthError``. Only ``lock()`` exists on such a client
    (``UnsupportedError`` for the others). RedLock's safety rests on bounded process pauses and
    clock drift: read the README's RedLock section, and prefer one Redis with replicas or
    ZooKeeper where you can. ``service`` and ``metric_names`` as for :func:`connect`."""
    if isinstance(urls, str) or not all(isinstance(u, str) for u in urls):
        raise InvalidArgumentError("urls must be a list of str (one URL per master)")
    options = _options(
        service,
        metric_names,
        watchdog_timeout=watchdog_timeout,
        connect_timeout=connect_timeout,
        command_timeout=command_timeout,
        session_timeout=10.0,
        fair_wait_timeout=5.0,
    )
    return Client(_native.connect_redlock(list(urls), options))


class Client:
    """A connection to one lock server. Thread-safe; also a context manager that closes it."""

    def __init__(self, native: _native.NativeClient) -> None:
        self._native = native
        # Lock handles with lost callbacks; the client's one lost-event stream feeds them.
        self._lost = LostWatch(native)
        _open_clients.add(self)

    def _handle(self, name: str, kind: str) -> Lock:
        _check_name(name)
        return Lock(self._native.lock(name, kind), self._lost.add)

    @property
    def id(self) -> str:
        """This client's random id (the ``<clientId>`` part of stored owners)."""
        return self._native.id

    @property
    def closed(self) -> bool:
        return self._native.closed

    def metrics_text(self) -> str:
        """This client's metrics alone, in the Prometheus text format (every client of the
        process: :func:`polylock.metrics.text`)."""
        return self._native.metrics_text()

    @property
    def suspended(self) -> bool:
        """ZooKeeper: the connection is down but the session may live; locks stay held."""
        return self._native.suspended

    def lock(self, name: str) -> "Lock":
        """A reentrant lock: per thread for sync calls, per task for asyncio calls. On ZooKeeper
        ``name`` is a znode path (Curator's InterProcessMutex)."""
        return self._handle(name, "reentrant")

    def fair_lock(self, name: str) -> "Lock":
        """A fair lock: granted in the order of asking, across polylock and Redisson clients
        (Redisson's ``RFairLock`` on Redis; a waiter that stops asking loses its place after
        ``fair_wait_timeout``, 5 s by default, where Redisson waits 5 minutes). On ZooKeeper every
        lock is fair: this is the ordinary lock."""
        return self._handle(name, "fair")

    def mutex(self, path: str) -> "Lock":
        """A non-reentrant ZooKeeper mutex (Curator's InterProcessSemaphoreMutex): one holder; any
        thread of this client may release it. ``UnsupportedError`` on Redis."""
        return self._handle(path, "mutex")

    def read_write_lock(self, name: str) -> ReadWriteLock:
        """A read-write lock: ``read_lock()`` and ``write_lock()`` are :class:`Lock` objects
        (Redisson's ``RReadWriteLock`` on Redis, Curator's ``InterProcessReadWriteLock`` on
        ZooKeeper, where ``name`` is a znode path)."""
        return ReadWriteLock(self._handle(name, "read"), self._handle(name, "write"))

    def semaphore(self, name: str) -> Semaphore:
        """A semaphore shaped like ``threading.Semaphore`` (Redisson's ``RSemaphore`` on Redis,
        Curator's ``InterProcessSemaphoreV2`` on ZooKeeper; see :class:`Semaphore`)."""
        _check_name(name)
        return Semaphore(self._native.semaphore(name))

    def permit_expirable_semaphore(self, name: str) -> PermitExpirableSemaphore:
        """A semaphore of expiring permits (Redisson's ``RPermitExpirableSemaphore``; Redis only,
        ``UnsupportedError`` on ZooKeeper)."""
        _check_name(name)
        return PermitExpirableSemaphore(self._native.permit_semaphore(name), self._lost.add)

    def count_down_latch(self, name: str) -> CountDownLatch:
        """A count-down latch (Redisson's ``RCountDownLatch`` on Redis, a SharedCount on ZooKeeper)."""
        _check_name(name)
        return CountDownLatch(self._native.count_down_latch(name))

    def fence(self, name: str) -> "_fence.Fence":
        """The fence of ``name`` on the lock server's own Redis: fenced writes of Redis commands
        under a lock's fencing token (``UnsupportedError`` on ZooKeeper, etcd, SQL and RedLock,
        whose data is fenced by :func:`polylock.fence.sql` in the application's transaction)."""
        _check_name(name)
        return _fence.Fence(self._native.fence(name))

    def fenced_write(self, name: str, token: int, commands: "Sequence[_fence.Command]") -> "list[Any]":
        """Run ``commands`` through the fence of ``name`` under ``token`` (the fencing token of
        the hold the write is made under): their replies, or :class:`StaleTokenError` with
        nothing run when a later holder of ``name`` already wrote. See :meth:`polylock.fence.Fence.write`.

            with client.lock("sale") as lock:
                client.fenced_write("sale", lock.fencing_token, [["DECR", "{sale}:stock"]])
        """
        return self.fence(name).write(token, commands)

    def election(self, name: str, identity: str) -> Election:
        """A candidate in the leader election ``name`` that campaigns as ``identity`` (Curator's
        ``LeaderLatch`` on ZooKeeper, etcd's ``concurrency.Election``, a Redisson lock plus a
        leader record on Redis; ``UnsupportedError`` on SQL and RedLock)."""
        _check_name(name)
        if not isinstance(identity, str):
            raise InvalidArgumentError(f"identity must be a str, got {type(identity).__name__}")
        return Election(self._native.election(name, identity))

    def synchronize(
        self,
        name: str,
        *,
        wait: Optional[float] = None,
        timeout: Optional[float] = -1,
        lease: Optional[float] = None,
        cancel_on_lost: bool = False,
    ) -> Callable[[F], F]:
        """Decorator: run the function under ``self.lock(name.format(**arguments))``, where the
        arguments are the call's, bound by name (``@client.synchronize("order:{order_id}")``,
        attribute and index access allowed: ``"{order.id}"``). Works on plain and ``async``
        functions. ``wait`` (seconds; ``timeout`` is its older name) bounds the wait, after which
        the call raises ``LockTimeoutError`` (a ``PolylockError`` and a ``TimeoutError``);
        ``None`` or -1 waits as long as it takes. A template naming an argument the function
        does not have is an ``InvalidArgumentError`` when the function is decorated. If the
        lock is lost while the function runs, the call raises ``LockLostError`` when it
        returns; with ``cancel_on_lost=True`` an ``async`` function is cancelled at once
        (``CancelledError`` inside it) and the call raises ``LockLostError``.

        ``Client.locked`` is the same decorator under its earlier name (``Lock.locked()`` is
        the state query, as in ``threading.Lock``)."""
        if wait is not None and wait != -1 and timeout is not None and timeout != -1:
            raise InvalidArgumentError("give wait= or its older name timeout=, not both")
        given = wait if wait is not None and wait != -1 else timeout
        try:
            forever = _timeout(given) is None
        except InvalidArgumentError:
            raise InvalidArgumentError(f"wait must be None or -1 (forever), or seconds >= 0, got {given!r}") from None
        timeout = -1.0 if forever else float(cast(float, given))
        fields: set[str] = set()
        try:
            for _, field_name, _, _ in string.Formatter().parse(name):
                if field_name is not None:
                    root = field_name.split(".", 1)[0].split("[", 1)[0]
                    if root == "" or root.isdigit():
                        raise InvalidArgumentError(
                            f"lock name template {name!r}: name the argument ({{order_id}}), not a position"
                        )
                    fields.add(root)
        except ValueError as e:
            raise InvalidArgumentError(f"lock name template {name!r}: {e}") from None

        def decorate(fn: F) -> F:
            signature = inspect.signature(fn)
            takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
            missing = sorted(f for f in fields if f not in signature.parameters)
            if missing and not takes_any:
                raise InvalidArgumentError(
                    f"lock name template {name!r} needs {', '.join(missing)}, which "
                    f"{getattr(fn, '__qualname__', fn)!s} does not take"
                )

            def lock_for(args: Any, kwargs: Any) -> Lock:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                arguments = dict(bound.arguments)
                for p in signature.parameters.values():
                    if p.kind is inspect.Parameter.VAR_KEYWORD:
                        arguments.update(arguments.pop(p.name, {}))
                try:
                    key = name.format(**arguments)
                except (KeyError, IndexError, AttributeError) as e:
                    raise InvalidArgumentError(f"lock name template {name!r} cannot be filled: {e}") from None
                return self.lock(key)

            if inspect.iscoroutinefunction(fn):

                @functools.wraps(fn)
                async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                    lk = lock_for(args, kwargs)
                    if not await lk.acquire_async(timeout=None if timeout < 0 else timeout, lease=lease):
                        raise LockTimeoutError(f"lock {lk.name!r} not acquired within {timeout} s")
                    cancelled_by_loss = threading.Event()
                    task = asyncio.current_task()
                    if cancel_on_lost and task is not None:
                        loop = asyncio.get_running_loop()

                        def on_lost(_: Lock) -> None:  # a polylock thread
                            if not cancelled_by_loss.is_set():
                                cancelled_by_loss.set()
                                loop.call_soon_threadsafe(task.cancel)

                        lk.on_lost(on_lost)
                    try:
                        return await fn(*args, **kwargs)
                    except asyncio.CancelledError:
                        if not cancelled_by_loss.is_set():
                            raise
                        if task is not None and hasattr(task, "uncancel"):  # Python 3.11+
                            task.uncancel()
                        raise LockLostError(f"lock {lk.name!r} was lost while the function ran") from None
                    finally:
                        await lk.release_async()

                return cast(F, async_wrapper)

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                lk = lock_for(args, kwargs)
                if not lk.acquire(timeout=timeout, lease=lease):
                    raise LockTimeoutError(f"lock {lk.name!r} not acquired within {timeout} s")
                try:
                    return fn(*args, **kwargs)
                finally:
                    lk.release()

            return cast(F, wrapper)

        return decorate

    locked = synchronize

    def close(self) -> None:
        """Release every lock this client still holds and close it. Idempotent; later calls on
        it or its locks raise ``InvalidStateError``. Clients still open when the interpreter exits
        are closed then."""
        _open_clients.discard(self)
        self._native.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()
