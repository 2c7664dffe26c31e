"""Metrics (polylock.metrics: prometheus_client, OpenTelemetry, the Prometheus text), the connect
options operators see (service, runtime, metric_names), and the core's events in Python's logging,
against the real Redis of scripts/servers.sh.

The metrics are the whole process's (every test's clients add up), so the tests compare before
and after, on names of their own."""

from __future__ import annotations

import json
import logging
import os
import platform
import subprocess
import sys
import textwrap
import threading
import time
import uuid

# Not skipped when missing: run-tests.sh installs them (a missing one is a failure to see).
import prometheus_client
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

import polylock
from polylock import _native

REDIS = os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379")
KB = {"kind": "lock", "backend": "redis"}


def unique(prefix: str) -> str:
    return f"polylock-py-metrics:{prefix}:{uuid.uuid4().hex}"


@pytest.fixture
def registry():
    reg = prometheus_client.CollectorRegistry()
    polylock.metrics.register(reg)
    return reg


def value(registry, metric: str, /, **labels: str) -> float:
    v = registry.get_sample_value(metric, labels)
    return 0.0 if v is None else v


def wait_for(predicate, seconds: float = 10.0) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


def test_acquire_and_hold_show_in_a_registered_collector(registry):
    name = unique("hold")
    with polylock.connect(REDIS, metric_names=[name]) as client:
        lock = client.lock(name)
        waits = value(registry, "polylock_acquire_wait_seconds_count", **KB, outcome="acquired")
        holds = value(registry, "polylock_holds", **KB)
        hold_times = value(registry, "polylock_hold_seconds_count", **KB)
        assert lock.acquire()
        try:
            assert value(registry, "polylock_holds", **KB) == holds + 1
            assert value(registry, "polylock_name_holds", name=name, **KB) == 1
            token = lock.fencing_token
            assert token is not None and token > 0
            assert value(registry, "polylock_name_fencing_token", name=name, **KB) == token
        finally:
            lock.release()
        assert value(registry, "polylock_acquire_wait_seconds_count", **KB, outcome="acquired") == waits + 1
        assert value(registry, "polylock_holds", **KB) == holds
        assert value(registry, "polylock_name_holds", name=name, **KB) == 0
        assert value(registry, "polylock_hold_seconds_count", **KB) == hold_times + 1
        assert value(registry, "polylock_name_acquires_total", name=name, **KB, outcome="acquired") == 1
        # Buckets are cumulative and +Inf is the count.
        inf = value(registry, "polylock_acquire_wait_seconds_bucket", **KB, outcome="acquired", le="+Inf")
        assert inf == waits + 1
        assert value(registry, "polylock_acquire_wait_seconds_bucket", **KB, outcome="acquired", le="60.0") <= inf
        # A name not opted in has no series of its own.
        other = unique("not-opted-in")
        with client.lock(other):
            pass
        assert registry.get_sample_value("polylock_name_holds", {"name": other, **KB}) is None


def test_a_refused_try_counts_as_not_acquired(registry):
    name = unique("refused")
    with polylock.connect(REDIS) as holder, polylock.connect(REDIS, metric_names=["polylock-py-metrics:refused:*"]) as asker:
        refused = value(registry, "polylock_acquire_wait_seconds_count", **KB, outcome="not_acquired")
        assert holder.lock(name).acquire()
        assert asker.lock(name).acquire(blocking=False) is False
        assert value(registry, "polylock_acquire_wait_seconds_count", **KB, outcome="not_acquired") == refused + 1
        assert value(registry, "polylock_name_acquires_total", name=name, **KB, outcome="not_acquired") == 1
        assert value(registry, "polylock_name_acquires_total", name=name, **KB, outcome="acquired") == 0
        holder.lock(name).release()


def test_the_exposition_parses_back_and_matches_the_native_text(registry):
    name = unique("parse")
    with polylock.connect(REDIS, metric_names=[name]) as client:
        with client.lock(name):
            exposition = prometheus_client.generate_latest(registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(exposition)}
    # prometheus_client names a counter's family without `_total`; its samples keep it.
    assert families["polylock_name_acquires"].type == "counter"
    assert {s.name for s in families["polylock_name_acquires"].samples} >= {"polylock_name_acquires_total"}
    wait = families["polylock_acquire_wait_seconds"]
    assert wait.type == "histogram"
    assert families["polylock_holds"].type == "gauge"
    for labels in {tuple(sorted((k, v) for k, v in s.labels.items() if k != "le")) for s in wait.samples}:
        lab = dict(labels)
        mine = [s for s in wait.samples if {k: v for k, v in s.labels.items() if k != "le"} == lab]
        buckets = [s for s in mine if s.name.endswith("_bucket")]
        counts = [s.value for s in buckets]
        assert counts == sorted(counts), f"not cumulative: {lab}"
        assert buckets[-1].labels["le"] == "+Inf"
        (count,) = [s.value for s in mine if s.name.endswith("_count")]
        assert buckets[-1].value == count
    # The native text parses too, with the same families (read later: families only come).
    native = {f.name: f for f in text_string_to_metric_families(polylock.metrics.text())}
    assert set(families) <= set(native)
    named = [s for s in native["polylock_name_fencing_token"].samples if s.labels.get("name") == name]
    assert len(named) == 1 and named[0].value >= 1


def test_every_family_the_core_writes_is_described():
    """describe() and register_otel() use a table of the core's families: the core adding one
    must fail here until the table has it (with the same type and help)."""
    name = unique("table")
    with polylock.connect(REDIS, metric_names=[name]) as client:
        with client.lock(name):
            pass
        families = polylock.metrics.snapshot(include_zero=True)
    table = {n: (t, h) for n, t, h in polylock.metrics.FAMILIES}
    seen = {f.name for f in families}
    assert {"polylock_acquire_wait_seconds", "polylock_name_fencing_token", "polylock_losses_total"} <= seen
    for f in families:
        assert f.name in table, f"{f.name} is missing from polylock.metrics.FAMILIES"
        assert table[f.name] == (f.type, f.help), f.name
        assert f.type != "counter" or f.name.endswith("_total")
    described = {m.name for m in polylock.metrics.PrometheusCollector().describe()}
    assert len(described) == len(table)


def test_register_is_idempotent_per_registry_and_unregisters():
    reg = prometheus_client.CollectorRegistry()
    c1 = polylock.metrics.register(reg)
    assert polylock.metrics.register(reg) is c1
    name = unique("twice")
    with polylock.connect(REDIS, metric_names=[name]) as client:
        with client.lock(name):
            pass
        text = prometheus_client.generate_latest(reg).decode()
        (holds,) = [f for f in text_string_to_metric_families(text) if f.name == "polylock_name_holds"]
        assert [s.labels["name"] for s in holds.samples].count(name) == 1, text
        reg.unregister(c1)
        assert "polylock_" not in prometheus_client.generate_latest(reg).decode()
        assert polylock.metrics.register(reg) is c1
        assert "polylock_holds" in prometheus_client.generate_latest(reg).decode()
    # Someone else's collector of the same names is refused, as prometheus_client refuses it.
    with pytest.raises(ValueError):
        reg.register(polylock.metrics.PrometheusCollector())


def test_register_without_prometheus_client_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(ImportError, match="pip install prometheus_client"):
        polylock.metrics.register()
    assert "polylock_" in polylock.metrics.text() or polylock.metrics.text() == ""


def test_client_metrics_text_is_that_clients_alone():
    name = unique("one-client")
    with polylock.connect(REDIS, metric_names=[name]) as busy, polylock.connect(REDIS) as idle:
        assert idle.metrics_text() == ""
        with busy.lock(name):
            text = busy.metrics_text()
            assert f'polylock_name_holds{{name="{name}",kind="lock",backend="redis"}} 1' in text, text
            assert 'polylock_holds{kind="lock",backend="redis"} 1' in text, text
        assert idle.metrics_text() == ""
        assert f'name="{name}"' in polylock.metrics.text()


def test_otel_observable_instruments_report_the_snapshot():
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    made = polylock.metrics.register_otel(provider)
    assert polylock.metrics.register_otel(provider) is made
    name = unique("otel")

    def points():
        out = {}
        for rm in reader.get_metrics_data().resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    for p in m.data.data_points:
                        out[(m.name, tuple(sorted(p.attributes.items())))] = p.value
        return out

    with polylock.connect(REDIS, metric_names=[name]) as client:
        lock = client.lock(name)
        with lock:
            held = points()
            token = lock.fencing_token
        after = points()
    named = (("backend", "redis"), ("kind", "lock"), ("name", name))
    assert held[("polylock_name_holds", named)] == 1
    assert held[("polylock_name_fencing_token", named)] == token
    assert after[("polylock_name_holds", named)] == 0
    assert after[("polylock_name_acquires", named + (("outcome", "acquired"),))] == 1
    wait = (("backend", "redis"), ("kind", "lock"), ("outcome", "acquired"))
    assert after[("polylock_acquire_wait_seconds_count", wait)] >= 1
    assert after[("polylock_acquire_wait_seconds_sum", wait)] > 0
    provider.shutdown()


# ---- connect options ----


def test_service_and_runtime_are_what_operators_see():
    r = redis.Redis.from_url(REDIS)
    service = "py-metrics-" + uuid.uuid4().hex[:8]
    with polylock.connect(REDIS, service=service) as client:
        with client.lock(unique("identity")):
            key = "polylock_client:" + client.id
            assert wait_for(lambda: r.get(key) is not None, 5), "no identity published"
            identity = json.loads(r.get(key))
    assert identity["service"] == service
    assert identity["runtime"] == f"python {platform.python_version()}"
    assert identity["pid"] == os.getpid()


def test_connect_checks_service_and_metric_names():
    with pytest.raises(polylock.InvalidArgumentError, match="metric_names"):
        polylock.connect(REDIS, metric_names="orders:*")  # type: ignore[arg-type]
    with pytest.raises(polylock.InvalidArgumentError, match="metric_names"):
        polylock.connect(REDIS, metric_names=[1])  # type: ignore[list-item]
    with pytest.raises(polylock.InvalidArgumentError, match="service"):
        polylock.connect(REDIS, service=42)  # type: ignore[arg-type]
    with pytest.raises(polylock.InvalidArgumentError, match="metric_names"):
        polylock.connect_redlock([REDIS] * 3, metric_names=5)  # type: ignore[arg-type]
    # A tuple is a sequence of globs as well as a list.
    name = unique("tuple")
    with polylock.connect(REDIS, metric_names=(name[:-4] + "*",)) as client:
        with client.lock(name):
            assert f'name="{name}"' in client.metrics_text()


# ---- logging ----


def records_of(caplog, level: int, lock: str):
    return [r for r in caplog.records if r.levelno == level and getattr(r, "lock", None) == lock]


def test_a_lost_lock_is_a_warning_on_the_polylock_logger(caplog):
    caplog.set_level(logging.WARNING, logger="polylock")
    with polylock.connect(REDIS, watchdog_timeout=0.6) as holder, polylock.connect(REDIS) as admin:
        lock = holder.lock(unique("lost"))
        assert lock.acquire()
        assert admin.lock(lock.name).force_unlock()
        assert wait_for(lambda: lock.lost), "the holder never noticed"
        assert wait_for(lambda: records_of(caplog, logging.WARNING, lock.name)), caplog.text
        (record,) = records_of(caplog, logging.WARNING, lock.name)
        assert record.name == "polylock" or record.name.startswith("polylock.")
        assert "lost" in record.getMessage()
        assert record.fields["kind"] == "lock"


def test_debug_records_of_acquire_and_release_when_the_logger_wants_them(caplog):
    name = unique("debug")
    caplog.set_level(logging.INFO, logger="polylock")
    with polylock.connect(REDIS) as client:  # connecting looks at the logger's level
        with client.lock(name):
            pass
        _native.flush_logs()
        assert records_of(caplog, logging.DEBUG, name) == []
    caplog.set_level(logging.DEBUG, logger="polylock")
    with polylock.connect(REDIS) as client:
        lock = client.lock(name)
        with lock:
            token = lock.fencing_token
        assert _native.flush_logs()
        got = records_of(caplog, logging.DEBUG, name)
        acquire = [r for r in got if r.name == "polylock.acquire"]
        release = [r for r in got if r.name == "polylock.release"]
        assert len(acquire) == 1 and len(release) == 1, [(r.name, r.getMessage()) for r in got]
        assert acquire[0].fields["outcome"] == "acquired"
        assert acquire[0].fields["token"] == str(token)
        assert float(acquire[0].fields["wait_ms"]) >= 0
        assert name in acquire[0].getMessage()
        assert release[0].fields["outcome"] == "freed"
    caplog.set_level(logging.WARNING, logger="polylock")


def run_script(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), REDIS],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_records_of_an_exiting_process_reach_logging_and_exit_is_clean():
    """A hold lost as its client closes at exit is logged before the interpreter finalizes, and a
    stream of records at exit (a thread acquiring in a loop with DEBUG on) ends cleanly."""
    out = run_script(
        """
        import logging, sys, threading, uuid
        logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(levelname)s %(name)s %(lock)s %(message)s")
        import polylock
        url = sys.argv[1]
        client = polylock.connect(url)
        name = "polylock-py-metrics:exit:" + uuid.uuid4().hex
        client.lock(name).acquire()
        busy = polylock.connect(url)
        def spin():
            while True:
                try:
                    with busy.lock(name + ":spin"):
                        pass
                except Exception:
                    return
        # Before the spinning thread logs: print writes its words one by one, and a record
        # written between them would break the line.
        print("NAME", name, flush=True)
        threading.Thread(target=spin, daemon=True).start()
        """
    )
    assert out.returncode == 0, out.stderr
    assert "Fatal Python error" not in out.stderr, out.stderr
    name = next(line.split()[1] for line in out.stdout.splitlines() if line.startswith("NAME "))
    lost = [line for line in out.stdout.splitlines() if line.startswith(f"WARNING polylock.hold {name} ")]
    assert lost and "lost" in lost[0], out.stdout[-3000:]


def test_a_forked_child_logs_through_its_own_thread():
    out = run_script(
        """
        import logging, os, sys, time, uuid
        logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(process)d %(levelname)s %(lock)s")
        import polylock
        url = sys.argv[1]

        def lose(tag):
            with polylock.connect(url, watchdog_timeout=0.6) as c, polylock.connect(url) as admin:
                lock = c.lock(f"polylock-py-metrics:fork-{tag}:" + uuid.uuid4().hex)
                lock.acquire()
                admin.lock(lock.name).force_unlock()
                until = time.monotonic() + 10
                while not lock.lost and time.monotonic() < until:
                    time.sleep(0.02)
                polylock._native.flush_logs()
                return lock.name

        print("PARENT", os.getpid(), lose("parent"), flush=True)
        pid = os.fork()
        if pid == 0:
            print("CHILD", os.getpid(), lose("child"), flush=True)
            sys.stdout.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        """
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    for who in ("PARENT", "CHILD"):
        (pid, name) = next(line.split()[1:] for line in lines if line.startswith(who + " "))
        assert f"{pid} WARNING {name}" in lines, out.stdout
