"""The read-write lock from Python, on Redis and on ZooKeeper (the same cases on both)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid

import pytest

import polylock

REDIS = os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379")
ZK = os.environ.get("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181")


def name_for(url: str, prefix: str) -> str:
    if url.startswith("zk://"):
        return f"/polylock-py/{prefix}-{uuid.uuid4().hex}"
    return f"polylock-py:{prefix}:{uuid.uuid4().hex}"


@pytest.fixture(params=[REDIS, ZK], ids=["redis", "zookeeper"])
def url(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def client(url: str):
    c = polylock.connect(url)
    yield c
    c.close()


def in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_readers_share_and_a_writer_excludes(client, url):
    rw = client.read_write_lock(name_for(url, "share"))
    assert isinstance(rw.read_lock(), polylock.Lock) and rw.read_lock().kind == "read"
    assert rw.write_lock().kind == "write"
    held = threading.Barrier(3)
    done = threading.Event()

    def reader() -> bool:
        with rw.read_lock():
            held.wait(10)  # all three hold it at once
            done.wait(10)
        return True

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    with rw.read_lock():
        held.wait(10)
        assert rw.read_lock().locked() and not rw.write_lock().locked()
        assert in_thread(lambda: rw.write_lock().acquire(timeout=0.2)) is False
        done.set()
    for t in threads:
        t.join(10)
    with rw.write_lock():
        assert rw.write_lock().locked()
        assert in_thread(lambda: rw.read_lock().acquire(blocking=False)) is False
        assert in_thread(lambda: rw.write_lock().acquire(blocking=False)) is False
    assert not rw.write_lock().locked() and not rw.read_lock().locked()


def test_reentrant_halves_downgrade_and_upgrade_error(client, url):
    rw = client.read_write_lock(name_for(url, "down"))
    r, w = rw.read_lock(), rw.write_lock()
    assert r.acquire() and r.acquire()
    assert r.hold_count == 2
    started = time.monotonic()
    with pytest.raises(polylock.UpgradeNotSupportedError) as e:
        w.acquire()  # would wait forever in Redisson and Curator
    assert time.monotonic() - started < 5  # refused, not waited for
    assert isinstance(e.value, RuntimeError) and e.value.code == "UPGRADE_NOT_SUPPORTED" and e.value.number == 14
    assert r.hold_count == 2
    r.release()
    r.release()
    with pytest.raises(polylock.NotOwnerError):
        r.release()
    # Downgrade: write, then read, then let the write go and keep reading.
    w.acquire()
    token = w.fencing_token
    assert token is not None
    r.acquire()
    assert in_thread(lambda: r.acquire(blocking=False)) is False  # still write-locked
    w.release()
    assert r.hold_count == 1 and r.locked()

    def other_reader() -> bool:
        ok = r.acquire(timeout=2)
        r.release()
        return ok

    assert in_thread(other_reader) is True
    assert in_thread(lambda: w.acquire(blocking=False)) is False
    r.release()
    assert in_thread(lambda: (w.acquire(timeout=2), w.release())[0]) is True


def test_readers_and_writers_keep_a_counter_exact(url):
    a, b = polylock.connect(url), polylock.connect(url)
    name = name_for(url, "counter")
    state = {"counter": 0, "readers": 0, "writers": 0, "most_readers": 0, "overlaps": 0}
    guard = threading.Lock()

    def work(client: polylock.Client, writer: bool) -> None:
        rw = client.read_write_lock(name)
        lock = rw.write_lock() if writer else rw.read_lock()
        for _ in range(15):
            with lock:
                with guard:
                    key = "writers" if writer else "readers"
                    state[key] += 1
                    if state["writers"] > 1 or (state["writers"] and state["readers"]):
                        state["overlaps"] += 1
                    state["most_readers"] = max(state["most_readers"], state["readers"])
                if writer:
                    v = state["counter"]
                    time.sleep(0.002)
                    state["counter"] = v + 1
                else:
                    time.sleep(0.003)
                with guard:
                    state[key] -= 1

    threads = [threading.Thread(target=work, args=(a if i % 2 else b, i < 2)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    a.close()
    b.close()
    assert state["overlaps"] == 0
    assert state["counter"] == 30
    assert state["most_readers"] >= 2


def test_async_with_both_halves(client, url):
    rw = client.read_write_lock(name_for(url, "async"))

    async def main() -> int:
        inside = 0
        most = 0

        async def reader() -> None:
            nonlocal inside, most
            async with rw.read_lock():
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(0.05)
                inside -= 1

        await asyncio.gather(*(reader() for _ in range(4)))
        async with rw.write_lock():
            assert rw.write_lock().hold_count == 1
        return most

    assert asyncio.run(main()) >= 2


def test_a_read_hold_lost_fires_the_callback(url):
    c = polylock.connect(url, watchdog_timeout=0.6, session_timeout=2.0)
    other = polylock.connect(url)
    name = name_for(url, "lost")
    r = c.read_write_lock(name).read_lock()
    w = c.read_write_lock(name).write_lock()
    heard = threading.Event()
    heard_write = threading.Event()
    r.on_lost(lambda lock: heard.set())
    w.on_lost(lambda lock: heard_write.set())
    assert r.acquire()
    if url.startswith("redis"):
        time.sleep(1.9)  # three leases: the watchdog keeps the read hold and its key
        assert not r.lost and r.hold_count == 1
        assert other.read_write_lock(name).write_lock().acquire(blocking=False) is False
    assert other.read_write_lock(name).read_lock().force_unlock() is True
    assert heard.wait(5), "the read half's callback heard the loss"
    assert not heard_write.is_set(), "the write half's callback did not"
    assert r.lost
    with pytest.raises(polylock.LockLostError):
        r.release()
    c.close()
    other.close()
