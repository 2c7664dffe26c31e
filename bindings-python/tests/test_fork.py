"""fork() after the parent used a backend (multiprocessing's fork start method, gunicorn --preload,
celery prefork): a child connects and locks on every backend at once; the parent's clients are
refused in the child (their holds stay the parent's); a child forked after its parent used
ZooKeeper is told at once that it cannot use ZooKeeper (the ZooKeeper client's I/O reactor is
process-wide and does not survive fork), instead of timing out after 10 s.

Each case runs in a fresh interpreter, the parent of its own fork: whether a process ever used
ZooKeeper is a property of the process, and this test process uses every backend."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

URLS = {
    "redis": os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379"),
    "zookeeper": os.environ.get("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181"),
    "mysql": os.environ.get("POLYLOCK_MYSQL_URL", "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock"),
    "postgres": os.environ.get("POLYLOCK_PG_URL", "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock"),
    "etcd": os.environ.get("POLYLOCK_ETCD_URL", "etcd://127.0.0.1:2379"),
}

PARENT = textwrap.dedent(
    """
    import os, sys, time, uuid
    import polylock

    parent_url, child_url, zk_refused = sys.argv[1], sys.argv[2], sys.argv[3] == "1"

    def name(url):
        n = "py-fork-" + uuid.uuid4().hex[:12]
        return "/" + n if url.startswith("zk") else n

    held = polylock.connect(parent_url)
    lock = held.lock(name(parent_url))
    lock.acquire()
    token = lock.fencing_token
    pid = os.fork()
    if pid == 0:
        try:
            # The parent's client is the parent's: refused in the child.
            try:
                held.lock(name(parent_url))
                raise AssertionError("the parent's client worked in the child")
            except polylock.InvalidStateError:
                pass
            started = time.monotonic()
            if zk_refused:
                try:
                    polylock.connect(child_url)
                    raise AssertionError("ZooKeeper connected in a child forked after ZooKeeper use")
                except polylock.UnsupportedError as e:
                    assert "forked after its parent" in str(e), e
                assert time.monotonic() - started < 2, "told at once, not after a connect timeout"
            else:
                c = polylock.connect(child_url)
                with c.lock(name(child_url)) as l:
                    assert l.fencing_token > 0
                c.close()
                assert time.monotonic() - started < 5, time.monotonic() - started
        except BaseException as e:
            print("child:", repr(e), flush=True)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    # The child changed nothing of the parent's hold.
    assert lock.fencing_token == token and lock.locked()
    lock.release()
    held.close()
    sys.exit(os.waitstatus_to_exitcode(status))
    """
)


@pytest.mark.parametrize("child", list(URLS))
@pytest.mark.parametrize("parent", list(URLS))
def test_a_child_forked_after_the_parent_used_a_backend(parent: str, child: str) -> None:
    zk_refused = parent == "zookeeper" and child == "zookeeper"
    out = subprocess.run(
        [sys.executable, "-c", PARENT, URLS[parent], URLS[child], "1" if zk_refused else "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, f"parent {parent}, child {child}: {out.stdout}{out.stderr}"
