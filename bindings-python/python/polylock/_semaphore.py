"""Semaphores and the count-down latch: ``threading.Semaphore``-shaped, with ``with`` and
``async with``."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Callable, Literal, Optional

from . import _aio, _native
from ._errors import InvalidArgumentError
from ._lock import _seconds, _timeout


def _permits(value: object, what: str = "permits") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{what} must be an int, got {value!r}")
    if value < 1:
        raise InvalidArgumentError(f"{what} must be at least 1, got {value}")
    if value > 2**31 - 1:
        raise InvalidArgumentError(f"{what} {value} is too many")
    return value


def _wait(blocking: bool, timeout: Optional[float]) -> Optional[float]:
    """``threading.Semaphore.acquire``'s arguments as a wait: None (or -1) forever, 0 once,
    seconds."""
    if not blocking:
        if timeout is not None and timeout != -1:
            raise InvalidArgumentError("can't specify timeout for non-blocking acquire")
        return 0.0
    return _timeout(timeout)


class Semaphore:
    """A distributed semaphore shaped like ``threading.Semaphore``.

    On Redis (Redisson's ``RSemaphore``) permits belong to nobody: any thread or process may
    release them, and a crashed holder's permits are not given back (use
    :meth:`Client.permit_expirable_semaphore` for that). On ZooKeeper (Curator's
    ``InterProcessSemaphoreV2``, its permits in a SharedCount at ``<path>/count``) the permits
    taken are leases of this client: only it releases them (``NotOwnerError`` if it holds
    fewer), and a lost session frees them."""

    def __init__(self, native: _native.NativeSemaphore) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def held_permits(self) -> int:
        """Leases this client holds (ZooKeeper; always 0 on Redis, where permits belong to nobody)."""
        return self._native.held_permits

    def try_set_permits(self, permits: int) -> bool:
        """Set the number of permits if nobody set it yet (Redisson's ``trySetPermits``)."""
        if isinstance(permits, bool) or not isinstance(permits, int) or not 0 <= permits < 2**31:
            raise InvalidArgumentError(f"permits must be an int from 0, got {permits!r}")
        return self._native.try_set_permits(permits)

    def add_permits(self, delta: int) -> None:
        """Add permits, or take free ones away with a negative ``delta``."""
        if isinstance(delta, bool) or not isinstance(delta, int) or abs(delta) >= 2**31:
            raise InvalidArgumentError(f"delta must be an int, got {delta!r}")
        self._native.add_permits(delta)

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None, permits: int = 1) -> bool:
        """Take ``permits`` permits; True when taken, False when ``timeout`` ran out (as
        ``threading.Semaphore.acquire``; ``None`` or -1 waits forever). Ctrl-C interrupts the
        wait and leaves nothing taken."""
        return self._native.acquire(_permits(permits), _wait(blocking, timeout))

    def release(self, permits: int = 1) -> None:
        """Give back ``permits`` permits."""
        self._native.release(_permits(permits))

    def available_permits(self) -> int:
        return self._native.available_permits()

    def drain_permits(self) -> int:
        """Take every permit free now; how many."""
        return self._native.drain_permits()

    def __enter__(self) -> "Semaphore":
        self.acquire()
        return self

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.release()

    async def acquire_async(self, timeout: Optional[float] = None, permits: int = 1) -> bool:
        """Take permits without blocking the event loop; cancelling the task cancels the wait."""
        n, wait, native = _permits(permits), _timeout(timeout), self._native
        taken = await _aio.run(
            native.acquire_async,
            (n, wait),
            lambda permits, _taken: native.release_async(permits, _aio.ignore),
        )
        return bool(taken)

    async def release_async(self, permits: int = 1) -> None:
        n = _permits(permits)
        await _aio.run(self._native.release_async, (n,))

    async def __aenter__(self) -> "Semaphore":
        await self.acquire_async()
        return self

    async def __aexit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self.release_async()

    def __repr__(self) -> str:
        return f"<polylock.Semaphore {self.name!r}>"


class PermitExpirableSemaphore:
    """Redisson's ``RPermitExpirableSemaphore`` (Redis only): each permit has an id and a lease,
    so a crashed holder's permits come back when their lease ends. Without a ``lease`` the
    watchdog renews a permit while this client lives; a permit lost anyway (its lease ran out,
    or it was removed) is announced to :meth:`on_lost` callbacks."""

    kind = "permit"

    def __init__(self, native: _native.NativePermitSemaphore, watch: Callable[[Any], None]) -> None:
        self._native = native
        self._watch = watch
        self._callbacks: list[Callable[["PermitExpirableSemaphore"], Any]] = []

    @property
    def name(self) -> str:
        return self._native.name

    def try_set_permits(self, permits: int) -> bool:
        if isinstance(permits, bool) or not isinstance(permits, int) or not 0 <= permits < 2**31:
            raise InvalidArgumentError(f"permits must be an int from 0, got {permits!r}")
        return self._native.try_set_permits(permits)

    def add_permits(self, delta: int) -> None:
        if isinstance(delta, bool) or not isinstance(delta, int) or abs(delta) >= 2**31:
            raise InvalidArgumentError(f"delta must be an int, got {delta!r}")
        self._native.add_permits(delta)

    def acquire(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> "str | Literal[False]":
        """Take one permit: its id (32 hexadecimal characters, truthy), or False when
        ``timeout`` ran out, as every bounded acquire of polylock says "not acquired" (``None``
        or -1 waits forever)."""
        got = self._native.acquire(_timeout(timeout), None if lease is None else _seconds(lease, "lease"))
        return got if got is not None else False

    async def acquire_async(
        self, timeout: Optional[float] = None, lease: Optional[float] = None
    ) -> "str | Literal[False]":
        """:meth:`acquire` without blocking the event loop: the permit's id, or False."""
        wait, native = _timeout(timeout), self._native
        lease_s = None if lease is None else _seconds(lease, "lease")
        got = await _aio.run(
            native.acquire_async,
            (wait, lease_s),
            lambda _wait, permit_id: native.try_release(permit_id),
        )
        return got if isinstance(got, str) else False

    def release(self, permit_id: str) -> None:
        """Give back the permit ``permit_id`` (any client may). ``NotOwnerError`` if there is no
        such permit, ``LockLostError`` if its lease had run out (it is counted back all the same)."""
        if not isinstance(permit_id, str):
            raise InvalidArgumentError(f"permit_id must be a str, got {type(permit_id).__name__}")
        self._native.release(permit_id)

    def try_release(self, permit_id: str) -> bool:
        """Redisson's ``tryRelease``: True if the permit was there."""
        if not isinstance(permit_id, str):
            raise InvalidArgumentError(f"permit_id must be a str, got {type(permit_id).__name__}")
        return self._native.try_release(permit_id)

    def available_permits(self) -> int:
        return self._native.available_permits()

    def on_lost(self, callback: Callable[..., Any]) -> None:
        """Call ``callback(semaphore, event)`` (a :class:`LostEvent`; a one-argument callback
        gets the semaphore alone) when a permit of this name taken through this client is lost;
        it runs on a polylock thread of Python's own."""
        if not callable(callback):
            raise InvalidArgumentError("callback must be callable")
        self._callbacks.append(callback)
        self._watch(self)

    def __repr__(self) -> str:
        return f"<polylock.PermitExpirableSemaphore {self.name!r}>"


class CountDownLatch:
    """A distributed count-down latch (Redisson's ``RCountDownLatch`` on Redis, a Curator
    ``SharedCount`` on ZooKeeper): waiters wake when the count reaches zero."""

    def __init__(self, native: _native.NativeLatch) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    def try_set_count(self, count: int) -> bool:
        """Set the count (at least 1) if the latch is not counting; True if this call set it."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidArgumentError(f"count must be an int of at least 1, got {count!r}")
        return self._native.try_set_count(count)

    def count_down(self) -> None:
        self._native.count_down()

    @property
    def count(self) -> int:
        return self._native.count()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait until the count is zero; False when ``timeout`` ran out (as
        ``threading.Event.wait``; ``None`` or -1 waits forever). Ctrl-C interrupts the wait."""
        return self._native.wait(_timeout(timeout))

    async def wait_async(self, timeout: Optional[float] = None) -> bool:
        wait = _timeout(timeout)
        return bool(await _aio.run(self._native.wait_async, (wait,)))

    def delete(self) -> bool:
        """Delete the latch: it opens; True if it was counting."""
        return self._native.delete()

    def __repr__(self) -> str:
        return f"<polylock.CountDownLatch {self.name!r}>"
