"""asyncio glue. A native call runs on the running loop's driver: its Redis commands go out on
sockets the loop watches (``loop.add_reader``) and its outcome is handed to the loop on its own
thread, with no thread in between (``POLYLOCK_PY_DRIVER=runtime``, or a loop the driver cannot
use, keeps the older way: the call runs on polylock's runtime and reports through
``call_soon_threadsafe``). Cancelling the awaiting task cancels the native call; what the call
took anyway (a lock hold, permits) is given back."""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any, Awaitable, Callable, Dict, Optional, Tuple

from . import _native

_WANTED = os.environ.get("POLYLOCK_PY_DRIVER", "loop") != "runtime"


class _Host:
    """What a loop driver asks of its loop. Holds the loop and the driver weakly: the loop's
    reader callbacks hold the driver, and the drivers' table holds it while the loop lives."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        self.driver: Optional[weakref.ReferenceType[Any]] = None
        self._readers: Dict[int, bool] = {}

    def _parts(self) -> Any:
        loop = self._loop()
        driver = self.driver() if self.driver is not None else None
        if loop is None or driver is None or loop.is_closed():
            return None, None
        return loop, driver

    def watch(self, fd: int, write: bool) -> None:
        loop, driver = self._parts()
        if loop is None:
            raise RuntimeError("the event loop is closed")
        if fd not in self._readers:
            loop.add_reader(fd, driver.io_ready, fd, True, False)
        if write:
            loop.add_writer(fd, driver.io_ready, fd, False, True)
        elif self._readers.get(fd):
            loop.remove_writer(fd)
        self._readers[fd] = write

    def flush_soon(self) -> bool:
        """Have the loop call the driver's ``flush`` after the callbacks it runs now."""
        loop, driver = self._parts()
        if loop is None:
            return False
        loop.call_soon(driver.flush)
        return True

    def unwatch(self, fd: int) -> None:
        self._readers.pop(fd, None)
        loop, _ = self._parts()
        if loop is not None:
            loop.remove_reader(fd)
            loop.remove_writer(fd)



# One driver per loop (asyncio's and uvloop's loops both take weak references), held weakly:
# the driver lives while the loop watches its wake-up pipe (and its sockets), so closing the loop
# frees it on the loop's thread. A table holding it strongly kept it until the closed loop was
# garbage, collected on whichever thread ran the collector; the driver, which belongs to its
# loop's thread, was then leaked with its pipe ("unsendable ... dropped on another thread").
_drivers: "weakref.WeakKeyDictionary[Any, weakref.ReferenceType[Any]]" = weakref.WeakKeyDictionary()
# The last loop asked for and its driver, both weakly: the lookup of nearly every call.
_last: "tuple[Any, Any]" = (lambda: None, lambda: None)


def _driver(loop: asyncio.AbstractEventLoop) -> Any:
    """The driver of ``loop``, made on first use; ``None`` on the runtime way."""
    global _last
    if not _WANTED:
        return None
    if _last[0]() is loop:
        d = _last[1]()
        if d is not None:
            return d
    ref = _drivers.get(loop)
    d = ref() if ref is not None else None
    if d is None:
        host = _Host(loop)
        d = _native.LoopDriver(host)
        host.driver = weakref.ref(d)
        # Other threads (polylock's runtime: timers, pub/sub) wake the loop through this pipe;
        # this reader is what keeps the driver alive while the loop is open.
        loop.add_reader(d.wake_fd, d.woken)
        _drivers[loop] = weakref.ref(d)
    _last = (weakref.ref(loop), weakref.ref(d))
    return d


def driver_name() -> str:
    """``loop`` when asyncio calls run on the running loop's driver, else ``runtime``."""
    return "loop" if _WANTED else "runtime"


def run(
    start: Callable[..., _native.NativeCall],
    args: Tuple[Any, ...],
    give_back: Optional[Callable[[Any, Any], Any]] = None,
    loop: Optional[asyncio.AbstractEventLoop] = None,
) -> Awaitable[Any]:
    """Start a native call with ``start(*args, done)`` and return what awaits its value.
    ``give_back(args[0], value)`` runs for a value that arrives after the caller stopped
    waiting (``False`` and ``None`` mean "nothing taken"). ``loop`` is the running loop, if the
    caller has it at hand. Not a coroutine: the call starts when this is called (from the
    caller's coroutine, so in the caller's task), and no coroutine of its own stands between
    the caller and the call."""
    if loop is None:
        loop = asyncio.get_running_loop()
    driver = _driver(loop)
    if driver is not None:
        # The call runs on this thread. Answered within the call, the await ends at once; else
        # it waits on a future of the loop. Cancelling the caller cancels the call, and what
        # it took anyway is given back.
        awaited: Awaitable[Any] = driver.call(start, args, give_back, loop)
        return awaited
    return _on_runtime(start, args, give_back, loop)


async def _on_runtime(
    start: Callable[..., _native.NativeCall],
    args: Tuple[Any, ...],
    give_back: Optional[Callable[[Any, Any], Any]],
    loop: asyncio.AbstractEventLoop,
) -> Any:
    """``run`` on polylock's runtime: the call reports through ``call_soon_threadsafe``."""
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.done():  # cancelled meanwhile
            if ok:
                _hand_back(give_back, args, value)
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    call = start(*args, lambda ok, value: loop.call_soon_threadsafe(settle, ok, value))
    try:
        return await fut
    except asyncio.CancelledError:
        call.cancel()
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            # Settled, then cancelled before this task resumed: what it took goes back.
            _hand_back(give_back, args, fut.result())
        raise


def _hand_back(give_back: Optional[Callable[[Any, Any], Any]], args: Tuple[Any, ...], value: Any) -> None:
    """Give back ``value``, what a call took for a caller that no longer waits (``False`` and
    ``None``: nothing taken)."""
    if give_back is not None and value is not False and value is not None:
        give_back(args[0], value)


def ignore(ok: bool, value: Any) -> None:
    """A ``done`` callback for calls nobody awaits."""
