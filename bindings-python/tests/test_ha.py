"""Highly available Redis from Python: the Sentinel group and the cluster of scripts/servers.sh."""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

import polylock

SENTINEL = os.environ.get(
    "POLYLOCK_SENTINEL_URL", "redis+sentinel://127.0.0.1:26390,127.0.0.1:26391,127.0.0.1:26392/mymaster"
)
CLUSTER = os.environ.get(
    "POLYLOCK_CLUSTER_URL",
    "redis+cluster://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005,127.0.0.1:7006",
)


@pytest.fixture(params=[SENTINEL, CLUSTER], ids=["sentinel", "cluster"])
def url(request: pytest.FixtureRequest) -> str:
    return request.param


def test_locks_exclude_and_wake_waiters(url: str) -> None:
    with polylock.connect(url) as a, polylock.connect(url) as b:
        name = f"polylock-py:ha:{uuid.uuid4().hex}"
        count = 0
        overlaps = 0
        inside = 0
        guard = threading.Lock()

        def work(c: polylock.Client) -> None:
            nonlocal count, overlaps, inside
            lock = c.lock(name)
            for _ in range(20):
                with lock:
                    with guard:
                        inside += 1
                        overlaps += inside > 1
                    v = count
                    time.sleep(0.001)
                    count = v + 1
                    with guard:
                        inside -= 1

        threads = [threading.Thread(target=work, args=(c,)) for c in (a, b, a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert (count, overlaps) == (80, 0)

        held = a.lock(name)
        assert held.acquire()
        woke: list[float] = []
        t = threading.Thread(target=lambda: (b.lock(name).acquire(), woke.append(time.monotonic())))
        t.start()
        time.sleep(0.2)
        assert not woke
        released = time.monotonic()
        held.release()
        t.join(10)
        assert woke and woke[0] - released < 1.0, "woken by the release, not the 30 s lease"


def test_semaphores_and_read_write_locks(url: str) -> None:
    with polylock.connect(url) as c:
        sem = c.semaphore(f"polylock-py:ha-sem:{uuid.uuid4().hex}")
        sem.try_set_permits(2)
        assert sem.acquire(timeout=1, permits=2)
        assert not sem.acquire(timeout=0.1)
        sem.release(2)
        assert sem.available_permits() == 2
        rw = c.read_write_lock(f"polylock-py:ha-rw:{uuid.uuid4().hex}")
        with rw.read_lock():
            assert rw.read_lock().locked()
        with rw.write_lock():
            assert rw.write_lock().locked()
