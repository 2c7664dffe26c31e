"""A seckill (flash sale) buyer in Python, the same buyer as examples/rust/seckill.rs: the stock lives
in Redis (read with redis-py), one polylock lock keeps buyers from selling one item twice, and
each sale is a fenced write (client.fenced_write under the lock's fencing token), so a buyer whose
lease ended while it was paused cannot sell after a later buyer did. Prints one JSON line:
purchases and lock-wait p50/p99 in ms.

    python3 examples/python/seckill_buyer.py --url redis://127.0.0.1:6379 [--lock-url zk://...] --name goods
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import redis

import polylock


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="redis://127.0.0.1:6379")
    p.add_argument("--lock-url", default=None)
    p.add_argument("--name", default="goods")
    p.add_argument("--max", type=int, default=None)
    p.add_argument("--delay-ms", type=float, default=1.0)
    p.add_argument("--sections", default=None, help="write each critical section as 'start_us end_us token'")
    p.add_argument("--start-at", type=int, default=None, help="wall-clock ms since the epoch to start buying at")
    args = p.parse_args()
    lock_url: str = args.lock_url or args.url
    lock_name = f"/seckill/{args.name}" if lock_url.startswith("zk://") else f"seckill:{args.name}"
    stock_key, sold_key, token_key = (f"seckill:{args.name}:{k}" for k in ("stock", "sold", "last-token"))
    r = redis.Redis.from_url(args.url)
    waits: list[float] = []
    sections: list[tuple[int, int, int]] = []
    bought = 0
    with polylock.connect(lock_url) as client:
        # The fence is on the Redis of the stock; the lock may be elsewhere (ZooKeeper, SQL).
        fence = client if lock_url == args.url else polylock.connect(args.url)
        lock = client.lock(lock_name)
        if args.start_at is not None:
            time.sleep(max(0.0, args.start_at / 1e3 - time.time()))
        while args.max is None or bought < args.max:
            asked = time.monotonic()
            with lock:
                start = time.monotonic_ns() // 1000  # CLOCK_MONOTONIC, as every buyer stamps sections
                waits.append((time.monotonic() - asked) * 1e3)
                stock = int(r.get(stock_key) or 0)
                token = lock.fencing_token or 0
                if stock <= 0:
                    sections.append((start, time.monotonic_ns() // 1000, token))
                    break
                if token <= int(r.get(token_key) or 0):
                    print(f"fencing token {token} is not above the last one", file=sys.stderr)
                    return 1
                time.sleep(args.delay_ms / 1e3)
                sold = int(r.get(sold_key) or 0)
                fence.fenced_write(lock_name, token, [["SET", stock_key, stock - 1], ["SET", sold_key, sold + 1],
                                                      ["SET", token_key, token]])
                sections.append((start, time.monotonic_ns() // 1000, token))
            bought += 1
        if fence is not client:
            fence.close()
    if args.sections:
        with open(args.sections, "w") as f:
            f.writelines(f"{s} {e} {t}\n" for s, e, t in sections)
    waits.sort()

    def pct(q: float) -> float:
        return waits[int((len(waits) - 1) * q)] if waits else 0.0

    print(json.dumps({"purchases": bought, "wait_p50_ms": round(pct(0.5), 3), "wait_p99_ms": round(pct(0.99), 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
