#!/usr/bin/env python3
"""The randomized checker (issue 35 §5): workers in four runtimes (Rust, Python, Node, Java), CLI
holders and an operator do random operations on every primitive of every backend against the
local servers, each section of work reported to a fenced resource; then a checker reads the
resource's log and what is left on the servers.

What runs (all driven by one seed; `--seed S` replays the same decisions, timing aside):

- Workers (faults/worker_chaos.rs as the cargo example `chaos_worker`, faults/chaos_worker.py,
  faults/chaos_worker.js, faults/ChaosWorker.java), each with two actors (threads, tasks or async
  flows sharing one client per backend and one handle per primitive), each actor drawing its
  operations from a seeded mulberry32 generator that is the same in the four languages: acquire
  with a random wait and lease (the watchdog, or a short fixed lease where the backend has
  leases), try-lock, a wait cancelled midway (timeout, asyncio task cancel, AbortSignal,
  Thread.interrupt, a dropped Rust future), a section with a re-entrant acquire inside it,
  read-write locks, semaphores with random permits, fair locks. One Python worker forks now and
  then (also in the middle of a section): the child runs a short loop with clients of its own;
  a child that asks for ZooKeeper after its parent used it must get UnsupportedError at once.
- CLI holders: `polylock run --url U --name NAME --wait ... -- chaos.py section ...` whose
  command reports to the resource with POLYLOCK_FENCING_TOKEN; some get SIGINT while they wait
  or hold.
- An operator that force-unlocks a random exclusive lock now and then (the call's window is
  recorded with the resource's clock).

The resource is a line server in this process (as in faults/harness.py): `OP PRIM SECTION TOKEN
MODE` with OP one of BEGIN, WRITE, END. An exclusive lock's (mode x) BEGIN is accepted when its
token is larger than every token accepted before for that primitive, WRITE and END while it is
still the largest; a writer (w) likewise; a reader (r) while its token is larger than every
writer's; a semaphore's sections (s, TOKEN = permits taken) are always accepted. Every request is
logged with the resource's own clock.

The checker counts
- double holders: two sections of one exclusive or fair lock whose intervals overlap, or a write
  section overlapping any other section of its read-write lock, where neither worker was told
  its hold was lost (a section told of a loss may legitimately overlap the next holder);
- over-permit: more permits in concurrent sections of a semaphore than it has (sections told of
  a loss aside);
- untold: a section the resource refused, or during which the operator force-unlocked its lock,
  whose worker was never told (the lost signal, or LockLost from a release);
- left: after every process exited, what is left on each server: Redis keys of the run's prefix
  (a semaphore's count must equal its permits again; fencing counters are kept by design),
  ZooKeeper contender and lease nodes under the run's paths, MySQL/MariaDB locks of the run's
  names, PostgreSQL advisory locks (granted or waiting) of the run's keys, etcd keys under the
  run's prefix other than a semaphore's count.
Then it removes whatever the run created, looks again (nothing of the run's tag may remain on
any server, fencing counters included), and prints one summary line with the seed. Exit 0 only
when the last four counts are 0, every worker ran sections, and no worker reported an error
(a LockLost told on a force-unlocked lock aside) or printed a traceback or panic; a failing run
prints the command that replays it.

--self-test plants what the checker must find: a rogue writer (sections on exclusive locks
without the lock: double holders, and untold since the resource refuses them), semaphore
sections past the permits (over-permit), a worker that leaves a Redis lock behind, and a
ZooKeeper contender node, an etcd key, a MySQL named lock and a PostgreSQL advisory lock; it
exits 1 when it found each of them and nothing else, 3 otherwise.

Usage: chaos.py [--seconds N | --minutes M] [--seed S] [--self-test] [--no-java] [--no-node]
       chaos.py section ADDR PRIM SECTION MODE WRITES SLEEP_MS   (a CLI holder's command)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
WATCHDOG_MS = 3000  # the workers' watchdog lease: renewed every second
SESSION_MS = 8000  # ZooKeeper session
BACKENDS = ["redis", "zookeeper", "mysql", "postgres", "etcd"]
KINDS = ["lock", "fair", "rw", "sem"]
ZK_ROOT = "/polylock-chaos"
ETCD_ROOT = "polylock-chaos"
M32 = 0xFFFFFFFF


# The run's own links to the CLI and the Rust worker (see pin_binaries).
BIN: dict[str, Path] = {"polylock": TARGET / "release/polylock",
                        "chaos_worker": TARGET / "debug/examples/chaos_worker"}


def pin_binaries(tag: str) -> Optional[Path]:
    """Hard links (copies across file systems) of the CLI and the Rust worker for this run: a
    cargo build in the same target directory meanwhile (another checkout sharing it) replaces
    those files, and a holder started at that moment found no CLI."""
    folder = TARGET / "chaos-bin" / tag
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, path in list(BIN.items()):
            pinned = folder / name
            try:
                os.link(path, pinned)
            except OSError:
                shutil.copy2(path, pinned)
            BIN[name] = pinned
        return folder
    except OSError as e:
        say(f"running the binaries in place ({e})")
        return None


def say(*parts: object) -> None:
    print("chaos:", *parts, flush=True)


# --- the fenced resource -------------------------------------------------------------------------

class Resource:
    """The line server. Per primitive: the largest token accepted (any mode) and the largest
    writer's token; the log of every request with this process's monotonic clock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.max_all: dict[str, int] = {}
        self.max_w: dict[str, int] = {}
        self.log: list[tuple[float, str, str, str, int, str, bool]] = []  # t op prim sid token mode ok

    def handle(self, line: str) -> bool:
        op, prim, sid, token_text, mode = line.split()
        token = int(token_text)
        with self.lock:
            top, top_w = self.max_all.get(prim, -1), self.max_w.get(prim, -1)
            if mode == "s":
                ok = True
            elif mode == "r":
                ok = token > top_w
                if ok and op == "BEGIN":
                    self.max_all[prim] = max(top, token)
            elif op == "BEGIN":  # x, w
                ok = token > top
                if ok:
                    self.max_all[prim] = token
                    if mode == "w":
                        self.max_w[prim] = token
            else:
                ok = token == top
            self.log.append((time.monotonic(), op, prim, sid, token, mode, ok))
            return ok

    def serve(self) -> tuple[socketserver.ThreadingTCPServer, int]:
        resource = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    for raw in self.rfile:
                        try:
                            ok = resource.handle(raw.decode().strip())
                        except ValueError:
                            ok = False
                        self.wfile.write(b"OK\n" if ok else b"REFUSED\n")
                except ConnectionError:
                    pass  # a CLI holder's command killed midway (SIGINT, or --on-lost kill)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, server.server_address[1]


def section_command(addr: str, prim: str, sid: str, mode: str, writes: int, sleep_ms: int) -> int:
    """A CLI holder's command: one section with the token `polylock run` hands over. Stops at the
    first refusal, as every worker does. SIGINT (forwarded by polylock) ends it midway."""
    token = os.environ.get("POLYLOCK_FENCING_TOKEN", "0")
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as s:
        replies = s.makefile("r")
        steps = ["BEGIN"] + ["WRITE"] * writes + ["END"]
        for i, step in enumerate(steps):
            s.sendall(f"{step} {prim} {sid} {token} {mode}\n".encode())
            if replies.readline().strip() != "OK":
                return 3
            if i + 1 < len(steps):
                time.sleep(sleep_ms / 1000)
    return 0


# --- the plan: names of the run, what each backend supports --------------------------------------

@dataclass
class Prim:
    backend: str
    id: str  # backend/kind-i: the resource's name for it
    kind: str  # lock, fair, rw, sem
    name: str  # the name on the server
    permits: int = 0


@dataclass
class Plan:
    seed: int
    tag: str  # 8 hex digits, random per run (a replay gets new names)
    urls: dict[str, str]
    prims: list[Prim] = field(default_factory=list)
    lease: dict[str, bool] = field(default_factory=dict)  # fixed leases supported
    unsupported: list[str] = field(default_factory=list)
    leak_name: str = ""
    probe_names: dict[str, str] = field(default_factory=dict)

    def name(self, backend: str, kind: str, i: int) -> str:
        if backend == "redis":
            return f"chaos-{self.tag}:{kind}-{i}"
        if backend == "zookeeper":
            return f"{ZK_ROOT}/{self.tag}/{kind}-{i}"
        if backend == "etcd":
            return f"{ETCD_ROOT}/{self.tag}/{kind}-{i}"
        if backend == "mysql":
            return f"chaos-{self.tag}-{kind}-{i}"
        # PostgreSQL: 16 hex digits are the bigint key itself (core/src/sql/names.rs); the run's
        # tag is the key's high half, so pg_locks shows the run's locks by classid.
        return f"{self.tag}{KINDS.index(kind) + 1:x}{i:07x}"

    def write(self, path: Path, resource: str) -> None:
        lines = [f"resource\t{resource}", f"watchdog_ms\t{WATCHDOG_MS}", f"session_ms\t{SESSION_MS}"]
        for b, url in self.urls.items():
            lines.append(f"backend\t{b}\t{url}\t{1 if self.lease.get(b) else 0}")
        for p in self.prims:
            lines.append(f"prim\t{p.backend}\t{p.id}\t{p.kind}\t{p.name}\t{p.permits}")
        if self.leak_name:
            lines.append(f"leak\tredis\t{self.leak_name}")
        path.write_text("\n".join(lines) + "\n")


def make_plan(seed: int, urls: dict[str, str], rng: random.Random) -> Plan:
    """Names for every kind on every backend (two of each lock kind, one or two semaphores with
    1 to 3 permits); the probe in `probe` drops what a backend lacks."""
    tag = f"{int.from_bytes(os.urandom(4), 'big') & 0x7FFFFFFF:08x}"
    plan = Plan(seed, tag, urls)
    counts = {"lock": 2, "fair": 1, "rw": 2, "sem": 2}
    for b in BACKENDS:
        for kind in KINDS:
            for i in range(counts[kind]):
                permits = rng.randint(1, 3) if kind == "sem" else 0
                plan.prims.append(Prim(b, f"{b}/{kind}-{i}", kind, plan.name(b, kind, i), permits))
        plan.probe_names[b] = plan.name(b, "lock", 0xFFFF)
    plan.leak_name = f"chaos-{plan.tag}:leak"
    return plan


def probe(plan: Plan, clients: dict) -> None:
    """Make each handle: a kind the backend lacks is Unsupported at handle creation and is left
    out. A fixed lease is tried once on a probe lock. Semaphores get their permits."""
    import polylock
    kept = []
    for p in plan.prims:
        c = clients[p.backend]
        try:
            if p.kind == "lock":
                c.lock(p.name)
            elif p.kind == "fair":
                c.fair_lock(p.name)
            elif p.kind == "rw":
                c.read_write_lock(p.name)
            else:
                s = c.semaphore(p.name)
                s.try_set_permits(p.permits)
        except polylock.UnsupportedError:
            if f"{p.backend} {p.kind}" not in plan.unsupported:
                plan.unsupported.append(f"{p.backend} {p.kind}")
            continue
        kept.append(p)
    plan.prims = kept
    for b in BACKENDS:
        lk = clients[b].lock(plan.probe_names[b])
        try:
            if lk.acquire(blocking=False, lease=5.0):
                lk.release()
            plan.lease[b] = True
        except polylock.UnsupportedError:
            plan.lease[b] = False


# --- workers -------------------------------------------------------------------------------------

@dataclass
class Worker:
    wid: str
    runtime: str
    cmd: list[str]
    log_path: Path
    proc: Optional[subprocess.Popen] = None
    events: list = field(default_factory=list)
    reader: Optional[threading.Thread] = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=open(self.log_path, "w"),
                                     text=True, cwd=ROOT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                self.events.append(json.loads(line))
            except json.JSONDecodeError:
                self.events.append({"t": "error", "op": "output", "error": f"bad line {line[:120]!r}"})


def worker_seed(seed: int, i: int) -> int:
    return (seed * 0x9E3779B1 + (i + 1) * 0x85EBCA77) & M32


def make_workers(opts, plan_path: Path, run_dir: Path, seed: int, seconds: float) -> list[Worker]:
    jar = ROOT / "bindings-java/target/polylock-0.1.0.jar"
    fleet = [("rust", 2, ""), ("rust", 2, ""), ("python", 2, ""), ("python", 1, "fork"), ("node", 2, ""),
             ("java", 2, "")]
    wanted = set(opts.runtimes.split(","))
    if opts.no_node:
        wanted.discard("node")
    if opts.no_java:
        wanted.discard("java")
    fleet = [f for f in fleet if f[0] in wanted]
    workers = []
    counters: dict[str, int] = {}
    for i, (rt, actors, extra) in enumerate(fleet):
        n = counters.get(rt, 0)
        counters[rt] = n + 1
        wid = f"{ {'rust': 'rs', 'python': 'py', 'node': 'js', 'java': 'jv'}[rt]}{n}"
        args = [str(plan_path), wid, str(worker_seed(seed, i)), str(seconds), str(actors)]
        if extra:
            args.append(extra)
        if rt == "rust":
            cmd = [str(BIN["chaos_worker"]), *args]
        elif rt == "python":
            cmd = [sys.executable, str(ROOT / "faults/chaos_worker.py"), *args]
        elif rt == "node":
            cmd = ["node", str(ROOT / "faults/chaos_worker.js"), *args]
        else:
            cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-cp", f"{jar}:{TARGET / 'chaos-java'}", "ChaosWorker", *args]
        workers.append(Worker(wid, rt, cmd, run_dir / f"{wid}.log"))
    return workers


# --- the operator, the CLI holders, the self-test's rogue ---------------------------------------

@dataclass
class ForceUnlock:
    prim: str
    t0: float
    t1: float
    result: str


def operator(plan: Plan, clients: dict, rng: random.Random, deadline: float, out: list, stop: threading.Event) -> None:
    """Force-unlock a random exclusive lock every 1 to 4 s."""
    import polylock
    targets = [p for p in plan.prims if p.kind in ("lock", "fair")]
    while not stop.wait(rng.uniform(1.0, 4.0)) and time.monotonic() < deadline:
        p = rng.choice(targets)
        c = clients[p.backend]
        lk = c.lock(p.name) if p.kind == "lock" else c.fair_lock(p.name)
        t0 = time.monotonic()
        try:
            result = "held" if lk.force_unlock() else "free"
        except polylock.PolylockError as e:
            result = f"error {type(e).__name__}: {e}"
        out.append(ForceUnlock(p.id, t0, time.monotonic(), result))


@dataclass
class CliRun:
    sid: str
    prim: str
    cmd: list
    sigint_at: Optional[float]
    proc: Optional[subprocess.Popen] = None
    started: float = 0.0
    code: Optional[int] = None
    sigint_sent: bool = False
    stderr: str = ""


def cli_holders(plan: Plan, addr: str, rng: random.Random, deadline: float, runs: list, stop: threading.Event,
                run_dir: Path) -> None:
    """Start a `polylock run` holder every 0.5 to 2 s (at most two at once); some get SIGINT."""
    exe = str(BIN["polylock"])
    choices = [p for p in plan.prims if p.kind in ("lock", "fair", "rw")]
    live: list[CliRun] = []
    n = 0
    while time.monotonic() < deadline and not stop.is_set():
        now = time.monotonic()
        for r in list(live):
            if r.sigint_at is not None and not r.sigint_sent and now >= r.started + r.sigint_at:
                if r.proc.poll() is None:
                    r.proc.send_signal(signal.SIGINT)
                    r.sigint_sent = True
            if r.proc.poll() is not None:
                r.code = r.proc.returncode
                live.remove(r)
        if len(live) < 2 and rng.random() < 0.35:
            p = rng.choice(choices)
            mode = "x"
            target = ["--name", p.name]
            if p.kind == "fair":
                target.append("--fair")
            elif p.kind == "rw":
                reader = rng.random() < 0.6
                target = ["--read" if reader else "--write", p.name]
                mode = "r" if reader else "w"
            wait_ms = rng.randint(100, 3000)
            if plan.lease[p.backend] and rng.random() < 0.3:
                keep = ["--lease", f"{rng.randint(400, 2000)}ms"]
            else:
                keep = ["--watchdog", f"{WATCHDOG_MS}ms"]
            sid = f"cli-{n}"
            n += 1
            writes, sleep_ms = rng.randint(1, 3), rng.randint(10, 120)
            sigint_at = rng.uniform(0.05, 2.0) if rng.random() < 0.3 else None
            cmd = [exe, "run", "--url", plan.urls[p.backend], *target, "--wait", f"{wait_ms}ms", *keep,
                   "--on-lost", "kill", "--grace", "2s", "--",
                   sys.executable, str(Path(__file__).resolve()), "section", addr, p.id, sid, mode,
                   str(writes), str(sleep_ms)]
            r = CliRun(sid, p.id, cmd, sigint_at)
            r.started = time.monotonic()
            r.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(run_dir / f"{sid}.err", "w"))
            live.append(r)
            runs.append(r)
        time.sleep(0.05)
    for r in live:
        try:
            r.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            r.proc.kill()
            r.proc.wait()
        r.code = r.proc.returncode
    for r in runs:
        try:
            r.stderr = (run_dir / f"{r.sid}.err").read_text()
        except OSError:
            pass


def rogue(plan: Plan, addr: str, rng: random.Random, deadline: float, stop: threading.Event) -> None:
    """Self-test: sections on exclusive locks without holding them (token -1, never stopping at a
    refusal, never told): double holders, and untold since the resource refuses them; now and
    then a section on a semaphore that takes one permit more than it has: over-permit."""
    targets = [p for p in plan.prims if p.kind in ("lock", "fair")]
    sems = [p for p in plan.prims if p.kind == "sem"]
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as s:
        replies = s.makefile("r")
        n = 0
        while not stop.wait(rng.uniform(0.1, 0.4)) and time.monotonic() < deadline:
            if sems and n % 4 == 3:
                p = rng.choice(sems)
                token, mode = p.permits + 1, "s"
            else:
                # Token -1: below every real token, so the resource never accepts it and the
                # rogue never refuses a real holder in its stead.
                p, token, mode = rng.choice(targets), -1, "x"
            sid = f"rogue-{n}"
            n += 1
            for step in ["BEGIN", "WRITE", "WRITE", "WRITE", "END"]:
                s.sendall(f"{step} {p.id} {sid} {token} {mode}\n".encode())
                replies.readline()
                time.sleep(0.05)


# --- the checker: sections -----------------------------------------------------------------------

@dataclass
class Section:
    sid: str
    prim: str
    mode: str
    token: int
    start: float
    end: float
    reqs: list
    told: bool = False

    @property
    def refused(self) -> bool:
        return any(not ok for _, _, ok in self.reqs)

    @property
    def began(self) -> bool:
        return bool(self.reqs) and self.reqs[0][1] == "BEGIN" and self.reqs[0][2]


def sections_of(log: list) -> dict[str, Section]:
    out: dict[str, Section] = {}
    for t, op, prim, sid, token, mode, ok in log:
        s = out.get(sid)
        if s is None:
            s = out[sid] = Section(sid, prim, mode, token, t, t, [])
        s.reqs.append((t, op, ok))
        s.end = t
    return out


def double_holders(sections: list[Section], kinds: dict[str, str]) -> list[tuple[Section, Section]]:
    """Pairs of overlapping sections of one exclusive lock (a read-write lock: one of them
    writes), neither told of a loss."""
    by_prim: dict[str, list[Section]] = {}
    for s in sections:
        if kinds.get(s.prim) in ("lock", "fair", "rw"):
            by_prim.setdefault(s.prim, []).append(s)
    found = []
    for prim, ss in by_prim.items():
        ss.sort(key=lambda s: s.start)
        for i, a in enumerate(ss):
            for b in ss[i + 1:]:
                if b.start >= a.end:
                    break
                if kinds[prim] == "rw" and a.mode == "r" and b.mode == "r":
                    continue
                if not a.told and not b.told:
                    found.append((a, b))
    return found


def over_permit(sections: list[Section], permits: dict[str, int]) -> list[tuple[str, float, int]]:
    """(semaphore, when, permits in sections then) each time a section's BEGIN took a semaphore
    past its permits."""
    found = []
    by_prim: dict[str, list[Section]] = {}
    for s in sections:
        if s.prim in permits and not s.told:
            by_prim.setdefault(s.prim, []).append(s)
    for prim, ss in by_prim.items():
        events = sorted([(s.start, 1, s.token) for s in ss] + [(s.end, 0, -s.token) for s in ss])
        inside = 0
        for t, _, delta in events:
            inside += delta
            if delta > 0 and inside > permits[prim]:
                found.append((prim, t, inside))
    return found


def untold(sections: list[Section], unlocks: list[ForceUnlock]) -> list[tuple[Section, str]]:
    found = []
    by_prim: dict[str, list[ForceUnlock]] = {}
    for u in unlocks:
        by_prim.setdefault(u.prim, []).append(u)
    for s in sections:
        if s.told:
            continue
        if s.refused:
            found.append((s, "refused by the resource"))
            continue
        for u in by_prim.get(s.prim, []):
            if s.began and s.start < u.t0 and u.t1 < s.end:
                found.append((s, f"force-unlocked by the operator at {u.t0:.3f}-{u.t1:.3f} ({u.result})"))
                break
    return found


# --- the checker: what is left on the servers ----------------------------------------------------

def run_text(cmd: list[str], env: Optional[dict] = None, timeout: float = 30) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}...: {out.stderr.strip()[-300:]}")
    return out.stdout


class Servers:
    """Reads and cleans the run's traces on each server with the servers' own command-line
    clients (redis-cli, zkCli.sh, mariadb, psql, etcdctl)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.u = {b: urlparse(plan.urls[b]) for b in BACKENDS}
        self.sleepers: list[subprocess.Popen] = []  # the self-test's SQL holders

    def redis(self, *args: str) -> str:
        u = self.u["redis"]
        return run_text(["redis-cli", "-h", u.hostname or "127.0.0.1", "-p", str(u.port or 6379), *args])

    def zk(self, *args: str) -> str:
        u = self.u["zookeeper"]
        return run_text(["/usr/share/zookeeper/bin/zkCli.sh", "-server", f"{u.hostname}:{u.port or 2181}", *args],
                        timeout=60)

    def mysql(self, sql: str) -> list[list[str]]:
        u = self.u["mysql"]
        out = run_text(["mariadb", "--no-defaults", "--protocol=tcp", "-h", u.hostname or "127.0.0.1",
                        "-P", str(u.port or 3306), "-u", u.username or "", f"-p{u.password or ''}",
                        "-N", "-B", (u.path or "/").lstrip("/"), "-e", sql])
        return [line.split("\t") for line in out.splitlines() if line]

    def pg(self, sql: str) -> list[list[str]]:
        u = self.u["postgres"]
        out = run_text(["psql", "-h", u.hostname or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "",
                        "-d", (u.path or "/").lstrip("/"), "-At", "-F", "\t", "-c", sql],
                       env={"PGPASSWORD": u.password or ""})
        return [line.split("\t") for line in out.splitlines() if line]

    def etcd(self, *args: str) -> str:
        u = self.u["etcd"]
        return run_text(["etcdctl", f"--endpoints=http://{u.hostname}:{u.port or 2379}", *args], env={"ETCDCTL_API": "3"})

    # Each returns the leftovers as short descriptions.

    def left_redis(self) -> list[str]:
        keys = [k for k in self.redis("--scan", "--pattern", f"*chaos-{self.plan.tag}*").split("\n") if k]
        sems = {p.name: p.permits for p in self.plan.prims if p.backend == "redis" and p.kind == "sem"}
        left = []
        for k in sorted(keys):
            if k.startswith("redisson_lock_token:"):
                continue  # the fencing counter: kept by design, so that tokens keep rising
            if k in sems:
                v = self.redis("GET", k).strip()
                if v != str(sems[k]):
                    left.append(f"redis semaphore {k} has {v or 'no'} free permits of {sems[k]}")
                continue
            left.append(f"redis key {k} ({self.redis('TYPE', k).strip()})")
        return left

    def zk_nodes(self) -> list[str]:
        out = self.zk("ls", "-R", f"{ZK_ROOT}/{self.plan.tag}")
        return [line.strip() for line in out.splitlines() if line.startswith(f"{ZK_ROOT}/{self.plan.tag}")]

    def left_zookeeper(self) -> list[str]:
        # Contenders and leases (`_c_<uuid>-lock-N`, `-__READ__N`, `-__WRIT__N`, `-lease-N`): the
        # lock paths, a semaphore's locks/ and leases/ parents and its count stay by design.
        return [f"zookeeper node {n}" for n in self.zk_nodes() if n.rsplit("/", 1)[-1].startswith("_c_")]

    def mysql_names(self) -> list[str]:
        return [p.name for p in self.plan.prims if p.backend == "mysql"] + [self.plan.probe_names["mysql"]]

    def left_mysql(self) -> list[str]:
        names = self.mysql_names()
        cols = ", ".join(f"IS_USED_LOCK('{n}')" for n in names)
        row = self.mysql(f"SELECT {cols}")[0]
        left = [f"mysql lock {n} held by connection {v}" for n, v in zip(names, row) if v != "NULL"]
        waits = self.mysql("SELECT ID, INFO FROM information_schema.PROCESSLIST "
                           f"WHERE ID <> CONNECTION_ID() AND INFO LIKE '%GET_LOCK%' AND INFO LIKE '%chaos-{self.plan.tag}%'")
        left += [f"mysql connection {r[0]} in GET_LOCK: {r[1][:80]}" for r in waits]
        return left

    def pg_rows(self) -> list[list[str]]:
        return self.pg("SELECT pid, mode, granted, objid FROM pg_locks WHERE locktype = 'advisory' "
                       f"AND classid = {int(self.plan.tag, 16)} AND objsubid = 1")

    def left_postgres(self) -> list[str]:
        return [f"postgres advisory lock {self.plan.tag}{int(r[3]):08x} {r[1]} {'granted' if r[2] == 't' else 'waiting'} "
                f"by pid {r[0]}" for r in self.pg_rows()]

    def etcd_keys(self) -> list[str]:
        return [k for k in self.etcd("get", "--prefix", f"{ETCD_ROOT}/{self.plan.tag}/", "--keys-only").split("\n") if k]

    def left_etcd(self) -> list[str]:
        sems = {p.name: p.permits for p in self.plan.prims if p.backend == "etcd" and p.kind == "sem"}
        left = []
        for k in self.etcd_keys():
            if k in sems:
                v = self.etcd("get", k, "--print-value-only").strip()
                if v != str(sems[k]):
                    left.append(f"etcd semaphore {k} counts {v} permits, not {sems[k]}")
                continue
            left.append(f"etcd key {k}")
        return left

    def left(self) -> dict[str, list[str]]:
        out = {}
        for b in BACKENDS:
            try:
                out[b] = getattr(self, f"left_{b}")()
            except Exception as e:  # a server we cannot read: that is a failure too
                out[b] = [f"{b}: could not look ({e})"]
        return out

    def plant(self) -> list[tuple[str, str]]:
        """Self-test: leftovers of the kinds the workers could leave, planted directly: a
        contender node on ZooKeeper, a key on etcd, and a MySQL named lock and a PostgreSQL
        advisory lock held by a client that sleeps (the cleaning ends their sessions); the
        leaking worker leaves the Redis one. Returns (backend, name) of what the checker must
        report."""
        base = f"{ZK_ROOT}/{self.plan.tag}"
        node = f"{base}/lock-0/_c_selftest-lock-0000000000"
        for attempt in range(5):
            for path in (ZK_ROOT, base, f"{base}/lock-0"):
                try:
                    self.zk("create", path, "")
                except RuntimeError as e:  # there already
                    if "exists" not in str(e):
                        raise
            try:
                self.zk("create", node, "")
                break
            except RuntimeError as e:
                # The workers' empty container parent was reaped between the two creates: again.
                if "does not exist" not in str(e) or attempt == 4:
                    raise
        key = f"{ETCD_ROOT}/{self.plan.tag}/lock-0/selftest"
        self.etcd("put", key, "leak")
        my_name, pg_name = self.plan.name("mysql", "lock", 0), self.plan.name("postgres", "lock", 0)
        u = self.u["mysql"]
        self.sleepers.append(subprocess.Popen(
            ["mariadb", "--no-defaults", "--protocol=tcp", "-h", u.hostname or "127.0.0.1", "-P", str(u.port or 3306),
             "-u", u.username or "", f"-p{u.password or ''}", "-N", "-B", (u.path or "/").lstrip("/"),
             "-e", f"SELECT GET_LOCK('{my_name}', 5); SELECT SLEEP(120)"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        u = self.u["postgres"]
        self.sleepers.append(subprocess.Popen(
            ["psql", "-h", u.hostname or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "",
             "-d", (u.path or "/").lstrip("/"), "-c", f"SELECT pg_advisory_lock({int(pg_name, 16)})",
             "-c", "SELECT pg_sleep(120)"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PGPASSWORD": u.password or ""}))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (self.left_mysql() and self.left_postgres()):
            time.sleep(0.1)
        return [("zookeeper", node), ("etcd", key), ("mysql", my_name), ("postgres", pg_name)]

    def end_sleepers(self) -> None:
        for proc in self.sleepers:
            try:
                proc.wait(timeout=10)  # the cleaning ended its session
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def traces(self) -> list[str]:
        """After cleaning: anything of the run's tag on any server (fencing counters, semaphore
        counts, parent nodes and counter rows included)."""
        out = [f"redis key {k}" for k in self.redis("--scan", "--pattern", f"*chaos-{self.plan.tag}*").split("\n") if k]
        try:
            self.zk("stat", f"{ZK_ROOT}/{self.plan.tag}")
            out.append(f"zookeeper node {ZK_ROOT}/{self.plan.tag}")
        except RuntimeError as e:
            if "does not exist" not in str(e):
                raise
        out += [f"etcd key {k}" for k in self.etcd_keys()]
        out += [f"mysql {x}" for x in self.left_mysql()]
        if self.mysql("SHOW TABLES LIKE 'polylock_fencing'"):
            rows = self.mysql("SELECT COUNT(*) FROM polylock_fencing WHERE name LIKE 'chaos-%s-%%'" % self.plan.tag)
            if rows and rows[0][0] != "0":
                out.append(f"mysql polylock_fencing rows {rows[0][0]}")
        out += [f"postgres advisory lock of pid {r[0]}" for r in self.pg_rows()]
        return out

    def zk_delete_root(self) -> None:
        """The shared parent goes too when no other run is using it."""
        try:
            self.zk("delete", ZK_ROOT)
        except RuntimeError as e:
            if "not empty" not in str(e) and "does not exist" not in str(e):
                raise

    def clean(self) -> None:
        """Remove what the run created (keys, nodes, sessions, counters)."""
        steps = [
            lambda: [self.redis("UNLINK", k) for k in self.redis("--scan", "--pattern", f"*chaos-{self.plan.tag}*").split("\n") if k],
            lambda: self.zk("deleteall", f"{ZK_ROOT}/{self.plan.tag}"),
            lambda: self.zk_delete_root(),
            lambda: [self.mysql(f"KILL CONNECTION {v}") for v in self.mysql(
                "SELECT " + ", ".join(f"IS_USED_LOCK('{n}')" for n in self.mysql_names()))[0] if v != "NULL"],
            lambda: self.mysql("DELETE FROM polylock_fencing WHERE name LIKE 'chaos-%s-%%'" % self.plan.tag)
            if self.mysql("SHOW TABLES LIKE 'polylock_fencing'") else None,
            lambda: [self.pg(f"SELECT pg_terminate_backend({r[0]})") for r in self.pg_rows()],
            lambda: self.etcd("del", "--prefix", f"{ETCD_ROOT}/{self.plan.tag}/"),
        ]
        for step in steps:
            try:
                step()
            except Exception as e:
                say(f"cleaning up: {e}")


# --- the run -------------------------------------------------------------------------------------

def urls_from_env() -> dict[str, str]:
    env = {"redis": "POLYLOCK_REDIS_URL", "zookeeper": "POLYLOCK_ZK_URL", "mysql": "POLYLOCK_MYSQL_URL",
           "postgres": "POLYLOCK_PG_URL", "etcd": "POLYLOCK_ETCD_URL"}
    defaults = {"redis": "redis://127.0.0.1:6379", "zookeeper": "zk://127.0.0.1:2181",
                "mysql": "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock",
                "postgres": "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock",
                "etcd": "etcd://127.0.0.1:2379"}
    return {b: os.environ.get(env[b], defaults[b]) for b in BACKENDS}


def norm_error(kind: str) -> str:
    """One spelling of an error kind across the runtimes (LockLost, LockLostError, LOCK_LOST,
    ERR_POLYLOCK_LOCK_LOST)."""
    k = re.sub(r"[^a-z]", "", kind.lower())
    for prefix in ("errpolylock", "polylock"):
        k = k.removeprefix(prefix)
    return k.removesuffix("exception").removesuffix("error") or kind


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--minutes", type=float)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--no-java", action="store_true")
    ap.add_argument("--no-node", action="store_true")
    ap.add_argument("--runtimes", default="rust,python,node,java", help="the workers' runtimes (comma-separated)")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory (logs, plan)")
    opts = ap.parse_args()
    seconds = opts.seconds if opts.seconds is not None else (opts.minutes * 60 if opts.minutes else (20 if opts.self_test else 60))
    seed = opts.seed if opts.seed is not None else int.from_bytes(os.urandom(4), "big")
    seed &= M32
    flags = (" --self-test" if opts.self_test else "") + (" --no-java" if opts.no_java else "") + (
        " --no-node" if opts.no_node else "") + (
        f" --runtimes {opts.runtimes}" if opts.runtimes != ap.get_default("runtimes") else "")
    say(f"seed {seed} (replay: scripts/chaos.sh --seed {seed} --seconds {seconds:g}{flags})")

    import polylock
    rng = random.Random(seed)
    urls = urls_from_env()
    plan = make_plan(seed, urls, rng)
    run_dir = Path(tempfile.mkdtemp(prefix=f"polylock-chaos-{plan.tag}-"))
    clients = {}
    for b in BACKENDS:
        try:
            clients[b] = polylock.connect(urls[b], watchdog_timeout=WATCHDOG_MS / 1000,
                                          session_timeout=SESSION_MS / 1000)
        except polylock.PolylockError as e:
            say(f"cannot reach {b} at {urls[b]}: {e} (scripts/servers.sh start)")
            return 2
    probe(plan, clients)
    servers = Servers(plan)

    resource = Resource()
    server, port = resource.serve()
    addr = f"127.0.0.1:{port}"
    pinned = pin_binaries(plan.tag)
    plan_path = run_dir / "plan.tsv"
    plan.write(plan_path, addr)
    workers = make_workers(opts, plan_path, run_dir, seed, seconds)
    say(f"run {plan.tag} for {seconds:g} s: " + ", ".join(
        f"{sum(1 for w in workers if w.runtime == rt)} {rt}" for rt in ("rust", "python", "node", "java")
        if any(w.runtime == rt for w in workers)) + " workers (two actors each, one Python worker forking), "
        "CLI holders, an operator" + (", a rogue writer and a leaking worker (self-test)" if opts.self_test else ""))
    say("primitives: " + " | ".join(
        f"{b} " + " ".join(k for k in KINDS if any(p.backend == b and p.kind == k for p in plan.prims))
        for b in BACKENDS) + "; fixed leases on " + (", ".join(b for b in BACKENDS if plan.lease[b]) or "none")
        + "; unsupported (skipped): " + (", ".join(plan.unsupported) or "none"))

    stop = threading.Event()
    deadline = time.monotonic() + seconds
    unlocks: list[ForceUnlock] = []
    cli_runs: list[CliRun] = []
    failures: list[str] = []

    def guarded(target, *args) -> threading.Thread:
        """A driver thread whose crash fails the run (it would otherwise only thin it out)."""
        def run() -> None:
            try:
                target(*args)
            except Exception as e:
                failures.append(f"the {target.__name__} thread failed: {type(e).__name__}: {e}")
                say(f"FAILED: {failures[-1]}")
        return threading.Thread(target=run, name=target.__name__, daemon=True)

    threads = [
        guarded(operator, plan, clients, random.Random(seed ^ 0x0F0F), deadline, unlocks, stop),
        guarded(cli_holders, plan, addr, random.Random(seed ^ 0xC11), deadline, cli_runs, stop, run_dir),
    ]
    leaker = None
    if opts.self_test:
        threads.append(guarded(rogue, plan, addr, random.Random(seed ^ 0x606), deadline, stop))
        leaker = Worker("leak", "python", [sys.executable, str(ROOT / "faults/chaos_worker.py"), str(plan_path), "leak",
                                           "0", "0", "0", "leak"], run_dir / "leak.log")

    def interrupted(signum, frame):  # Ctrl-C: stop the fleet, still count and clean up
        stop.set()
        for w in workers:
            if w.proc and w.proc.poll() is None:
                w.proc.send_signal(signal.SIGINT)
        failures.append("interrupted")

    signal.signal(signal.SIGINT, interrupted)
    for w in workers:
        w.start()
    if leaker:
        leaker.start()
    for t in threads:
        t.start()
    for w in workers + ([leaker] if leaker else []):
        try:
            w.proc.wait(timeout=max(0.0, deadline - time.monotonic()) + 90)
        except subprocess.TimeoutExpired:
            failures.append(f"worker {w.wid} did not end 90 s after the run; killed")
            if w.runtime == "python":
                w.proc.send_signal(signal.SIGUSR1)  # faulthandler: the stacks into its log
                time.sleep(1)
            w.proc.kill()
            w.proc.wait()
        w.reader.join(timeout=10)
        with open(run_dir / f"{w.wid}.events.jsonl", "w") as f:
            f.writelines(json.dumps(e) + "\n" for e in w.events)
        log = w.log_path.read_text(errors="replace") if w.log_path.exists() else ""
        if w.proc.returncode != 0:
            failures.append(f"worker {w.wid} exited with {w.proc.returncode}: {log[-1500:].strip()[-800:]}")
        else:
            # A worker's stderr holds nothing but what the libraries log on purpose: a traceback,
            # a panic or an uncaught exception (an actor thread that died, an error printed by a
            # destructor) fails the run.
            bad = [line for line in log.splitlines() if re.search(
                r"Traceback|panicked|Exception in thread|Unhandled|uncaught|RuntimeError|\bat [\w.$]+\(\w+\.java", line)]
            if bad:
                failures.append(f"worker {w.wid} printed {len(bad)} error lines on stderr, e.g. {bad[0][:200]!r} "
                                f"(see {w.log_path})")
    stop.set()
    for t in threads:
        t.join(timeout=60)
    for c in clients.values():
        c.close()
    server.shutdown()
    server.server_close()

    # What is left once every process ended (cleanups of a closing client run before it exits;
    # a server may take a moment to notice a closed connection, so look again for up to 2 s).
    planted: list[tuple[str, str]] = []
    if opts.self_test:
        try:
            planted = servers.plant()
        except Exception as e:
            failures.append(f"self-test: could not plant the leftovers: {e}")
    left = servers.left()
    first_look = {b: list(v) for b, v in left.items()}
    for _ in range(10):
        if not any(left.values()):
            break
        time.sleep(0.2)
        left = servers.left()

    # --- count --------------------------------------------------------------------------------
    events = [e for w in workers for e in w.events]
    reports = {e["id"]: e for e in events if e.get("t") == "section"}
    for r in cli_runs:
        reports[r.sid] = {"id": r.sid, "told": r.code == 76, "cli": r.code}
    secs = sections_of(resource.log)
    for s in secs.values():
        s.told = bool(reports.get(s.sid, {}).get("told"))
    kinds = {p.id: p.kind for p in plan.prims}
    permits = {p.id: p.permits for p in plan.prims if p.kind == "sem"}
    all_secs = list(secs.values())
    doubles = double_holders(all_secs, kinds)
    overs = over_permit(all_secs, permits)
    untolds = untold(all_secs, unlocks)
    n_left = sum(len(v) for v in left.values())
    ops = [e for e in events if e.get("t") == "op"]
    n_ops = len(ops) + len(unlocks) + len(cli_runs)

    # --- details ------------------------------------------------------------------------------
    by_kind: dict[str, list[int]] = {}
    for s in all_secs:
        row = by_kind.setdefault(s.prim.split("-")[0], [0, 0, 0])
        row[0] += 1
        row[1] += s.refused
        row[2] += s.told
    say("sections by primitive (all / refused / told): " + ", ".join(
        f"{k} {v[0]}/{v[1]}/{v[2]}" for k, v in sorted(by_kind.items())))
    results: dict[str, dict[str, int]] = {}
    for e in ops:
        d = results.setdefault(e["op"], {})
        d[e["result"]] = d.get(e["result"], 0) + 1
    say("operations: " + "; ".join(f"{op} " + " ".join(f"{k} {v}" for k, v in sorted(d.items()))
                                   for op, d in sorted(results.items())))
    # Sections per runtime (rs Rust, py Python, js Node, jv Java, cli `polylock run`) and backend:
    # every cell of a runtime that took part should be non-zero.
    matrix: dict[str, dict[str, int]] = {}
    for s in all_secs:
        rt = re.sub(r"[-\d.].*", "", s.sid)
        row = matrix.setdefault(rt, {})
        b = s.prim.split("/")[0]
        row[b] = row.get(b, 0) + 1
    say("sections by runtime and backend:")
    say(f"  {'':8}" + "".join(f"{b:>10}" for b in BACKENDS) + f"{'all':>10}")
    for rt, row in sorted(matrix.items()):
        say(f"  {rt:8}" + "".join(f"{row.get(b, 0):>10}" for b in BACKENDS) + f"{sum(row.values()):>10}")
    for w in workers:
        if not any(s.sid.startswith(w.wid + ".") for s in all_secs):
            failures.append(f"worker {w.wid} ({w.runtime}) ran no section")
    codes: dict[str, int] = {}
    for r in cli_runs:
        key = f"{r.code}" + (" after SIGINT" if r.sigint_sent else "")
        codes[key] = codes.get(key, 0) + 1
    say(f"CLI holders: {len(cli_runs)} (exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items())) + ")")
    # 0 done, 3 refused by the resource (counted as untold unless told), 75 the wait ran out, 76
    # lost (told), 130 SIGINT; after a SIGINT the command may also die of it before its handler
    # is in place (1), and so may `polylock run` itself, sent SIGINT as it starts (-2; seen once
    # in 2,758 holders, with an empty stderr; what it left would be counted under "left").
    odd_cli = [r for r in cli_runs if r.code not in (0, 3, 75, 76, 130)
               and not (r.sigint_sent and r.code in (1, -signal.SIGINT))]
    for r in odd_cli[:5]:
        failures.append(f"CLI holder {r.sid} on {r.prim} exited {r.code}: {r.stderr.strip()[-300:]}")
    say(f"operator: {len(unlocks)} force-unlocks ({sum(1 for u in unlocks if u.result == 'held')} of a held lock)")
    for u in unlocks:
        if u.result.startswith("error"):
            say(f"operator: force-unlock of {u.prim}: {u.result}")
    # A worker's error event is a failure of the run, but one: LockLost while waiting for (or
    # holding) a lock the operator force-unlocked, which is the loss being told.
    # Likewise a re-entry's hold count of 0 when the section it is in was then told of the loss
    # (a force-unlock by the operator's client: Redis counts re-entries on the server, so the
    # count drops before this client's watch has seen the loss).
    unlocked = {u.prim for u in unlocks}
    errors: dict[str, int] = {}
    told_waits = 0
    samples: dict[str, dict] = {}
    excused: set[int] = set()
    for w in workers:
        pending: dict[str, list[int]] = {}
        for e in w.events:
            if e.get("t") == "error" and norm_error(str(e.get("error", ""))) == "holdcount":
                pending.setdefault(e.get("actor", ""), []).append(id(e))
            elif e.get("t") == "section":
                actor = str(e.get("id", "")).rsplit("-", 1)[0]
                waiting = pending.pop(actor, [])
                if e.get("told") and e.get("prim") in unlocked:
                    excused.update(waiting)
    for e in events:
        if e.get("t") != "error":
            continue
        kind = norm_error(str(e.get("error", "")))
        if (kind == "locklost" and e.get("prim") in unlocked) or id(e) in excused:
            told_waits += 1
            continue
        key = f"{e.get('op')}: {kind}"
        errors[key] = errors.get(key, 0) + 1
        samples.setdefault(key, e)
    if told_waits:
        say(f"{told_waits} operations on force-unlocked locks were told of the loss midway (LockLost, "
            "or a re-entry's hold count 0 in a section then told)")
    if errors:
        failures.append("worker errors: " + "; ".join(f"{k} x{v}" for k, v in sorted(errors.items())))
        for k, e in list(samples.items())[:8]:
            say(f"  e.g. {json.dumps(e)[:300]}")
    digests = sorted((e["actor"], e["digest"], e["ops"]) for e in events if e.get("t") == "done")
    combined = 0x811C9DC5
    for actor, digest, _ in digests:
        for ch in f"{actor}={digest};".encode():
            combined = ((combined ^ ch) * 0x01000193) & M32
    short = [a for a, _, n in digests if n < 64]
    say(f"decisions: {len(digests)} actors, digest {combined:08x} of their first 64 operations each "
        "(the same for a replay of this seed)" + (f"; fewer than 64 by {', '.join(short)}" if short else ""))
    for a, b in doubles[:10]:
        say(f"DOUBLE HOLDER on {a.prim}: {a.sid} (token {a.token}, {a.mode}) {a.start:.3f}-{a.end:.3f} and "
            f"{b.sid} (token {b.token}, {b.mode}) {b.start:.3f}-{b.end:.3f}")
    for prim, t, inside in overs[:10]:
        say(f"OVER-PERMIT on {prim}: {inside} permits in sections at {t:.3f}, of {permits[prim]}")
    for s, why in untolds[:10]:
        say(f"UNTOLD on {s.prim}: section {s.sid} (token {s.token}) {s.start:.3f}-{s.end:.3f} {why}; "
            f"report {json.dumps(reports.get(s.sid))}")
    for b in BACKENDS:
        if first_look[b] != left[b]:
            say(f"left on {b} right after the run (gone 2 s later or changed): {len(first_look[b])}")
        for item in left[b][:10]:
            say(f"LEFT: {item}")
    say("left: " + ", ".join(f"{b} {len(left[b])}" for b in BACKENDS))
    for f in failures:
        say(f"FAILED: {f}")

    servers.clean()
    servers.end_sleepers()
    try:
        after = servers.traces()
    except Exception as e:
        after = [f"could not look ({e})"]
    if after:
        failures.append(f"after cleaning, {len(after)} traces of the run are still on the servers: "
                        + "; ".join(after[:5]))
        say(f"FAILED: {failures[-1]}")
    else:
        say("cleaned: nothing of the run is left on redis, zookeeper, mysql, postgres, etcd")
    stray = [w.wid for w in workers if w.proc and w.proc.poll() is None] + [
        r.sid for r in cli_runs if r.proc and r.proc.poll() is None]
    if stray:
        failures.append(f"processes still running: {', '.join(stray)}")
    say(f"{n_ops} operations, {len(all_secs)} sections, {len(doubles)} double holders, {len(overs)} over-permit, "
        f"{len(untolds)} untold, {n_left} left (seed {seed})")
    green = not doubles and not overs and not untolds and n_left == 0 and len(all_secs) > 0
    replay = f"scripts/chaos.sh --seed {seed} --seconds {seconds:g}{flags}"
    if opts.self_test:
        # Each kind of violation must be found, and pinned on what was planted.
        found = {
            "double holder (rogue writer)": sum(1 for a, b in doubles if "rogue" in a.sid + b.sid),
            "over-permit (rogue semaphore section)": len(overs),
            "untold (rogue writer refused)": sum(1 for x, _ in untolds if x.sid.startswith("rogue-")),
            "left on redis (leaking worker)": sum(1 for i in left["redis"] if plan.leak_name in i),
        }
        for where, name in planted:
            found[f"left on {where} (planted {name})"] = sum(1 for i in left[where] if name in i)
        for what, n in found.items():
            say(f"self-test: {what}: {n}")
        # And nothing but what was planted: the real workers' sections stay clean.
        real = [s for s in all_secs if not s.sid.startswith("rogue-")]
        innocent = (len([1 for a, b in doubles if "rogue" not in a.sid + b.sid])
                    + len(over_permit(real, permits)) + len([1 for x, _ in untolds if not x.sid.startswith("rogue-")])
                    + n_left - sum(1 for i in left["redis"] if plan.leak_name in i) - len(planted))
        missed = [what for what, n in found.items() if not n]
        if missed:
            say(f"self-test FAILED: the checker did not find {'; '.join(missed)}")
            code = 3
        elif innocent or failures:
            say(f"self-test FAILED: {innocent} violations not planted; failures: {failures}")
            code = 3
        else:
            say("self-test: the checker found every planted violation (exit 1 is the expected outcome)")
            code = 1
    else:
        code = 0 if green and not failures else 1
        if code:
            say(f"FAILED; replay with: {replay}")
    if pinned:
        shutil.rmtree(pinned, ignore_errors=True)
    if (code == 0 or (opts.self_test and code == 1)) and not opts.keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    else:
        say(f"logs: {run_dir}")
    return code


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "section":
        _, _, a, p, sid, m, w, sl = sys.argv
        try:
            sys.exit(section_command(a, p, sid, m, int(w), int(sl)))
        except KeyboardInterrupt:
            sys.exit(130)
    sys.exit(main())
