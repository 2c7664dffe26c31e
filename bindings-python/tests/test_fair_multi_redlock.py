"""The fair lock, the multi-lock and RedLock from Python, against real servers (RedLock against the
three masters of scripts/servers.sh)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid

import pytest
import redis

import polylock

REDIS = os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379")
ZK = os.environ.get("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181")
REDLOCK = os.environ.get(
    "POLYLOCK_REDLOCK_URLS", "redis://127.0.0.1:6381,redis://127.0.0.1:6382,redis://127.0.0.1:6383"
).split(",")


def unique(prefix: str) -> str:
    return f"polylock-py:{prefix}:{uuid.uuid4().hex}"


@pytest.fixture
def client():
    c = polylock.connect(REDIS)
    yield c
    c.close()


def test_fair_lock_grants_in_the_order_of_asking(client: polylock.Client) -> None:
    lock = client.fair_lock(unique("fair"))
    assert lock.kind == "fair"
    assert lock.acquire()
    order: list[int] = []
    errors: list[BaseException] = []

    def waiter(i: int) -> None:
        try:
            with lock:
                order.append(i)
                time.sleep(0.01)
        except BaseException as e:  # noqa: BLE001 - checked below
            errors.append(e)

    threads = []
    for i in range(6):
        t = threading.Thread(target=waiter, args=(i,))
        t.start()
        threads.append(t)
        time.sleep(0.1)  # each is queued before the next asks
    lock.release()
    for t in threads:
        t.join(30)
    assert not errors
    assert order == list(range(6))
    assert not lock.locked()


def test_fair_lock_on_zookeeper_is_the_ordinary_lock() -> None:
    with polylock.connect(ZK) as zk:
        path = f"/polylock-py/fair-{uuid.uuid4().hex}"
        with zk.fair_lock(path) as lock:
            assert lock.held_by_me()
            # The same znode queue as lock(): the ordinary lock sees it held.
            assert zk.lock(path).locked()


def test_multi_lock_over_redis_and_zookeeper_is_all_or_nothing(client: polylock.Client) -> None:
    with polylock.connect(ZK) as zk, polylock.connect(ZK) as other:
        a_name = unique("multi")
        b_path = f"/polylock-py/multi-{uuid.uuid4().hex}"
        a, b = client.lock(a_name), zk.lock(b_path)
        both = polylock.MultiLock([b, a])
        assert isinstance(both, polylock.Lock)
        assert both.members == [b, a]
        with both:
            assert a.held_by_me() and b.held_by_me()
            assert a.fencing_token and b.fencing_token
            assert both.fencing_token == max(a.fencing_token, b.fencing_token)
            with both:  # reentrant
                assert a.hold_count == 2
        assert not a.locked() and not b.locked()
        with pytest.raises(polylock.NotOwnerError):
            both.release()

        # The ZooKeeper member held by another client: the wait runs out, the Redis member is given
        # back (checked on the server).
        held = other.lock(b_path)
        assert held.acquire()
        assert both.acquire(timeout=0.3) is False
        assert redis.Redis.from_url(REDIS).exists(a_name) == 0
        held.release()

        lost: list[polylock.Lock] = []
        both.on_lost(lost.append)
        assert both.acquire(timeout=5)
        a.force_unlock()  # a member lost: the multi-lock's callback fires
        deadline = time.monotonic() + 5
        while not lost and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lost and lost[0] is both
        with pytest.raises(polylock.LockLostError):
            both.release()


def test_multi_lock_async_with_and_two_orders_do_not_deadlock(client: polylock.Client) -> None:
    asyncio.run(two_orders(client))


async def two_orders(client: polylock.Client) -> None:
    names = [unique("order-a"), unique("order-b")]
    one = polylock.MultiLock([client.lock(names[0]), client.lock(names[1])])
    two = polylock.MultiLock([client.lock(names[1]), client.lock(names[0])])
    count = 0

    async def work(m: polylock.Lock) -> None:
        nonlocal count
        for _ in range(25):
            async with m:
                v = count
                await asyncio.sleep(0)
                count = v + 1

    await asyncio.wait_for(asyncio.gather(work(one), work(two), work(one), work(two)), 60)
    assert count == 100


def test_a_multi_lock_is_lost_as_soon_as_a_member_is() -> None:
    """A multi-lock's `lost` reads its members' holds: true at the first look after a member's
    hold is known lost (its own signal says "held" until its task has looked)."""
    c = polylock.connect(REDIS, watchdog_timeout=1.5)
    try:
        a, b = c.lock(unique("multi-lost-a")), c.lock(unique("multi-lost-b"))
        both = polylock.MultiLock([a, b])
        assert both.acquire(timeout=5)
        assert not both.lost and not a.lost
        redis.Redis.from_url(REDIS).delete(a.name)
        deadline = time.monotonic() + 20  # the watchdog finds it at its next renewal (0.5 s)
        while not a.lost and time.monotonic() < deadline:
            time.sleep(0.01)
        assert a.lost, "the member's hold was not found lost"
        assert both.lost and both.lost_reason == "DELETED"
        with pytest.raises(polylock.LockLostError):
            both.release()
    finally:
        c.close()


def test_multi_lock_bad_input(client: polylock.Client) -> None:
    a = client.lock(unique("bad"))
    for bad in ([], [a, a]):
        with pytest.raises(polylock.InvalidArgumentError):
            polylock.MultiLock(bad)
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.MultiLock(a)  # type: ignore[arg-type]
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.MultiLock([a, "b"])  # type: ignore[list-item]


def test_redlock_keeps_a_counter_exact_across_clients() -> None:
    name = unique("redlock")
    clients = [polylock.connect_redlock(REDLOCK), polylock.connect_redlock(REDLOCK, watchdog_timeout=5)]
    count = 0
    inside = 0
    overlaps = 0
    guard = threading.Lock()

    def work(c: polylock.Client) -> None:
        nonlocal count, inside, overlaps
        lock = c.lock(name)
        for _ in range(15):
            with lock:
                with guard:
                    inside += 1
                    overlaps += inside > 1
                v = count
                time.sleep(0.001)
                count = v + 1
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=work, args=(clients[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert (count, overlaps) == (60, 0)
    for url in REDLOCK:
        assert redis.Redis.from_url(url).exists(name) == 0, "released on every master"
    # Held on every master while held.
    lock = clients[0].lock(name)
    with lock:
        for url in REDLOCK:
            assert redis.Redis.from_url(url).exists(name) == 1
        assert lock.fencing_token
    for c in clients:
        c.close()


def test_redlock_bad_input() -> None:
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.connect_redlock(REDLOCK[:2])
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.connect_redlock([REDLOCK[0], REDLOCK[1], REDLOCK[0]])
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.connect_redlock(REDLOCK[0])  # a str, not a list
    with pytest.raises(polylock.PolylockConnectionError):
        polylock.connect_redlock([REDLOCK[0], "redis://127.0.0.1:1", "redis://127.0.0.1:2"])
    with polylock.connect_redlock(REDLOCK) as c:
        for make in (c.fair_lock, c.read_write_lock, c.semaphore, c.count_down_latch):
            with pytest.raises(polylock.UnsupportedError):
                make("x")
