#!/usr/bin/env python3
"""The fault harness: workers in three runtimes take one lock and write to a fenced resource while
a fault is made beside them, then a checker reads the resource's log.

Every server it uses is its own, on free loopback ports, started for the run and stopped after:
a Redis with an append-only file (fsync always), a Sentinel group (master, two replicas, three
sentinels), a six-node Redis Cluster, a three-server ZooKeeper ensemble, a three-member etcd
cluster (scripts/servers.sh etcd-member), and a TCP proxy
(a process of this script) that a fault stops with SIGSTOP.

The resource is a line server in this process. Each critical section is BEGIN, three WRITEs and
END, each carrying the worker's fencing token: BEGIN is accepted when its token is larger than
every token accepted before, WRITE and END when the token is still the largest. The resource logs
every request with its own clock, so the checker needs no clock of the workers'.

The rows that SIGSTOP a lock's holder past its lease or session also write through the real
fences (POLYLOCK_FAULT_FENCES for the Rust and Python workers, the holder paused is one of them):
every step of a section is also a fenced RPUSH on the run's Redis and a guarded insert in
PostgreSQL and MariaDB (the servers of scripts/servers.sh, POLYLOCK_PG_URL and POLYLOCK_MYSQL_URL);
the row then counts the writes each fence refused (the paused holder's late ones) and reads what
each accepted back from the server: a token smaller than one accepted before it is a stale write
accepted, and fails the row, as does a fence that refused nothing or a fence error.

Per fault the checker prints: sections, accepted (all five requests accepted), refused by token,
lost signals (the worker heard its hold was lost, by the signal or a LockLost error at release),
untold (refused, yet the worker was never told), double holders (two accepted sections whose
intervals overlap), and whether tokens of accepted sections rose strictly. A fault passes when
there is no double holder, no untold refusal, the tokens rose, and some section was accepted
after the fault (the lock recovered).

Usage: harness.py [--only FAULT,...] [--seconds N] [--no-java]   (scripts/faults.sh builds the
workers first); harness.py proxy LISTEN_PORT TARGET_PORT runs the proxy.
"""

from __future__ import annotations

import argparse
import json
import os
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
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
WATCHDOG_MS = 1500  # the workers' lease: short, so faults run in seconds


def free_port() -> int:
    """A free loopback port below 50000 whose port + 10000 (a cluster node's bus) is free too."""
    import random
    while True:
        port = random.randint(20000, 49999)
        try:
            for p in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue


def wait_until(what: str, check: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def cli(port: int, *args: str) -> str:
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=10)
    return out.stdout.strip()


# --- the fenced resource -------------------------------------------------------------------------

@dataclass
class Resource:
    max_token: int = 0
    log: list = field(default_factory=list)  # (t, op, worker, token, accepted)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, line: str) -> bool:
        op, worker, token_text = line.split()
        token = int(token_text)
        with self.lock:
            if op == "BEGIN":
                ok = token > self.max_token
                if ok:
                    self.max_token = token
            else:
                ok = token == self.max_token
            self.log.append((time.monotonic(), op, worker, token, ok))
            return ok

    def inside(self) -> Optional[str]:
        """The worker whose section is open now (its BEGIN accepted, no END yet), if any."""
        with self.lock:
            open_by: dict[str, bool] = {}
            for _, op, worker, _, ok in self.log:
                if op == "BEGIN" and ok:
                    open_by = {worker: True}
                elif op == "END":
                    open_by.pop(worker, None)
            return next(iter(open_by), None)

    def serve(self) -> tuple[socketserver.ThreadingTCPServer, int]:
        resource = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for raw in self.rfile:
                    ok = resource.handle(raw.decode().strip())
                    self.wfile.write(b"OK\n" if ok else b"REFUSED\n")

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, server.server_address[1]


# --- servers of the run --------------------------------------------------------------------------

class Servers:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="polylock-faults-"))
        self.procs: dict[int, subprocess.Popen] = {}
        self.zk_dirs: list[Path] = []
        self.etcd_dirs: list[Path] = []

    def redis(self, port: int, *args: str) -> None:
        d = self.dir / f"redis-{port}"
        d.mkdir(exist_ok=True)
        self.procs[port] = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(d), "--save", "",
             "--logfile", str(d / "redis.log"), *args],
            stdout=subprocess.DEVNULL)
        wait_until(f"redis on {port}", lambda: cli(port, "PING") == "PONG")

    def sentinel(self, port: int, master: int) -> None:
        d = self.dir / f"sentinel-{port}"
        d.mkdir(exist_ok=True)
        conf = d / "sentinel.conf"
        conf.write_text("\n".join([
            f"port {port}", "bind 127.0.0.1", f"dir {d}", f"logfile {d}/sentinel.log",
            f"sentinel monitor faults 127.0.0.1 {master} 2",
            "sentinel down-after-milliseconds faults 1000", "sentinel failover-timeout faults 10000", ""]))
        self.procs[port] = subprocess.Popen(["redis-server", str(conf), "--sentinel"], stdout=subprocess.DEVNULL)
        wait_until(f"sentinel on {port}", lambda: cli(port, "PING") == "PONG")

    def zk_ensemble(self) -> list[int]:
        ports = [free_port() for _ in range(3)]
        peers = " ".join(f"server.{i + 1}=127.0.0.1:{free_port()}:{free_port()}" for i in range(3))
        for i, port in enumerate(ports):
            d = self.dir / f"zk-{port}"
            self.zk_dirs.append(d)
            subprocess.run(["bash", str(ROOT / "scripts/servers.sh"), "zk-server", str(d), str(port), str(i + 1), peers],
                           check=True)
        for port in ports:
            wait_until(f"zookeeper on {port}", lambda p=port: zk_mode(p) in ("leader", "follower"), 60)
        return ports

    def etcd_cluster(self) -> list[int]:
        """Three etcd members on free ports (clients; peers on ports of their own)."""
        ports = [free_port() for _ in range(3)]
        peers = [free_port() for _ in range(3)]
        initial = ",".join(f"f{c}=http://127.0.0.1:{p}" for c, p in zip(ports, peers))
        for c, p in zip(ports, peers):
            d = self.dir / f"etcd-{c}"
            self.etcd_dirs.append(d)
            subprocess.run(["bash", str(ROOT / "scripts/servers.sh"), "etcd-member", str(d), f"f{c}", str(c), str(p),
                            initial], check=True)
        wait_until("the etcd cluster's leader", lambda: etcd_leader(ports) is not None, 60)
        return ports

    def etcd_pid(self, port: int) -> int:
        return int((self.dir / f"etcd-{port}" / "etcd.pid").read_text().strip())

    def stop(self) -> None:
        for d in self.etcd_dirs:
            pid = d / "etcd.pid"
            if pid.exists():
                try:
                    os.kill(int(pid.read_text().strip()), signal.SIGCONT)
                    os.kill(int(pid.read_text().strip()), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        for d in self.zk_dirs:
            pid = d / "zookeeper.pid"
            if pid.exists():
                try:
                    os.kill(int(pid.read_text().strip()), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)


def replicas_online(port: int) -> int:
    """How many replicas of the Redis on `port` are connected and in sync."""
    return sum(1 for line in cli(port, "INFO", "replication").splitlines()
               if line.startswith("slave") and "state=online" in line)


def zk_mode(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"srvr")
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    for line in reply.decode().splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return ""


def etcd_leader(ports: list[int]) -> Optional[int]:
    """The client port of the etcd member that is leader, as the members say (etcdctl)."""
    out = subprocess.run(["etcdctl", "--endpoints=" + ",".join(f"http://127.0.0.1:{p}" for p in ports),
                          "--dial-timeout=1s", "--command-timeout=1s", "endpoint", "status", "-w", "json"],
                         env={**os.environ, "ETCDCTL_API": "3"}, capture_output=True, text=True)
    try:
        statuses = json.loads(out.stdout or "[]")
    except json.JSONDecodeError:
        return None
    for st in statuses:
        s = st.get("Status", {})
        if s.get("leader") and s.get("leader") == s.get("header", {}).get("member_id"):
            return int(st["Endpoint"].rsplit(":", 1)[1])
    return None


def proxy(listen: int, target: int) -> None:
    """Forward 127.0.0.1:listen to 127.0.0.1:target; SIGSTOP on this process is the network pause."""
    server = socket.create_server(("127.0.0.1", listen))

    def pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    while True:
        client, _ = server.accept()
        upstream = socket.create_connection(("127.0.0.1", target))
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


# --- workers ---------------------------------------------------------------------------------------

@dataclass
class Worker:
    runtime: str
    url: str
    election: bool = False  # a candidate of the election NAME instead of a lock's holder
    proc: Optional[subprocess.Popen] = None
    lines: list = field(default_factory=list)

    fences: str = ""  # POLYLOCK_FAULT_FENCES for this worker

    def start(self, name: str, resource: int, seconds: float) -> None:
        args = [self.url, name, f"127.0.0.1:{resource}", str(seconds), str(WATCHDOG_MS)]
        if self.runtime == "rust":
            cmd = [str(TARGET / "debug/examples/fault_worker"), *args]
        elif self.runtime == "python":
            cmd = [sys.executable, str(ROOT / "faults/worker.py"), *args]
        else:
            jar = str(ROOT / "bindings-java/target/polylock-0.1.0.jar")
            cmd = ["java", "-cp", f"{jar}:{TARGET / 'faults-java'}", "FaultWorker", *args]
        env = {**os.environ, "POLYLOCK_FAULT_ELECTION": "1" if self.election else "0",
               "POLYLOCK_FAULT_FENCES": self.fences}
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None if self.fences else subprocess.DEVNULL,
                                     text=True, env=env)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            try:
                self.lines.append(json.loads(line))
            except json.JSONDecodeError:
                pass

    @property
    def id_prefix(self) -> str:
        return f"{self.runtime}-{self.proc.pid if self.proc else 0}"


# --- faults --------------------------------------------------------------------------------------

@dataclass
class Round:
    name: str
    backend: str
    fault: Callable[["Run"], None]
    urls: list  # one URL per worker, in the order of RUNTIMES
    election: bool = False  # the workers are candidates of a leader election (Rust and Python)
    fence_redis: str = ""  # the Redis of the real fences, for a row that writes through them


class Run:
    def __init__(self, round_: Round, resource: Resource, workers: list[Worker]) -> None:
        self.round, self.resource, self.workers = round_, resource, workers
        self.fault_ended = 0.0

    def holder(self, among: Optional[Callable[[Worker], bool]] = None, seconds: float = 10) -> Worker:
        """The worker inside its section now (among those `among` accepts)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            inside = self.resource.inside()
            for w in self.workers:
                if inside == w.id_prefix and (among is None or among(w)) and w.proc and w.proc.poll() is None:
                    return w
            time.sleep(0.005)
        raise RuntimeError("no worker entered a section")


def pause_holder(seconds: float, among: Optional[Callable[["Worker"], bool]] = None) -> Callable[[Run], None]:
    def fault(run: Run) -> None:
        w = run.holder(among)
        os.kill(w.proc.pid, signal.SIGSTOP)
        time.sleep(seconds)
        os.kill(w.proc.pid, signal.SIGCONT)
    return fault


def kill_holder(run: Run) -> None:
    w = run.holder()
    w.proc.kill()


def network_pause(proxy_proc: subprocess.Popen, through: str) -> Callable[[Run], None]:
    def fault(run: Run) -> None:
        run.holder(among=lambda w: w.url == through)
        os.kill(proxy_proc.pid, signal.SIGSTOP)
        time.sleep(WATCHDOG_MS / 1000 * 2 + 1)
        os.kill(proxy_proc.pid, signal.SIGCONT)
    return fault


def restart_redis(servers: Servers, port: int) -> Callable[[Run], None]:
    def fault(run: Run) -> None:
        run.holder()
        cli(port, "SHUTDOWN")  # the append-only file is fsynced at every write
        servers.procs[port].wait()
        time.sleep(1)
        servers.redis(port, "--appendonly", "yes", "--appendfsync", "always")
    return fault


def kill_sentinel_master(servers: Servers, sentinel: int) -> Callable[[Run], None]:
    def fault(run: Run) -> None:
        run.holder()
        master = int(cli(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "faults").split()[-1])
        servers.procs[master].kill()
        wait_until("the sentinels' failover",
                   lambda: int(cli(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "faults").split()[-1]) != master)
    return fault


def kill_cluster_master(servers: Servers, nodes: list[int], key: str) -> Callable[[Run], None]:
    def master_of(skip: int = 0) -> int:
        seed = next(p for p in nodes if p != skip)
        slot = int(cli(seed, "CLUSTER", "KEYSLOT", key))
        for line in cli(seed, "CLUSTER", "NODES").splitlines():
            parts = line.split()
            if "master" not in parts[2] or "fail" in parts[2]:
                continue
            for r in parts[8:]:
                a, _, b = r.partition("-")
                if a.isdigit() and int(a) <= slot <= int(b or a):
                    return int(parts[1].split("@")[0].rsplit(":", 1)[1])
        return 0

    def fault(run: Run) -> None:
        run.holder()
        master = master_of()
        servers.procs[master].kill()
        wait_until("the cluster's failover", lambda: master_of(skip=master) not in (0, master))
        # The old master comes back as a replica of the new one.
        servers.redis(master, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                      "--cluster-config-file", f"nodes-{master}.conf")
        wait_until("the old master back as a replica", lambda: replicas_online(master_of()) == 1)
    return fault


def kill_zk_leader(servers: Servers, ports: list[int]) -> Callable[[Run], None]:
    def fault(run: Run) -> None:
        run.holder()
        leader = next(p for p in ports if zk_mode(p) == "leader")
        pid = int((servers.dir / f"zk-{leader}" / "zookeeper.pid").read_text().strip())
        os.kill(pid, signal.SIGKILL)
    return fault


def kill_etcd_leader(servers: Servers, ports: list[int]) -> Callable[[Run], None]:
    def fault(run: Run) -> None:
        run.holder()
        leader = etcd_leader(ports)
        if leader is None:
            raise RuntimeError("no etcd leader to kill")
        os.kill(servers.etcd_pid(leader), signal.SIGKILL)
    return fault


def partition_etcd_member(servers: Servers, ports: list[int], seconds: float) -> Callable[[Run], None]:
    """A member cut off from the others and from its clients: SIGSTOP, the loopback-only way (no
    network namespace needed); its peers and clients see it stop answering, as in a partition.
    The leader is chosen: the others must elect a new one while the holder keeps its lease."""
    def fault(run: Run) -> None:
        run.holder()
        leader = etcd_leader(ports)
        if leader is None:
            raise RuntimeError("no etcd leader to partition away")
        pid = servers.etcd_pid(leader)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(seconds)
        os.kill(pid, signal.SIGCONT)
    return fault


# --- the checker ---------------------------------------------------------------------------------

def check(round_: Round, resource: Resource, workers: list[Worker], fault_ended: float) -> dict:
    sections: dict[tuple[str, int], list] = {}
    for t, op, worker, token, ok in resource.log:
        sections.setdefault((worker, token), []).append((t, op, ok))
    accepted = []
    refused = 0
    for (worker, token), reqs in sections.items():
        if [op for _, op, _ in reqs] == ["BEGIN", "WRITE", "WRITE", "WRITE", "END"] and all(ok for *_, ok in reqs):
            accepted.append((reqs[0][0], reqs[-1][0], token, worker))
        elif any(not ok for *_, ok in reqs):
            refused += 1
    accepted.sort()
    doubles = sum(1 for a, b in zip(accepted, accepted[1:]) if b[0] < a[1])
    rising = all(a[2] < b[2] for a, b in zip(accepted, accepted[1:]))
    reports = [line for w in workers for line in w.lines if "token" in line]
    lost = sum(1 for r in reports if r["told"])
    untold_reports = [r for r in reports if r["refused"] and not r["told"]]
    untold = len(untold_reports)
    for r in untold_reports:  # named, so that a failed row says whose section it was
        print(f"untold: {json.dumps(r)}", file=sys.stderr, flush=True)
    after = sum(1 for a in accepted if a[0] > fault_ended)
    by_runtime: dict[str, int] = {}
    for a in accepted:
        rt = a[3].split("-")[0]
        by_runtime[rt] = by_runtime.get(rt, 0) + 1
    errors: dict[str, int] = {}
    for w in workers:
        for line in w.lines:
            if "acquire_error" in line:
                # One spelling for the three runtimes' (Connection, PolylockConnectionError, CONNECTION).
                kind = line["acquire_error"].lower().replace("_", "").removeprefix("polylock").removesuffix("error")
                errors[kind] = errors.get(kind, 0) + 1
    ok = doubles == 0 and untold == 0 and rising and after > 0
    return {"fault": round_.name, "backend": round_.backend, "sections": len(sections), "accepted": len(accepted),
            "refused": refused, "lost": lost, "untold": untold, "doubles": doubles, "rising": rising,
            "after": after, "ok": ok, "errors": errors, "by_runtime": by_runtime, "fences": None}


FENCES = ("redis", "postgres", "mysql")


def stale_accepted(tokens: list[int]) -> int:
    """Writes a fence accepted (in its own order) under a token smaller than one before them."""
    top, stale = 0, 0
    for t in tokens:
        if t < top:
            stale += 1
        top = max(top, t)
    return stale


def fenced_logs(redis_port: int, name: str) -> dict[str, list[int]]:
    """What each real fence accepted for `name`, in the order it accepted it, read from its server;
    then removed (the rows, the list, the guard rows and the fence's key)."""
    import psycopg

    key = f"{{{name}}}:fenced"
    logs = {"redis": [int(t) for t in cli(redis_port, "LRANGE", key, "0", "-1").split()]}
    cli(redis_port, "DEL", key, f"polylock_fence:{{{name}}}")
    with psycopg.connect(os.environ["POLYLOCK_PG_URL"].split("?")[0]) as pg:
        logs["postgres"] = [r[0] for r in pg.execute(
            "SELECT token FROM polylock_faults_fenced WHERE name = %s ORDER BY id", (name,))]
        pg.execute("DELETE FROM polylock_faults_fenced WHERE name = %s", (name,))
        pg.execute("DELETE FROM polylock_fence WHERE name = %s", (name,))
    my = mysql_connect()
    try:
        with my.cursor() as c:
            c.execute("SELECT token FROM polylock_faults_fenced WHERE name = %s ORDER BY id", (name,))
            logs["mysql"] = [int(r[0]) for r in c.fetchall()]
            c.execute("DELETE FROM polylock_faults_fenced WHERE name = %s", (name,))
            c.execute("DELETE FROM polylock_fence WHERE name = %s", (name,))
        my.commit()
    finally:
        my.close()
    return logs


def mysql_connect():
    import urllib.parse

    import pymysql

    u = urllib.parse.urlparse(os.environ["POLYLOCK_MYSQL_URL"])
    return pymysql.connect(host=u.hostname, port=u.port, user=u.username, password=u.password,
                           database=u.path.lstrip("/"))


def fence_tables() -> None:
    """The guard tables and the log the fenced rows insert into, on both SQL servers."""
    import psycopg

    import polylock

    with psycopg.connect(os.environ["POLYLOCK_PG_URL"].split("?")[0]) as pg:
        polylock.fence.setup(pg)
        pg.execute("CREATE TABLE IF NOT EXISTS polylock_faults_fenced (id BIGSERIAL PRIMARY KEY, "
                   "name VARCHAR(255) NOT NULL, token BIGINT NOT NULL)")
    my = mysql_connect()
    try:
        polylock.fence.setup(my)
        with my.cursor() as c:
            c.execute("CREATE TABLE IF NOT EXISTS polylock_faults_fenced (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
                      "name VARCHAR(255) NOT NULL, token BIGINT NOT NULL) ENGINE=InnoDB")
        my.commit()
    finally:
        my.close()


def check_fences(row: dict, workers: list["Worker"], logs: dict[str, list[int]]) -> None:
    """The real fences' figures of a fenced row: writes accepted (read from the servers), refused
    (the workers' counts), stale accepted; the row fails on a stale write, a fence error, or a
    fence that refused nothing (the paused holder's late write got through or never came)."""
    reports = [line for w in workers for line in w.lines if "fenced" in line]
    figures = {}
    for f in FENCES:
        refused = sum(r["fenced"][f][1] for r in reports)
        figures[f] = {"accepted": len(logs[f]), "refused": refused, "stale": stale_accepted(logs[f])}
    errors = sum(r.get("fence_errors", 0) for r in reports)
    row["fences"] = figures
    row["fence_errors"] = errors
    if errors or any(v["stale"] or not v["refused"] for v in figures.values()):
        print(f"fences: {json.dumps(figures)}, {errors} fence errors", file=sys.stderr, flush=True)
        row["ok"] = False


def fenced_cell(r: dict) -> str:
    """The real fences' figures of a row: refused/accepted per fence, and any stale write accepted."""
    if not r.get("fences"):
        return "-"
    f = r["fences"]
    stale = sum(v["stale"] for v in f.values())
    return " ".join(f"{k} {v['refused']}/{v['accepted']}" for k, v in f.items()) + f", {stale} stale accepted"


def table(rows: list[dict]) -> str:
    head = ("fault", "backend", "sections", "accepted", "accepted by runtime", "refused by token", "lost signals", "untold",
            "double holders", "tokens rose", "accepted after", "failed acquires", "real fences: refused/accepted",
            "result")
    body = [(r["fault"], r["backend"], r["sections"], r["accepted"],
             " ".join(f"{k} {v}" for k, v in sorted(r["by_runtime"].items())), r["refused"], r["lost"], r["untold"],
             r["doubles"], "yes" if r["rising"] else "NO", r["after"],
             " ".join(f"{k} {v}" for k, v in sorted(r["errors"].items())) or "0",
             fenced_cell(r), "ok" if r["ok"] else "FAILED") for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["| " + " | ".join(str(x).ljust(w) for x, w in zip(row, widths)) + " |" for row in [head, *body]]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


# --- main ----------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--no-java", action="store_true")
    opts = parser.parse_args()
    # The fences' checker finds a planted stale write (and none in a rising or repeating log).
    assert stale_accepted([3, 5, 4, 6]) == 1 and stale_accepted([1, 2, 2, 9]) == 0, "stale_accepted is broken"
    runtimes = ["rust", "rust", "python"] + ([] if opts.no_java else ["java"])
    only = set(filter(None, opts.only.split(",")))

    servers = Servers()
    rows = []
    proxy_proc = None
    try:
        cache: dict[str, object] = {}

        def once(what: str, make: Callable[[], object]) -> object:
            if what not in cache:
                cache[what] = make()
            return cache[what]

        def plain_redis() -> tuple[int, int, subprocess.Popen]:
            def make() -> tuple[int, int, subprocess.Popen]:
                nonlocal proxy_proc
                port = free_port()
                servers.redis(port)
                via = free_port()
                proxy_proc = subprocess.Popen([sys.executable, __file__, "proxy", str(via), str(port)])
                wait_until("the proxy", lambda: socket.create_connection(("127.0.0.1", via), timeout=1).close() is None)
                return port, via, proxy_proc
            return once("plain", make)  # type: ignore[return-value]

        def durable_redis() -> int:
            def make() -> int:
                port = free_port()
                servers.redis(port, "--appendonly", "yes", "--appendfsync", "always")
                return port
            return once("durable", make)  # type: ignore[return-value]

        def sentinel_group() -> tuple[list[int], str]:
            def make() -> tuple[list[int], str]:
                master = free_port()
                servers.redis(master)
                for _ in range(2):
                    servers.redis(free_port(), "--replicaof", "127.0.0.1", str(master))
                sentinels = [free_port() for _ in range(3)]
                wait_until("the replicas in sync", lambda: replicas_online(master) == 2)
                for port in sentinels:
                    servers.sentinel(port, master)
                url = ("redis+sentinel://" + ",".join(f"127.0.0.1:{p}" for p in sentinels)
                       + "/faults?wait_replicas=1&wait_timeout=500ms")
                return sentinels, url
            return once("sentinel", make)  # type: ignore[return-value]

        def redis_cluster() -> tuple[list[int], str]:
            def make() -> tuple[list[int], str]:
                nodes = [free_port() for _ in range(6)]
                for port in nodes:
                    servers.redis(port, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                                  "--cluster-config-file", f"nodes-{port}.conf")
                subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in nodes],
                                "--cluster-replicas", "1", "--cluster-yes"], check=True, stdout=subprocess.DEVNULL)
                wait_until("the cluster", lambda: "cluster_state:ok" in cli(nodes[0], "CLUSTER", "INFO"))
                wait_until("the cluster's replicas in sync", lambda: sum(
                    replicas_online(p) for p in nodes) == 3)
                url = ("redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in nodes)
                       + "?wait_replicas=1&wait_timeout=500ms")
                return nodes, url
            return once("cluster", make)  # type: ignore[return-value]

        def zk_ensemble() -> tuple[list[int], str]:
            def make() -> tuple[list[int], str]:
                ports = servers.zk_ensemble()
                return ports, "zk://" + ",".join(f"127.0.0.1:{p}" for p in ports)
            return once("zk", make)  # type: ignore[return-value]

        def etcd_cluster() -> tuple[list[int], str]:
            def make() -> tuple[list[int], str]:
                ports = servers.etcd_cluster()
                # Leases of 2 s: a holder stopped for longer loses its keys.
                return ports, "etcd://" + ",".join(f"127.0.0.1:{p}" for p in ports) + "?ttl=2"
            return once("etcd", make)  # type: ignore[return-value]

        lease = WATCHDOG_MS / 1000

        def fencer(w: Worker) -> bool:  # a worker that writes through the real fences
            return bool(w.fences)
        key = "polylock-faults:cluster"

        def direct() -> str:
            return f"redis://127.0.0.1:{plain_redis()[0]}"

        def through() -> str:
            return f"redis://127.0.0.1:{plain_redis()[1]}"

        # Each round: its name, backend, the fault, and the workers' URLs (made when it runs).
        rounds: list[tuple[str, str, Callable[[], Callable[[Run], None]], Callable[[], list]]] = [
            ("SIGSTOP the holder past its lease", "redis", lambda: pause_holder(lease * 2 + 1, fencer),
             lambda: [direct()] * 4),
            ("SIGKILL the holder", "redis", lambda: kill_holder, lambda: [direct()] * 4),
            ("network pause (stopped proxy)", "redis",
             lambda: network_pause(plain_redis()[2], through()),
             lambda: [through(), direct(), through(), direct()]),
            ("restart Redis (AOF, fsync always)", "redis", lambda: restart_redis(servers, durable_redis()),
             lambda: [f"redis://127.0.0.1:{durable_redis()}"] * 4),
            ("Sentinel failover (master killed)", "sentinel",
             lambda: kill_sentinel_master(servers, sentinel_group()[0][0]), lambda: [sentinel_group()[1]] * 4),
            ("Cluster failover (master killed)", "cluster",
             lambda: kill_cluster_master(servers, redis_cluster()[0], key), lambda: [redis_cluster()[1]] * 4),
            ("ZooKeeper leader killed", "zookeeper", lambda: kill_zk_leader(servers, zk_ensemble()[0]),
             lambda: [zk_ensemble()[1]] * 4),
            ("SIGSTOP the holder past its session", "zookeeper", lambda: pause_holder(7, fencer),
             lambda: [zk_ensemble()[1]] * 4),
            ("SIGSTOP the holder past its lease", "etcd", lambda: pause_holder(5, fencer),
             lambda: [etcd_cluster()[1]] * 4),
            ("etcd leader partitioned away (SIGSTOP 5 s)", "etcd",
             lambda: partition_etcd_member(servers, etcd_cluster()[0], 5),
             lambda: [etcd_cluster()[1]] * 4),
            ("etcd leader killed", "etcd", lambda: kill_etcd_leader(servers, etcd_cluster()[0]),
             lambda: [etcd_cluster()[1]] * 4),
            # Leader election: the same faults on its leader (Rust and Python candidates).
            ("election: SIGSTOP the leader past its lease", "redis", lambda: pause_holder(lease * 2 + 1),
             lambda: [direct()] * 4),
            ("election: SIGSTOP the leader past its session", "zookeeper", lambda: pause_holder(7),
             lambda: [zk_ensemble()[1]] * 4),
            ("election: SIGSTOP the leader past its lease", "etcd", lambda: pause_holder(5),
             lambda: [etcd_cluster()[1]] * 4),
        ]
        for i, (title, backend, fault, urls) in enumerate(rounds):
            if only and str(i + 1) not in only and backend not in only:
                continue
            fenced = title.startswith("SIGSTOP the holder")
            rnd = Round(title, backend, fault(), urls(), election=title.startswith("election:"),
                        fence_redis=direct() if fenced else "")
            rows.append(play(rnd, runtimes, opts.seconds, key if backend == "cluster" else None))
            print(table(rows[-1:]), flush=True)
    finally:
        if proxy_proc:
            os.kill(proxy_proc.pid, signal.SIGCONT)
            proxy_proc.kill()
            proxy_proc.wait()
        servers.stop()
    print()
    print(table(rows))
    failed = [r["fault"] for r in rows if not r["ok"]]
    print(f"{len(rows) - len(failed)} faults passed, {len(failed)} failed")
    return 1 if failed or not rows else 0


def play(rnd: Round, runtimes: list[str], seconds: float, key: Optional[str]) -> dict:
    resource = Resource()
    server, port = resource.serve()
    name = key or f"polylock-faults:{int(time.time() * 1000)}"
    if rnd.backend == "zookeeper":
        name = "/polylock-faults/" + name.replace(":", "-")
    elif rnd.backend == "etcd":
        name = "polylock-faults/" + name.replace(":", "-")
    if rnd.election:  # Java's LeaderLatch campaigns in the background: its candidates are Python's
        runtimes = ["python" if rt == "java" else rt for rt in runtimes]
    workers = [Worker(rt, url, rnd.election) for rt, url in zip(runtimes, rnd.urls)]
    if rnd.fence_redis:
        fence_tables()
        fences = ",".join([rnd.fence_redis, os.environ["POLYLOCK_PG_URL"], os.environ["POLYLOCK_MYSQL_URL"]])
        for w in workers:
            if w.runtime in ("rust", "python"):
                w.fences = fences
    for w in workers:
        w.start(name, port, seconds)
    run = Run(rnd, resource, workers)
    time.sleep(min(3.0, seconds / 4))
    fault_error = None
    try:
        rnd.fault(run)
    except Exception as e:  # the fault could not be made: the row fails
        fault_error = e
    run.fault_ended = time.monotonic()
    for w in workers:
        try:
            w.proc.wait(timeout=seconds + 30)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            w.proc.wait()
    server.shutdown()
    server.server_close()
    row = check(rnd, resource, workers, run.fault_ended)
    if rnd.fence_redis:
        check_fences(row, workers, fenced_logs(int(rnd.fence_redis.rsplit(":", 1)[1]), name))
    if fault_error is not None:
        print(f"the fault '{rnd.name}' could not be made: {fault_error}", file=sys.stderr)
        row["ok"] = False
    return row


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "proxy":
        proxy(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(main())
