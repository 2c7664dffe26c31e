"""polylock: distributed locks on Redis (Redisson-compatible) and ZooKeeper (Curator-compatible).

    import polylock
    client = polylock.connect("redis://127.0.0.1:6379")      # or "zk://127.0.0.1:2181"
    with client.lock("goods"):                                # reentrant per thread
        ...
    async with client.lock("goods"):                          # reentrant per asyncio task
        ...

Locks are shaped like ``threading.Lock``: ``acquire(blocking=True, timeout=-1)`` returns a bool,
``release()`` raises ``NotOwnerError`` (a ``RuntimeError``) when the caller does not hold it.
Every call that touches the network or waits releases the GIL.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import queue
import threading
import weakref
from types import TracebackType
from typing import Any, Awaitable, Callable, Optional, TypeVar, cast

from . import _errors, _native
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
)

__version__: str = _native.VERSION

__all__ = ["connect", "Client", "Lock"]
__all__ += _errors.__all__

F = TypeVar("F", bound=Callable[..., Any])

# Owner identity: a fresh id per thread for sync calls (threading.get_ident is reused after a
# thread ends, these ids never are) and per asyncio task for async calls.
_thread_owner = threading.local()
_task_owners: "weakref.WeakKeyDictionary[asyncio.Task[Any], int]" = weakref.WeakKeyDictionary()


def _owner_of_thread() -> int:
    owner: Optional[int] = getattr(_thread_owner, "id", None)
    if owner is None:
        owner = _native.fresh_owner()
        _thread_owner.id = owner
    return owner


def _owner_of_task(create: bool = True) -> Optional[int]:
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return None
    if task is None:
        return None
    owner = _task_owners.get(task)
    if owner is None and create:
        owner = _native.fresh_owner()
        _task_owners[task] = owner
    return owner


def _current_owner() -> int:
    """For queries: the current task's owner if it has used a lock, else the thread's."""
    owner = _owner_of_task(create=False)
    return owner if owner is not None else _owner_of_thread()


class _LostDispatcher:
    """Runs lost callbacks on one daemon Python thread, so they may call blocking polylock APIs
    (the native side reports losses from a runtime thread, where blocking calls are refused)."""

    def __init__(self) -> None:
        self._queue: "queue.SimpleQueue[Callable[[], Any]]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], Any]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="polylock-lost", daemon=True)
                self._thread.start()
        self._queue.put(job)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                job()
            except Exception:  # a user callback failed: report it, keep serving
                import traceback

                traceback.print_exc()


_dispatcher = _LostDispatcher()


def connect(
    url: str,
    *,
    watchdog_timeout: float = 30.0,
    connect_timeout: float = 5.0,
    command_timeout: float = 5.0,
    session_timeout: float = 10.0,
) -> "Client":
    """Connect to ``redis://[user:password@]host:port[/db]``, ``rediss://...`` or
    ``zk://[user:password@]host:port[,host:port...][/chroot]``. Durations are in seconds."""
    if not isinstance(url, str):
        raise InvalidArgumentError(f"url must be a str, got {type(url).__name__}")
    for name, value in (
        ("watchdog_timeout", watchdog_timeout),
        ("connect_timeout", connect_timeout),
        ("command_timeout", command_timeout),
        ("session_timeout", session_timeout),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidArgumentError(f"{name} must be a number of seconds, got {value!r}")
    native = _native.connect(
        url, float(watchdog_timeout), float(connect_timeout), float(command_timeout), float(session_timeout)
    )
    return Client(native)


class Client:
    """A connection to one lock server. Thread-safe; also a context manager that closes it."""

    def __init__(self, native: _native.NativeClient) -> None:
        self._native = native
        # Locks with lost callbacks, by name; the client's one lost-event stream feeds them.
        self._watched: "dict[str, weakref.WeakSet[Lock]]" = {}
        self._watched_lock = threading.Lock()
        self._watching = False

    def _watch(self, lock: "Lock") -> None:
        with self._watched_lock:
            self._watched.setdefault(lock.name, weakref.WeakSet()).add(lock)
            if self._watching:
                return
            self._watching = True
        ref = weakref.ref(self)

        def on_event(name: str, owner: int) -> None:  # a runtime thread, with the GIL
            client = ref()
            if client is None:
                return
            with client._watched_lock:
                locks = list(client._watched.get(name, ()))
            for lock in locks:
                for cb in list(lock._callbacks):
                    _dispatcher.submit(functools.partial(cb, lock))

        self._native.watch_lost(on_event)

    @property
    def id(self) -> str:
        """This client's random id (the ``<clientId>`` part of stored owners)."""
        return self._native.id

    @property
    def closed(self) -> bool:
        return self._native.closed

    @property
    def suspended(self) -> bool:
        """ZooKeeper: the connection is down but the session may live; locks stay held."""
        return self._native.suspended

    def lock(self, name: str) -> "Lock":
        """A reentrant lock: per thread for sync calls, per task for asyncio calls. On ZooKeeper
        ``name`` is a znode path (Curator's InterProcessMutex)."""
        _check_name(name)
        return Lock(self._native.lock(name), self)

    def mutex(self, path: str) -> "Lock":
        """A non-reentrant ZooKeeper mutex (Curator's InterProcessSemaphoreMutex): one holder; any
        thread of this client may release it. ``UnsupportedError`` on Redis."""
        _check_name(path)
        return Lock(self._native.mutex(path), self)

    def locked(self, name: str, *, timeout: float = -1, lease: Optional[float] = None) -> Callable[[F], F]:
        """Decorator: run the function under ``self.lock(name.format(**arguments))``, where the
        arguments are the call's, bound by name (``@client.locked("order:{order_id}")``). Works
        on plain and ``async`` functions; raises ``LockTimeoutError`` if ``timeout`` runs out."""

        def decorate(fn: F) -> F:
            signature = inspect.signature(fn)

            def lock_for(args: Any, kwargs: Any) -> Lock:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                try:
                    key = name.format(**bound.arguments)
                except (KeyError, IndexError) as e:
                    raise InvalidArgumentError(f"lock name template {name!r} needs argument {e}") from None
                return self.lock(key)

            if inspect.iscoroutinefunction(fn):

                @functools.wraps(fn)
                async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                    lk = lock_for(args, kwargs)
                    if not await lk.acquire_async(timeout=None if timeout < 0 else timeout, lease=lease):
                        raise LockTimeoutError(f"lock {lk.name!r} not acquired within {timeout} s")
                    try:
                        return await fn(*args, **kwargs)
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

    def close(self) -> None:
        """Release every lock this client still holds and close it. Idempotent; later calls on
        it or its locks raise ``InvalidStateError``."""
        self._native.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()


def _check_name(name: object) -> None:
    if not isinstance(name, str):
        raise InvalidArgumentError(f"lock name must be a str, got {type(name).__name__}")


def _seconds(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{what} must be a number of seconds, got {value!r}")
    return float(value)


class Lock:
    """A distributed lock handle, shaped like ``threading.Lock`` (reentrant like ``RLock``)."""

    def __init__(self, native: _native.NativeLock, client: Client) -> None:
        self._native = native
        self._client = client
        self._callbacks: list[Callable[["Lock"], Any]] = []

    @property
    def name(self) -> str:
        return self._native.name

    def acquire(self, blocking: bool = True, timeout: float = -1, lease: Optional[float] = None) -> bool:
        """Acquire for the calling thread; True when held, False when not acquired in time.

        ``blocking=False``: one attempt. ``timeout=-1``: wait forever; ``timeout>=0``: wait up to
        that many seconds. ``lease``: seconds after which the lock expires on its own (no
        watchdog); ``None`` lets the watchdog keep it while this client lives. Ctrl-C interrupts
        the wait within 100 ms and leaves nothing acquired."""
        timeout = _seconds(timeout, "timeout")
        if not blocking and timeout != -1:
            raise InvalidArgumentError("can't specify a timeout for a non-blocking call")
        if timeout < 0 and timeout != -1:
            raise InvalidArgumentError("timeout value must be -1 or non-negative")
        wait: Optional[float] = 0.0 if not blocking else (None if timeout == -1 else timeout)
        if lease is not None:
            lease = _seconds(lease, "lease")
        return self._native.acquire(_owner_of_thread(), wait, lease)

    def release(self) -> None:
        """Release one hold of the calling thread. ``NotOwnerError`` if it holds none,
        ``LockLostError`` if its hold was lost meanwhile."""
        self._native.release(_owner_of_thread())

    def __enter__(self) -> "Lock":
        self.acquire()
        return self

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.release()

    async def acquire_async(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> bool:
        """Acquire for the current asyncio task without blocking the event loop; True when held,
        False when ``timeout`` (seconds; ``None`` = forever, 0 = one try) ran out. Cancelling the
        task cancels the wait and leaves nothing acquired."""
        wait = None if timeout is None else _seconds(timeout, "timeout")
        if wait is not None and wait < 0:
            raise InvalidArgumentError("timeout must be None or non-negative")
        if lease is not None:
            lease = _seconds(lease, "lease")
        owner = cast(int, _owner_of_task())
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        native = self._native

        def settle(ok: bool, value: Any) -> None:
            if fut.done():  # cancelled meanwhile: give back a hold that arrived anyway
                if ok and value is True:
                    native.release_async(owner, lambda ok, v: None)
                return
            if ok:
                fut.set_result(bool(value))
            else:
                fut.set_exception(value)

        call = native.acquire_async(owner, wait, lease, lambda ok, value: loop.call_soon_threadsafe(settle, ok, value))
        try:
            return await fut
        except asyncio.CancelledError:
            call.cancel()
            raise

    async def release_async(self) -> None:
        """Release one hold of the current task without blocking the event loop."""
        owner = cast(int, _owner_of_task())
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()

        def settle(ok: bool, value: Any) -> None:
            if fut.done():
                return
            if ok:
                fut.set_result(True)
            else:
                fut.set_exception(value)

        self._native.release_async(owner, lambda ok, value: loop.call_soon_threadsafe(settle, ok, value))
        await fut

    async def __aenter__(self) -> "Lock":
        await self.acquire_async()
        return self

    async def __aexit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self.release_async()

    def locked(self) -> bool:
        """Whether anybody holds the lock (asks the server)."""
        return self._native.is_locked()

    @property
    def hold_count(self) -> int:
        """How many times the current thread (or task) holds the lock."""
        return self._native.hold_count(_current_owner())

    def held_by_me(self) -> bool:
        """Whether the current thread (or task) holds the lock."""
        return self.hold_count > 0

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the current thread's (or task's) hold, if any: larger for every
        new holder, so a resource can refuse a holder whose lease ended."""
        return self._native.fencing_token(_current_owner())

    @property
    def remaining_lease(self) -> Optional[float]:
        """Seconds left of the holder's lease; None if free or without a lease (ZooKeeper)."""
        return self._native.remaining_lease()

    @property
    def lost(self) -> bool:
        """True if the current thread's (or task's) hold was lost and not yet released."""
        return self._native.is_lost(_current_owner())

    def force_unlock(self) -> bool:
        """Free the lock whoever holds it (Redisson's forceUnlock); True if it was held."""
        return self._native.force_unlock()

    def on_lost(self, callback: Callable[["Lock"], Any]) -> None:
        """Call ``callback(lock)`` when a hold of this lock's name taken through this client is
        lost (also holds taken before the callback was added). It runs on a polylock thread of
        Python's own (not the thread that acquired), so it may block."""
        if not callable(callback):
            raise InvalidArgumentError("callback must be callable")
        self._callbacks.append(callback)
        self._client._watch(self)

    def __repr__(self) -> str:
        return f"<polylock.Lock {self.name!r}>"
