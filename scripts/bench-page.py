#!/usr/bin/env python3
"""Write docs/src/performance.md from the reports scripts/bench.sh collected (one per benchmark).

    python3 scripts/bench-page.py --logs DIR --mode short|full [--note TEXT] --out FILE

Each benchmark prints a report: lines at the left margin head a part, indented lines are
"measure   values   (note)". Every indented line becomes a row of that part's table, split at
its first run of two or more spaces, its trailing parenthesis (targets, explanations) kept as a
note. Nothing is typed by hand: the page says where each table came from, when, on what.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BENCHES = [
    ("rust", "Rust: Redis, ZooKeeper and etcd", "core/benches/lock.rs: each server's cheapest round trip beside the lock; "
     "for Redis also a bare synchronous redis-rs pair of the same two scripts, the pair as a blocked thread "
     "(the C, Python and Java path) and as a runtime task (async Rust, Node), the other lock kinds, and 4 processes on one lock."),
    ("sql", "SQL: MariaDB and PostgreSQL", "core/benches/sql.rs: polylock's pair beside bare loops of the same driver, the "
     "modes taking turns in a shuffled order, each on a connection of its own."),
    ("python", "Python", "bindings-python/bench.py: beside redis-py's Lock and redis.asyncio's Lock (asyncio and uvloop), "
     "and RedLock beside pottery's, in the same run."),
    ("node", "Node", "bindings-node/bench/bench.js: beside node-redlock and redis-semaphore (both on ioredis), in the same run."),
    ("java", "Java", "bindings-java/bench.sh: LockBench beside Redisson in the same JVM, on the same Redis."),
    ("c", "C", "bindings-c/bench.sh: the C API beside the Rust API (blocking, and as an async task), alternating rounds."),
]


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


def versions(commit: str) -> list[tuple[str, str]]:
    pg = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    redisson = re.search(r"<artifactId>redisson</artifactId>\s*<version>([^<]+)",
                         (ROOT / "bindings-java/pom.xml").read_text())
    node_pkgs = ROOT / "bindings-node/bench/node_modules"

    def npm_version(name: str) -> str:
        try:
            import json
            return json.loads((node_pkgs / name / "package.json").read_text())["version"]
        except Exception:
            return "not installed"

    return [
        ("polylock", commit),
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


def cells(text: str) -> str:
    return text.replace("|", "\\|").strip()


def tables(report: str) -> str:
    """The report's lines as Markdown: a heading line per part, a table of its indented lines."""
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
    now = run_info.get("date") or datetime.datetime.fromtimestamp(first, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    commit = run_info.get("commit") or "not recorded (these logs predate run.txt)"
    page = [
        "# Performance",
        "",
        "<!-- Written by scripts/bench.sh (scripts/bench-page.py) from the benchmarks' own reports; do not",
        "edit by hand: run `bash scripts/bench.sh` to replace it. -->",
        "",
        "Every figure below comes from one run of `bash scripts/bench.sh"
        + (" --short" if a.mode == "short" else "")
        + "`: each benchmark runs polylock beside its peers in the same process or the same run, against",
        "the servers of `scripts/servers.sh` on 127.0.0.1, from a release build. Compare the ratios within",
        "a table; absolute times move with the machine. Why the code is shaped the way these figures",
        "show: [design notes](design-notes.md).",
        "",
    ]
    if a.mode == "short":
        page += ["This run used the short mode (about a second per measure), so its spread is wide.", ""]
    if a.note:
        page += [f"**Note on this run:** {a.note}", ""]
    page += ["| | |", "|---|---|", f"| date | {now} |", f"| machine | {cells(machine())} |"]
    page += [f"| {name} | {cells(v)} |" for name, v in versions(commit)]
    page.append("")
    for key, title, what in BENCHES:
        report = logs / f"{key}.txt"
        if not report.exists():
            continue
        status = (logs / f"{key}.status").read_text().strip() if (logs / f"{key}.status").exists() \
            else "did not finish"
        cmd = (logs / f"{key}.cmd").read_text().strip() if (logs / f"{key}.cmd").exists() else ""
        secs = (logs / f"{key}.seconds").read_text().strip() if (logs / f"{key}.seconds").exists() else "?"
        page += [f"## {title}", "", what, "", f"`{cmd}` ({secs} s, {status})", ""]
        text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", report.read_text())  # Maven's colour codes
        page.append(tables(text) if text.strip() else "(no report)\n")
    Path(a.out).write_text("\n".join(page).rstrip() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
