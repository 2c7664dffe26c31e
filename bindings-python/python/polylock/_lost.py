"""Lost callbacks: one native event stream per client, dispatched to the callbacks of the lock
handles that asked, on one Python thread of polylock's own."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import queue
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Sequence

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
    (``"reentrant"``, ``"mutex"``, ``"read"``, ``"write"``, ``"fair"``, ``"leader"`` (an
    election's leadership) or ``"permit"``), the
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


if TYPE_CHECKING:
    # A weak reference to a watched handle that knows its (name, kind).
    _Ref = weakref.KeyedRef[tuple[str, str], Watched]


class LostWatch:
    """The handles of one client that have lost callbacks (locks, expiring-permit semaphores), by
    name and kind. A name's entry goes with its last handle: a process that watches many names
    in turn keeps only the ones whose handles live."""

    def __init__(self, native: _native.NativeClient) -> None:
        self._native = native
        # Weak references that know their key: a collected handle's reference says which entry
        # to look at.
        self._watched: "dict[tuple[str, str], set[_Ref]]" = {}
        self._lock = threading.Lock()
        self._watching = False
        # References whose handle was collected, not yet taken out of `_watched`.
        self._gone: "list[_Ref]" = []
        this = weakref.ref(self)

        def gone(ref: "_Ref") -> None:
            # Any thread, at any allocation (a collection), possibly while this very thread holds
            # `_lock`: never wait for it. Left in `_gone`, the reference is taken out by the next
            # call that holds the lock.
            watch = this()
            if watch is None:
                return
            watch._gone.append(ref)
            if watch._lock.acquire(blocking=False):
                try:
                    watch._sweep()
                finally:
                    watch._lock.release()

        self._on_gone = gone

    def _sweep(self) -> None:
        """Take collected handles out, and the entries they leave empty (with `_lock` held)."""
        while self._gone:
            ref = self._gone.pop()
            refs = self._watched.get(ref.key)
            if refs is not None:
                refs.discard(ref)
                if not refs:
                    del self._watched[ref.key]

    def __len__(self) -> int:
        """How many names (with their kind) have a live handle with lost callbacks."""
        with self._lock:
            self._sweep()
            return len(self._watched)

    def add(self, lock: "Watched") -> None:
        key = (lock.name, lock.kind)
        with self._lock:
            self._sweep()
            # A handle already watched compares equal to its new reference: kept once.
            self._watched.setdefault(key, set()).add(weakref.KeyedRef(lock, self._on_gone, key))
            if self._watching:
                return
            self._watching = True
        ref = weakref.ref(self)

        def on_event(name: str, kind: str, owner: int, reason: str) -> None:  # a runtime thread, with the GIL
            watch = ref()
            if watch is None:
                return
            with watch._lock:
                watch._sweep()
                refs = list(watch._watched.get((name, kind), ()))
            locks = [lock for lock in (r() for r in refs) if lock is not None]
            event = LostEvent(name, kind, owner, reason)
            for lock in locks:
                callbacks: "list[Callable[..., Any]]" = list(lock._callbacks)
                for cb in callbacks:
                    _dispatcher.submit(functools.partial(caller(cb), lock, event))

        self._native.watch_lost(on_event)
