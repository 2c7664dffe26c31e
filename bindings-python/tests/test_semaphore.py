"""Semaphores and the count-down latch from Python, on Redis and ZooKeeper (the same cases)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
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


def test_n_permits_bound_16_workers(url):
    a, b = polylock.connect(url), polylock.connect(url)
    name = name_for(url, "sem16")
    assert a.semaphore(name).try_set_permits(3) is True
    assert b.semaphore(name).try_set_permits(7) is False
    inside = [0]
    most = [0]
    done = [0]
    guard = threading.Lock()

    def work(client: polylock.Client) -> None:
        sem = client.semaphore(name)
        for _ in range(3):
            with sem:
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                # Until 3 have been seen inside at once, stay up to 2 s for the others: a slow
                # acquire must not pass for a semaphore that admits fewer than its permits.
                stay_until = time.monotonic() + 2
                while most[0] < 3 and time.monotonic() < stay_until:
                    time.sleep(0.001)
                time.sleep(0.01)
                with guard:
                    inside[0] -= 1
        with guard:
            done[0] += 1

    threads = [threading.Thread(target=work, args=(a if i % 2 else b,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert done[0] == 16, "every worker finished"
    assert most[0] == 3, f"the most inside at once was {most[0]}"
    assert a.semaphore(name).available_permits() == 3
    a.close()
    b.close()


def test_timeouts_wakeups_and_bad_input(url):
    with polylock.connect(url) as c, polylock.connect(url) as other:
        name = name_for(url, "semwait")
        sem = c.semaphore(name)
        sem.try_set_permits(1)
        assert sem.acquire() is True
        started = time.monotonic()
        assert other.semaphore(name).acquire(timeout=0.2) is False
        assert time.monotonic() - started >= 0.19
        assert other.semaphore(name).acquire(blocking=False) is False
        got: list[float] = []

        def waiter() -> None:
            s = other.semaphore(name)
            assert s.acquire(timeout=10)
            got.append(time.monotonic())
            s.release()

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.15)
        released = time.monotonic()
        sem.release()
        t.join(10)
        # Not woken, the waiter would wait out its 10 s: half of that is the bound.
        assert got and got[0] - released < 5, "woken by the release"
        for bad in (0, -1, 1.5, True):
            with pytest.raises(polylock.InvalidArgumentError):
                sem.acquire(permits=bad)
            with pytest.raises(polylock.InvalidArgumentError):
                sem.release(bad)
        with pytest.raises(polylock.InvalidArgumentError):
            sem.acquire(blocking=False, timeout=1)
        assert sem.available_permits() == 1
        sem.add_permits(2)
        assert sem.available_permits() == 3
        assert sem.drain_permits() == 3
        assert sem.available_permits() == 0
        sem.release(3)


def test_async_with_and_cancellation(url):
    with polylock.connect(url) as c:
        name = name_for(url, "semasync")
        sem = c.semaphore(name)
        sem.try_set_permits(2)

        async def main() -> int:
            inside = 0
            most = 0

            async def worker() -> None:
                nonlocal inside, most
                async with sem:
                    inside += 1
                    most = max(most, inside)
                    # Until both permits have been seen held at once, stay up to 2 s for the other.
                    for _ in range(200):
                        if most >= 2:
                            break
                        await asyncio.sleep(0.01)
                    await asyncio.sleep(0.03)
                    inside -= 1

            await asyncio.gather(*(worker() for _ in range(6)))
            assert await sem.acquire_async(permits=2)
            task = asyncio.ensure_future(sem.acquire_async())
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await sem.release_async(2)
            return most

        assert asyncio.run(main()) == 2
        time.sleep(0.2)
        assert sem.available_permits() == 2, "the cancelled wait took nothing"


def test_latch_wakes_all_waiters_at_zero(url):
    with polylock.connect(url) as c, polylock.connect(url) as other:
        name = name_for(url, "latch")
        latch = c.count_down_latch(name)
        assert latch.count == 0 and latch.wait(0) is True
        with pytest.raises(polylock.InvalidArgumentError):
            latch.try_set_count(0)
        assert latch.try_set_count(2) is True
        assert other.count_down_latch(name).try_set_count(9) is False
        assert latch.wait(timeout=0.2) is False
        woke: list[bool] = []
        threads = [
            threading.Thread(target=lambda: woke.append(other.count_down_latch(name).wait(10))) for _ in range(3)
        ]
        for t in threads:
            t.start()
        time.sleep(0.1)
        latch.count_down()
        assert latch.count == 1
        other.count_down_latch(name).count_down()
        for t in threads:
            t.join(10)
        assert woke == [True, True, True]

        async def waits() -> bool:
            l2 = c.count_down_latch(name_for(url, "latch-async"))
            l2.try_set_count(1)
            waiter = asyncio.ensure_future(l2.wait_async(timeout=5))
            await asyncio.sleep(0.05)
            l2.count_down()
            return await waiter

        assert asyncio.run(waits()) is True


def test_expiring_permits_on_redis():
    c = polylock.connect(REDIS, watchdog_timeout=0.6)
    name = name_for(REDIS, "permits")
    sem = c.permit_expirable_semaphore(name)
    assert sem.try_set_permits(1)
    heard = threading.Event()
    sem.on_lost(lambda s: heard.set())
    permit_id = sem.acquire()
    assert permit_id is not None and len(permit_id) == 32
    time.sleep(1.9)  # the watchdog renews it past three leases
    assert sem.available_permits() == 0
    assert sem.acquire(timeout=0) is False  # "not acquired" is False, as for every acquire
    sem.release(permit_id)
    with pytest.raises(polylock.NotOwnerError):
        sem.release(permit_id)
    with pytest.raises(polylock.InvalidArgumentError):
        sem.release("not-an-id")
    short = sem.acquire(lease=0.3)
    assert short is not None
    assert heard.wait(3), "the expired permit's loss was heard"
    with pytest.raises(polylock.LockLostError):
        sem.release(short)
    assert sem.available_permits() == 1
    c.close()
    with polylock.connect(ZK) as z, pytest.raises(polylock.UnsupportedError):
        z.permit_expirable_semaphore("/polylock-py/nope")


def test_a_killed_holders_expiring_permit_comes_back_within_its_lease():
    name = name_for(REDIS, "permits-kill")
    script = (
        "import polylock, sys, time\n"
        f"c = polylock.connect({REDIS!r}, watchdog_timeout=1.0)\n"
        f"s = c.permit_expirable_semaphore({name!r})\n"
        "s.try_set_permits(1)\n"
        "assert s.acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    proc.kill()
    proc.wait(10)
    started = time.monotonic()
    with polylock.connect(REDIS) as c:
        permit_id = c.permit_expirable_semaphore(name).acquire(timeout=5)
        assert permit_id is not None
        took = time.monotonic() - started
        # At the 1 s lease's end, not at the 5 s wait's (which would return None).
        assert took < 4.0, f"back within its 1 s lease (took {took:.2f} s)"
        c.permit_expirable_semaphore(name).release(permit_id)
