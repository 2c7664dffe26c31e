"""The Python runner of polylock's conformance suite (conformance/README.md): runs every scenario of
conformance/scenarios/*.json against the servers of scripts/servers.sh with the installed polylock
package, and prints ``conformance python: N passed, N failed, N not applicable``.

    python3 runner.py [--scenarios DIR] [--only TEXT] [--jobs N] [--vocabulary] [-v]

Each actor is a thread of its own: a Python owner is a thread (sync calls).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import polylock

RUNTIME = "python"

VOCABULARY = {
    "connect": "`polylock.connect(url)` (`polylock.connect_redlock(urls)`)",
    "owner": "the calling thread (sync calls), the asyncio task (`*_async`, `async with`)",
    "acquire": "`lock.acquire(timeout=seconds)` → `True`",
    "wait_forever": "`timeout=None` or `timeout=-1`, in every call that waits",
    "wait_none": "`lock.acquire(blocking=False)` (`timeout=0`)",
    "not_acquired": "`False` (locks, semaphores, expiring permits: `sem.acquire(...) is False`)",
    "lease_watchdog": "`lease=None` (the default)",
    "lease_fixed": "`lock.acquire(lease=seconds)`",
    "release": "`lock.release()`",
    "reenter": "`lock.acquire()` again in the same thread (task)",
    "hold_count": "`lock.hold_count`; `lock.owned()`",
    "is_locked": "`lock.locked()`",
    "fencing_token": "`lock.fencing_token`",
    "remaining_lease": "`lock.remaining_lease` → `None` / `math.inf` / seconds",
    "extend": "`lock.extend(additional_time)` (`replace_ttl=True`), `lock.reacquire()` (redis-py's names)",
    "force_unlock": "`lock.force_unlock()` → was it held",
    "lost_listener": "`lock.on_lost(callback)`: `callback(lock, event)`, `event`: `LostEvent(name, kind, owner, reason)`",
    "lost_reasons": "`\"EXPIRED\"`, `\"DELETED\"`, `\"RENEWAL_FAILED\"`, `\"SESSION_EXPIRED\"`, `\"CLIENT_CLOSED\"`",
    "is_lost": "`lock.lost`, `lock.lost_reason`",
    "suspended": "`client.suspended`",
    "section": "`with lock:`, `async with lock:`, `@client.synchronize(name, wait=seconds)` (alias `@client.locked`)",
    "timeout_error": "`LockTimeoutError` (a `PolylockError` and a `TimeoutError`)",
    "base_error": "`PolylockError`: `.code` (`\"NOT_OWNER\"`), `.number` (4); `polylock.error_table()`",
    "not_owner_error": "`NotOwnerError` (a `RuntimeError`, as `threading.Lock.release`)",
    "read_write": "`client.read_write_lock(name).read_lock()` / `.write_lock()`",
    "semaphore_acquire": "`sem.acquire(timeout=seconds, permits=n)` → `True` / `False`",
    "permit_acquire": "`pes.acquire(timeout=seconds, lease=seconds)` → the id / `False`",
    "latch_wait": "`latch.wait(timeout=seconds)` → `True` open / `False`",
    "multi": "`polylock.MultiLock([a, b])`",
    "election": "`client.election(name, identity)`: `campaign(timeout=seconds)` → `True` (`term`), `resign()`, `leader()` → `Leader(identity, term)`, `candidates()`",
    "close": "`client.close()` (`with polylock.connect(url) as client:`)",
}

REASONS = {"EXPIRED", "DELETED", "RENEWAL_FAILED", "SESSION_EXPIRED", "CLIENT_CLOSED"}


class RunnerError(Exception):
    """The runner could not do what the step says (not an outcome of polylock)."""


def error_word(e: BaseException) -> Dict[str, Any]:
    """An exception as an outcome: polylock's own errors carry their code and number; anything
    else is a difference of the contract (a foreign exception)."""
    if isinstance(e, polylock.PolylockError):
        table = {name: n for n, name, _ in polylock.error_table()}
        if table.get(e.code) != e.number:
            return {"outcome": f"error:{e.code} with number {e.number}"}
        return {"outcome": f"error:{e.code}", "message": str(e), "exc": e}
    return {"outcome": f"foreign:{type(e).__name__}", "message": str(e)}


def seconds(ms: Optional[int]) -> Optional[float]:
    return None if ms is None else ms / 1000.0


class Run:
    def __init__(self, suite: Dict[str, Any], scenario: Dict[str, Any], backend: str, prefix: str):
        self.suite = suite
        self.scenario = scenario
        self.backend = backend
        spec = suite["backends"][backend]
        self.zk = bool(spec.get("paths"))
        self.urls: List[str] = []
        if "env" in spec:
            value = os.environ.get(spec["env"], "")
            urls = value.split(",") if spec.get("list") else [value]
            if "query" in spec:
                urls = [u + ("&" if "?" in u else "?") + spec["query"] for u in urls]
            self.urls = urls
        self.prefix = prefix
        self.actors: Dict[str, str] = scenario.get("actors") or suite["default_actors"]
        self.workers: Dict[str, cf.ThreadPoolExecutor] = {}
        self.clients: Dict[str, Any] = {}
        self.handles: Dict[tuple, Any] = {}
        self.permits_set: set = set()
        self.saved: Dict[str, Any] = {}
        self.lost: Dict[str, List[Any]] = {}
        self.bg: Dict[str, tuple] = {}
        self.lock = threading.Lock()
        o = suite["client"]
        self.options = dict(
            watchdog_timeout=o["watchdog_timeout_ms"] / 1000,
            connect_timeout=o["connect_timeout_ms"] / 1000,
            command_timeout=o["command_timeout_ms"] / 1000,
        )
        self.more_options = dict(
            session_timeout=o["session_timeout_ms"] / 1000,
            fair_wait_timeout=o["fair_wait_timeout_ms"] / 1000,
        )

    # ---- the actors' world ----------------------------------------------------------------------

    def worker(self, actor: str) -> cf.ThreadPoolExecutor:
        if actor not in self.workers:
            self.workers[actor] = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"actor-{actor}")
        return self.workers[actor]

    def connect(self, url: Any) -> Any:
        if isinstance(url, list):
            return polylock.connect_redlock(url, **self.options)
        return polylock.connect(url, **self.options, **self.more_options)

    def client(self, actor: str) -> Any:
        cid = self.actors[actor]
        with self.lock:
            if cid not in self.clients:
                self.clients[cid] = self.connect(self.urls if len(self.urls) > 1 else self.urls[0])
            return self.clients[cid]

    def obj(self, name: str) -> Dict[str, Any]:
        return self.scenario["objects"][name]

    def name_of(self, obj: str) -> str:
        o = self.obj(obj)
        if "literal" in o:
            return o["literal"]
        base = o.get("name", obj.lower())
        return f"/{self.prefix}/{base}" if self.zk else f"{self.prefix}:{base}"

    def handle(self, actor: str, obj: str) -> Any:
        key = (self.actors[actor], obj)
        with self.lock:
            if key in self.handles:
                return self.handles[key]
        client = self.client(actor)
        o = self.obj(obj)
        ty = o["type"]
        name = self.name_of(obj)
        if ty == "lock":
            h = client.lock(name)
        elif ty == "fair":
            h = client.fair_lock(name)
        elif ty == "mutex":
            h = client.mutex(name)
        elif ty == "read":
            h = client.read_write_lock(name).read_lock()
        elif ty == "write":
            h = client.read_write_lock(name).write_lock()
        elif ty == "semaphore":
            h = client.semaphore(name)
        elif ty == "permit_semaphore":
            h = client.permit_expirable_semaphore(name)
        elif ty == "latch":
            h = client.count_down_latch(name)
        elif ty == "multi":
            h = polylock.MultiLock([self.handle(actor, m) for m in o["of"]])
        elif ty == "election":
            h = client.election(name, actor)
        else:
            raise RunnerError(f"unknown object type {ty}")
        if "permits" in o:
            with self.lock:
                first = obj not in self.permits_set
                self.permits_set.add(obj)
            if first:
                h.try_set_permits(o["permits"])
        with self.lock:
            self.handles[key] = h
        return h

    # ---- one step, on its actor's thread ----------------------------------------------------------

    def forever(self, step: Dict[str, Any]) -> Any:
        """Python's two spellings of "forever": None, and -1 (the `alt` spelling)."""
        return -1 if step.get("spelling") == "alt" else None

    def timeout(self, step: Dict[str, Any]) -> Any:
        wait = step.get("wait", "forever")
        if wait == "forever":
            return self.forever(step)
        if wait == "none":
            return 0
        return wait / 1000.0

    def do(self, actor: str, step: Dict[str, Any]) -> Any:
        op = step["op"]
        obj = step.get("on")
        try:
            return self.do_op(actor, op, obj, step)
        except RunnerError:
            raise
        except Exception as e:  # noqa: BLE001 - every exception is an outcome to compare
            return error_word(e)

    def do_op(self, actor: str, op: str, obj: Optional[str], step: Dict[str, Any]) -> Any:
        if op == "make":
            self.handle(actor, obj)
            return "ok"
        if op == "connect":
            c = self.connect(step["url"])
            c.close()
            return "ok"
        if op == "suspended":
            return self.client(actor).suspended
        if op == "close":
            self.client(actor).close()
            return "ok"
        if op == "error_table":
            table = polylock.error_table()
            if [n for n, _, _ in table] != list(range(1, len(table) + 1)):
                return "numbers out of order"
            for n, name, cls in table:
                if not issubclass(cls, polylock.PolylockError):
                    return f"{name} is not a PolylockError"
            return [name for _, name, _ in table]
        h = self.handle(actor, obj)
        if op == "acquire":
            if step.get("wait") == "none":
                got = h.acquire(blocking=False, lease=seconds(step.get("lease")))
            else:
                got = h.acquire(timeout=self.timeout(step), lease=seconds(step.get("lease")))
            if got is True:
                return {"outcome": "acquired", "token": h.fencing_token}
            if got is False:
                return "not_acquired"
            return f"acquire returned {got!r}"
        if op == "release":
            h.release()
            return "ok"
        if op == "held":
            return h.hold_count
        if op == "is_locked":
            return h.locked()
        if op == "token":
            t = h.fencing_token
            return {"outcome": "token", "token": t} if t is not None else "error:NOT_OWNER"
        if op == "remaining_lease":
            left = h.remaining_lease
            if left is None:
                return "not_held"
            if left == math.inf:
                return "no_expiry"
            return {"outcome": "expires", "ms": int(left * 1000)}
        if op == "extend":
            h.extend(step["ms"] / 1000.0, replace_ttl=True)
            return "ok"
        if op == "force_unlock":
            return h.force_unlock()
        if op == "is_lost":
            return h.lost
        if op == "listen":
            seen = self.lost.setdefault(f"{actor}/{obj}", [])
            h.on_lost(lambda handle, event: seen.append(event))
            return "ok"
        if op == "wait_lost":
            seen = self.lost.get(f"{actor}/{obj}")
            if seen is None:
                raise RunnerError("wait_lost without listen")
            kinds = {m.kind for m in h.members} if isinstance(h, polylock.MultiLock) else {h.kind}
            deadline = time.monotonic() + step.get("within", 5000) / 1000
            while time.monotonic() < deadline:
                for ev in list(seen):
                    if ev.reason not in REASONS:
                        return f"lost with a reason outside the contract: {ev.reason!r}"
                    if ev.kind not in kinds:
                        return f"lost event of kind {ev.kind!r}, not {kinds}"
                    return f"lost:{ev.reason}"
                time.sleep(0.02)
            return "not_lost"
        if op == "section":
            client = self.client(actor)

            @client.synchronize(self.name_of(obj), wait=self.timeout(step))
            def section() -> str:
                return "ran"

            try:
                return section()
            except polylock.LockTimeoutError as e:
                if not (isinstance(e, polylock.PolylockError) and isinstance(e, TimeoutError)):
                    return "the timeout error is not a PolylockError and a TimeoutError"
                raise
        if op == "sem_set":
            return h.try_set_permits(step["n"])
        if op == "sem_acquire":
            if step.get("wait") == "none":
                got = h.acquire(blocking=False, permits=step.get("n", 1))
            else:
                got = h.acquire(timeout=self.timeout(step), permits=step.get("n", 1))
            return "acquired" if got is True else "not_acquired" if got is False else f"acquire returned {got!r}"
        if op == "sem_release":
            h.release(step.get("n", 1))
            return "ok"
        if op == "sem_available":
            return h.available_permits()
        if op == "sem_add":
            h.add_permits(step["n"])
            return "ok"
        if op == "sem_drain":
            return h.drain_permits()
        if op == "permit_acquire":
            got = h.acquire(timeout=self.timeout(step), lease=seconds(step.get("lease")))
            if got is False:
                return "not_acquired"
            if isinstance(got, str) and got:
                return {"outcome": "acquired", "id": got}
            return f"acquire returned {got!r}"
        if op == "permit_release":
            h.release(self.saved[step["id"]])
            return "ok"
        if op == "permit_available":
            return h.available_permits()
        if op == "latch_set":
            return h.try_set_count(step["n"])
        if op == "latch_count_down":
            h.count_down()
            return "ok"
        if op == "latch_count":
            return h.count
        if op == "latch_wait":
            got = h.wait(timeout=self.timeout(step))
            return "open" if got is True else "not_open" if got is False else f"wait returned {got!r}"
        if op == "campaign":
            if h.campaign(timeout=self.timeout(step)):
                return {"outcome": "leading", "token": h.term}
            return "not_leading"
        if op == "resign":
            return h.resign()
        if op == "is_leader":
            return h.is_leader
        if op == "leader":
            now = h.leader()
            return "none" if now is None else {"outcome": f"leader:{now.identity}", "token": now.term}
        if op == "candidates":
            return h.candidates()
        raise RunnerError(f"unknown op {op}")

    # ---- checking ---------------------------------------------------------------------------------

    def check(self, step: Dict[str, Any], got: Any) -> Optional[str]:
        expect = step.get("expect")
        if isinstance(expect, dict):
            expect = expect.get(self.backend, expect.get("*"))
        extra: Dict[str, Any] = got if isinstance(got, dict) else {}
        word = extra.get("outcome") if extra else got
        if step["op"] == "token":
            return self.compare_token(expect, extra.get("token"))
        if word != expect or type(word) is not type(expect):
            return f"expected {expect!r}, got {word!r} {extra.get('message', '')}"
        if "message" in step and step["message"] not in extra.get("message", ""):
            return f"the message does not name {step['message']}: {extra.get('message')}"
        if "absent" in step and step["absent"] in extra.get("message", "") + repr(extra.get("exc")):
            return f"the error shows {step['absent']!r}: {extra.get('message')}"
        if "token" in extra:
            if "token" in step:
                why = self.compare_token(step["token"], extra["token"])
                if why:
                    return f"token: {why}"
            if "save" in step:
                self.saved[step["save"]] = extra["token"]
        if "id" in extra and "save" in step:
            self.saved[step["save"]] = extra["id"]
        if "ms" in extra:
            if "max_ms" in step and extra["ms"] > step["max_ms"]:
                return f"{extra['ms']} ms left, more than {step['max_ms']}"
            if "min_ms" in step and extra["ms"] < step["min_ms"]:
                return f"{extra['ms']} ms left, less than {step['min_ms']}"
        return None

    def compare_token(self, want: str, got: Any) -> Optional[str]:
        if not isinstance(got, int):
            return f"no token ({got!r})"
        op, key = want[0], want[1:]
        prev = self.saved.get(key)
        if prev is None:
            return f"no saved token {key}"
        if (op == ">" and got > prev) or (op == "=" and got == prev):
            return None
        return f"{got} is not {op} {prev}"

    # ---- the whole instance -----------------------------------------------------------------------

    def run(self) -> Optional[str]:
        try:
            for i, step in enumerate(self.scenario["steps"]):
                op = step["op"]
                if op == "sleep":
                    time.sleep(step["ms"] / 1000)
                    continue
                actor = step["actor"]
                if op == "join":
                    bstep, fut = self.bg.pop(actor)
                    got = fut.result(timeout=120)
                    why = self.check(bstep, got)
                    if why:
                        return f"step {i} (join {bstep['op']}): {why}"
                    continue
                fut = self.worker(actor).submit(self.do, actor, step)
                if step.get("bg"):
                    self.bg[actor] = (step, fut)
                    continue
                got = fut.result(timeout=120)
                why = self.check(step, got)
                if why:
                    return f"step {i} ({op} {step.get('on', '')}): {why}"
            return None
        except RunnerError as e:
            return f"runner: {e}"
        except Exception as e:  # noqa: BLE001
            return f"runner: {type(e).__name__}: {e}"
        finally:
            for c in list(self.clients.values()):
                try:
                    c.close()
                except Exception:  # noqa: BLE001
                    pass
            for w in self.workers.values():
                w.shutdown(wait=False)


def main() -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", default=str(here.parent.parent))
    ap.add_argument("--only")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--vocabulary", action="store_true")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    if args.vocabulary:
        # The class of each kind, as the package itself reports it.
        errors = [{"number": n, "name": name, "says": f"`{cls.__name__}`" + (f" (code `{name}`)" if name in ("PANIC", "NULL_PARAMETER") else "")}
                  for n, name, cls in polylock.error_table()]
        print(json.dumps({"runtime": RUNTIME, "says": VOCABULARY, "errors": errors}))
        return 0
    root = Path(args.scenarios)
    suite = json.loads((root / "suite.json").read_text())
    instances = []
    na = 0
    serial = 0
    for f in sorted((root / "scenarios").glob("*.json")):
        for sc in json.loads(f.read_text())["scenarios"]:
            if args.only and args.only not in sc["id"]:
                continue
            for b in sc["backends"]:
                nas = sc.get("not_applicable", {})
                if RUNTIME in nas or f"{RUNTIME}@{b}" in nas:
                    na += 1
                    continue
                serial += 1
                instances.append((f"{sc['id']}@{b}", Run(suite, sc, b, f"pc/{RUNTIME}-{os.getpid()}-{serial}")))
    passed = failed = 0
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [(label, pool.submit(r.run)) for label, r in instances]
        for label, fut in futures:
            why = fut.result()
            if why is None:
                passed += 1
                if args.v:
                    print(f"ok   {label}", flush=True)
            else:
                failed += 1
                print(f"FAIL {label}: {why}", flush=True)
    print(f"conformance {RUNTIME}: {passed} passed, {failed} failed, {na} not applicable", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
