"""Each kind of lock beside the plain lock, from Python, in one run on one Redis: the uncontended
acquire+release pair of the fair lock, the read half of a read-write lock and a semaphore permit
beside the plain lock's (rounds alternate between the kinds, so that the machine's drift falls on
all of them alike), the same for the fair lock on asyncio, and 4 processes taking one lock for
sections that read and write a counter over a plain socket (a GET and a SET): sections/s, how many
sections were handed to another process, and the longest wait, for the fair lock beside the plain
lock.

    python3 bindings-python/bench_kinds.py [--url redis://127.0.0.1:6379] [--rounds 10] [-n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid

import polylock


def p50_us(times: list[float]) -> float:
    return statistics.median(times) * 1e6


def timed(pair, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        pair()
        out.append(time.perf_counter() - t)
    return out


def raw_ping(url: str, n: int) -> float:
    parsed = urllib.parse.urlparse(url)
    s = socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def ping() -> None:
        s.sendall(b"PING\r\n")
        s.recv(100)

    timed(ping, 200)
    p = p50_us(timed(ping, n))
    s.close()
    return p


def sync_kinds(url: str, rounds: int, n: int) -> dict[str, float]:
    c = polylock.connect(url)
    tag = uuid.uuid4().hex[:8]
    plain = c.lock(f"bench-kinds:{tag}:plain")
    fair = c.fair_lock(f"bench-kinds:{tag}:fair")
    read = c.read_write_lock(f"bench-kinds:{tag}:rw").read_lock()
    sem = c.semaphore(f"bench-kinds:{tag}:sem")
    sem.try_set_permits(1)

    def lock_pair(lock):
        def pair() -> None:
            lock.acquire()
            lock.release()

        return pair

    def sem_pair() -> None:
        sem.acquire()
        sem.release()

    kinds = {"plain": lock_pair(plain), "fair": lock_pair(fair), "read": lock_pair(read), "semaphore": sem_pair}
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for pair in kinds.values():
        timed(pair, 200)
    for _ in range(rounds):
        for k, pair in kinds.items():
            times[k] += timed(pair, max(1, n // rounds))
    c.close()
    return {k: p50_us(v) for k, v in times.items()}


def asyncio_kinds(url: str, rounds: int, n: int) -> dict[str, float]:
    c = polylock.connect(url)

    async def main() -> dict[str, float]:
        tag = uuid.uuid4().hex[:8]
        locks = {"plain": c.lock(f"bench-kinds:{tag}:aplain"), "fair": c.fair_lock(f"bench-kinds:{tag}:afair")}
        times: dict[str, list[float]] = {k: [] for k in locks}

        async def run(lock, count: int, into: list[float] | None) -> None:
            for _ in range(count):
                t = time.perf_counter()
                await lock.acquire_async()
                await lock.release_async()
                if into is not None:
                    into.append(time.perf_counter() - t)

        for lock in locks.values():
            await run(lock, 200, None)
        for _ in range(rounds):
            for k, lock in locks.items():
                await run(lock, max(1, n // rounds), times[k])
        return {k: p50_us(v) for k, v in times.items()}

    out = asyncio.run(main())
    c.close()
    return out


CHILD = r"""
import json, socket, sys, time, urllib.parse
import polylock
url, name, fair, sections, counter = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), sys.argv[5]
c = polylock.connect(url)
lock = c.fair_lock(name) if fair else c.lock(name)
p = urllib.parse.urlparse(url)
s = socket.create_connection((p.hostname or "127.0.0.1", p.port or 6379))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
f = s.makefile("rb")
def cmd(*parts):
    s.sendall(("*%d\r\n" % len(parts) + "".join("$%d\r\n%s\r\n" % (len(x), x) for x in parts)).encode())
    line = f.readline()
    if line == b"$-1\r\n":
        return None
    if line.startswith(b"$"):
        return f.readline().strip()
    return line.strip()
out = []
print("ready", flush=True)
sys.stdin.readline()
for _ in range(sections):
    asked = time.monotonic()
    lock.acquire()
    got = time.monotonic()
    value = cmd("GET", counter)
    cmd("SET", counter, str(int(value or b"0") + 1))
    done = time.monotonic()
    lock.release()
    out.append((got, done, got - asked))
c.close()
print(json.dumps(out), flush=True)
"""


def contended(url: str, fair: bool, sections: int) -> dict[str, float]:
    name = f"bench-kinds:{uuid.uuid4().hex[:8]}:{'fair' if fair else 'plain'}"
    counter = f"{name}:counter"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, url, name, "1" if fair else "0", str(sections), counter],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:  # all start at once
        p.stdin.write("go\n")
        p.stdin.flush()
    records = []
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=300)
        records += [(got, done, waited, i) for got, done, waited in json.loads(out)]
    records.sort()
    overlaps = sum(1 for a, b in zip(records, records[1:]) if b[0] < a[1])
    handed = sum(1 for a, b in zip(records, records[1:]) if a[3] != b[3])
    span = records[-1][1] - records[0][0]
    client = socket.create_connection((urllib.parse.urlparse(url).hostname or "127.0.0.1", urllib.parse.urlparse(url).port or 6379))
    client.sendall(f"*2\r\n$3\r\nGET\r\n${len(counter)}\r\n{counter}\r\n".encode())
    client.recv(100)
    client.sendall(f"*2\r\n$3\r\nDEL\r\n${len(counter)}\r\n{counter}\r\n".encode())
    client.recv(100)
    client.close()
    return {
        "sections": len(records),
        "per_s": len(records) / span,
        "handed": handed / max(1, len(records) - 1),
        "longest_ms": max(r[2] for r in records) * 1e3,
        "overlaps": overlaps,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default=os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379"))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--sections", type=int, default=200, help="per process, in the contended run")
    ap.add_argument("--repeat", type=int, default=3, help="contended runs of each lock, alternating")
    a = ap.parse_args()
    ping = raw_ping(a.url, a.n)
    s = sync_kinds(a.url, a.rounds, a.n)
    print(f"polylock kinds beside the plain lock, Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(f"  Redis PING round trip (bare socket)  p50 {ping:8.1f} us   (the physical limit)")
    print(f"  plain lock pair                      p50 {s['plain']:8.1f} us")
    for k, target in (("fair", 1.3), ("read", 1.2), ("semaphore", 1.3)):
        print(f"  {k + ' pair':<36} p50 {s[k]:8.1f} us   {s[k] / s['plain']:.2f} x the plain pair   (target <= {target})")
    aio = asyncio_kinds(a.url, a.rounds, a.n)
    print(f"  asyncio plain pair                   p50 {aio['plain']:8.1f} us")
    print(f"  asyncio fair pair                    p50 {aio['fair']:8.1f} us   {aio['fair'] / aio['plain']:.2f} x the plain pair   (target <= 1.3)")
    # Alternating runs, each lock's median (by sections/s) reported: the machine's drift falls on both.
    runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    for _ in range(a.repeat):
        for fair_kind in (False, True):
            runs[fair_kind].append(contended(a.url, fair_kind, a.sections))
    plain, fair = (sorted(runs[k], key=lambda r: r["per_s"])[len(runs[k]) // 2] for k in (False, True))
    print(f"  (4 processes x {a.sections} sections, medians of {a.repeat} alternating runs)")
    for k, r in (("plain", plain), ("fair", fair)):
        print(f"  4 processes, one {k + ' lock':<11} {r['per_s']:7.0f} sections/s, {r['handed'] * 100:5.1f}% handed to another process, longest wait {r['longest_ms']:6.1f} ms, overlapping sections {r['overlaps']}")
    print(f"  fair beside plain, 4 processes       {fair['per_s'] / plain['per_s']:.2f} x the sections/s   (target >= 0.8, >= 90% handed over, longest wait <= the plain lock's)")


if __name__ == "__main__":
    main()
