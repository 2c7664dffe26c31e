"""asyncio glue: a native call runs on polylock's runtime and reports through a callback, which
hands its outcome to the event loop. Cancelling the awaiting task cancels the native call; what
the call took anyway (a lock hold, permits) is given back."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

from . import _native

Done = Callable[[bool, Any], Any]


async def run(start: Callable[[Done], _native.NativeCall], give_back: Optional[Callable[[Any], Any]] = None) -> Any:
    """Start a native call with ``start(done)`` and await its value. ``give_back(value)`` runs for
    a value that arrives after the task was cancelled (``False`` and ``None`` mean "nothing taken")."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.done():  # cancelled meanwhile
            if ok and give_back is not None and value is not False and value is not None:
                give_back(value)
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    call = start(lambda ok, value: loop.call_soon_threadsafe(settle, ok, value))
    try:
        return await fut
    except asyncio.CancelledError:
        call.cancel()
        raise


def ignore(ok: bool, value: Any) -> None:
    """A ``done`` callback for calls nobody awaits."""
