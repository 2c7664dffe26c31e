"""Leader election from Python on Redis, ZooKeeper and etcd: one leader, its term, `with` and
`async with`, observers, a bounded campaign that gives up, typed errors."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid

import pytest

import polylock

URLS = {
    "redis": os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379"),
    "zookeeper": os.environ.get("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181"),
    "etcd": os.environ.get("POLYLOCK_ETCD_URL", "etcd://127.0.0.1:2379"),
}


@pytest.fixture(params=list(URLS), ids=list(URLS))
def url(request: pytest.FixtureRequest) -> str:
    return URLS[request.param]


def name_for(url: str, prefix: str) -> str:
    if url.startswith("zk://"):
        return f"/polylock-py/{prefix}-{uuid.uuid4().hex}"
    return f"polylock-py:{prefix}:{uuid.uuid4().hex}"


def test_one_leader_then_the_next_and_observers_see_both(url):
    a, b, watcher = polylock.connect(url), polylock.connect(url), polylock.connect(url)
    name = name_for(url, "election")
    ea, eb = a.election(name, "py-a"), b.election(name, "py-b")
    observer = watcher.election(name, "observer")
    seen: list = []
    observing = threading.Thread(target=lambda: seen.extend(l for _, l in zip(range(4), observer.observe(timeout=10))))
    observing.start()
    time.sleep(0.2)
    assert ea.campaign() is True
    assert ea.is_leader and ea.term is not None
    assert eb.campaign(timeout=0.2) is False
    assert not eb.is_leader and eb.term is None
    assert observer.leader() == polylock.Leader("py-a", ea.term)
    first = ea.term
    time.sleep(0.2)
    assert ea.resign() is True
    assert ea.resign() is False
    with eb:
        assert eb.is_leader and eb.term > first
        assert observer.leader() == polylock.Leader("py-b", eb.term)
        second = eb.term
        time.sleep(0.2)
    assert not eb.is_leader
    observing.join(10)
    ids = [s.identity if s else None for s in seen]
    # Nobody, a, (nobody, if the observer looked between a's resign and b's grant), b, ...
    assert ids in ([None, "py-a", None, "py-b"], [None, "py-a", "py-b", None]), seen
    assert [s.term for s in seen if s] == [first, second]
    for c in (a, b, watcher):
        c.close()


def test_async_with_campaigns_and_resigns(url):
    async def main() -> None:
        a, b = polylock.connect(url), polylock.connect(url)
        name = name_for(url, "election-async")
        ea, eb = a.election(name, "async-a"), b.election(name, "async-b")
        async with ea:
            assert ea.is_leader
            assert await eb.campaign_async(timeout=0.2) is False
            # A campaign cancelled while it waits is withdrawn.
            task = asyncio.ensure_future(eb.campaign_async())
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert not ea.is_leader
        assert ea.leader() is None
        assert await eb.campaign_async(timeout=5) is True
        assert await eb.resign_async() is True
        a.close()
        b.close()

    asyncio.run(main())


def test_bad_input_is_a_typed_error():
    c = polylock.connect(URLS["redis"])
    for bad in ["", "a\0b", "x" * 1025, "a\ud800"]:
        with pytest.raises(polylock.InvalidArgumentError):
            c.election("e", bad)
    with pytest.raises(polylock.InvalidArgumentError):
        c.election("", "a")
    with pytest.raises(polylock.InvalidArgumentError):
        c.election("e", 5)  # type: ignore[arg-type]
    with pytest.raises(polylock.InvalidArgumentError):
        c.election("e", "a").campaign(timeout=-3)
    c.close()
    with pytest.raises(polylock.InvalidStateError):
        c.election("e", "a")
