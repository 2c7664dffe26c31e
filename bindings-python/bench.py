"""polylock beside redis-py's own Lock, in one run, with Redis PING (through redis-py) as the limit;
then the asyncio pair beside redis.asyncio's Lock on asyncio's loop and on uvloop (polylock on its
loop driver, and on the runtime driver in a child process); then RedLock over the three masters of
scripts/servers.sh beside pottery's Redlock.

    pip install ./bindings-python redis pottery uvloop      # a release build
    python3 bindings-python/bench.py [--url redis://127.0.0.1:6379] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import os
import socket
import statistics
import threading
import time
import urllib.parse
import uuid

import redis

import polylock


def pairs(acquire_release, n: int) -> tuple[float, float, float]:
    """p50 in us, calls/s, and the process's CPU time per call in us (all threads)."""
    for _ in range(200):
        acquire_release()
    times = []
    cpu = time.process_time()
    started = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        acquire_release()
        times.append(time.perf_counter() - t)
    rate = n / (time.perf_counter() - started)
    return statistics.median(times) * 1e6, rate, (time.process_time() - cpu) / n * 1e6


def raw_ping(url: str, n: int) -> float:
    """PING over a bare socket: the round trip no client library can beat (p50, us)."""
    parsed = urllib.parse.urlparse(url)
    s = socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if parsed.password:
        user = urllib.parse.unquote(parsed.username or "default")
        s.sendall(f"AUTH {user} {urllib.parse.unquote(parsed.password)}\r\n".encode())
        s.recv(100)

    def ping() -> None:
        s.sendall(b"PING\r\n")
        if s.recv(100) != b"+PONG\r\n":
            raise RuntimeError("unexpected PING reply")

    p50, _, _ = pairs(ping, n)
    s.close()
    return p50


def threaded(make, threads: int, seconds: float) -> float:
    stop = threading.Event()
    counts = [0] * threads

    def run(i: int) -> None:
        one = make(i)
        while not stop.is_set():
            one()
            counts[i] += 1

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join()
    return sum(counts) / seconds


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="redis://127.0.0.1:6379")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("-n", type=int, default=3000)
    a = p.parse_args()
    r = redis.Redis.from_url(a.url)
    client = polylock.connect(a.url)
    run_id = uuid.uuid4().hex[:8]

    raw_p50 = raw_ping(a.url, a.n)
    ping_p50, _, _ = pairs(r.ping, a.n)

    pl = client.lock(f"bench-py:{run_id}:polylock")

    def pl_pair() -> None:
        pl.acquire()
        pl.release()

    rl = r.lock(f"bench-py:{run_id}:redispy", timeout=30)

    def rp_pair() -> None:
        rl.acquire()
        rl.release()

    pl_p50, pl_rate, pl_cpu = pairs(pl_pair, a.n)
    rp_p50, rp_rate, rp_cpu = pairs(rp_pair, a.n)

    def pl_make(i: int):
        lk = client.lock(f"bench-py:{run_id}:pl:{i}")

        def one() -> None:
            lk.acquire()
            lk.release()

        return one

    def rp_make(i: int):
        lk = redis.Redis.from_url(a.url).lock(f"bench-py:{run_id}:rp:{i}", timeout=30)

        def one() -> None:
            lk.acquire()
            lk.release()

        return one

    pl16 = threaded(pl_make, 16, a.seconds)
    rp16 = threaded(rp_make, 16, a.seconds)
    print("polylock (Python) beside redis-py's Lock, same run")
    print(f"  PING round trip, bare socket       p50 {raw_p50:8.1f} us   (the physical limit; a pair is 2 round trips)")
    print(f"  PING round trip, through redis-py  p50 {ping_p50:8.1f} us")
    print(f"  uncontended pair, polylock         p50 {pl_p50:8.1f} us   {pl_rate:8.0f} pairs/s   CPU {pl_cpu:6.1f} us/pair")
    print(f"  uncontended pair, redis-py Lock    p50 {rp_p50:8.1f} us   {rp_rate:8.0f} pairs/s   CPU {rp_cpu:6.1f} us/pair")
    print(f"  uncontended ratio                      {pl_rate / rp_rate:8.2f} x   (target >= 3)")
    print(f"  16 threads, distinct keys          polylock {pl16:8.0f} pairs/s   redis-py {rp16:8.0f} pairs/s   "
          f"ratio {pl16 / rp16:.2f} x (target >= 5)")
    client.close()
    asyncio_section(a.url, a.n, a.seconds, pl_p50)
    redlock_over_three(a.n // 5)


def redlock_over_three(n: int) -> None:
    """polylock's and pottery's RedLock pairs over three masters, beside a PING of all three at
    once (the limit of one quorum round: bare sockets, sent to all three, then read from all)."""
    try:
        from pottery import Redlock  # type: ignore[import-untyped]
    except ImportError:
        print("RedLock over 3 masters: pottery is not installed (pip install pottery)")
        return
    urls = os.environ.get(
        "POLYLOCK_REDLOCK_URLS", "redis://127.0.0.1:6381,redis://127.0.0.1:6382,redis://127.0.0.1:6383"
    ).split(",")
    masters = [redis.Redis.from_url(u) for u in urls]
    socks = []
    for u in urls:
        parsed = urllib.parse.urlparse(u)
        sock = socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(sock)
    client = polylock.connect_redlock(urls)
    run_id = uuid.uuid4().hex[:8]
    pl = client.lock(f"bench-py:{run_id}:redlock-pl")
    pot = Redlock(key=f"bench-py:{run_id}:redlock-pottery", masters=set(masters), auto_release_time=30)

    def ping_all() -> None:
        for sock in socks:
            sock.sendall(b"PING\r\n")
        for sock in socks:
            if sock.recv(100) != b"+PONG\r\n":
                raise RuntimeError("unexpected PING reply")

    def pl_pair() -> None:
        pl.acquire()
        pl.release()

    def pot_pair() -> None:
        pot.acquire()
        pot.release()

    rounds: dict[str, list[float]] = {"ping": [], "pl": [], "pot": []}
    for _ in range(5):  # alternating rounds: all three see the same machine
        for k, f in (("ping", ping_all), ("pl", pl_pair), ("pot", pot_pair)):
            rounds[k].append(pairs(f, n)[0])
    ping, a, b = (statistics.median(rounds[k]) for k in ("ping", "pl", "pot"))
    print(f"RedLock over 3 masters (medians of 5 alternating rounds of {n} pairs)")
    print(f"  PING of all 3 at once, bare sockets p50 {ping:7.1f} us   (the limit of one quorum round)")
    print(f"  RedLock pair, polylock             p50 {a:8.1f} us   {a / ping:.2f} x the PING")
    print(f"  RedLock pair, pottery              p50 {b:8.1f} us   {b / ping:.2f} x the PING   (polylock {b / a:.2f} x faster)")
    client.close()
    for sock in socks:
        sock.close()


async def aio_pairs(pair, n: int) -> tuple[float, float]:
    """p50 in us and pairs/s of an awaited pair, on the running loop."""
    for _ in range(200):
        await pair()
    times = []
    started = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        await pair()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6, n / (time.perf_counter() - started)


async def aio_tasks(make, tasks: int, seconds: float) -> float:
    """Pairs/s of `tasks` tasks, each awaiting its own pair in a loop for `seconds`."""
    pairs_of = [make(i) for i in range(tasks)]
    count = 0
    stop = time.perf_counter() + seconds

    async def run(pair) -> None:
        nonlocal count
        while time.perf_counter() < stop:
            await pair()
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(run(p) for p in pairs_of))
    return count / (time.perf_counter() - started)


def polylock_asyncio(url: str, n: int, seconds: float, loop_factory) -> dict:
    """polylock's asyncio figures on a fresh loop: pair p50, pairs/s, 64 tasks on distinct keys."""
    client = polylock.connect(url)
    run_id = uuid.uuid4().hex[:8]

    async def main() -> dict:
        lock = client.lock(f"bench-py-aio:{run_id}")

        async def pair() -> None:
            await lock.acquire_async()
            await lock.release_async()

        p50, rate = await aio_pairs(pair, n)

        def make(i: int):
            lk = client.lock(f"bench-py-aio:{run_id}:{i}")

            async def one() -> None:
                await lk.acquire_async()
                await lk.release_async()

            return one

        return {"p50": p50, "rate": rate, "t64": await aio_tasks(make, 64, seconds)}

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        out = runner.run(main())
    client.close()
    return out


def redis_asyncio(url: str, n: int, seconds: float, loop_factory) -> dict:
    """redis.asyncio's Lock, the same figures."""
    import redis.asyncio as aredis

    run_id = uuid.uuid4().hex[:8]

    async def main() -> dict:
        r = aredis.Redis.from_url(url)
        lock = r.lock(f"bench-py-raio:{run_id}", timeout=30)

        async def pair() -> None:
            await lock.acquire()
            await lock.release()

        p50, rate = await aio_pairs(pair, n)

        def make(i: int):
            lk = r.lock(f"bench-py-raio:{run_id}:{i}", timeout=30)

            async def one() -> None:
                await lk.acquire()
                await lk.release()

            return one

        t64 = await aio_tasks(make, 64, seconds)
        await r.aclose()
        return {"p50": p50, "rate": rate, "t64": t64}

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main())


def loop_factories() -> dict:
    out = {"asyncio": asyncio.new_event_loop}
    try:
        import uvloop

        out["uvloop"] = uvloop.new_event_loop
    except ImportError:
        print("  (uvloop is not installed: pip install uvloop)")
    return out


def asyncio_section(url: str, n: int, seconds: float, sync_p50: float) -> None:
    from polylock import _aio

    print(f"asyncio: polylock on its {_aio.driver_name()} driver beside redis.asyncio's Lock, same run")
    for name, factory in loop_factories().items():
        pl = polylock_asyncio(url, n, seconds, factory)
        rt = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--url", url, "-n", str(n), "--seconds", str(seconds), "--child-asyncio", name],
                env={**os.environ, "POLYLOCK_PY_DRIVER": "runtime"},
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        ra = redis_asyncio(url, n, seconds, factory)
        print(f"  {name}: pair p50, polylock loop driver    {pl['p50']:8.1f} us   {pl['rate']:8.0f} pairs/s   64 tasks {pl['t64']:8.0f} pairs/s")
        print(f"  {name}: pair p50, polylock runtime driver {rt['p50']:8.1f} us   {rt['rate']:8.0f} pairs/s   64 tasks {rt['t64']:8.0f} pairs/s")
        print(f"  {name}: pair p50, redis.asyncio Lock      {ra['p50']:8.1f} us   {ra['rate']:8.0f} pairs/s   64 tasks {ra['t64']:8.0f} pairs/s")
        print(
            f"  {name}: loop driver / redis.asyncio: pair {pl['rate'] / ra['rate']:.2f} x (target >= 2.5), "
            f"64 tasks {pl['t64'] / ra['t64']:.2f} x (target >= 4); pair {pl['p50'] / sync_p50:.2f} x the sync pair's p50 "
            f"(target <= 2)"
        )


if __name__ == "__main__":
    if "--child-asyncio" in sys.argv:
        q = argparse.ArgumentParser()
        q.add_argument("--url")
        q.add_argument("-n", type=int)
        q.add_argument("--seconds", type=float)
        q.add_argument("--child-asyncio")
        c = q.parse_args()
        print(json.dumps(polylock_asyncio(c.url, c.n, c.seconds, loop_factories()[c.child_asyncio])))
    else:
        main()
