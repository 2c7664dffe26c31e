"""The ``polylock`` console command the package installs (``polylock._cli``), against real Redis."""

import importlib.metadata
import os
import subprocess
import sys
import uuid

import polylock

REDIS = os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379")


def cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "polylock._cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_the_package_declares_the_console_command():
    scripts = importlib.metadata.entry_points(group="console_scripts")
    assert any(e.name == "polylock" and e.value == "polylock._cli:main" for e in scripts)
    out = cli("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("polylock "), out.stdout


def test_run_under_a_lock_and_time_out_while_it_is_held():
    name = f"polylock-py-cli:{uuid.uuid4().hex}"
    out = cli("run", "--url", REDIS, "--name", name, "--", "sh", "-c", 'echo "token=$POLYLOCK_FENCING_TOKEN"')
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("token=") and int(out.stdout.strip()[6:]) > 0
    client = polylock.connect(REDIS)
    lock = client.lock(name)
    assert lock.acquire()
    try:
        out = cli("run", "--url", REDIS, "--name", name, "--wait", "200ms", "--", "true")
        assert out.returncode == 75, (out.returncode, out.stderr)
    finally:
        lock.release()
    out = cli("status", "--url", REDIS, "--name", name)
    assert out.returncode == 0 and '"locked":false' in out.stdout.replace(" ", ""), out.stdout
    # A usage error is exit 64, as from the Rust binary.
    assert cli("run", "--bogus").returncode == 64
    client.close()


def test_sigterm_reaches_the_child_and_frees_the_lock():
    import signal
    import time

    name = f"polylock-py-cli-sig:{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-m", "polylock._cli", "run", "--url", REDIS, "--name", name,
                             "--", "sleep", "30"])
    client = polylock.connect(REDIS)
    lock = client.lock(name)
    deadline = time.monotonic() + 10
    while not lock.locked():
        assert time.monotonic() < deadline, "the command never held the lock"
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 128 + signal.SIGTERM
    assert not lock.locked(), "released on the way out"
    client.close()
