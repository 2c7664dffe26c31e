"""The command line's runner of polylock's conformance suite (conformance/README.md): runs every
scenario of conformance/scenarios/*.json by driving the `polylock` command as a user does (`run`,
`status`, `unlock --force`), and prints ``conformance cli: N passed, N failed, N not applicable``.

    python3 runner.py [--polylock PATH] [--scenarios DIR] [--only TEXT] [--jobs N] [--vocabulary] [-v]

A command line's owner is one `polylock run`: a hold is a running command (a small shell that
writes the fencing token or permit it was given to a file, then waits on its standard input), and
its release is that command's end. "Not acquired" is exit 75; an error is its exit code
(sysexits.h, the contract's table).

Every command line this runner writes is made in `Cli` below, the one place that knows the flags.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

RUNTIME = "cli"

VOCABULARY = {
    "connect": "`--url URL` (or `$POLYLOCK_URL`; three or more `--url`: a RedLock)",
    "owner": "one `polylock run`: the command it runs holds the lock until it exits",
    "acquire": "`polylock run --name NAME --wait 5s -- CMD`",
    "wait_forever": "no `--wait`",
    "wait_none": "`--no-wait` where the command has it (issue 38), else a short `--wait` (the runner: 100ms)",
    "not_acquired": "exit 75 (EX_TEMPFAIL)",
    "lease_watchdog": "`--watchdog 30s` (the default)",
    "lease_fixed": "`--lease 5m`",
    "release": "the command exits (`polylock run` releases, then exits with its code)",
    "reenter": "none: a run holds once",
    "hold_count": "`polylock status` lists each holder with its count",
    "is_locked": "`polylock status --name NAME` → `\"locked\": true`",
    "fencing_token": "`$POLYLOCK_FENCING_TOKEN` in the command (`$POLYLOCK_FENCING_TOKENS` for several names)",
    "remaining_lease": "`polylock status` → `\"locked\": false` / `\"ttl_ms\": null` / `\"ttl_ms\": N`",
    "extend": "none (`--lease` is set once)",
    "force_unlock": "`polylock unlock --name NAME --force` → `{\"unlocked\": true}`",
    "lost_listener": "`--on-lost kill` (default): the command gets SIGTERM and polylock exits 76, saying `lost (REASON: ...)` on stderr",
    "lost_reasons": "`EXPIRED`, `DELETED`, `RENEWAL_FAILED`, `SESSION_EXPIRED`, `CLIENT_CLOSED` in the stderr line",
    "is_lost": "exit 76 (the run ends when its hold is lost)",
    "suspended": "none (a command's client lives while it runs)",
    "section": "`polylock run --wait 5s --name NAME -- CMD`",
    "timeout_error": "exit 75",
    "base_error": "the exit code: 64 usage (INVALID_ARGUMENT, UNSUPPORTED), 69 CONNECTION, 70 other kinds, 75 TIMEOUT, 76 LOCK_LOST, 77 AUTH",
    "not_owner_error": "none (a run only releases its own hold)",
    "read_write": "`--read NAME` / `--write NAME` (`--shared` / `--exclusive` with `--name`)",
    "semaphore_acquire": "`polylock run --permits N --name NAME -- CMD` (one permit of N; `$POLYLOCK_PERMITS`)",
    "permit_acquire": "`polylock run --permits N --name NAME` on Redis (`$POLYLOCK_PERMIT`: its id)",
    "latch_wait": "none",
    "multi": "`--name A --name B` (all or none)",
    "election": "`polylock elect NAME -- CMD` (`$POLYLOCK_TERM`: its term; CMD exits: resign); `polylock leader NAME` → `\"leader\"`, `\"candidates\"`",
    "close": "on exit (every command closes its client)",
}

# The exit code of each kind (core/src/cli.rs, `fail`): what an expected error is on this runtime.
EXIT_OF = {
    "INVALID_ARGUMENT": 64,
    "UNSUPPORTED": 64,
    "CONNECTION": 69,
    "TIMEOUT": 75,
    "LOCK_LOST": 76,
    "AUTH": 77,
}
WORD_OF_EXIT = {64: "INVALID_ARGUMENT|UNSUPPORTED", 69: "CONNECTION", 70: "other", 75: "TIMEOUT", 76: "LOCK_LOST", 77: "AUTH"}
LOST = re.compile(r"lost \(([A-Z_]+):")


class RunnerError(Exception):
    """The runner could not do what the step says (not an outcome of polylock)."""


class Cli:
    """The command lines: the one place that knows the `polylock` command's flags."""

    def __init__(self, exe: str):
        self.exe = exe
        help_text = subprocess.run([exe, "run", "--help"], capture_output=True, text=True).stdout
        self.no_wait = "--no-wait" in help_text

    def target(self, run: "Run", obj: str) -> List[str]:
        o = run.obj(obj)
        ty = o["type"]
        name = run.name_of(obj)
        if ty == "lock":
            return ["--name", name]
        if ty == "fair":
            return ["--fair", "--name", name]
        if ty == "read":
            return ["--read", name]
        if ty == "write":
            return ["--write", name]
        if ty in ("semaphore", "permit_semaphore"):
            return ["--permits", str(o.get("permits", 1)), "--name", name]
        if ty == "multi":
            out: List[str] = []
            for m in o["of"]:
                if run.obj(m)["type"] != "lock":
                    raise RunnerError("the command line's multi-lock takes plain locks (--name)")
                out += ["--name", run.name_of(m)]
            return out
        raise RunnerError(f"the command line has no {ty}")

    def status_target(self, run: "Run", obj: str) -> List[str]:
        o = run.obj(obj)
        if o["type"] in ("semaphore", "permit_semaphore"):
            return ["--permits", "--name", run.name_of(obj)]
        return self.target(run, obj)

    def urls(self, run: "Run", urls: Optional[List[str]] = None) -> List[str]:
        out: List[str] = []
        for u in urls if urls is not None else run.urls:
            out += ["--url", u]
        return out

    def wait(self, step: Dict[str, Any]) -> List[str]:
        wait = step.get("wait", "forever")
        if wait == "forever":
            return []
        if wait == "none":
            # One try. Before `--no-wait`, the shortest wait is its stand-in: 100 ms, not 1 ms,
            # which PostgreSQL's server-side lock timeout runs out of before a free lock is had.
            return ["--no-wait"] if self.no_wait else ["--wait", "100ms"]
        return ["--wait", f"{wait}ms"]

    def run_cmd(self, run: "Run", obj: str, step: Dict[str, Any], token_file: str) -> List[str]:
        lease = ["--lease", f"{step['lease']}ms"] if "lease" in step else []
        helper = 'printf %s "$POLYLOCK_FENCING_TOKEN$POLYLOCK_FENCING_TOKENS$POLYLOCK_PERMIT" > "$0.tmp" && mv "$0.tmp" "$0"; exec cat >/dev/null'
        return [self.exe, "run", *self.urls(run), *self.target(run, obj), *self.wait(step), *lease,
                "--watchdog", f"{run.watchdog_ms}ms", "--", "sh", "-c", helper, token_file]

    def section_cmd(self, run: "Run", obj: str, step: Dict[str, Any]) -> List[str]:
        return [self.exe, "run", *self.urls(run), *self.target(run, obj), *self.wait(step), "--", "true"]

    def status_cmd(self, run: "Run", obj: str) -> List[str]:
        return [self.exe, "status", *self.urls(run), *self.status_target(run, obj)]

    def unlock_cmd(self, run: "Run", obj: str) -> List[str]:
        return [self.exe, "unlock", *self.urls(run), *self.target(run, obj), "--force"]

    def connect_cmd(self, urls: List[str]) -> List[str]:
        return [self.exe, "status", *[a for u in urls for a in ("--url", u)], "--name", "pc-connect"]


class Hold:
    """One `polylock run` holding something for an actor."""

    def __init__(self, proc: subprocess.Popen, token_file: str):
        self.proc = proc
        self.token_file = token_file
        self.value: Optional[str] = None

    def stderr(self) -> str:
        try:
            return self.proc.stderr.read() if self.proc.stderr else ""
        except ValueError:
            return ""


class Run:
    def __init__(self, cli: Cli, suite: Dict[str, Any], scenario: Dict[str, Any], backend: str, prefix: str, tmp: str):
        self.cli = cli
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
        self.tmp = tmp
        self.watchdog_ms = suite["client"]["watchdog_timeout_ms"]
        self.holds: Dict[tuple, List[Hold]] = {}
        self.saved: Dict[str, Any] = {}
        self.bg: Dict[str, tuple] = {}
        self.serial = 0
        self.lock = threading.Lock()

    def obj(self, name: str) -> Dict[str, Any]:
        return self.scenario["objects"][name]

    def name_of(self, obj: str) -> str:
        o = self.obj(obj)
        if "literal" in o:
            return o["literal"]
        base = o.get("name", obj.lower())
        return f"/{self.prefix}/{base}" if self.zk else f"{self.prefix}:{base}"

    def call(self, cmd: List[str]) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    def error(self, code: int, stderr: str) -> Dict[str, Any]:
        return {"exit": code, "message": stderr.strip()}

    def status(self, obj: str) -> Any:
        p = self.call(self.cli.status_cmd(self, obj))
        if p.returncode != 0:
            return self.error(p.returncode, p.stderr)
        return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]

    # ---- one step -------------------------------------------------------------------------------

    def acquire(self, actor: str, obj: str, step: Dict[str, Any]) -> Any:
        with self.lock:
            self.serial += 1
            token_file = os.path.join(self.tmp, f"{self.prefix.replace('/', '-')}-hold-{self.serial}")
        proc = subprocess.Popen(
            self.cli.run_cmd(self, obj, step, token_file),
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        hold = Hold(proc, token_file)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(token_file):
                hold.value = Path(token_file).read_text()
                with self.lock:
                    self.holds.setdefault((actor, obj), []).append(hold)
                return hold
            code = proc.poll()
            if code is not None:
                if code == 75:
                    return "not_acquired"
                return self.error(code, hold.stderr())
            time.sleep(0.005)
        proc.kill()
        raise RunnerError("the command neither got its lock nor ended within 60 s")

    def end(self, hold: Hold) -> Any:
        """End a hold's command; its exit says how the release went."""
        try:
            if hold.proc.stdin:
                hold.proc.stdin.close()
        except BrokenPipeError:
            pass
        code = hold.proc.wait(timeout=60)
        if code == 0:
            return "ok"
        return self.error(code, hold.stderr())

    def do(self, actor: str, step: Dict[str, Any]) -> Any:
        op = step["op"]
        obj = step.get("on")
        if op == "connect":
            urls = step["url"] if isinstance(step["url"], list) else [step["url"]]
            p = self.call(self.cli.connect_cmd(urls))
            if p.returncode == 0:
                return "ok"
            got = self.error(p.returncode, p.stderr + p.stdout)
            if "absent" in step:
                # And with -v, which names the server: its output too must keep the secret.
                v = self.call([self.cli.exe, "-v", *self.cli.connect_cmd(urls)[1:]])
                got["message"] += "\n" + v.stderr + v.stdout
            return got
        if op == "make":
            st = self.status(obj)
            return st if isinstance(st, dict) else "ok"
        if op in ("acquire", "sem_acquire", "permit_acquire"):
            if op == "sem_acquire" and step.get("n", 1) != 1:
                raise RunnerError("`run --permits` takes one permit")
            got = self.acquire(actor, obj, step)
            if not isinstance(got, Hold):
                return got
            if op == "acquire":
                first = got.value.split(",")[0] if got.value else ""
                return {"outcome": "acquired", "token": int(first)} if first.isdigit() else {"outcome": "acquired"}
            if op == "permit_acquire":
                return {"outcome": "acquired", "id": got.value}
            return "acquired"
        if op in ("release", "sem_release"):
            with self.lock:
                held = self.holds.get((actor, obj), [])
                hold = held.pop() if held else None
            if hold is None:
                raise RunnerError(f"{actor} holds nothing of {obj} from the command line")
            return self.end(hold)
        if op == "permit_release":
            pid = self.saved[step["id"]]
            with self.lock:
                matches = [(k, h) for k, hs in self.holds.items() for h in hs if h.value == pid]
                for k, h in matches:
                    self.holds[k].remove(h)
            if not matches:
                raise RunnerError(f"no command holds permit {pid}")
            return self.end(matches[0][1])
        if op == "is_locked":
            st = self.status(obj)
            if isinstance(st, dict):
                return st
            line = st[0]
            ty = self.obj(obj)["type"]
            if ty in ("read", "write"):
                return bool(line["locked"]) and line.get("mode") == ty
            return bool(line["locked"])
        if op == "remaining_lease":
            st = self.status(obj)
            if isinstance(st, dict):
                return st
            line = st[0]
            if not line["locked"]:
                return "not_held"
            if line.get("ttl_ms") is None:
                return "no_expiry"
            return {"outcome": "expires", "ms": line["ttl_ms"]}
        if op == "force_unlock":
            p = self.call(self.cli.unlock_cmd(self, obj))
            if p.returncode != 0:
                return self.error(p.returncode, p.stderr)
            return any(json.loads(line)["unlocked"] for line in p.stdout.splitlines() if line.strip())
        if op in ("sem_available", "permit_available"):
            st = self.status(obj)
            return st if isinstance(st, dict) else st[0]["available"]
        if op == "listen":
            return "ok"  # `polylock run` always watches its hold (--on-lost kill)
        if op == "wait_lost":
            with self.lock:
                held = self.holds.get((actor, obj), [])
                hold = held[-1] if held else None
            if hold is None:
                raise RunnerError(f"{actor} holds nothing of {obj}")
            try:
                code = hold.proc.wait(timeout=step.get("within", 5000) / 1000)
            except subprocess.TimeoutExpired:
                return "not_lost"
            err = hold.stderr()
            with self.lock:
                held.remove(hold)
                # What is left of the run is its exit: a later release reports it.
                self.holds.setdefault((actor, obj), []).append(Done(code, err))
            m = LOST.search(err)
            if code == 76 and m:
                return f"lost:{m.group(1)}"
            return f"exit {code}: {err.strip()}"
        if op == "section":
            p = self.call(self.cli.section_cmd(self, obj, step))
            return "ran" if p.returncode == 0 else self.error(p.returncode, p.stderr)
        raise RunnerError(f"the command line has no {op} (mark the scenario not applicable to cli, with why)")

    # ---- checking ---------------------------------------------------------------------------------

    def check(self, step: Dict[str, Any], got: Any) -> Optional[str]:
        expect = step.get("expect")
        if isinstance(expect, dict):
            expect = expect.get(self.backend, expect.get("*"))
        extra: Dict[str, Any] = got if isinstance(got, dict) else {}
        if "exit" in extra:
            code = extra["exit"]
            if isinstance(expect, str) and expect.startswith("error:") and EXIT_OF.get(expect[6:], 70) == code:
                word: Any = expect
            else:
                word = f"exit {code} ({WORD_OF_EXIT.get(code, 'the command')})"
        else:
            word = extra.get("outcome") if extra else got
        if word != expect or type(word) is not type(expect):
            return f"expected {expect!r}, got {word!r} {extra.get('message', '')}"
        if "message" in step and step["message"] not in extra.get("message", ""):
            return f"the message does not name {step['message']}: {extra.get('message')}"
        if "absent" in step and step["absent"] in extra.get("message", ""):
            return f"the output shows {step['absent']!r}: {extra.get('message')}"
        if "token" in extra:
            if "token" in step:
                want = step["token"]
                prev = self.saved.get(want[1:])
                t = extra["token"]
                if prev is None or not ((want[0] == ">" and t > prev) or (want[0] == "=" and t == prev)):
                    return f"token {t} is not {want[0]} {prev}"
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

    def run(self) -> Optional[str]:
        pool = cf.ThreadPoolExecutor(max_workers=4)
        try:
            for i, step in enumerate(self.scenario["steps"]):
                op = step["op"]
                if op == "sleep":
                    time.sleep(step["ms"] / 1000)
                    continue
                actor = step["actor"]
                if op == "join":
                    bstep, fut = self.bg.pop(actor)
                    why = self.check(bstep, fut.result(timeout=120))
                    if why:
                        return f"step {i} (join {bstep['op']}): {why}"
                    continue
                if step.get("bg"):
                    self.bg[actor] = (step, pool.submit(self.do, actor, step))
                    continue
                why = self.check(step, self.do(actor, step))
                if why:
                    return f"step {i} ({op} {step.get('on', '')}): {why}"
            return None
        except RunnerError as e:
            return f"runner: {e}"
        except Exception as e:  # noqa: BLE001
            return f"runner: {type(e).__name__}: {e}"
        finally:
            for hs in list(self.holds.values()):
                for h in hs:
                    if isinstance(h, Hold) and h.proc.poll() is None:
                        try:
                            self.end(h)
                        except Exception:  # noqa: BLE001
                            h.proc.kill()
            pool.shutdown(wait=False, cancel_futures=True)


class Done(Hold):
    """A run that already ended (its hold was lost): its release is its exit."""

    def __init__(self, code: int, err: str):
        self.code = code
        self.err = err
        self.value = None
        self.proc = _Ended(code)
        self.token_file = ""

    def stderr(self) -> str:
        return self.err


class _Ended:
    def __init__(self, code: int):
        self.returncode = code
        self.stdin = None
        self.stderr = None

    def poll(self) -> int:
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        return self.returncode

    def kill(self) -> None:
        pass


def main() -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", default=str(here.parent.parent))
    ap.add_argument("--polylock", default=os.environ.get("POLYLOCK_CLI") or shutil.which("polylock") or "polylock")
    ap.add_argument("--only")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--vocabulary", action="store_true")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    if args.vocabulary:
        names = ["NULL_PARAMETER", "INVALID_ARGUMENT", "TIMEOUT", "NOT_OWNER", "LOCK_LOST", "CONNECTION", "AUTH",
                 "BACKEND", "INVALID_STATE", "INTERNAL", "PANIC", "CANCELLED", "UNSUPPORTED", "UPGRADE_NOT_SUPPORTED",
                 "NOT_REPLICATED", "STALE_TOKEN"]
        errors = [{"number": i + 1, "name": n, "says": f"exit {EXIT_OF.get(n, 70)}"} for i, n in enumerate(names)]
        print(json.dumps({"runtime": RUNTIME, "says": VOCABULARY, "errors": errors}))
        return 0
    cli = Cli(args.polylock)
    root = Path(args.scenarios)
    suite = json.loads((root / "suite.json").read_text())
    tmp = tempfile.mkdtemp(prefix="polylock-cli-conformance-")
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
                instances.append((f"{sc['id']}@{b}", Run(cli, suite, sc, b, f"pc/{RUNTIME}-{os.getpid()}-{serial}", tmp)))
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
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"conformance {RUNTIME}: {passed} passed, {failed} failed, {na} not applicable", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
