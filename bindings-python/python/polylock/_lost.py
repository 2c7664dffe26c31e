"""Lost callbacks: one native event stream per client, dispatched to the callbacks of the lock
handles that asked, on one Python thread of polylock's own."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import queue
import threading
import weakref
from typing import Any, Callable, Optional, Protocol, Sequence

from . import _native


class Watched(Protocol):
    """What a lost callback watches: a Lock or a PermitExpirableSemaphore (named here by what
    this module uses of them, so that it imports neither)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def _callbacks(self) -> "Sequence[Callable[..., Any]]": ...


class _Dispatcher:
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


_dispatcher = _Dispatcher()


@dataclasses.dataclass(frozen=True)
class LostEvent:
    """One lost hold, as lost callbacks get it: the lock's ``name``, its ``kind``
    (``"reentrant"``, ``"mutex"``, ``"read"``, ``"write"``, ``"fair"`` or ``"permit"``), the
    ``owner`` id whose hold it was, and the ``reason``: ``"EXPIRED"`` (a fixed lease ran out),
    ``"DELETED"`` (removed from the server: deleted, force-unlocked, its connection killed),
    ``"RENEWAL_FAILED"``, ``"SESSION_EXPIRED"`` or ``"CLIENT_CLOSED"``."""

    name: str
    kind: str
    owner: int
    reason: str


def _positional(callback: Callable[..., Any]) -> int:
    """How many positional arguments ``callback`` takes (at most 2 matter)."""
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: the two-argument form
        return 2
    n = 0
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return 2
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


def caller(callback: Callable[..., Any]) -> Callable[[Any, LostEvent], Any]:
    """``callback`` as ``(handle, event)``: a one-argument callback (earlier versions' form) gets
    the handle alone."""
    if _positional(callback) >= 2:
        return callback
    return lambda handle, _event: callback(handle)


class LostWatch:
    """The handles of one client that have lost callbacks (locks, expiring-permit semaphores), by
    name and kind."""

    def __init__(self, native: _native.NativeClient) -> None:
        self._native = native
        self._watched: "dict[tuple[str, str], weakref.WeakSet[Watched]]" = {}
        self._lock = threading.Lock()
        self._watching = False

    def add(self, lock: "Watched") -> None:
        with self._lock:
            self._watched.setdefault((lock.name, lock.kind), weakref.WeakSet()).add(lock)
            if self._watching:
                return
            self._watching = True
        ref = weakref.ref(self)

        def on_event(name: str, kind: str, owner: int, reason: str) -> None:  # a runtime thread, with the GIL
            watch = ref()
            if watch is None:
                return
            with watch._lock:
                locks = list(watch._watched.get((name, kind), ()))
            event = LostEvent(name, kind, owner, reason)
            for lock in locks:
                callbacks: "list[Callable[..., Any]]" = list(lock._callbacks)
                for cb in callbacks:
                    _dispatcher.submit(functools.partial(caller(cb), lock, event))

        self._native.watch_lost(on_event)
