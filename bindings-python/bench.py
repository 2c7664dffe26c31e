"""polylock beside redis-py's own Lock, in one run, with Redis PING (through redis-py) as the limit;
then RedLock over the three masters of scripts/servers.sh beside pottery's Redlock.

    pip install ./bindings-python redis pottery      # a release build
    python3 bindings-python/bench.py [--url redis://127.0.0.1:6379] [--seconds 3]
"""

from __future__ import annotations

import argparse
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


if __name__ == "__main__":
    main()
