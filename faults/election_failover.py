#!/usr/bin/env python3
"""Leader election under repeated SIGKILL of its leader: 5 candidates across runtimes (the
`polylock elect` command on the Rust core, the Python binding, the Node binding) campaign in one
election; the leader is killed CHANGES times, a new candidate of the same runtime takes its place,
and each time the next leader must be elected within the bound (Redis: the 2 s lease + 1 s;
ZooKeeper: the 3 s session + 1 s; etcd: its 5 s lease TTL + 1 s). An observer (`polylock leader
--watch`) must see every leader, in order, with rising terms.

    faults/election_failover.py --backend redis|zookeeper|etcd [--changes N]

Prints the failover times (p50, p90, max) and exits 1 on a bound missed, a term that did not
rise, two leaders reported for one term, or an observer that missed or reordered a leader."""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
CLI = os.environ.get("POLYLOCK_CLI") or str(TARGET / "release/polylock")

URLS = {
    "redis": os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379"),
    "zookeeper": os.environ.get("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181") + "?session_timeout_ms=3000",
    "etcd": os.environ.get("POLYLOCK_ETCD_URL", "etcd://127.0.0.1:2379") + "?ttl=5",
}
BOUND_S = {"redis": 3.0, "zookeeper": 4.0, "etcd": 6.0}

PYTHON = """
import sys, time, polylock
url, name, me = sys.argv[1:4]
client = polylock.connect(url, watchdog_timeout=2.0, session_timeout=3.0)
e = client.election(name, me)
e.campaign()
print("LEADER", me, e.term, flush=True)
time.sleep(3600)
"""

NODE = """
const polylock = require(process.argv[1]);
const [url, name, me] = process.argv.slice(2);
(async () => {
  const client = await polylock.connect(url, { watchdogTimeoutMs: 2000, sessionTimeoutMs: 3000 });
  const e = client.election(name, me);
  await e.campaign();
  console.log('LEADER', me, e.term);
  setInterval(() => {}, 1 << 30);
})();
"""


class Candidate:
    def __init__(self, runtime: str, url: str, name: str, me: str, lines: "queue.Queue[tuple[float, str, str]]"):
        self.runtime, self.me = runtime, me
        if runtime == "cli":
            cmd = [CLI, "elect", "--url", url, name, "--identity", me, "--watchdog", "2s", "--",
                   "sh", "-c", f'echo "LEADER {me} $POLYLOCK_TERM"; exec sleep 3600']
        elif runtime == "python":
            cmd = [sys.executable, "-c", PYTHON, url, name, me]
        else:
            cmd = ["node", "-e", NODE, str(ROOT / "bindings-node"), url, name, me]
        # A group of its own: a kill takes the candidate and its command together.
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     start_new_session=True)
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()

    def _read(self, lines: "queue.Queue[tuple[float, str, str]]") -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "LEADER":
                lines.put((time.monotonic(), parts[1], parts[2]))

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=sorted(URLS), default="redis")
    ap.add_argument("--changes", type=int, default=50)
    opts = ap.parse_args()
    url, bound = URLS[opts.backend], BOUND_S[opts.backend]
    name = (f"/polylock-failover/{uuid.uuid4().hex}" if opts.backend == "zookeeper"
            else f"polylock-failover:{uuid.uuid4().hex}")
    lines: "queue.Queue[tuple[float, str, str]]" = queue.Queue()
    watcher = subprocess.Popen([CLI, "leader", "--url", url, name, "--watch"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    seen: list[dict] = []
    threading.Thread(target=lambda: [seen.append(json.loads(l)) for l in watcher.stdout], daemon=True).start()
    runtimes = ["cli", "python", "node", "cli", "python"]
    made = 0

    def candidate(runtime: str) -> Candidate:
        nonlocal made
        made += 1
        return Candidate(runtime, url, name, f"{runtime}-{made}", lines)

    alive = {c.me: c for c in (candidate(r) for r in runtimes)}
    failures: list[str] = []
    leaders: list[tuple[str, int]] = []
    times: list[float] = []
    try:
        _, me, term = lines.get(timeout=30)
        leaders.append((me, int(term)))
        for change in range(1, opts.changes + 1):
            time.sleep(0.3)  # every candidate queued (or retrying) behind the leader
            old = alive.pop(leaders[-1][0])
            killed = time.monotonic()
            old.kill()
            replacement = candidate(old.runtime)
            alive[replacement.me] = replacement
            try:
                at, me, term = lines.get(timeout=bound + 30)
            except queue.Empty:
                failures.append(f"change {change}: no leader within {bound + 30:.0f} s")
                break
            took = at - killed
            times.append(took)
            if took > bound:
                failures.append(f"change {change}: {me} led {took:.2f} s after the kill (bound {bound} s)")
            if int(term) <= leaders[-1][1]:
                failures.append(f"change {change}: term {term} after {leaders[-1][1]}")
            if me not in alive:
                failures.append(f"change {change}: {me}, killed, reported leading")
            leaders.append((me, int(term)))
            if not lines.empty():
                failures.append(f"change {change}: a second leader reported: {lines.get()}")
        time.sleep(1.0)
    finally:
        for c in alive.values():
            c.kill()
        time.sleep(0.5)
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=10)
    observed = [(s["leader"], s["term"]) for s in seen if s["leader"] is not None]
    dedup = [x for i, x in enumerate(observed) if i == 0 or x != observed[i - 1]]
    if dedup != leaders:
        missing = [l for l in leaders if l not in dedup]
        failures.append(f"the observer saw {len(dedup)} leaders, the candidates {len(leaders)}; missing {missing[:5]}")
    if times:
        q = statistics.quantiles(times, n=10, method="inclusive")
        print(f"election failover on {opts.backend}: {len(times)} changes after SIGKILL of the leader "
              f"(5 candidates: cli, python, node), p50 {statistics.median(times) * 1000:.0f} ms, "
              f"p90 {q[8] * 1000:.0f} ms, max {max(times) * 1000:.0f} ms (bound {bound * 1000:.0f} ms); "
              f"observer saw {len(dedup)} of {len(leaders)} leaders in order")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures or not times else 0


if __name__ == "__main__":
    sys.exit(main())
