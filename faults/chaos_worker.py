"""A worker of the randomized checker (faults/chaos.py) on the Python binding.

Usage: chaos_worker.py PLAN WORKER_ID SEED SECONDS ACTORS [fork|leak]

Each actor (a thread, with an asyncio loop of its own for the async forms) draws its operations
from mulberry32 seeded with the worker's seed (the same generator and the same draws as the Rust,
Node and Java workers: ten numbers per operation, whatever happens to it), and reports on stdout,
one JSON object a line: {"t":"op",...} per operation, {"t":"section","id":...,"told":...} per
section after its release, {"t":"error",...} for an error no operation expects, and
{"t":"done","actor":...,"digest":...} at the end (a hash of the first 64 operations' draws).

`fork`: one actor, which now and then forks (also in the middle of a section) a child that runs a
short loop with clients of its own, as gunicorn or celery would; a child that connects to
ZooKeeper after its parent used it must get UnsupportedError at once. `leak` (the self-test):
take a Redis lock with a 10-minute lease and exit without releasing or closing.
"""

from __future__ import annotations

import asyncio
import atexit
import faulthandler
import json
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, Optional

import polylock

M = 0xFFFFFFFF


def imul(a: int, b: int) -> int:
    return (a * b) & M


class Rng:
    """mulberry32, as the other workers have it."""

    def __init__(self, seed: int) -> None:
        self.s = seed & M

    def u32(self) -> int:
        self.s = (self.s + 0x6D2B79F5) & M
        t = self.s
        t = imul(t ^ (t >> 15), t | 1)
        t = ((t + imul(t ^ (t >> 7), t | 61)) & M) ^ t
        return (t ^ (t >> 14)) & M


def actor_seed(seed: int, i: int) -> int:
    return (seed + (i + 1) * 0x9E3779B9) & M


def fnv(h: int, v: int) -> int:
    for k in range(4):
        h = ((h ^ ((v >> (8 * k)) & 0xFF)) * 0x01000193) & M
    return h


_out = threading.Lock()


def emit(**fields: Any) -> None:
    line = json.dumps(fields) + "\n"
    with _out:
        sys.stdout.write(line)
        sys.stdout.flush()


class Plan:
    def __init__(self, path: str) -> None:
        self.urls: dict[str, str] = {}
        self.lease: dict[str, bool] = {}
        self.prims: list[dict] = []
        self.leak = ""
        for line in open(path):
            f = line.rstrip("\n").split("\t")
            if f[0] == "resource":
                self.resource = f[1]
            elif f[0] == "watchdog_ms":
                self.watchdog = int(f[1]) / 1000
            elif f[0] == "session_ms":
                self.session = int(f[1]) / 1000
            elif f[0] == "backend":
                self.urls[f[1]] = f[2]
                self.lease[f[1]] = f[3] == "1"
            elif f[0] == "prim":
                self.prims.append({"backend": f[1], "id": f[2], "kind": f[3], "name": f[4], "permits": int(f[5])})
            elif f[0] == "leak":
                self.leak = f[2]


class Conn:
    """The actor's connection to the resource."""

    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.replies = self.sock.makefile("r")

    def ask(self, op: str, prim: str, sid: str, token: int, mode: str) -> bool:
        self.sock.sendall(f"{op} {prim} {sid} {token} {mode}\n".encode())
        return self.replies.readline().strip() == "OK"


class Handles:
    """One client per backend and one handle per primitive, shared by the worker's actors."""

    def __init__(self, plan: Plan, backends: Optional[list[str]] = None) -> None:
        self.clients: dict[str, polylock.Client] = {}
        self.h: dict[str, Any] = {}
        for b, url in plan.urls.items():
            if backends is not None and b not in backends:
                continue
            self.clients[b] = polylock.connect(url, watchdog_timeout=plan.watchdog, session_timeout=plan.session)
        for p in plan.prims:
            c = self.clients.get(p["backend"])
            if c is None:
                continue
            try:
                if p["kind"] == "lock":
                    self.h[p["id"]] = c.lock(p["name"])
                elif p["kind"] == "fair":
                    self.h[p["id"]] = c.fair_lock(p["name"])
                elif p["kind"] == "rw":
                    self.h[p["id"]] = c.read_write_lock(p["name"])
                else:
                    s = c.semaphore(p["name"])
                    s.try_set_permits(p["permits"])
                    self.h[p["id"]] = s
            except polylock.UnsupportedError:
                emit(t="op", actor="-", op="handle", prim=p["id"], result="unsupported")

    def close(self) -> None:
        for c in self.clients.values():
            c.close()


class Op:
    """One operation's ten draws, read the same way by every worker."""

    def __init__(self, d: list[int], plan: Plan, prims: list[dict], forking: bool) -> None:
        sel = d[0] % 100
        excl = [p for p in prims if p["kind"] in ("lock", "fair")]
        if sel < 40:
            self.what, cands = "section", excl
        elif sel < 50:
            self.what, cands = "try", excl
        elif sel < 62:
            self.what, cands = "cancel", prims
        elif sel < 80:
            self.what, cands = "rw", [p for p in prims if p["kind"] == "rw"]
        elif sel < 95:
            self.what, cands = "sem", [p for p in prims if p["kind"] == "sem"]
        else:
            self.what, cands = ("fork" if forking else "idle"), []
        self.prim = cands[d[1] % len(cands)] if cands else None
        self.write_mode = (d[1] >> 16) % 3 == 0  # of a read-write lock: the write half
        self.wait_ms = 100 + d[2] % 2400
        backend = self.prim["backend"] if self.prim else ""
        self.lease_ms = 150 + (d[3] >> 8) % 900 if plan.lease.get(backend) and d[3] % 100 < 35 else None
        self.writes = 1 + d[4] % 3
        self.permits = 1 + (d[4] >> 8) % self.prim["permits"] if self.prim and self.prim["kind"] == "sem" else 1
        self.sleeps = [10 + ((d[5] >> (8 * i)) & 0xFF) % 70 for i in range(4)]
        self.reenter = d[6] % 100 < 30
        self.cancel_ms = 30 + d[7] % 600
        self.api = d[8] % 2
        self.fork_in_section = forking and d[9] % 100 < 8
        self.idle_ms = 10 + d[9] % 40
        self.d9 = d[9]


class Actor:
    def __init__(self, plan: Plan, handles: Handles, name: str, seed: int, deadline: float, forking: bool) -> None:
        self.plan, self.handles, self.name, self.deadline, self.forking = plan, handles, name, deadline, forking
        self.rng = Rng(seed)
        self.conn = Conn(plan.resource)
        self.prims = [p for p in plan.prims if p["id"] in handles.h]
        self.n = 0
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.children: dict[int, str] = {}
        self.forks = 0

    # --- reporting -----------------------------------------------------------------------------

    def op(self, what: str, prim: Optional[dict], result: str, **extra: Any) -> None:
        emit(t="op", actor=self.name, op=what, prim=prim["id"] if prim else None, result=result, **extra)

    def error(self, what: str, prim: Optional[dict], e: BaseException) -> None:
        code = getattr(e, "code", type(e).__name__)
        emit(t="error", actor=self.name, op=what, prim=prim["id"] if prim else None, error=str(code),
             message=str(e)[:200])

    def sid(self) -> str:
        self.n += 1
        return f"{self.name}-{self.n}"

    # --- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        digest, ops = 0x811C9DC5, 0
        while time.monotonic() < self.deadline and not STOP.is_set():
            d = [self.rng.u32() for _ in range(10)]
            if ops < 64:
                for v in d:
                    digest = fnv(digest, v)
            ops += 1
            self.reap(block=False)
            o = Op(d, self.plan, self.prims, self.forking)
            try:
                self.one(o)
            except polylock.PolylockError as e:
                self.error(o.what, o.prim, e)
                time.sleep(0.1)
        self.reap(block=True)
        if self.loop is not None:
            # On this thread: a loop left for the garbage collector is closed by whichever thread
            # collects it (at exit, the main one), and its polylock driver, which belongs to this
            # thread, is then leaked with a RuntimeError ("unsendable ... dropped on another
            # thread") printed on stderr.
            self.loop.close()
        emit(t="done", actor=self.name, ops=ops, digest=f"{digest:08x}")

    def one(self, o: Op) -> None:
        if o.what == "idle":
            time.sleep(o.idle_ms / 1000)
            self.op("idle", None, "ok")
            return
        if o.what == "fork":
            self.fork(o)
            return
        p = o.prim
        assert p is not None
        h = self.handles.h[p["id"]]
        if p["kind"] == "sem":
            if o.what == "cancel":
                self.cancel_sem(o, h)
            elif o.api == 1:
                self.async_run(self.async_sem(o, h))
            else:
                self.sync_sem(o, h)
            return
        lock, mode = h, "x"
        if p["kind"] == "rw":
            write = o.write_mode
            lock, mode = (h.write_lock(), "w") if write else (h.read_lock(), "r")
        if o.what == "cancel":
            if o.api == 1:
                self.async_run(self.async_cancel(o, lock, mode))
            else:
                self.sync_lock(o, lock, mode, timeout=o.cancel_ms / 1000, what="cancel")
        elif o.what == "try":
            self.sync_lock(o, lock, mode, timeout=None, what="try")
        elif o.api == 1:
            self.async_run(self.async_lock(o, lock, mode, o.wait_ms / 1000))
        else:
            self.sync_lock(o, lock, mode, timeout=o.wait_ms / 1000, what=o.what)

    def async_run(self, coro: Any) -> Any:
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        return self.loop.run_until_complete(coro)

    # --- sections ------------------------------------------------------------------------------

    def section_steps(self, o: Op, sid: str, prim: str, token: int, mode: str, reenter: Any) -> bool:
        """BEGIN, the WRITEs (the first one inside a re-entrant acquire when asked), END; stops at
        the first refusal. Returns whether a re-entry saw a loss."""
        told = False
        if not self.conn.ask("BEGIN", prim, sid, token, mode):
            return told
        for i in range(o.writes):
            time.sleep(o.sleeps[i] / 1000)
            if i == 0 and o.fork_in_section:
                self.fork(o)
            if i == 0 and reenter is not None:
                told = reenter() or told
            if not self.conn.ask("WRITE", prim, sid, token, mode):
                return told
        time.sleep(o.sleeps[3] / 1000)
        self.conn.ask("END", prim, sid, token, mode)
        return told

    def release(self, lock: Any) -> tuple[str, bool]:
        """Release, trying again when the server did not answer; (outcome, told)."""
        for _ in range(20):
            try:
                lock.release()
                return "ok", False
            except polylock.LockLostError:
                return "LockLost", True
            except polylock.NotOwnerError:
                return "NotOwner", False
            except polylock.PolylockError as e:
                last = e
                time.sleep(0.1)
        return f"error {getattr(last, 'code', last)}", False

    def sync_lock(self, o: Op, lock: Any, mode: str, timeout: Optional[float], what: str) -> None:
        lease = o.lease_ms / 1000 if o.lease_ms else None
        if timeout is None:
            got = lock.acquire(blocking=False, lease=lease)
        else:
            got = lock.acquire(timeout=timeout, lease=lease)
        if not got:
            self.op(what, o.prim, "timeout" if timeout else "busy")
            if lock.hold_count != 0:
                emit(t="error", actor=self.name, op=what, prim=o.prim["id"], error="HeldAfterTimeout",
                     message=f"hold count {lock.hold_count} after a wait that ran out")
            return
        self.op(what, o.prim, "acquired", lease=o.lease_ms)
        token = lock.fencing_token or 0
        sid = self.sid()

        def reenter() -> bool:
            try:
                if not lock.acquire(blocking=False, lease=lease):
                    emit(t="error", actor=self.name, op="reenter", prim=o.prim["id"], error="NotReentered",
                         message="a re-entrant try by the holder failed")
                    return False
            except polylock.LockLostError:
                self.op("reenter", o.prim, "lost")
                return True
            count = lock.hold_count
            result, told = self.release(lock)
            if count != 2 and not told and not lock.lost:
                emit(t="error", actor=self.name, op="reenter", prim=o.prim["id"], error="HoldCount",
                     message=f"hold count {count} inside a re-entry")
            self.op("reenter", o.prim, result)
            return told

        told = self.section_steps(o, sid, o.prim["id"], token, mode, reenter if o.reenter else None)
        lost_before = lock.lost
        result, told_at_release = self.release(lock)  # NotOwner after a loss told at re-entry
        emit(t="section", id=sid, prim=o.prim["id"], told=told or lost_before or told_at_release,
             release=result, lease=o.lease_ms)
        self.op("release", o.prim, result)

    async def async_lock(self, o: Op, lock: Any, mode: str, timeout: Optional[float],
                         acquired: Optional[asyncio.Event] = None) -> None:
        lease = o.lease_ms / 1000 if o.lease_ms else None
        got = await lock.acquire_async(timeout=timeout, lease=lease)
        if acquired is not None:
            acquired.set()
        if not got:
            self.op(o.what, o.prim, "timeout")
            return
        self.op(o.what, o.prim, "acquired", api="async", lease=o.lease_ms)
        token = lock.fencing_token or 0
        sid = self.sid()
        told = False
        if self.conn.ask("BEGIN", o.prim["id"], sid, token, mode):
            for i in range(o.writes):
                await asyncio.sleep(o.sleeps[i] / 1000)
                inner = False
                if i == 0 and o.reenter:
                    try:
                        inner = await lock.acquire_async(timeout=0, lease=lease)
                        if inner and lock.hold_count != 2 and not lock.lost:
                            emit(t="error", actor=self.name, op="reenter", prim=o.prim["id"], error="HoldCount",
                                 message=f"hold count {lock.hold_count} inside an async re-entry")
                    except polylock.LockLostError:
                        told = True
                ok = self.conn.ask("WRITE", o.prim["id"], sid, token, mode)
                if inner:
                    try:
                        await lock.release_async()
                        self.op("reenter", o.prim, "ok", api="async")
                    except polylock.LockLostError:
                        told = True
                        self.op("reenter", o.prim, "LockLost", api="async")
                if not ok or told:
                    break
            else:
                await asyncio.sleep(o.sleeps[3] / 1000)
                self.conn.ask("END", o.prim["id"], sid, token, mode)
        told = told or lock.lost
        result = "none"
        for _ in range(20):  # also after a loss, so that the client forgets the hold
            try:
                await lock.release_async()
                result = "ok"
            except polylock.LockLostError:
                result, told = "LockLost", True
            except polylock.NotOwnerError:
                result = "NotOwner"
            except polylock.PolylockError as e:
                result = f"error {e.code}"
                await asyncio.sleep(0.1)
                continue
            break
        emit(t="section", id=sid, prim=o.prim["id"], told=told, release=result, lease=o.lease_ms)
        self.op("release", o.prim, result, api="async")

    async def async_cancel(self, o: Op, lock: Any, mode: str) -> None:
        """The whole section in a task of its own; the task is cancelled (wait_for ran out) if it
        has not acquired the lock by then."""
        acquired = asyncio.Event()
        task = asyncio.ensure_future(self.async_lock(o, lock, mode, None, acquired))
        try:
            await asyncio.wait_for(acquired.wait(), o.cancel_ms / 1000)
        except asyncio.TimeoutError:
            if not acquired.is_set():
                task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            self.op("cancel", o.prim, "cancelled", api="async")

    # --- semaphores ----------------------------------------------------------------------------

    def sem_told(self, sem: Any, k: int) -> tuple[str, bool]:
        for _ in range(20):
            try:
                sem.release(k)
                return "ok", False
            except polylock.LockLostError:
                return "LockLost", True
            except polylock.PolylockError as e:
                last = e
                time.sleep(0.1)
        return f"error {getattr(last, 'code', last)}", False

    def sem_section(self, o: Op, sid: str) -> None:
        prim = o.prim["id"]
        if self.conn.ask("BEGIN", prim, sid, o.permits, "s"):
            for i in range(o.writes):
                time.sleep(o.sleeps[i] / 1000)
                self.conn.ask("WRITE", prim, sid, o.permits, "s")
            time.sleep(o.sleeps[3] / 1000)
            self.conn.ask("END", prim, sid, o.permits, "s")

    def sync_sem(self, o: Op, sem: Any) -> None:
        if not sem.acquire(timeout=o.wait_ms / 1000, permits=o.permits):
            self.op("sem", o.prim, "timeout", permits=o.permits)
            return
        self.op("sem", o.prim, "acquired", permits=o.permits)
        sid = self.sid()
        self.sem_section(o, sid)
        result, told = self.sem_told(sem, o.permits)
        emit(t="section", id=sid, prim=o.prim["id"], told=told, release=result, permits=o.permits)
        self.op("release", o.prim, result)

    async def async_sem(self, o: Op, sem: Any) -> None:
        if not await sem.acquire_async(timeout=o.wait_ms / 1000, permits=o.permits):
            self.op("sem", o.prim, "timeout", permits=o.permits, api="async")
            return
        self.op("sem", o.prim, "acquired", permits=o.permits, api="async")
        sid = self.sid()
        self.sem_section(o, sid)
        told = False
        try:
            await sem.release_async(o.permits)
            result = "ok"
        except polylock.LockLostError:
            result, told = "LockLost", True
        emit(t="section", id=sid, prim=o.prim["id"], told=told, release=result, permits=o.permits)
        self.op("release", o.prim, result, api="async")

    def cancel_sem(self, o: Op, sem: Any) -> None:
        """A semaphore wait cancelled midway: an asyncio task cancelled by wait_for (or a sync
        timeout); what it may have taken goes back."""
        if o.api == 0:
            if sem.acquire(timeout=o.cancel_ms / 1000, permits=o.permits):
                self.op("cancel", o.prim, "acquired", permits=o.permits)
                sid = self.sid()
                self.sem_section(o, sid)
                result, told = self.sem_told(sem, o.permits)
                emit(t="section", id=sid, prim=o.prim["id"], told=told, release=result, permits=o.permits)
            else:
                self.op("cancel", o.prim, "timeout", permits=o.permits)
            return

        async def go() -> None:
            try:
                got = await asyncio.wait_for(sem.acquire_async(permits=o.permits), o.cancel_ms / 1000)
            except asyncio.TimeoutError:
                self.op("cancel", o.prim, "cancelled", permits=o.permits, api="async")
                return
            if got:  # permits belong to nobody (Redis) or to the client (ZooKeeper, etcd)
                self.op("cancel", o.prim, "acquired", permits=o.permits, api="async")
                sid = self.sid()
                self.sem_section(o, sid)
                try:
                    await sem.release_async(o.permits)
                    result, told = "ok", False
                except polylock.LockLostError:
                    result, told = "LockLost", True
                emit(t="section", id=sid, prim=o.prim["id"], told=told, release=result, permits=o.permits)

        self.async_run(go())

    # --- fork ----------------------------------------------------------------------------------

    def fork(self, o: Op) -> None:
        self.forks += 1
        child_name = f"{self.name}f{self.forks}"
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                child(self.plan, child_name, (o.d9 * 0x9E3779B9 + self.forks) & M, self.deadline)
            except BaseException as e:  # the child reports and ends; never back into the parent's code
                emit(t="error", actor=child_name, op="fork-child", prim=None, error=type(e).__name__,
                     message=str(e)[:200])
                code = 1
            # As the interpreter's exit would: the atexit hooks (polylock closes the clients this
            # child made, and finds the parent's refused in a child), then exit.
            atexit._run_exitfuncs()
            os._exit(code)
        self.children[pid] = child_name
        self.op("fork", None, "forked", child=child_name)

    def reap(self, block: bool) -> None:
        """Collect children that ended (all of them, waiting up to 30 s each, when `block`)."""
        for pid in list(self.children):
            until = time.monotonic() + 30
            got, status = os.waitpid(pid, os.WNOHANG)
            while block and not got and time.monotonic() < until:
                time.sleep(0.05)
                got, status = os.waitpid(pid, os.WNOHANG)
            if not got:
                if block:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    self.children.pop(pid)
                    emit(t="error", actor=self.name, op="fork-child", prim=None, error="Hung",
                         message="a forked child did not end 30 s after the run; killed")
                continue
            name = self.children.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                emit(t="error", actor=self.name, op="fork-child", prim=None, error=f"exit {code}",
                     message=f"child {name} exited with {code}")


def child(plan: Plan, name: str, seed: int, deadline: float) -> None:
    """A forked child's short loop: two or three operations, each on a backend drawn at random,
    with clients of its own. ZooKeeper after the parent used it: UnsupportedError at once."""
    global _out
    _out = threading.Lock()  # the parent's may have been held by a thread that is not here
    rng = Rng(seed)
    backends = sorted(plan.urls)
    n = 2 + rng.u32() % 2
    for i in range(n):
        if time.monotonic() > deadline:
            break
        b = backends[rng.u32() % len(backends)]
        r = rng.u32()
        if b == "zookeeper":
            t0 = time.monotonic()
            try:
                c = polylock.connect(plan.urls[b], session_timeout=plan.session)
                c.close()
                emit(t="error", actor=name, op="fork-zk", prim=None, error="Connected",
                     message="a child of a process that used ZooKeeper connected to ZooKeeper")
            except polylock.UnsupportedError:
                took = time.monotonic() - t0
                if took < 2:
                    emit(t="op", actor=name, op="fork-zk", prim=None, result="unsupported")
                else:
                    emit(t="error", actor=name, op="fork-zk", prim=None, error="Slow",
                         message=f"UnsupportedError after {took:.1f} s")
            continue
        prims = [p for p in plan.prims if p["backend"] == b and p["kind"] in ("lock", "fair")]
        h = Handles(plan, [b])
        try:
            conn = Conn(plan.resource)
            p = prims[r % len(prims)]
            lock = h.h[p["id"]]
            if not lock.acquire(timeout=1.0 + (r >> 8) % 1000 / 1000):
                emit(t="op", actor=name, op="fork-section", prim=p["id"], result="timeout")
                continue
            emit(t="op", actor=name, op="fork-section", prim=p["id"], result="acquired")
            token = lock.fencing_token or 0
            sid = f"{name}-{i}"
            told = False
            if conn.ask("BEGIN", p["id"], sid, token, "x"):
                for _ in range(1 + r % 3):
                    time.sleep(0.02)
                    if not conn.ask("WRITE", p["id"], sid, token, "x"):
                        break
                else:
                    conn.ask("END", p["id"], sid, token, "x")
            told = lock.lost
            try:
                lock.release()
                result = "ok"
            except polylock.LockLostError:
                result, told = "LockLost", True
            emit(t="section", id=sid, prim=p["id"], told=told, release=result)
        finally:
            h.close()


def leak(plan: Plan) -> None:
    """The self-test's leaking worker: a Redis lock with a 10-minute lease, never released."""
    c = polylock.connect(plan.urls["redis"])
    lk = c.lock(plan.leak)
    lk.acquire(lease=600)
    emit(t="op", actor="leak", op="leak", prim=None, result="acquired")
    os._exit(0)


# Set by SIGINT (the driver's Ctrl-C): the actors end after their current operation, as they
# do at the deadline, instead of running on to it behind a main thread that got the interrupt.
STOP = threading.Event()


def main() -> None:
    faulthandler.register(10)  # SIGUSR1: the threads' stacks on stderr (a hung worker, killed)
    signal.signal(signal.SIGINT, lambda *_: STOP.set())
    path, wid, seed, seconds, actors = sys.argv[1:6]
    extra = sys.argv[6] if len(sys.argv) > 6 else ""
    plan = Plan(path)
    if extra == "leak":
        leak(plan)
    deadline = time.monotonic() + float(seconds)
    handles = Handles(plan)
    forking = extra == "fork"
    threads = []
    for i in range(int(actors)):
        a = Actor(plan, handles, f"{wid}.{i}", actor_seed(int(seed), i), deadline, forking)
        t = threading.Thread(target=a.run, name=a.name)
        threads.append(t)
        t.start()
    for t in threads:
        t.join()
    handles.close()


if __name__ == "__main__":
    main()
