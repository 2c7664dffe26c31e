"""Leader election: one leader among candidates, its term, and observers."""

from __future__ import annotations

from types import TracebackType
from typing import Iterator, NamedTuple, Optional

from . import _aio, _native
from ._lock import _timeout


class Leader(NamedTuple):
    """Who leads an election: the identity it campaigned with, and its term (a fencing token,
    greater for every new leader)."""

    identity: str
    term: int


def _leader(pair: "Optional[tuple[str, int]]") -> Optional[Leader]:
    return None if pair is None else Leader(*pair)


class Election:
    """A candidate in a leader election (Curator's ``LeaderLatch`` on ZooKeeper, etcd's
    ``concurrency.Election``, a Redisson lock plus a leader record on Redis), from
    ``client.election(name, identity)``. One candidate whatever thread or task uses it.

    ``with election:`` campaigns until elected and resigns at the end; ``async with`` does the
    same without blocking the loop. Any client can read ``leader()`` and follow ``observe()``."""

    def __init__(self, native: _native.NativeElection) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def identity(self) -> str:
        return self._native.identity

    @property
    def term(self) -> Optional[int]:
        """The term while this candidate leads, else ``None`` (no round trip)."""
        return self._native.term

    @property
    def is_leader(self) -> bool:
        """Whether this candidate leads (no round trip; ``False`` once leadership is lost)."""
        return self._native.term is not None

    def campaign(self, timeout: Optional[float] = None) -> bool:
        """Campaign until elected (``True``), or until ``timeout`` seconds ran out (``False``; the
        candidacy is withdrawn). ``None`` or -1 waits as long as it takes; 0 is elected only if
        nobody leads. Leading already: ``True``."""
        return self._native.campaign(_timeout(timeout)) is not None

    def resign(self) -> bool:
        """Stop leading; ``True`` if this candidate led. ``LockLostError`` if its leadership was
        lost meanwhile."""
        return self._native.resign()

    def leader(self) -> Optional[Leader]:
        """The leader now, or ``None``."""
        return _leader(self._native.leader())

    def candidates(self) -> "list[str]":
        """The candidates' identities in order, the leader first (Redis lists the leader only)."""
        return self._native.candidates()

    def observe(self, timeout: Optional[float] = None) -> Iterator[Optional[Leader]]:
        """The leader now, then the leader after each change (``None``: nobody leads); ends when
        ``timeout`` seconds pass with no change (``None``: never)."""
        seen = self.leader()
        yield seen
        wait = _timeout(timeout)
        while True:
            changed, now = self._native.next_change(seen.term if seen else 0, wait)
            if not changed:
                return
            seen = _leader(now)
            yield seen

    async def campaign_async(self, timeout: Optional[float] = None) -> bool:
        """``campaign`` without blocking the event loop; cancelling the task withdraws it."""
        native = self._native
        elected = await _aio.run(
            native.campaign_async,
            (_timeout(timeout),),
            lambda _wait, _elected: native.resign_async(_aio.ignore),
        )
        return bool(elected)

    async def resign_async(self) -> bool:
        return bool(await _aio.run(self._native.resign_async, ()))

    def __enter__(self) -> "Election":
        self.campaign()
        return self

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.resign()

    async def __aenter__(self) -> "Election":
        await self.campaign_async()
        return self

    async def __aexit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self.resign_async()

    def __repr__(self) -> str:
        return f"<polylock.Election {self.name!r} as {self.identity!r}>"
