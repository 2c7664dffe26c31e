"""Lost callbacks: one native event stream per client, dispatched to the callbacks of the lock
handles that asked, on one Python thread of polylock's own."""

from __future__ import annotations

import functools
import queue
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from . import _native

if TYPE_CHECKING:
    from ._lock import Lock
    from ._semaphore import PermitExpirableSemaphore

    Watched = Union[Lock, PermitExpirableSemaphore]


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

        def on_event(name: str, kind: str, owner: int) -> None:  # a runtime thread, with the GIL
            watch = ref()
            if watch is None:
                return
            with watch._lock:
                locks = list(watch._watched.get((name, kind), ()))
            for lock in locks:
                callbacks: "list[Callable[[Any], Any]]" = list(lock._callbacks)
                for cb in callbacks:
                    _dispatcher.submit(functools.partial(cb, lock))

        self._native.watch_lost(on_event)
