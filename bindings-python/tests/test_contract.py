"""The shapes of the contract every runtime shares (docs/src/contract.md), as Python says them:
"not acquired" is False everywhere, None and -1 both mean "forever", the remaining lease has three
answers, lost callbacks get the reason, and redis-py's extend/reacquire/owned. The conformance suite
(conformance/runners/python) runs the same scenarios as every other runtime; these are the
Python-only details."""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
import uuid

import pytest

import polylock

REDIS = os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379")
ZK = os.environ.get("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181")


def unique(prefix: str) -> str:
    return f"polylock-py:{prefix}:{uuid.uuid4().hex}"


@pytest.fixture
def client():
    c = polylock.connect(REDIS, watchdog_timeout=0.9)
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


def test_not_acquired_is_false_for_every_primitive(client):
    lock = client.lock(unique("na"))
    assert lock.acquire()
    assert in_thread(lambda: lock.acquire(timeout=0.1)) is False
    sem = client.semaphore(unique("na-sem"))
    assert sem.try_set_permits(1)
    assert sem.acquire(timeout=0) is True
    assert sem.acquire(timeout=0.1) is False
    pes = client.permit_expirable_semaphore(unique("na-pes"))
    assert pes.try_set_permits(1)
    permit = pes.acquire(timeout=0)
    assert isinstance(permit, str) and permit
    assert pes.acquire(timeout=0.1) is False
    assert asyncio.run(pes.acquire_async(timeout=0.1)) is False
    lock.release()


def test_none_and_minus_one_both_wait_forever(client):
    lock = client.lock(unique("forever"))
    async def in_task(forever):
        got = await lock.acquire_async(timeout=forever)
        await lock.release_async()
        return got

    for forever in (None, -1):
        assert lock.acquire(timeout=forever) is True
        lock.release()
        assert asyncio.run(in_task(forever)) is True
    sem = client.semaphore(unique("forever-sem"))
    sem.try_set_permits(4)
    assert sem.acquire(timeout=None) and sem.acquire(timeout=-1)
    assert sem.acquire(blocking=False, timeout=-1)
    latch = client.count_down_latch(unique("forever-latch"))
    assert latch.wait(timeout=-1) and latch.wait(timeout=None)
    pes = client.permit_expirable_semaphore(unique("forever-pes"))
    pes.try_set_permits(2)
    assert pes.acquire(timeout=-1) and pes.acquire(timeout=None)
    with pytest.raises(polylock.InvalidArgumentError):
        lock.acquire(timeout=-2)
    with pytest.raises(polylock.InvalidArgumentError):
        sem.acquire(timeout=-0.5)

    @client.synchronize(unique("forever-deco"), wait=-1)
    def f():
        return 1

    @client.synchronize(unique("forever-deco"), wait=None)
    def g():
        return 2

    assert f() == 1 and g() == 2


def test_remaining_lease_has_three_answers(client):
    lock = client.lock(unique("lease"))
    assert lock.remaining_lease is None
    assert lock.acquire()
    left = lock.remaining_lease
    assert isinstance(left, float) and 0 < left <= 0.9
    lock.release()
    zk = polylock.connect(ZK)
    zl = zk.lock(f"/polylock-py/lease-{uuid.uuid4().hex}")
    assert zl.remaining_lease is None
    assert zl.acquire()
    assert zl.remaining_lease == math.inf
    zl.release()
    zk.close()


def test_lost_callbacks_get_the_reason(client):
    lock = client.lock(unique("lost"))
    events, handles, old_style = [], [], []
    done = threading.Event()
    assert lock.acquire()
    # Registered after the hold was taken, in both forms.
    lock.on_lost(lambda handle, event: (handles.append(handle), events.append(event), done.set()))
    lock.on_lost(lambda handle: old_style.append(handle))
    other = polylock.connect(REDIS)
    assert other.lock(lock.name).force_unlock()
    assert done.wait(10)
    assert handles == [lock]
    (ev,) = events
    assert isinstance(ev, polylock.LostEvent)
    assert (ev.name, ev.kind, ev.reason) == (lock.name, "reentrant", "DELETED")
    assert lock.lost and lock.lost_reason == "DELETED"
    deadline = time.monotonic() + 5
    while not old_style and time.monotonic() < deadline:
        time.sleep(0.02)
    assert old_style == [lock]
    with pytest.raises(polylock.LockLostError):
        lock.release()
    assert lock.lost_reason is None
    other.close()


def test_extend_reacquire_and_owned_as_redis_py_names_them(client):
    lock = client.lock(unique("extend"))
    assert not lock.owned()
    with pytest.raises(polylock.NotOwnerError):
        lock.extend(1)
    assert lock.acquire(lease=0.5)
    assert lock.owned() and lock.held_by_me()
    assert in_thread(lambda: lock.owned()) is False
    assert lock.extend(2) is True  # what was left, plus 2 s
    assert 2.0 < lock.remaining_lease <= 2.5
    assert lock.extend(5, replace_ttl=True) is True
    assert 4.0 < lock.remaining_lease <= 5.0
    assert lock.reacquire() is True  # back to the original 0.5 s
    assert lock.remaining_lease <= 0.5
    time.sleep(0.8)
    assert lock.lost and lock.lost_reason == "EXPIRED"
    with pytest.raises(polylock.LockLostError):
        lock.extend(1)
    with pytest.raises(polylock.LockLostError):
        lock.release()
    # A hold the watchdog keeps has no lease to extend.
    assert lock.acquire()
    with pytest.raises(polylock.InvalidStateError):
        lock.extend(1)
    lock.release()


def test_synchronize_is_the_decorator_and_locked_its_older_name(client):
    assert polylock.Client.locked is polylock.Client.synchronize
    name = unique("sync")

    @client.synchronize(name, wait=0.1)
    def work():
        return client.lock(name).owned()

    assert work() is True
    holder = polylock.connect(REDIS)
    assert holder.lock(name).acquire()
    with pytest.raises(polylock.LockTimeoutError) as caught:
        work()
    assert isinstance(caught.value, polylock.PolylockError) and isinstance(caught.value, TimeoutError)
    assert (caught.value.code, caught.value.number) == ("TIMEOUT", 3)
    holder.close()
    # The state query of a lock keeps its threading.Lock name.
    assert client.lock(name).locked() is False


def test_the_error_table_is_carried_with_numbers():
    table = polylock.error_table()
    assert [n for n, _, _ in table] == list(range(1, 17))
    assert all(issubclass(cls, polylock.PolylockError) for _, _, cls in table)
    names = {name: cls for _, name, cls in table}
    assert names["NOT_OWNER"] is polylock.NotOwnerError
    assert names["TIMEOUT"] is polylock.LockTimeoutError
    assert names["STALE_TOKEN"] is polylock.StaleTokenError
    with pytest.raises(polylock.InvalidArgumentError) as caught:
        polylock.connect("nosuch://127.0.0.1:1")
    assert "docs/src/contract.md#urls" in str(caught.value)
