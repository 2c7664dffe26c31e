#!/usr/bin/env python3
"""The flash sale of seed 002 with buyers in five runtimes on one lock (run it through
scripts/demo.sh, which builds the buyers).

Round 1 locks on Redis (Redisson's format), round 2 on ZooKeeper (Curator's), round 3 on
MariaDB/MySQL (GET_LOCK), round 4 on PostgreSQL (advisory locks); the stock is in Redis every time. Every buyer process tries until the stock is gone and records each critical
section (start, end, fencing token) on the machine's monotonic clock (CLOCK_MONOTONIC, read the
same way by every runtime). The demo prints a table, checks that the
sale sold exactly the stock, that no two sections overlap and that fencing tokens grow in time
order, writes a timeline SVG, and exits non-zero if anything is wrong.

Every sale is a fenced write (the stock is a fenced resource: a sale runs only if no later holder
of the lock wrote). Round 1 also has a late buyer (this script's `late-buyer`, on a 1 s lease): started
before the others, it takes the lock, reads the stock and stops itself (SIGSTOP); the others start
then and sell once its lease has ended, and when the demo wakes it (after a sale, and 3 s at
least) its sale is refused by the fence (STALE_TOKEN). Its
section is drawn as refused and is left out of the overlap and token checks (a section whose
write was refused may overlap the next holder's: that is what the fence is for).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]
RUNTIMES = ["rust", "c", "python", "node", "java"]
COLOURS = {"rust": "#ce422b", "c": "#555555", "python": "#3572a5", "node": "#3c873a", "java": "#e76f00"}


@dataclass
class Buyer:
    runtime: str
    index: int
    proc: subprocess.Popen[str] | None = None
    sections_file: str = ""
    result: dict[str, float] = field(default_factory=dict)
    sections: list[tuple[int, int, int]] = field(default_factory=list)
    error: str = ""
    late: bool = False  # the late buyer: stopped past its lease, its sale refused by the fence

    @property
    def label(self) -> str:
        return f"{self.runtime}-{self.index}"


def command(b: Buyer, redis_url: str, lock_url: str, name: str, delay_ms: int, start_at: int) -> list[str]:
    common = ["--url", redis_url, "--lock-url", lock_url, "--name", name, "--delay-ms", str(delay_ms),
              "--sections", b.sections_file, "--start-at", str(start_at)]
    if b.late:
        return [sys.executable, __file__, "late-buyer", *common]
    if b.runtime == "rust":
        return [os.environ.get("POLYLOCK_DEMO_RUST", str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release/examples/seckill")), *common, "buyer"]
    if b.runtime == "c":
        return [os.environ.get("POLYLOCK_DEMO_C", str(ROOT / "target/demo/seckill_buyer_c")), *common]
    if b.runtime == "python":
        return [sys.executable, str(ROOT / "examples/python/seckill_buyer.py"), *common]
    if b.runtime == "node":
        return ["node", str(ROOT / "examples/node/seckill_buyer.js"), *common]
    if b.runtime == "java":
        return ["java", "-cp", os.environ["POLYLOCK_DEMO_JAVA_CP"], "example.SeckillBuyer", *common]
    raise ValueError(b.runtime)


@dataclass
class Round:
    title: str
    lock_url: str
    buyers: list[Buyer]
    sold: int = 0
    left: int = 0
    overlaps: list[str] = field(default_factory=list)
    token_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_round(title: str, redis_url: str, lock_url: str, args: argparse.Namespace, tmp: Path) -> Round:
    name = f"demo-{title.lower()}-{os.getpid()}-{int(time.time())}"
    r = redis.Redis.from_url(redis_url)
    keys = [f"seckill:{name}:{k}" for k in ("stock", "sold", "last-token")]
    r.delete(*keys)
    r.set(keys[0], args.stock)
    buyers = [Buyer(rt, i + 1) for rt in args.runtimes for i in range(args.per_runtime)]
    if args.late_buyer and title.startswith("Round 1"):
        # First, alone: it takes the lock and stops itself inside its section before the others start.
        buyers.insert(0, Buyer("python", 0, late=True))
    start_at = int(time.time() * 1000) + args.start_delay_ms
    started = time.monotonic()
    for b in buyers:
        b.sections_file = str(tmp / f"{name}-{b.label}.txt")
        b.proc = subprocess.Popen(command(b, redis_url, lock_url, name, args.delay_ms, 0 if b.late else start_at),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if b.late:
            b.error = stopped(b)
            start_at = int(time.time() * 1000) + args.start_delay_ms
            threading.Thread(target=wake_late, args=(b, r, keys[1]), daemon=True).start()
    deadline = time.monotonic() + args.timeout
    for b in buyers:
        assert b.proc is not None
        try:
            out, err = b.proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            b.proc.kill()
            out, err = b.proc.communicate()
            b.error = f"timed out after {args.timeout} s"
        if b.proc.returncode != 0 and not b.error:
            last = (err.strip().splitlines() or [""])[-1]
            b.error = f"exit {b.proc.returncode}: {last[-300:]}"
        try:
            b.result = json.loads(out.strip().splitlines()[-1])
        except (IndexError, ValueError):
            b.error = b.error or f"no result line: {out.strip()[-200:]!r} {err.strip()[-400:]}"
        try:
            for line in Path(b.sections_file).read_text().splitlines():
                s, e, t = (int(x) for x in line.split())
                b.sections.append((s, e, t))
        except (OSError, ValueError) as ex:
            b.error = b.error or f"sections: {ex}"
    rd = Round(title, lock_url, buyers, seconds=time.monotonic() - started)
    rd.left = int(r.get(keys[0]) or 0)
    rd.sold = int(r.get(keys[1]) or 0)
    r.delete(*keys, f"polylock_fence:{{seckill:{name}}}", f"polylock_fence:{{/seckill/{name}}}")
    rd.overlaps, rd.token_errors = check_sections(buyers)
    return rd


LATE_STOP_S = 3.0  # how long the late buyer stays stopped: past its 1 s lease


def stopped(b: Buyer) -> str:
    """Wait (up to 60 s) for the late buyer to stop itself inside its section: "" or what went wrong."""
    assert b.proc is not None
    stat = Path(f"/proc/{b.proc.pid}/stat")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and b.proc.poll() is None:
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "T":
                return ""
        except (OSError, IndexError):
            pass
        time.sleep(0.01)
    return "the late buyer never stopped inside its section"


def wake_late(b: Buyer, r: "redis.Redis", sold_key: str) -> None:
    """Wake the stopped late buyer once its lease has long ended and the others sold (under newer
    tokens): LATE_STOP_S at least, and a sale (bounded by a minute)."""
    assert b.proc is not None
    time.sleep(LATE_STOP_S)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and int(r.get(sold_key) or 0) < 1:
        time.sleep(0.01)
    os.kill(b.proc.pid, signal.SIGCONT)


def late_buyer() -> int:
    """The late buyer of round 1 (see the module's doc): one sale, stopped before its write."""
    import polylock

    p = argparse.ArgumentParser(prog="demo.py late-buyer")
    for flag in ("--url", "--lock-url", "--name", "--delay-ms", "--sections", "--start-at"):
        p.add_argument(flag)
    a = p.parse_args(sys.argv[2:])
    lock_name = f"/seckill/{a.name}" if a.lock_url.startswith("zk://") else f"seckill:{a.name}"
    stock_key, sold_key, token_key = (f"seckill:{a.name}:{k}" for k in ("stock", "sold", "last-token"))
    r = redis.Redis.from_url(a.url)
    with polylock.connect(a.lock_url, watchdog_timeout=1.0) as client:
        fence = client if a.lock_url == a.url else polylock.connect(a.url)
        lock = client.lock(lock_name)
        lock.acquire()  # first: the demo starts the others once this one has stopped
        start = time.monotonic_ns() // 1000
        token = lock.fencing_token or 0
        stock, sold = int(r.get(stock_key) or 0), int(r.get(sold_key) or 0)
        os.kill(os.getpid(), signal.SIGSTOP)  # the demo wakes it after its lease ended
        try:
            fence.fenced_write(lock_name, token, [["SET", stock_key, stock - 1], ["SET", sold_key, sold + 1],
                                                  ["SET", token_key, token]])
            refused = False
        except polylock.StaleTokenError:
            refused = True
        end = time.monotonic_ns() // 1000
        try:
            lock.release()
        except polylock.LockLostError:
            pass  # told: the lease ended while it was stopped
        if fence is not client:
            fence.close()
    Path(a.sections).write_text(f"{start} {end} {token}\n")
    print(json.dumps({"purchases": 0 if refused else 1, "refused": int(refused), "token": token,
                      "wait_p50_ms": 0.0, "wait_p99_ms": 0.0}))
    return 0


def check_sections(buyers: list[Buyer]) -> tuple[list[str], list[str]]:
    """Overlapping critical sections, and fencing tokens that do not grow in time order (a late
    buyer's section, whose write the fence refused, aside)."""
    overlaps, token_errors = [], []
    every = sorted((s, e, t, b.label) for b in buyers if not b.late for (s, e, t) in b.sections)
    for prev, cur in zip(every, every[1:]):
        if cur[0] < prev[1]:
            overlaps.append(f"{prev[3]} [{prev[0]}, {prev[1]}] and {cur[3]} [{cur[0]}, {cur[1]}] overlap")
        if cur[2] <= prev[2]:
            token_errors.append(f"token {cur[2]} of {cur[3]} after {prev[2]} of {prev[3]}")
    return overlaps, token_errors


def self_test() -> int:
    """The checks catch what they are for (CI runs this beside the demo)."""
    a, b = Buyer("rust", 1), Buyer("java", 1)
    a.sections, b.sections = [(0, 10, 1), (30, 40, 3)], [(10, 20, 2), (45, 50, 4)]
    assert check_sections([a, b]) == ([], []), "clean sections"
    b.sections = [(10, 20, 2), (35, 50, 4)]
    overlaps, tokens = check_sections([a, b])
    assert len(overlaps) == 1 and not tokens, (overlaps, tokens)
    b.sections = [(10, 20, 2), (45, 50, 3)]
    overlaps, tokens = check_sections([a, b])
    assert not overlaps and len(tokens) == 1, (overlaps, tokens)
    print("demo self-test: overlaps and out-of-order tokens are detected")
    return 0


def report(rd: Round, stock: int) -> bool:
    shown = re.sub(r"://([^:/@]+):[^@/]*@", r"://\1:***@", rd.lock_url)  # no password in the output
    print(f"\n== {rd.title}: lock on {shown}, {len(rd.buyers)} buyer processes, stock {stock}")
    print(f"{'runtime':<8} {'process':<10} {'purchases':>9} {'sections':>8} {'wait p50 ms':>11} {'wait p99 ms':>11}  error")
    for b in rd.buyers:
        res = b.result
        print(f"{b.runtime:<8} {b.label:<10} {int(res.get('purchases', 0)):>9} {len(b.sections):>8} "
              f"{res.get('wait_p50_ms', float('nan')):>11.3f} {res.get('wait_p99_ms', float('nan')):>11.3f}  {b.error}")
    by_runtime = {rt: sum(int(b.result.get("purchases", 0)) for b in rd.buyers if b.runtime == rt)
                  for rt in dict.fromkeys(b.runtime for b in rd.buyers)}
    print("per runtime: " + ", ".join(f"{rt} {n}" for rt, n in by_runtime.items()))
    total = sum(by_runtime.values())
    oversold = max(0, total - stock) + max(0, -rd.left)
    sections = sum(len(b.sections) for b in rd.buyers)
    print(f"total: sold = {total} (counter {rd.sold}, left {rd.left}), oversold = {oversold}, "
          f"{sections} critical sections, overlaps = {len(rd.overlaps)}, "
          f"tokens out of order = {len(rd.token_errors)}, {rd.seconds:.1f} s")
    for line in (rd.overlaps + rd.token_errors)[:10]:
        print("  " + line)
    late_ok = True
    for b in (b for b in rd.buyers if b.late):
        late_ok = b.result.get("refused") == 1
        print(f"late buyer: took the lock first (token {b.result.get('token')}), was stopped past its 1 s lease "
              f"while the others sold; when it woke, its sale was "
              + ("refused by the fence (STALE_TOKEN)" if late_ok else "NOT refused: the fence failed"))
    errors = [b for b in rd.buyers if b.error]
    return (not errors and oversold == 0 and total == stock and rd.sold == stock and rd.left == 0
            and not rd.overlaps and not rd.token_errors and late_ok)


def svg(rounds: list[Round], path: Path, stock: int) -> None:
    width, left, row, gap = 1100, 110, 16, 46
    rows = sum(len(r.buyers) for r in rounds)
    height = 40 + rows * row + len(rounds) * gap + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">polylock flash sale: {stock} items, '
           f'buyers in {len(RUNTIMES)} runtimes, one lock; one bar per critical section</text>']
    y = 40
    for rd in rounds:
        spans = [(s, e) for b in rd.buyers for (s, e, _) in b.sections]
        if not spans:
            continue
        # From the first section of the sale: a late buyer's section, begun before the others
        # started, is cut at the left edge.
        sale = [s for b in rd.buyers if not b.late for (s, _, _) in b.sections] or [s for s, _ in spans]
        t0, t1 = min(sale), max(e for _, e in spans)
        scale = (width - left - 20) / max(1, t1 - t0)
        sold = sum(int(b.result.get("purchases", 0)) for b in rd.buyers)
        out.append(f'<text x="10" y="{y + 14}" font-weight="bold">{rd.title}: sold {sold}, '
                   f'overlaps {len(rd.overlaps)}, tokens out of order {len(rd.token_errors)}, '
                   f'{(t1 - t0) / 1000:.0f} ms</text>')
        y += 22
        for b in rd.buyers:
            out.append(f'<text x="10" y="{y + row - 4}">{b.label}</text>')
            out.append(f'<line x1="{left}" y1="{y + row / 2}" x2="{width - 20}" y2="{y + row / 2}" stroke="#eee"/>')
            for s, e, t in b.sections:
                s = max(s, t0)
                x = left + (s - t0) * scale
                w = max(0.8, (e - s) * scale)
                if b.late:
                    out.append(f'<rect x="{x:.2f}" y="{y + 2}" width="{w:.2f}" height="{row - 4}" fill="none" '
                               f'stroke="#d00" stroke-dasharray="4 2"><title>{b.label} token {t}: stopped past '
                               f'its lease, its sale refused by the fence</title></rect>')
                    out.append(f'<text x="{x + 4:.2f}" y="{y + row - 4}" fill="#d00">... stopped past its lease '
                               f'holding token {t}: its late sale refused by the fence (STALE_TOKEN)</text>')
                    continue
                out.append(f'<rect x="{x:.2f}" y="{y + 2}" width="{w:.2f}" height="{row - 4}" '
                           f'fill="{COLOURS[b.runtime]}"><title>{b.label} token {t}: '
                           f'{(s - t0) / 1000:.3f}-{(e - t0) / 1000:.3f} ms</title></rect>')
            y += row
        y += gap - 22
    x = left
    for rt in RUNTIMES:
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{COLOURS[rt]}"/>'
                   f'<text x="{x + 16}" y="{y + 10}">{rt}</text>')
        x += 80
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", action="append", default=[],
                   help="a Redis (redis://, rediss://), ZooKeeper (zk://), MySQL/MariaDB (mysql://) or PostgreSQL "
                        "(postgres://) URL to use instead of the local one; give it once per kind. The stock "
                        "always lives in the Redis")
    p.add_argument("--stock", type=int, default=100, help="items on sale in each round (default 100)")
    p.add_argument("--per-runtime", type=int, default=2, help="buyer processes per runtime (default 2)")
    p.add_argument("--runtimes", default=",".join(RUNTIMES), help="comma-separated subset of " + ",".join(RUNTIMES))
    p.add_argument("--delay-ms", type=int, default=1, help="pause inside each critical section (default 1)")
    p.add_argument("--start-delay-ms", type=int, default=4000,
                   help="time the buyers get to start and connect before the sale opens (default 4000)")
    p.add_argument("--timeout", type=float, default=300, help="seconds a round may take (default 300)")
    p.add_argument("--rounds", default="redis,zookeeper,mysql,postgres",
                   help="which rounds to run (default redis,zookeeper,mysql,postgres)")
    p.add_argument("--svg", default="demo-timeline.svg", help="where to write the timeline (default demo-timeline.svg)")
    p.add_argument("--self-test", action="store_true", help="check the demo's checks on made-up sections, then exit")
    p.add_argument("--no-late-buyer", dest="late_buyer", action="store_false",
                   help="leave out round 1's late buyer (stopped past its lease, its sale refused by the fence)")
    args = p.parse_args()
    if args.self_test:
        return self_test()
    args.runtimes = [r for r in args.runtimes.split(",") if r]
    bad = [r for r in args.runtimes if r not in RUNTIMES]
    if bad or args.stock < 1 or args.per_runtime < 1:
        p.error(f"unknown runtimes {bad}" if bad else "--stock and --per-runtime must be positive")
    # The last URL of each kind wins: demo.sh passes the local servers first, the user's after.
    def last(prefixes: tuple[str, ...], env: str, default: str) -> str:
        return ([u for u in args.url if u.startswith(prefixes)] or [os.environ.get(env, default)])[-1]

    redis_url = last(("redis://", "rediss://"), "POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379")
    zk_url = last(("zk://",), "POLYLOCK_ZK_URL", "zk://127.0.0.1:2181")
    mysql_url = last(("mysql://",), "POLYLOCK_MYSQL_URL", "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock")
    pg_url = last(("postgres://", "postgresql://"), "POLYLOCK_PG_URL", "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock")
    known = ("redis://", "rediss://", "zk://", "mysql://", "postgres://", "postgresql://")
    unknown = [u for u in args.url if not u.startswith(known)]
    if unknown:
        p.error(f"--url must be redis://, rediss://, zk://, mysql:// or postgres://, got {unknown}")
    plan = {"redis": ("Round 1 (Redis)", redis_url), "zookeeper": ("Round 2 (ZooKeeper)", zk_url),
            "mysql": ("Round 3 (MariaDB)", mysql_url), "postgres": ("Round 4 (PostgreSQL)", pg_url)}
    wrong = [k for k in args.rounds.split(",") if k not in plan]
    if wrong:
        p.error(f"unknown rounds {wrong}; choose from {','.join(plan)}")
    ok = True
    rounds = []
    with tempfile.TemporaryDirectory(prefix="polylock-demo-") as tmp:
        for key in args.rounds.split(","):
            title, lock_url = plan[key]
            rd = run_round(title, redis_url, lock_url, args, Path(tmp))
            ok = report(rd, args.stock) and ok
            rounds.append(rd)
    svg(rounds, Path(args.svg), args.stock)
    print(f"\ntimeline: {args.svg}")
    print("RESULT: " + ("OK: sold exactly the stock, never oversold, no overlapping sections"
                        if ok else "FAILED (see above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(late_buyer() if sys.argv[1:2] == ["late-buyer"] else main())
