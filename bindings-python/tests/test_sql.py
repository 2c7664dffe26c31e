"""polylock from Python on MySQL/MariaDB (GET_LOCK) and PostgreSQL (advisory locks), against the
servers of scripts/servers.sh: exclusion, reentrancy and the lost signal on both."""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

import polylock

MYSQL = os.environ.get("POLYLOCK_MYSQL_URL", "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock")
PG = os.environ.get("POLYLOCK_PG_URL", "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock")
URLS = pytest.mark.parametrize("url", [MYSQL, PG], ids=["mysql", "postgres"])


def unique(prefix: str) -> str:
    return f"py-{prefix}-{uuid.uuid4().hex[:12]}"


@URLS
def test_exclusion_with_a_counter(url):
    clients = [polylock.connect(url), polylock.connect(url)]
    name = unique("excl")
    state = {"inside": False, "overlaps": 0, "counter": 0}
    tokens = []
    guard = threading.Lock()

    def worker(i):
        lock = clients[i % 2].lock(name)
        for _ in range(8):
            with lock:
                with guard:
                    if state["inside"]:
                        state["overlaps"] += 1
                    state["inside"] = True
                    tokens.append(lock.fencing_token)
                v = state["counter"]
                time.sleep(0.001)
                state["counter"] = v + 1
                state["inside"] = False

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert state["overlaps"] == 0
    assert state["counter"] == 32
    assert tokens == sorted(tokens) and len(set(tokens)) == 32
    for c in clients:
        c.close()


@URLS
def test_reentrancy(url):
    a, b = polylock.connect(url), polylock.connect(url)
    name = unique("reent")
    lock = a.lock(name)
    assert lock.acquire() and lock.acquire(blocking=False)
    assert lock.hold_count == 2
    token = lock.fencing_token
    assert b.lock(name).acquire(blocking=False) is False
    lock.release()
    assert lock.hold_count == 1 and lock.fencing_token == token
    assert b.lock(name).acquire(timeout=0.2) is False
    lock.release()
    other = b.lock(name)
    assert other.acquire(blocking=False)
    assert other.fencing_token > token
    other.release()
    with pytest.raises(polylock.NotOwnerError):
        lock.release()
    a.close()
    b.close()


@URLS
def test_killed_connection_fires_the_lost_signal(url):
    c = polylock.connect(url, watchdog_timeout=1.5)
    lock = c.lock(unique("lost"))
    done = threading.Event()
    lock.on_lost(lambda _l: done.set())
    assert lock.acquire()
    token = lock.fencing_token
    other = polylock.connect(url)
    # On SQL servers force_unlock kills the holder's connection (KILL / pg_terminate_backend).
    assert other.lock(lock.name).force_unlock()
    killed = time.monotonic()
    assert done.wait(5), "lost callback not called"
    assert time.monotonic() - killed < 1.5
    assert lock.lost
    with pytest.raises(polylock.LockLostError):
        lock.release()
    nxt = other.lock(lock.name)
    assert nxt.acquire(timeout=5)
    assert nxt.fencing_token > token
    nxt.release()
    other.close()
    c.close()


def test_typed_errors_and_unsupported():
    with pytest.raises(polylock.AuthError) as e:
        polylock.connect(MYSQL.replace("polylock-pw", "Wr0ng-Secret-pw"))
    assert "Wr0ng-Secret-pw" not in str(e.value)
    with pytest.raises(polylock.AuthError):
        polylock.connect(PG.replace("polylock-pw", "Wr0ng-Secret-pw"))
    c = polylock.connect(MYSQL)
    with pytest.raises(polylock.UnsupportedError):
        c.read_write_lock(unique("rw"))
    c.close()
