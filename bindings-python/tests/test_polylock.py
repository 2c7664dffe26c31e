"""polylock from Python, against real Redis and ZooKeeper (scripts/servers.sh starts them)."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

import polylock

REDIS = os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379")
ZK = os.environ.get("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181")
ETCD = os.environ.get("POLYLOCK_ETCD_URL", "etcd://127.0.0.1:2379")


def unique(prefix: str) -> str:
    return f"polylock-py:{prefix}:{uuid.uuid4().hex}"


@pytest.fixture
def client():
    c = polylock.connect(REDIS)
    yield c
    c.close()


def in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_reentrant_per_thread_and_exclusive_across_threads(client):
    lock = client.lock(unique("threads"))
    assert lock.acquire() is True
    assert lock.acquire() is True
    assert lock.hold_count == 2 and lock.held_by_me()
    assert in_thread(lambda: lock.acquire(blocking=False)) is False
    with pytest.raises(polylock.NotOwnerError) as e:
        in_thread(lock.release)
    assert isinstance(e.value, RuntimeError) and e.value.code == "NOT_OWNER" and e.value.number == 4
    assert in_thread(lambda: lock.held_by_me()) is False
    lock.release()
    assert lock.locked()
    lock.release()
    assert not lock.locked()
    assert in_thread(lambda: (lock.acquire(blocking=False), lock.release())[0]) is True
    with pytest.raises(polylock.NotOwnerError):
        lock.release()


def test_threading_lock_semantics(client):
    lock = client.lock(unique("semantics"))
    other = polylock.connect(REDIS)
    olock = other.lock(lock.name)
    assert olock.acquire()
    with pytest.raises(ValueError):
        lock.acquire(False, 5)
    with pytest.raises(ValueError):
        lock.acquire(timeout=-2)
    started = time.monotonic()
    assert lock.acquire(timeout=0.3) is False
    assert 0.3 <= time.monotonic() - started < 2.0
    assert lock.acquire(timeout=0) is False
    assert lock.acquire(blocking=False) is False
    olock.release()
    assert lock.acquire(timeout=0) is True
    lock.release()
    other.close()


def test_with_releases_on_exception_and_tokens_grow(client):
    lock = client.lock(unique("with"))
    tokens = []
    for _ in range(3):
        with pytest.raises(KeyError):
            with lock:
                tokens.append(lock.fencing_token)
                raise KeyError("boom")
        assert not lock.locked()
        assert lock.fencing_token is None
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


def test_lease_expires_and_holder_learns(client):
    lock = client.lock(unique("lease"))
    assert lock.acquire(lease=0.3)
    assert 0 < lock.remaining_lease <= 0.3
    time.sleep(0.6)
    assert lock.lost
    assert not lock.locked()
    with pytest.raises(polylock.LockLostError):
        lock.release()


def test_lost_callback_runs_on_a_thread_that_may_block():
    c = polylock.connect(REDIS, watchdog_timeout=0.6)
    lock = c.lock(unique("lost"))
    seen = []
    done = threading.Event()

    def on_lost(l):
        seen.append((l is lock, threading.current_thread().name, l.locked()))
        done.set()

    lock.on_lost(on_lost)
    assert lock.acquire()
    other = polylock.connect(REDIS)
    assert other.lock(lock.name).force_unlock()
    assert done.wait(5), "lost callback not called"
    assert seen == [(True, "polylock-lost", False)]
    assert lock.lost
    with pytest.raises(polylock.LockLostError):
        lock.release()
    with pytest.raises(polylock.NotOwnerError):
        lock.release()
    with pytest.raises(ValueError):
        lock.on_lost("not callable")  # type: ignore[arg-type]
    other.close()
    c.close()


def test_lost_callbacks_keep_no_entry_for_names_whose_handles_are_gone(client):
    """The client's map of names with lost callbacks drops a name with its last handle (issue 46
    §6: a process that watches many names in turn must not grow), and a live handle's callback
    is still told, once per hold. With a fixed lease never released (Redisson's ``lock(lease)``),
    the next acquire takes the lock again."""
    watch = client._lost
    prefix = unique("watched")
    for i in range(2000):
        lock = client.lock(f"{prefix}:{i}")
        lock.on_lost(lambda _l, _e: None)
        with lock:
            pass
    del lock
    gc.collect()
    assert len(watch) == 0, "every handle is gone: no name left"
    kept = client.lock(unique("kept"))
    told = []
    heard = threading.Event()
    kept.on_lost(lambda _l, e: (told.append(e.reason), heard.set()))
    kept.on_lost(lambda _l, _e: None)  # a second callback: still one entry

    def in_a_cycle() -> None:  # a handle whose callback holds it: it goes at a collection
        cyclic = client.lock(unique("cyclic"))
        cyclic.on_lost(lambda _l: cyclic.name)

    for _ in range(100):
        in_a_cycle()
    gc.collect()
    assert len(watch) == 1, "only the live handle's name is left"
    for _ in range(2):
        heard.clear()
        assert kept.acquire(blocking=False, lease=0.2), "taken again after its lease ran out"
        assert heard.wait(5), "the lease's end is told"
    assert told == ["EXPIRED", "EXPIRED"]
    with pytest.raises(polylock.LockLostError):
        kept.release()
    assert len(watch) == 1


def test_gil_is_released_while_waiting(client):
    lock = client.lock(unique("gil"))
    other = polylock.connect(REDIS)
    olock = other.lock(lock.name)
    olock.acquire()
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    started = time.monotonic()
    assert lock.acquire(timeout=0.5) is False
    waited = time.monotonic() - started
    stop.set()
    t.join()
    # With the GIL held for 0.5 s the other thread would barely run (a few switch intervals).
    assert ticks[0] > 100_000, ticks[0]
    assert waited >= 0.5
    olock.release()
    other.close()


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX only")
def test_ctrl_c_interrupts_a_blocking_acquire_and_leaves_nothing(client):
    # A process started in the background by a shell inherits SIGINT ignored, and Python then keeps
    # it ignored: install Python's own handler, as an interactive program has it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_interrupts(client)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_interrupts(client):
    lock = client.lock(unique("sigint"))
    other = polylock.connect(REDIS)
    olock = other.lock(lock.name)
    olock.acquire()
    sent = []

    def interrupt():
        time.sleep(0.3)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt).start()
    with pytest.raises(KeyboardInterrupt):
        lock.acquire()
    latency = time.monotonic() - sent[0]
    assert latency < 0.1, f"interrupted after {latency:.3f} s"
    assert lock.hold_count == 0
    olock.release()
    time.sleep(0.2)
    assert not lock.locked(), "the interrupted wait must not take the lock afterwards"
    other.close()


def test_asyncio_tasks_are_owners_and_the_loop_keeps_running(client):
    lock = client.lock(unique("tasks"))

    async def main():
        order = []
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        async def worker(i):
            async with lock:
                async with lock:  # re-entry by the same task
                    assert lock.hold_count == 2
                    order.append(("in", i))
                    await asyncio.sleep(0.1)
                    order.append(("out", i))

        t = asyncio.create_task(ticker())
        await asyncio.gather(*(worker(i) for i in range(3)))
        t.cancel()
        # No two workers were inside at once.
        for a, b in zip(order[::2], order[1::2]):
            assert a[0] == "in" and b == ("out", a[1])
        assert ticks >= 15, f"the event loop was blocked (ticks={ticks})"

    asyncio.run(main())
    assert not lock.locked()


def test_cancelling_a_task_cancels_its_wait(client):
    lock = client.lock(unique("cancel"))
    other = polylock.connect(REDIS)
    olock = other.lock(lock.name)
    olock.acquire()

    async def main():
        task = asyncio.create_task(lock.acquire_async())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await lock.acquire_async(timeout=0.1) is False

    asyncio.run(main())
    olock.release()
    time.sleep(0.2)
    assert not lock.locked(), "a cancelled wait must not take the lock afterwards"
    other.close()


def test_decorator_formats_the_name_from_arguments(client):
    inside = {}
    overlaps = []

    @client.locked("order:{order_id}")
    def pay(order_id, amount=1):
        key = f"order:{order_id}"
        if inside.get(key):
            overlaps.append(key)
        inside[key] = True
        time.sleep(0.02)
        inside[key] = False
        return amount

    oid = uuid.uuid4().hex
    threads = [threading.Thread(target=pay, args=(oid,)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    assert pay(oid, amount=7) == 7
    assert not client.lock(f"order:{oid}").locked()

    # A template naming an argument the function lacks fails when the function is decorated.
    with pytest.raises(polylock.InvalidArgumentError, match="missing"):

        @client.locked("order:{missing}")
        def broken(order_id):
            return order_id

    with pytest.raises(polylock.InvalidArgumentError):
        client.locked("order:{}")
    with pytest.raises(polylock.InvalidArgumentError):
        client.locked("order:{x}", wait=1, timeout=1)

    @client.locked("async-order:{order_id}")
    async def apay(order_id):
        return order_id

    assert asyncio.run(apay("x")) == "x"


def test_decorator_keys_wait_and_lost(client):
    class Order:
        def __init__(self, oid):
            self.id = oid

    oid = uuid.uuid4().hex
    seen = []

    @client.locked("order:{order.id}", wait=0.2)
    def ship(order):
        seen.append(client.lock(f"order:{order.id}").held_by_me())
        return "shipped"

    assert ship(Order(oid)) == "shipped" and seen == [True]
    # Another client holds the key: the bounded wait runs out with LockTimeoutError, in time.
    other = polylock.connect(REDIS)
    held = other.lock(f"order:{oid}")
    assert held.acquire()
    started = time.monotonic()
    with pytest.raises(polylock.LockTimeoutError):
        ship(Order(oid))
    assert time.monotonic() - started < 2.0
    # Different keys do not exclude each other.
    assert ship(Order(uuid.uuid4().hex)) == "shipped"
    held.release()
    other.close()

    # A lock lost while the function runs (deleted behind its back; the watchdog renews every
    # 0.2 s and finds it gone): the call fails with LockLostError when it returns.
    fast = polylock.connect(REDIS, watchdog_timeout=0.6)

    @fast.locked("job:{job_id}")
    def job(job_id):
        assert other_client.lock(f"job:{job_id}").force_unlock()
        time.sleep(0.8)
        return fast.lock(f"job:{job_id}").lost

    other_client = polylock.connect(REDIS)
    with pytest.raises(polylock.LockLostError):
        job(uuid.uuid4().hex)
    other_client.close()
    fast.close()


def test_decorator_cancels_an_async_function_whose_lock_is_lost():
    fast = polylock.connect(REDIS, watchdog_timeout=0.6)
    admin = polylock.connect(REDIS)
    reached = []

    @fast.locked("job:{job_id}", cancel_on_lost=True)
    async def job(job_id):
        assert admin.lock(f"job:{job_id}").force_unlock()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            reached.append("cancelled inside")
            raise
        return "finished"

    started = time.monotonic()
    with pytest.raises(polylock.LockLostError):
        asyncio.run(job(uuid.uuid4().hex))
    assert time.monotonic() - started < 3.0, "cancelled at the loss, not after the sleep"
    assert reached == ["cancelled inside"]

    # Without the loss, cancel_on_lost changes nothing; a cancel from outside stays a cancel.
    @fast.locked("job2:{job_id}", cancel_on_lost=True)
    async def quick(job_id):
        await asyncio.sleep(0.01)
        return job_id

    assert asyncio.run(quick("a")) == "a"

    async def cancel_it():
        t = asyncio.ensure_future(job_forever("b"))
        await asyncio.sleep(0.2)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t

    @fast.locked("job3:{job_id}", cancel_on_lost=True)
    async def job_forever(job_id):
        await asyncio.sleep(30)

    asyncio.run(cancel_it())
    assert not fast.lock("job3:b").locked()
    admin.close()
    fast.close()


def test_bad_input_raises_typed_errors(client):
    # "a\ud800": a lone surrogate has no UTF-8 form (a typed error, not a bare UnicodeEncodeError).
    for name in ["", "a\0b", "x" * (64 * 1024 + 1), "a\ud800", "\udc00b"]:
        with pytest.raises(polylock.InvalidArgumentError):
            client.lock(name)
        with pytest.raises(polylock.InvalidArgumentError):
            client.semaphore(name)
    with pytest.raises(ValueError):
        client.lock(42)  # type: ignore[arg-type]
    lock = client.lock(unique("bad"))
    for lease in [0, -1, float("nan"), float("inf"), "10"]:
        with pytest.raises(ValueError):
            lock.acquire(lease=lease)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        lock.acquire(timeout="soon")  # type: ignore[arg-type]
    assert not lock.locked()
    for url in ["", "http://127.0.0.1:6379", "redis://127.0.0.1:99999", "zk://"]:
        with pytest.raises(polylock.InvalidArgumentError):
            polylock.connect(url)
    with pytest.raises(ValueError):
        polylock.connect(REDIS, watchdog_timeout=0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(polylock.PolylockConnectionError) as e:
        polylock.connect(f"redis://127.0.0.1:{port}")
    assert isinstance(e.value, ConnectionError)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is installed by scripts/servers.sh")
def test_wrong_password_is_an_auth_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--requirepass", "pw", "--save", "", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        with pytest.raises(polylock.AuthError) as e:
            polylock.connect(f"redis://:wrong@127.0.0.1:{port}")
        assert isinstance(e.value, PermissionError) and e.value.code == "AUTH"
        with polylock.connect(f"redis://:pw@127.0.0.1:{port}") as c:
            with c.lock("ok"):
                pass
    finally:
        server.kill()
        server.wait()


def test_close_and_use_after_close():
    with polylock.connect(REDIS) as c:
        lock = c.lock(unique("close"))
        lock.acquire()
    assert c.closed
    with pytest.raises(polylock.InvalidStateError):
        lock.acquire()
    with pytest.raises(polylock.InvalidStateError):
        c.lock("x")
    with polylock.connect(REDIS) as other:
        assert not other.lock(lock.name).locked(), "close released the lock"
    c.close()  # idempotent


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
def test_a_client_from_before_fork_raises_in_the_child(client):
    lock = client.lock(unique("fork"))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            lock.acquire()
            os.write(w, b"acquired")
        except polylock.InvalidStateError:
            os.write(w, b"invalid-state")
        except BaseException as e:  # noqa: BLE001
            os.write(w, repr(e).encode())
        finally:
            os._exit(0)
    os.close(w)
    started = time.monotonic()
    _, status = os.waitpid(pid, 0)
    answer = os.read(r, 200)
    assert answer == b"invalid-state", answer
    assert time.monotonic() - started < 10
    # And a client created in a child works (fresh runtime).
    pid = os.fork()
    if pid == 0:
        try:
            with polylock.connect(REDIS) as c2:
                with c2.lock(unique("fork-child")):
                    os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_zookeeper_lock_and_mutex():
    with polylock.connect(ZK) as z:
        path = f"/polylock-py/{uuid.uuid4().hex}"
        lock = z.lock(path)
        with lock:
            with lock:
                assert lock.hold_count == 2
            assert in_thread(lambda: lock.acquire(blocking=False)) is False
        assert not lock.locked()
        with pytest.raises(polylock.UnsupportedError):
            lock.acquire(lease=1.0)
        with pytest.raises(polylock.InvalidArgumentError):
            z.lock("relative/path")
        m = z.mutex(path + "-m")
        assert m.acquire()
        assert m.acquire(timeout=0.1) is False  # not reentrant
        in_thread(m.release)  # another thread of the same client may release it
        assert not m.locked()
    with polylock.connect(REDIS) as c, pytest.raises(polylock.UnsupportedError):
        c.mutex("x")


def test_etcd_lock():
    with polylock.connect(ETCD) as e:
        lock = e.lock(f"polylock-py/{uuid.uuid4().hex}")
        with lock:
            with lock:
                assert lock.hold_count == 2
            assert in_thread(lambda: lock.acquire(blocking=False)) is False
        assert not lock.locked()
        with pytest.raises(polylock.UnsupportedError):
            lock.acquire(lease=1.0)
        assert in_thread(lambda: lock.acquire(blocking=False)) is True
        assert lock.locked()
        with pytest.raises(polylock.UnsupportedError):
            e.mutex("x")


def test_error_classes_match_the_core_table():
    for number, name, cls_name in polylock._native.error_table():
        cls = getattr(polylock, cls_name)
        assert issubclass(cls, polylock.PolylockError)
        if name not in ("NULL_PARAMETER", "PANIC"):
            assert cls.code == name and cls.number == number, (cls, name, number)
    assert issubclass(polylock.LockTimeoutError, TimeoutError)
    assert issubclass(polylock.InvalidArgumentError, ValueError)
    assert issubclass(polylock.PolylockConnectionError, ConnectionError)


def test_a_process_that_exits_without_close_leaves_no_zookeeper_node():
    """The atexit hook closes open clients: the session ends with the process, so its node does
    not stay on the server for the 10 s session timeout."""
    path = f"/polylock-py/exit-{uuid.uuid4().hex}"
    script = (
        "import polylock\n"
        f"c = polylock.connect({ZK!r})\n"
        f"assert c.lock({path!r}).acquire()\n"
        "print('held', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "held" in done.stdout, done.stderr
    with polylock.connect(ZK) as z:
        started = time.monotonic()
        lock = z.lock(path)
        assert lock.acquire(timeout=2.0), "the exited process's node was still there"
        assert time.monotonic() - started < 1.0
        lock.release()
