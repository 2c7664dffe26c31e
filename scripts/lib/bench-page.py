#!/usr/bin/env python3
"""Write docs/src/performance.md from the reports scripts/bench.sh collected (one per benchmark).

    python3 scripts/lib/bench-page.py --logs DIR --mode short|full [--note TEXT] --out FILE

The page is for users: the run (date, machine, commit, versions), then one summary table per
runtime, each row polylock beside its peer and the floor no client can beat (the server's own
round trip), the ratio said plainly ("2.42x faster", "1.24x slower", "1.14x the plain pair's
time"), the goal the benchmark states and whether this run met it. Every figure is read from the
benchmarks' own reports by the extractors below; nothing is typed by hand. The raw reports, every
line and every round, go to DIR/raw.md (an artifact of the run, not the page).

The machine and the tools' versions are recorded into DIR (machine.txt, versions.txt) the first
time a page is written from DIR, so a page written again later from the same logs says what the
run ran on, not what the machine has now.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[2]

# ---- the run ----------------------------------------------------------------------------------


def sh(cmd: str) -> str:
    try:
        out = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30)
        text = (out.stdout or out.stderr).strip()
        return text.splitlines()[0].strip() if text else "not found"
    except Exception:
        return "not found"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB"
    except Exception:
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, Linux {platform.release()}"


def versions() -> list[tuple[str, str]]:
    pg = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    redisson = re.search(r"<artifactId>redisson</artifactId>\s*<version>([^<]+)",
                         (ROOT / "bindings-java/pom.xml").read_text())
    node_pkgs = ROOT / "bindings-node/bench/node_modules"

    def npm_version(name: str) -> str:
        try:
            return json.loads((node_pkgs / name / "package.json").read_text())["version"]
        except Exception:
            return "not installed"

    return [
        ("rustc", sh("rustc --version")),
        ("Redis", sh("redis-server --version")),
        ("ZooKeeper", sh("dpkg-query -W -f '${Version}' zookeeper")),
        ("etcd", sh("etcd --version")),
        ("MariaDB", sh("mariadbd --version || mysqld --version")),
        ("PostgreSQL", sh(f"{pg[-1]} --version") if pg else "not found"),
        ("Python", sh("python3 --version")),
        ("redis-py", sh("python3 -c 'import redis; print(redis.__version__)'")),
        ("Node", sh("node --version")),
        ("node-redlock, ioredis, redis-semaphore", ", ".join(npm_version(n) for n in ("redlock", "ioredis", "redis-semaphore"))),
        ("Java", sh("java -version 2>&1")),
        ("Redisson", redisson.group(1) if redisson else "unknown"),
    ]


def recorded(logs: Path, name: str, make: Callable[[], str]) -> str:
    """DIR/name if a page was written from these logs before, else make() (recorded there)."""
    f = logs / name
    if not f.exists():
        f.write_text(make().rstrip("\n") + "\n")
    return f.read_text().rstrip("\n")


def cells(text: str) -> str:
    return text.replace("|", "\\|").strip()


# ---- numbers, ratios and goals, said plainly --------------------------------------------------

NUM = r"([-+]?\d+(?:\.\d+)?)"


def us(x: float) -> str:
    return f"{x:.1f} µs"


def rate(x: float) -> str:
    return f"{x:.0f} pairs/s"


def speed(ours: float, theirs: float, higher_is_faster: bool = False) -> str:
    """polylock beside a peer: "N× faster" or "N× slower" (N >= 1), from times or from rates."""
    if ours <= 0 or theirs <= 0:
        return "n/a"
    r = (ours / theirs) if higher_is_faster else (theirs / ours)
    if f"{r:.2f}" == "1.00":
        return "as fast (1.00×)"
    return f"{r:.2f}× faster" if r > 1 else f"{1 / r:.2f}× slower"


@dataclass
class Goal:
    op: str  # "<=", ">=", "<", ">"
    limit: float
    text: str  # as the page shows it

    def met(self, value: float) -> str:
        ok = {"<=": value <= self.limit, ">=": value >= self.limit,
              "<": value < self.limit, ">": value > self.limit}[self.op]
        return "met" if ok else "**not met**"


def goal_in(line: str, unit: str = "") -> Optional[Goal]:
    """The goal a report line states: "(target <= 1.3)", "(target >= 35000 pairs/s)"."""
    m = re.search(r"target:?[^<>=]*?(<=|>=|<|>)\s*([^\d;,)]*?)" + NUM + r"\s*([^;,)]*)", line)
    if not m:
        return None
    op, words, limit, rest = m.group(1), m.group(2), float(m.group(3)), m.group(4).strip()
    shown = {"<=": "≤", ">=": "≥", "<": "<", ">": ">"}[op]
    text = f"{shown} {words}{m.group(3)}{unit or (' ' + rest if rest else '')}"
    return Goal(op, limit, re.sub(r"(\d)x\b", "\\1×", text).strip())


@dataclass
class Row:
    what: str
    ours: str
    beside: str = "–"
    floor: str = "–"
    ratio: str = "–"
    goal: str = "–"
    verdict: str = "no goal"


def row_with_goal(what: str, ours: str, beside: str, floor: str, ratio: str, value: float,
                  goal: Optional[Goal]) -> Row:
    if goal is None:
        return Row(what, ours, beside, floor, ratio)
    return Row(what, ours, beside, floor, ratio, goal.text, goal.met(value))


def find(pattern: str, text: str) -> Optional[re.Match]:
    return re.search(pattern, text, re.M)


# ---- one extractor per benchmark: its report's lines -> the summary rows ----------------------


def rust_parts(text: str) -> dict[str, str]:
    """lock.rs prints three reports, each under a line of its own: Redis, ZooKeeper, etcd."""
    parts = {"Redis": "", "ZooKeeper": "", "etcd": ""}
    part = "Redis"
    for line in text.splitlines(keepends=True):
        if line.startswith("polylock benchmark, ZooKeeper"):
            part = "ZooKeeper"
        elif line.startswith("polylock benchmark, etcd"):
            part = "etcd"
        elif line.startswith("polylock benchmark"):
            part = "Redis"
        parts[part] += line
    return parts


def rust_rows(report: str) -> list[tuple[str, list[Row]]]:
    out: list[tuple[str, list[Row]]] = []
    parts = rust_parts(report)
    text, zk_part, etcd_part = parts["Redis"], parts["ZooKeeper"], parts["etcd"]
    redis: list[Row] = []
    ping = find(r"Redis PING round trip\s+p50\s+" + NUM, text)
    floor = f"PING {us(float(ping.group(1)))}" if ping else "–"
    pair = find(r"uncontended lock\+unlock pair\s+p50\s+" + NUM + r" us\s+p99\s+" + NUM + r" us\s+" + NUM
                + r" pairs/s\s+\(a blocked thread", text)
    bare = find(r"same 2 scripts, bare redis-rs\s+p50\s+" + NUM, text)
    ratio = find(r"pair p50 / PING p50\s+" + NUM + r".*$", text)
    if pair and ratio:
        r = float(ratio.group(1))
        redis.append(row_with_goal("lock+unlock pair (a blocked thread: the C, Python, Java path) beside the floor",
                                   us(float(pair.group(1))), "–", floor, f"{r:.2f}× the floor's time", r,
                                   goal_in(ratio.group(0), "×")))
    if pair and bare:
        a, b = float(pair.group(1)), float(bare.group(1))
        redis.append(Row("the same pair beside bare redis-rs running the same 2 scripts", us(a),
                         f"bare redis-rs {us(b)}", floor, speed(a, b)))
    task = find(r"runtime task, alternating rounds p50\s+" + NUM + r" us\s+beside the blocked thread's\s+" + NUM
                + r" us: " + NUM + r" x.*$", text)
    if task:
        r = float(task.group(3))
        redis.append(row_with_goal("the pair as a runtime task (async Rust, Node) beside a blocked thread",
                                   us(float(task.group(1))), f"blocked thread {us(float(task.group(2)))}", floor,
                                   f"{r:.2f}× its time", r, goal_in(task.group(0), "×")))
    many = find(r"64 tasks, distinct keys\s+" + NUM + r" pairs/s\s+beside\s+" + NUM + r" PING/s.*$", text)
    if many:
        v = float(many.group(1))
        redis.append(row_with_goal("64 tasks, distinct keys", rate(v), "–", f"{float(many.group(2)):.0f} PING/s",
                                   "–", v, goal_in(many.group(0))))
    for label, what in (("read-lock pair", "read-lock pair beside the plain lock's pair"),
                        ("semaphore pair", "semaphore pair beside the plain lock's pair"),
                        ("fair-lock pair", "fair-lock pair beside the plain lock's pair")):
        m = find(re.escape(label) + r", alternating\s+p50\s+" + NUM + r" us\s+beside the plain pair\s+" + NUM
                 + r" us: " + NUM + r" x.*$", text)
        if m:
            r = float(m.group(3))
            redis.append(row_with_goal(what, us(float(m.group(1))), f"plain pair {us(float(m.group(2)))}", floor,
                                       f"{r:.2f}× its time", r, goal_in(m.group(0), "×")))
    fair4 = find(r"fair beside plain, 4 processes\s+" + NUM + r" x the plain lock's sections/s.*$", text)
    if fair4:
        r = float(fair4.group(1))
        g = goal_in(fair4.group(0), "×")
        redis.append(row_with_goal("4 processes contending: the fair lock's sections/s beside the plain lock's",
                                   "fair lock", "plain lock", "–", f"{r:.2f}× its sections/s", r, g))
    metrics = find(r"metrics on / off, alternating\s+p50\s+" + NUM + r" us / \s*" + NUM + r" us: " + NUM + r" %.*$", text)
    if metrics:
        d = float(metrics.group(3))
        g = goal_in(metrics.group(0), " %")
        redis.append(row_with_goal("metrics on, beside a client with metrics: false", us(float(metrics.group(1))),
                                   f"metrics off {us(float(metrics.group(2)))}", floor,
                                   f"{abs(d):.1f} % {'slower' if d > 0 else 'faster'}", d, g))
    red = find(r"RedLock pair, 3 masters\s+p50\s+" + NUM + r" us\s+beside PING of all 3 at once p50\s+" + NUM
               + r" us: " + NUM, text)
    if red:
        redis.append(Row("RedLock pair over 3 masters", us(float(red.group(1))), "–",
                         f"PING of all 3 at once {us(float(red.group(2)))}", f"{float(red.group(3)):.2f}× the floor's time"))
    for fair_word, what in (("lock", "4 processes on one lock: handoff"), ("fair", "4 processes on one fair lock: handoff")):
        m = find(r"contended, 4 processes, 1 " + fair_word + r"\s+handoff p50\s+" + NUM
                 + r" us\s+\d+ sections \((\d+)/s\).*overlapping sections (\d+)", text)
        if m:
            redis.append(Row(what, f"p50 {us(float(m.group(1)))}, {m.group(2)} sections/s, "
                             f"{m.group(3)} overlapping", "–", floor))
    if redis:
        out.append(("Redis", redis))

    zk: list[Row] = []
    zping = find(r"ZooKeeper exists\(/\) round trip\s+p50\s+" + NUM, zk_part)
    zfloor = f"`exists /` {us(float(zping.group(1)))}" if zping else "–"
    zpair = find(r"uncontended lock\+unlock pair\s+p50\s+" + NUM + r" us\s+p99\s+" + NUM + r" us\s+" + NUM
                 + r" pairs/s.*$", zk_part)
    if zpair:
        v = float(zpair.group(3))
        zk.append(row_with_goal("lock+unlock pair", f"p50 {us(float(zpair.group(1)))}, {rate(v)}", "–", zfloor,
                                "–", v, goal_in(zpair.group(0))))
    zcont = find(r"contended, 4 processes, 1 lock\s+handoff p50\s+" + NUM + r" us.*overlapping sections (\d+).*$", zk_part)
    if zcont:
        v = float(zcont.group(1))
        g = goal_in(zcont.group(0))
        if g and "ms" in zcont.group(0).split("target", 1)[1]:
            g = Goal(g.op, g.limit * 1000, g.text)  # the goal in ms, the handoff in µs
        zk.append(row_with_goal("4 processes on one lock: handoff", f"p50 {us(v)}, {zcont.group(2)} overlapping",
                                "–", zfloor, "–", v, g))
    if zk:
        out.append(("ZooKeeper", zk))

    etcd: list[Row] = []
    eget = find(r"etcd count-only get round trip\s+p50\s+" + NUM, etcd_part)
    efloor = f"a count-only get {us(float(eget.group(1)))}" if eget else "–"
    epair = find(r"uncontended lock\+unlock pair\s+p50\s+" + NUM + r" us\s+p99\s+" + NUM + r" us\s+" + NUM, etcd_part)
    ebare = find(r"bare etcd-client, same 2 txns\s+p50\s+" + NUM, etcd_part)
    ectl = find(r"etcdctl lock NAME -- true\s+p50\s+" + NUM, etcd_part)
    if epair and ebare:
        a, b = float(epair.group(1)), float(ebare.group(1))
        etcd.append(Row("lock+unlock pair beside bare etcd-client sending the same 2 transactions", us(a),
                        f"bare etcd-client {us(b)}", efloor, speed(a, b)))
    if epair and ectl:
        a, b = float(epair.group(1)), float(ectl.group(1))
        etcd.append(Row("the same pair beside `etcdctl lock NAME -- true` (a process each time)", us(a),
                        f"etcdctl {us(b)}", efloor, speed(a, b)))
    econt = find(r"contended, 4 processes, 1 lock\s+handoff p50\s+" + NUM + r" us\s+\d+ sections \((\d+)/s\).*overlapping sections (\d+)", etcd_part)
    if econt:
        etcd.append(Row("4 processes on one lock: handoff", f"p50 {us(float(econt.group(1)))}, {econt.group(2)} "
                        f"sections/s, {econt.group(3)} overlapping", "–", efloor))
    if etcd:
        out.append(("etcd", etcd))
    return out


def sql_rows(text: str) -> list[tuple[str, list[Row]]]:
    out: list[tuple[str, list[Row]]] = []
    parts = re.split(r"^(?=(?:MariaDB GET_LOCK|PostgreSQL advisory):)", text, flags=re.M)
    for part in parts:
        head = re.match(r"(MariaDB GET_LOCK|PostgreSQL advisory):(.*)$", part, re.M)
        if not head:
            continue
        floors = re.findall(r"\|\s*([^|]+?) p50 " + NUM + r" us \(\d+ pairs/s\)", head.group(2))
        if not floors:
            continue
        bare_name, bare = floors[0][0], float(floors[0][1])
        fastest = min(floors, key=lambda f: float(f[1]))
        floor = f"{fastest[0]}: {us(float(fastest[1]))}"
        rows: list[Row] = []
        for m in re.finditer(r"polylock pair, (.+?): p50 " + NUM + r" us \(\d+ pairs/s\), ratio " + NUM
                             + r"x the fastest floor.*$", part, re.M):
            a, r = float(m.group(2)), float(m.group(3))
            rows.append(row_with_goal(f"lock+unlock pair, {m.group(1)}", us(a),
                                      f"{bare_name}: {us(bare)} (polylock {speed(a, bare)})", floor,
                                      f"{r:.2f}× the floor's time", r, goal_in(m.group(0), "×")))
        name = "MariaDB" if head.group(1).startswith("MariaDB") else "PostgreSQL"
        if rows:
            out.append((name, rows))
    return out


def python_rows(text: str) -> list[tuple[str, list[Row]]]:
    rows: list[Row] = []
    ping = find(r"PING round trip, bare socket\s+p50\s+" + NUM, text)
    floor = f"PING {us(float(ping.group(1)))}" if ping else "–"
    pl = find(r"uncontended pair, polylock\s+p50\s+" + NUM + r" us\s+" + NUM + r" pairs/s", text)
    rp = find(r"uncontended pair, redis-py Lock\s+p50\s+" + NUM + r" us\s+" + NUM + r" pairs/s", text)
    ratio = find(r"uncontended ratio\s+" + NUM + r" x.*$", text)
    if pl and rp and ratio:
        r = float(ratio.group(1))
        rows.append(row_with_goal("lock+unlock pair, sync, beside redis-py's `Lock`",
                                  f"{us(float(pl.group(1)))}, {rate(float(pl.group(2)))}",
                                  f"redis-py {us(float(rp.group(1)))}, {rate(float(rp.group(2)))}", floor,
                                  speed(r, 1.0, True) + " (pairs/s)", r, goal_in(ratio.group(0), "×")))
    t16 = find(r"16 threads, distinct keys\s+polylock\s+" + NUM + r" pairs/s\s+redis-py\s+" + NUM
               + r" pairs/s\s+ratio " + NUM + r" x.*$", text)
    if t16:
        r = float(t16.group(3))
        rows.append(row_with_goal("16 threads, distinct keys", rate(float(t16.group(1))),
                                  f"redis-py {rate(float(t16.group(2)))}", floor, speed(r, 1.0, True), r,
                                  goal_in(t16.group(0), "×")))
    for loop in ("asyncio", "uvloop"):
        drv = find(loop + r": pair p50, polylock loop driver\s+" + NUM + r" us\s+" + NUM + r" pairs/s\s+64 tasks\s+"
                   + NUM + r" pairs/s", text)
        rt = find(loop + r": pair p50, polylock runtime driver\s+" + NUM + r" us\s+" + NUM + r" pairs/s\s+64 tasks\s+"
                  + NUM + r" pairs/s", text)
        ra = find(loop + r": pair p50, redis.asyncio Lock\s+" + NUM + r" us\s+" + NUM + r" pairs/s\s+64 tasks\s+"
                  + NUM + r" pairs/s", text)
        sumline = find(loop + r": loop driver / redis.asyncio: pair " + NUM + r" x \(([^)]*)\), 64 tasks " + NUM
                       + r" x \(([^)]*)\); pair " + NUM + r" x the sync pair's p50 \(([^)]*)\)", text)
        if drv and ra and sumline:
            r1, r64, rs = float(sumline.group(1)), float(sumline.group(3)), float(sumline.group(5))
            rows.append(row_with_goal(f"{loop}: pair on the loop driver beside redis.asyncio's `Lock`",
                                      f"{us(float(drv.group(1)))}, {rate(float(drv.group(2)))}",
                                      f"redis.asyncio {us(float(ra.group(1)))}, {rate(float(ra.group(2)))}", floor,
                                      speed(r1, 1.0, True) + " (pairs/s)", r1, goal_in(sumline.group(2), "×")))
            rows.append(row_with_goal(f"{loop}: 64 tasks on the loop driver beside redis.asyncio",
                                      rate(float(drv.group(3))), f"redis.asyncio {rate(float(ra.group(3)))}", floor,
                                      speed(r64, 1.0, True), r64, goal_in(sumline.group(4), "×")))
            rows.append(row_with_goal(f"{loop}: the loop driver's pair beside the sync pair",
                                      us(float(drv.group(1))), f"sync pair {us(float(pl.group(1)))}" if pl else "–",
                                      floor, f"{rs:.2f}× its time", rs, goal_in(sumline.group(6), "×")))
        if rt and ra:
            a, b = float(rt.group(2)), float(ra.group(2))
            rows.append(Row(f"{loop}: pair on the runtime driver (`POLYLOCK_PY_DRIVER=runtime`) beside redis.asyncio",
                            f"{us(float(rt.group(1)))}, {rate(a)}", f"redis.asyncio {rate(b)}", floor,
                            speed(a, b, True) + " (pairs/s)"))
    red = find(r"PING of all 3 at once, bare sockets p50\s+" + NUM, text)
    rpl = find(r"RedLock pair, polylock\s+p50\s+" + NUM, text)
    rpo = find(r"RedLock pair, pottery\s+p50\s+" + NUM, text)
    if rpl and rpo:
        a, b = float(rpl.group(1)), float(rpo.group(1))
        rows.append(Row("RedLock pair over 3 masters beside pottery's `Redlock`", us(a), f"pottery {us(b)}",
                        f"PING of all 3 at once {us(float(red.group(1)))}" if red else "–", speed(a, b)))
    return [("", rows)] if rows else []


def node_rows(text: str) -> list[tuple[str, list[Row]]]:
    rows: list[Row] = []
    ping = find(r"ioredis PING round trip\s+p50\s+" + NUM, text)
    floor = f"ioredis PING {us(float(ping.group(1)))}" if ping else "–"
    pairs = {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4))) for m in re.finditer(
        r"uncontended pair, (polylock, loop driver|polylock, runtime driver|node-redlock|redis-semaphore)\s+p50\s+"
        + NUM + r" us\s+" + NUM + r" pairs/s\s+64 handles\s+" + NUM + r" pairs/s", text)}
    rl = pairs.get("node-redlock")
    for drv in ("loop", "runtime"):
        ours = pairs.get(f"polylock, {drv} driver")
        summary = find(drv + r" driver / node-redlock: uncontended " + NUM + r" x(?: \(([^)]*)\))?, 64 handles "
                       + NUM + r" x(?: \(([^)]*)\))?", text)
        if ours and rl and summary:
            r1, r64 = float(summary.group(1)), float(summary.group(3))
            g1 = goal_in(summary.group(2), "×") if summary.group(2) else None
            g64 = goal_in(summary.group(4), "×") if summary.group(4) else None
            label = "the loop driver (the default)" if drv == "loop" else "the runtime driver (`POLYLOCK_NODE_DRIVER=runtime`)"
            rows.append(row_with_goal(f"lock+unlock pair on {label} beside node-redlock",
                                      f"{us(ours[0])}, {rate(ours[1])}", f"node-redlock {us(rl[0])}, {rate(rl[1])}",
                                      floor, speed(r1, 1.0, True) + " (pairs/s)", r1, g1))
            rows.append(row_with_goal(f"64 handles on {label} beside node-redlock", rate(ours[2]),
                                      f"node-redlock {rate(rl[2])}", floor, speed(r64, 1.0, True), r64, g64))
    sem, loop = pairs.get("redis-semaphore"), pairs.get("polylock, loop driver")
    if sem and loop:
        rows.append(Row("lock+unlock pair on the loop driver beside redis-semaphore's `Mutex`",
                        f"{us(loop[0])}, {rate(loop[1])}", f"redis-semaphore {us(sem[0])}, {rate(sem[1])}", floor,
                        speed(loop[1], sem[1], True) + " (pairs/s)"))
    for m in re.finditer(r"fair-lock pair, (loop|runtime) driver\s+p50\s+" + NUM + r" us\s+" + NUM
                         + r" x the plain pair.*$", text, re.M):
        r = float(m.group(3))
        plain = pairs.get(f"polylock, {m.group(1)} driver")
        rows.append(row_with_goal(f"fair-lock pair on the {m.group(1)} driver beside its plain pair",
                                  us(float(m.group(2))), f"plain pair {us(plain[0])}" if plain else "–", floor,
                                  f"{r:.2f}× its time", r, goal_in(m.group(0), "×")))
    red = find(r"ioredis PING of all 3 at once\s+p50\s+" + NUM, text)
    rpl = find(r"RedLock pair, polylock\s+p50\s+" + NUM, text)
    rnr = find(r"RedLock pair, node-redlock\s+p50\s+" + NUM, text)
    if rpl and rnr:
        a, b = float(rpl.group(1)), float(rnr.group(1))
        rows.append(Row("RedLock pair over 3 masters beside node-redlock", us(a), f"node-redlock {us(b)}",
                        f"PING of all 3 at once {us(float(red.group(1)))}" if red else "–", speed(a, b)))
    return [("", rows)] if rows else []


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def java_rows(text: str) -> list[tuple[str, list[Row]]]:
    rows: list[Row] = []
    ping = find(r"Redis PING round trip \(raw socket\): p50 " + NUM, text)
    floor = f"PING {us(float(ping.group(1)))}" if ping else "–"
    n = len(re.findall(r"^-- round \d+", text, re.M))
    of = f" (median of {n} rounds)" if n > 1 else ""

    def each(pattern: str) -> list[tuple[float, ...]]:
        return [tuple(float(g) for g in m.groups() if g is not None and re.fullmatch(NUM, g))
                for m in re.finditer(pattern, text, re.M)]

    unc = each(r"^uncontended pair\s+redisson p50\s+" + NUM + r" us\s+" + NUM + r" pairs/s \| polylock p50\s+" + NUM
               + r" us\s+" + NUM + r" pairs/s \| " + NUM + r"x")
    if unc:
        m = [median([u[i] for u in unc]) for i in range(5)]
        rows.append(Row("lock+unlock pair beside Redisson's `RLock`" + of, f"{us(m[2])}, {rate(m[3])}",
                        f"Redisson {us(m[0])}, {rate(m[1])}", floor, speed(m[4], 1.0, True) + " (pairs/s)"))
    for label, what in (("64 threads, distinct keys", "64 threads, distinct keys"),
                        ("4 threads, one lock", "4 threads on one lock")):
        xs = each("^" + re.escape(label) + r"\s+redisson\s+" + NUM + r" pairs/s \| polylock\s+" + NUM
                  + r" pairs/s \| " + NUM + r"x")
        if xs:
            m = [median([x[i] for x in xs]) for i in range(3)]
            rows.append(Row(what + of, rate(m[1]), f"Redisson {rate(m[0])}", floor, speed(m[2], 1.0, True)))
    sem_line = find(r"^semaphore pair.*\(target[^)]*\)", text)
    sem = each(r"^semaphore pair\s+redisson p50\s+" + NUM + r" us\s+" + NUM + r" pairs/s \| polylock p50\s+" + NUM
               + r" us\s+" + NUM + r" pairs/s \| " + NUM + r"x")
    if sem:
        m = [median([s[i] for s in sem]) for i in range(5)]
        rows.append(row_with_goal("semaphore pair beside Redisson's `RSemaphore`" + of, f"{us(m[2])}, {rate(m[3])}",
                                  f"Redisson {us(m[0])}, {rate(m[1])}", floor, speed(m[4], 1.0, True) + " (pairs/s)",
                                  m[4], goal_in(sem_line.group(0), "×") if sem_line else None))
    for kind, what in (("semaphore", "semaphore pair beside polylock's lock pair"),
                       ("fair-lock", "fair-lock pair beside polylock's lock pair")):
        line = find(r"^polylock " + kind + r" pair p50.*$", text)
        xs = each(r"^polylock " + kind + r" pair p50 " + NUM + r" us beside its lock pair p50 " + NUM + r" us: " + NUM + "x")
        if xs:
            m = [median([x[i] for x in xs]) for i in range(3)]
            rows.append(row_with_goal(what + of, us(m[0]), f"lock pair {us(m[1])}", floor, f"{m[2]:.2f}× its time",
                                      m[2], goal_in(line.group(0), "×") if line else None))
    return [("", rows)] if rows else []


def c_rows(text: str) -> list[tuple[str, list[Row]]]:
    rows: list[Row] = []
    rounds = [tuple(float(x) for x in m.groups()) for m in re.finditer(
        r"^round \d+: pair p50 through C " + NUM + r" us; Rust async on the runtime " + NUM
        + r" us; Rust blocking this thread " + NUM + r" us", text, re.M)]
    n = len(rounds)
    c_med = median([r[0] for r in rounds]) if rounds else None
    a_med = median([r[1] for r in rounds]) if rounds else None
    b_med = median([r[2] for r in rounds]) if rounds else None
    vs = find(r"C caller vs async Rust:\s+" + NUM + r" us.*$", text)
    if vs:
        d = float(vs.group(1))
        rows.append(row_with_goal(f"lock+unlock pair through the C API beside async Rust (medians of {n} rounds)",
                                  us(c_med) if c_med is not None else "–",
                                  f"async Rust {us(a_med)}" if a_med is not None else "–", "–",
                                  f"{d:+.1f} µs per pair", d, goal_in(vs.group(0), " µs")))
    ffi = find(r"of which the C boundary itself:\s+" + NUM + r" us", text)
    if ffi:
        rows.append(Row("of that, the C boundary itself (beside Rust blocking the same thread)",
                        us(c_med) if c_med is not None else "–",
                        f"Rust blocking {us(b_med)}" if b_med is not None else "–", "–",
                        f"{float(ffi.group(1)):+.1f} µs per pair"))
    fair = find(r"fair-lock pair p50 " + NUM + r" us beside the plain pair " + NUM + r" us: " + NUM + r" x.*$", text)
    if fair:
        r = float(fair.group(3))
        rows.append(row_with_goal("fair-lock pair beside the plain pair", us(float(fair.group(1))),
                                  f"plain pair {us(float(fair.group(2)))}", "–", f"{r:.2f}× its time", r,
                                  goal_in(fair.group(0), "×")))
    return [("", rows)] if rows else []


BENCHES = [
    ("rust", "Rust: Redis, ZooKeeper and etcd", rust_rows,
     "`core/benches/lock.rs`: the Rust API beside each server's cheapest round trip, a bare redis-rs "
     "client running the same two scripts, a bare etcd-client loop and `etcdctl lock`."),
    ("sql", "SQL: MariaDB and PostgreSQL", sql_rows,
     "`core/benches/sql.rs`: polylock's pair beside bare loops of the same driver, the modes taking turns "
     "in a shuffled order, each on a connection of its own. The floor is the fastest bare loop."),
    ("python", "Python", python_rows,
     "`bindings-python/bench.py`: beside redis-py's `Lock`, redis.asyncio's `Lock` (asyncio and uvloop) "
     "and pottery's `Redlock`, in the same run."),
    ("node", "Node", node_rows,
     "`bindings-node/bench/bench.js`: beside node-redlock and redis-semaphore (both on ioredis), in the same run."),
    ("java", "Java", java_rows,
     "`bindings-java/bench.sh`: `LockBench` beside Redisson in the same JVM, on the same Redis."),
    ("c", "C", c_rows,
     "`bindings-c/bench.sh`: the C API beside the Rust API (async, and blocking the same thread), in "
     "alternating rounds."),
]


def table(rows: list[Row]) -> list[str]:
    out = ["| measure | polylock | beside | floor | ratio | goal | this run |", "|---|---|---|---|---|---|---|"]
    out += [f"| {cells(r.what)} | {cells(r.ours)} | {cells(r.beside)} | {cells(r.floor)} | {cells(r.ratio)} | "
            f"{cells(r.goal)} | {r.verdict} |" for r in rows]
    return out


# ---- the raw reports: an artifact of the run, every line and every round ---------------------


def raw_tables(report: str) -> str:
    """A report's lines as Markdown: a heading line per part, a table of its indented lines."""
    out: list[str] = []
    rows: list[tuple[str, str, str]] = []

    def flush() -> None:
        if rows:
            out.append("| measure | result | note |")
            out.append("|---|---|---|")
            out.extend(f"| {cells(a)} | {cells(b)} | {cells(c)} |" for a, b, c in rows)
            out.append("")
            rows.clear()

    for raw in report.splitlines():
        line = raw.rstrip()
        if not line.strip() or set(line.strip()) <= set("=-|"):
            continue
        if not raw.startswith((" ", "\t")):
            flush()
            out.append(f"**{cells(line.strip())}**")
            out.append("")
            continue
        body = line.strip()
        note = ""
        m = re.search(r"\s+\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*$", body)
        if m:
            note, body = m.group(1), body[: m.start()]
        parts = re.split(r"\s{2,}", body, maxsplit=1)
        label, value = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
        rows.append((label, re.sub(r"\s{2,}", " ", value), note))
    flush()
    return "\n".join(out).rstrip() + "\n"


# ---- the page ---------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", required=True)
    ap.add_argument("--mode", default="full")
    ap.add_argument("--note", default="")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    logs = Path(a.logs)
    # The run's own date and commit (bench.sh writes run.txt first); for older logs, the date of
    # their earliest file and an unknown commit.
    run_info = dict(l.split("=", 1) for l in (logs / "run.txt").read_text().splitlines()
                    if "=" in l) if (logs / "run.txt").exists() else {}
    first = min((f.stat().st_mtime for f in logs.iterdir()), default=datetime.datetime.now().timestamp())
    date = run_info.get("date") or datetime.datetime.fromtimestamp(first, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    commit = run_info.get("commit") or "not recorded (these logs predate run.txt)"
    box = recorded(logs, "machine.txt", machine)
    tools = [tuple(l.split("\t", 1)) for l in recorded(
        logs, "versions.txt", lambda: "\n".join(f"{k}\t{v}" for k, v in versions())).splitlines() if "\t" in l]
    short = a.mode == "short"
    page = [
        "# Performance",
        "",
        "<!-- Written by scripts/bench.sh (scripts/lib/bench-page.py) from the benchmarks' own reports; do not",
        "edit by hand: run `bash scripts/bench.sh` to replace it. -->",
        "",
        "How fast polylock takes and gives back a lock, beside the library you would use instead and",
        "beside the **floor**: the server's cheapest round trip on the same connection, which no client",
        "can beat. Every figure comes from one run of `bash scripts/bench.sh" + (" --short" if short else "")
        + "` against the servers of",
        "`scripts/servers.sh` on 127.0.0.1, from a release build; each benchmark runs polylock and its peer",
        "in the same process or the same run. A pair is one acquire and its release; times are medians",
        "(p50). Absolute times move with the machine: compare within a row. A **goal** is the one the",
        "benchmark itself states; \"not met\" means this run missed it. Why the code is shaped this way:",
        "[design notes](design-notes.md).",
        "",
    ]
    if short:
        page += ["This run used the short mode (about a second per measure), so its spread is wide.", ""]
    if a.note:
        page += [f"**Note on this run:** {a.note}", ""]
    page += ["| the run | |", "|---|---|", f"| date | {date} |", f"| machine | {cells(box)} |",
             f"| polylock commit | {cells(commit)} |"]
    page += [f"| {name} | {cells(v)} |" for name, v in tools]
    page.append("")
    raw = [f"# Raw benchmark reports of {date} (commit {commit})", "",
           "Every line of every report, as the benchmarks printed them (rounds included); the summary",
           "is docs/src/performance.md.", ""]
    met = missed = 0
    for key, title, extract, what in BENCHES:
        report = logs / f"{key}.txt"
        if not report.exists():
            continue
        status = (logs / f"{key}.status").read_text().strip() if (logs / f"{key}.status").exists() \
            else "did not finish"
        cmd = (logs / f"{key}.cmd").read_text().strip() if (logs / f"{key}.cmd").exists() else ""
        secs = (logs / f"{key}.seconds").read_text().strip() if (logs / f"{key}.seconds").exists() else "?"
        text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", report.read_text())  # Maven's colour codes
        page += [f"## {title}", "", what, f"Ran as `{cmd}` ({secs} s, {status}).", ""]
        groups = extract(text) if text.strip() else []
        if not groups:
            page += ["(This run's report has none of the figures this page summarises.)", ""]
        for sub, rows in groups:
            if sub:
                page += [f"**{sub}**", ""]
            page += table(rows) + [""]
            met += sum(r.verdict == "met" for r in rows)
            missed += sum(r.verdict != "met" and r.verdict != "no goal" for r in rows)
        raw += [f"## {title}", "", f"`{cmd}` ({secs} s, {status})", ""]
        raw.append(raw_tables(text) if text.strip() else "(no report)\n")
    page += [f"Goals met in this run: {met}; not met: {missed}. The raw reports of the run, every line and",
             "every round, are `bench-logs/raw.md` in its target directory (`$CARGO_TARGET_DIR`, default",
             "`target/`), next to the benchmarks' own logs."]
    Path(a.out).write_text("\n".join(page).rstrip() + "\n")
    (logs / "raw.md").write_text("\n".join(raw).rstrip() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
