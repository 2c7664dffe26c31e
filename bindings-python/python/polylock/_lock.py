"""Lock handles: one class for every lock kind, and the read-write lock that pairs two."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Callable, Iterable, Optional, cast

from . import _aio, _lost, _native, _owner
from ._errors import InvalidArgumentError

def _check_name(name: object) -> None:
    if not isinstance(name, str):
        raise InvalidArgumentError(f"lock name must be a str, got {type(name).__name__}")


def _timeout(timeout: Optional[float]) -> Optional[float]:
    """A wait: ``None`` or ``-1`` waits forever (both spellings, in every call that waits), 0
    tries once, else seconds."""
    if timeout is None:
        return None
    wait = _seconds(timeout, "timeout")
    if wait == -1:
        return None
    if wait < 0:
        raise InvalidArgumentError("timeout must be None or -1 (forever), or non-negative seconds")
    return wait


def _seconds(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{what} must be a number of seconds, got {value!r}")
    return float(value)


class Lock:
    """A distributed lock handle, shaped like ``threading.Lock`` (reentrant like ``RLock``)."""

    def __init__(self, native: _native.NativeLock, watch: Callable[["Lock"], None]) -> None:
        self._native = native
        # What a cancelled acquire took anyway goes back (made once: not a closure per call).
        self._give_back = lambda owner, _held: native.release_async(owner, _aio.ignore)
        self._watch = watch
        self._callbacks: list[Callable[["Lock"], Any]] = []

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def kind(self) -> str:
        """``"reentrant"``, ``"mutex"``, ``"read"``, ``"write"`` or ``"fair"``."""
        return self._native.kind

    def acquire(
        self, blocking: bool = True, timeout: Optional[float] = -1, lease: Optional[float] = None
    ) -> bool:
        """Acquire for the calling thread; True when held, False when not acquired in time.

        ``blocking=False``: one attempt. ``timeout=-1`` or ``None``: wait forever;
        ``timeout>=0``: wait up to that many seconds. ``lease``: seconds after which the lock
        expires on its own (no watchdog; :meth:`extend` and :meth:`reacquire` change it);
        ``None`` lets the watchdog keep it while this client lives. Ctrl-C interrupts the wait
        within 100 ms and leaves nothing acquired."""
        if not blocking and timeout is not None and timeout != -1:
            raise InvalidArgumentError("can't specify a timeout for a non-blocking call")
        wait: Optional[float] = 0.0 if not blocking else _timeout(timeout)
        if lease is not None:
            lease = _seconds(lease, "lease")
        return self._native.acquire(_owner.of_thread(), wait, lease)

    def release(self) -> None:
        """Release one hold of the calling thread. ``NotOwnerError`` if it holds none,
        ``LockLostError`` if its hold was lost meanwhile."""
        self._native.release(_owner.of_thread())

    def __enter__(self) -> "Lock":
        self.acquire()
        return self

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.release()

    async def acquire_async(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> bool:
        """Acquire for the current asyncio task without blocking the event loop; True when held,
        False when ``timeout`` (seconds; ``None`` or -1 = forever, 0 = one try) ran out.
        Cancelling the task cancels the wait and leaves nothing acquired."""
        wait = _timeout(timeout)
        if lease is not None:
            lease = _seconds(lease, "lease")
        loop = asyncio.get_running_loop()
        owner = cast(int, _owner.of_task(loop=loop))
        held = await _aio.run(self._native.acquire_async, (owner, wait, lease), self._give_back, loop)
        return bool(held)

    async def release_async(self) -> None:
        """Release one hold of the current task without blocking the event loop."""
        loop = asyncio.get_running_loop()
        owner = cast(int, _owner.of_task(loop=loop))
        await _aio.run(self._native.release_async, (owner,), None, loop)

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
        return self._native.hold_count(_owner.current())

    def owned(self) -> bool:
        """Whether the current thread (or task) holds the lock (redis-py's ``owned()``; asks the
        server where it counts holds)."""
        return self.hold_count > 0

    def held_by_me(self) -> bool:
        """The same as :meth:`owned`."""
        return self.owned()

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the current thread's (or task's) hold, if any: larger for every
        new holder, so a resource can refuse a holder whose lease ended (0 on an SQL client
        whose URL says ``fencing=none``)."""
        return self._native.fencing_token(_owner.current())

    @property
    def remaining_lease(self) -> Optional[float]:
        """The lease left, three distinct answers: ``None`` when nobody holds the lock,
        ``math.inf`` when it is held with no expiry (ZooKeeper, SQL session locks), else the
        seconds left."""
        return self._native.remaining_lease()

    def extend(self, additional_time: float, replace_ttl: bool = False) -> bool:
        """Add ``additional_time`` seconds to the fixed lease of the current thread's (or
        task's) hold (redis-py's ``Lock.extend``); with ``replace_ttl=True`` the lease ends
        ``additional_time`` from now instead. True once changed. ``NotOwnerError`` without a
        hold, ``LockLostError`` if it was lost or its lease ran out, ``InvalidStateError`` for a
        hold the watchdog keeps (acquired without ``lease``)."""
        how = "set" if replace_ttl else "add"
        self._native.extend_lease(_owner.current(), how, _seconds(additional_time, "additional_time"))
        return True

    def reacquire(self) -> bool:
        """Start the fixed lease of the current thread's (or task's) hold again at its original
        length (redis-py's ``Lock.reacquire``). True once done; errors as for :meth:`extend`."""
        self._native.extend_lease(_owner.current(), "reset", None)
        return True

    @property
    def lost(self) -> bool:
        """True if the current thread's (or task's) hold was lost and not yet released."""
        return self._native.is_lost(_owner.current())

    @property
    def lost_reason(self) -> Optional[str]:
        """Why the current thread's (or task's) hold was lost (``"EXPIRED"``, ``"DELETED"``,
        ``"RENEWAL_FAILED"``, ``"SESSION_EXPIRED"``, ``"CLIENT_CLOSED"``); None while it is not
        lost."""
        return self._native.lost_reason(_owner.current())

    def force_unlock(self) -> bool:
        """Free the lock whoever holds it (Redisson's forceUnlock); True if it was held."""
        return self._native.force_unlock()

    def on_lost(self, callback: Callable[..., Any]) -> None:
        """Call ``callback(lock, event)`` when a hold of this lock's name taken through this
        client is lost (also holds taken before the callback was added); ``event`` is a
        :class:`LostEvent` (``name``, ``kind``, ``owner``, ``reason``). A callback that takes
        one argument is called as ``callback(lock)``. It runs on a polylock thread of Python's
        own (not the thread that acquired), so it may block."""
        if not callable(callback):
            raise InvalidArgumentError("callback must be callable")
        self._callbacks.append(callback)
        self._watch(self)

    def __repr__(self) -> str:
        if self.kind == "reentrant":
            return f"<polylock.Lock {self.name!r}>"
        return f"<polylock.Lock {self.name!r} {self.kind}>"


class ReadWriteLock:
    """Many readers or one writer: Redisson's ``RReadWriteLock`` on Redis, Curator's
    ``InterProcessReadWriteLock`` on ZooKeeper. Both halves are :class:`Lock` objects, reentrant
    per thread (sync) or per task (asyncio), with ``with`` and ``async with``.

    A holder of the write lock may also take the read lock and keep it after releasing the write
    lock (a downgrade). A holder of the read lock that asks for the write lock gets
    ``UpgradeNotSupportedError`` at once (Redisson and Curator would wait forever)."""

    def __init__(self, read: Lock, write: Lock) -> None:
        self._read = read
        self._write = write

    @property
    def name(self) -> str:
        return self._read.name

    def read_lock(self) -> Lock:
        """The read half: shared by any number of holders while nobody writes."""
        return self._read

    def write_lock(self) -> Lock:
        """The write half: exclusive of readers and other writers."""
        return self._write

    def __repr__(self) -> str:
        return f"<polylock.ReadWriteLock {self.name!r}>"


class MultiLock(Lock):
    """All of several locks or none (Redisson's ``RedissonMultiLock``, Curator's
    ``InterProcessMultiLock``), even from different clients and servers::

        both = polylock.MultiLock([redis_client.lock("stock"), zk_client.lock("/orders")])
        with both:
            ...

    ``acquire`` takes every member within the one timeout, or gives back what it took and returns
    False; ``release`` gives back all. Members are taken in one order (by name, then server, then
    kind) whatever order they are given in, so multi-locks over overlapping sets never deadlock.
    Reentrant per thread or task, like its members. ``fencing_token`` is the largest of the
    members'; each member's stays readable on the member. ``on_lost`` fires when any member's hold
    is lost."""

    def __init__(self, locks: Iterable[Lock]) -> None:
        if isinstance(locks, Lock):
            raise InvalidArgumentError("MultiLock takes a list of locks, not one lock")
        members = list(locks)
        for m in members:
            if not isinstance(m, Lock):
                raise InvalidArgumentError(f"MultiLock takes polylock locks, got {type(m).__name__}")
        super().__init__(_native.multi_lock([m._native for m in members]), lambda _: None)
        self._members = members

    @property
    def members(self) -> "list[Lock]":
        """The locks, as given."""
        return list(self._members)

    def on_lost(self, callback: Callable[..., Any]) -> None:
        if not callable(callback):
            raise InvalidArgumentError("callback must be callable")
        call = _lost.caller(callback)
        for m in self._members:
            m.on_lost(lambda _member, event: call(self, event))

    def __repr__(self) -> str:
        return f"<polylock.MultiLock {self.name!r}>"
