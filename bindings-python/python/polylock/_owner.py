"""Owner identity: a fresh id per thread for sync calls (``threading.get_ident`` is reused after a
thread ends, these ids never are) and per asyncio task for async calls."""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Optional

from . import _native

_thread_owner = threading.local()
_task_owners: "weakref.WeakKeyDictionary[asyncio.Task[Any], int]" = weakref.WeakKeyDictionary()


def of_thread() -> int:
    owner: Optional[int] = getattr(_thread_owner, "id", None)
    if owner is None:
        owner = _native.fresh_owner()
        _thread_owner.id = owner
    return owner


# The last task asked for (weakly) and its owner: the lookup of nearly every async call.
_last_task: "tuple[Any, int]" = (lambda: None, 0)


def of_task(create: bool = True, loop: Optional[asyncio.AbstractEventLoop] = None) -> Optional[int]:
    """The current asyncio task's owner (of the running loop, or of ``loop`` when given)."""
    global _last_task
    try:
        task = asyncio.current_task(loop)
    except RuntimeError:
        return None
    if task is None:
        return None
    if _last_task[0]() is task:
        return _last_task[1]
    owner = _task_owners.get(task)
    if owner is None:
        if not create:
            return None
        owner = _native.fresh_owner()
        _task_owners[task] = owner
    _last_task = (weakref.ref(task), owner)
    return owner


def current() -> int:
    """For queries: the current task's owner if it has used a lock, else the thread's."""
    owner = of_task(create=False)
    return owner if owner is not None else of_thread()
