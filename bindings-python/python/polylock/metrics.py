"""polylock's metrics, for the monitoring library you use.

The core counts, for every client of the process added up (closed clients' counts are kept, so
counters never go down): acquire wait time by outcome (``acquired``, ``not_acquired``, ``error``,
``cancelled``), hold time, holds and waiters now, re-entries, losses by reason, and the
watchdog's renewals, labelled by ``kind`` and ``backend``. Lock names are a label only for the
names a client opted in with ``connect(..., metric_names=["orders:*"])``.

    import prometheus_client, polylock
    polylock.metrics.register()              # prometheus_client.REGISTRY (prometheus_client: the wheel's metrics extra, pip install "dist/polylock-*.whl[metrics]")
    prometheus_client.start_http_server(9100)

    polylock.metrics.text()                  # the Prometheus text, no library needed
    polylock.metrics.register_otel()         # OpenTelemetry's global MeterProvider (opentelemetry-api)

The names, types and labels are the same in every runtime (docs/src/guides/python.md#metrics-and-logs).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, List, NamedTuple, Tuple, Union, cast

from . import _native

__all__ = ["Family", "Histogram", "Sample", "PrometheusCollector", "register", "register_otel", "snapshot", "text"]

# Every family the core writes (name, type, help), in its order (the core's table: one list for
# every runtime): prometheus_client learns the names from describe() before any lock is used,
# and OpenTelemetry's instruments are made once.
FAMILIES: "Tuple[Tuple[str, str, str], ...]" = tuple(_native.metric_families())


@dataclass(frozen=True)
class Histogram:
    """A histogram's value: ``buckets`` are (upper bound in seconds, observations at or below
    it), cumulative, without ``+Inf`` (which is ``count``); ``sum`` is in seconds."""

    buckets: List[Tuple[float, int]]
    count: int
    sum: float


class Sample(NamedTuple):
    """One series: its labels and its value (a float, or a :class:`Histogram`)."""

    labels: "dict[str, str]"
    value: Union[float, Histogram]


class Family(NamedTuple):
    """A metric: ``type`` is ``"counter"`` (names end in ``_total``), ``"gauge"`` or
    ``"histogram"``."""

    name: str
    help: str
    type: str
    samples: List[Sample]


def snapshot(include_zero: bool = False) -> List[Family]:
    """Every client of this process added up. ``include_zero`` also lists every kind and outcome
    of each backend in use where nothing happened yet."""
    out = []
    for name, help_, typ, samples in _native.metrics_snapshot(include_zero):
        out.append(
            Family(
                name,
                help_,
                typ,
                [
                    Sample(dict(labels), Histogram(*value) if isinstance(value, tuple) else value)
                    for labels, value in samples
                ],
            )
        )
    return out


def text() -> str:
    """Every client of this process in the Prometheus text format (version 0.0.4); one client's
    alone: ``Client.metrics_text()``."""
    return _native.metrics_text()


class PrometheusCollector:
    """A prometheus_client collector of the process's polylock metrics (see :func:`register`);
    every scrape reads the core's counters afresh."""

    def describe(self) -> Iterator[Any]:
        # The names before any lock is used, so that a registry finds them (restricted scrapes,
        # duplicate checks) whatever has happened yet.
        for name, typ, help_ in FAMILIES:
            yield _prometheus_family(name, typ, help_, [])

    def collect(self) -> Iterator[Any]:
        from prometheus_client.utils import floatToGoString

        le_text = cast(Callable[[float], str], floatToGoString)  # how prometheus_client writes `le`
        for f in snapshot():
            names = list(f.samples[0].labels) if f.samples else []
            family = _prometheus_family(f.name, f.type, f.help, names)
            for s in f.samples:
                values = [s.labels.get(n, "") for n in names]
                if isinstance(s.value, Histogram):
                    buckets = [(le_text(le), float(n)) for le, n in s.value.buckets]
                    buckets.append(("+Inf", float(s.value.count)))
                    family.add_metric(values, buckets, s.value.sum)
                else:
                    family.add_metric(values, s.value)
            yield family


def _prometheus_family(name: str, typ: str, help_: str, labels: "list[str]") -> Any:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    # CounterMetricFamily takes the name with or without `_total` and writes `<name>_total`.
    cls = {"counter": CounterMetricFamily, "gauge": GaugeMetricFamily, "histogram": HistogramMetricFamily}[typ]
    return cls(name, help_, labels=labels)


_registered_lock = threading.Lock()
# What was registered where, by the registry's or provider's id (kept with it, so that the id is
# not reused): registries and providers live as long as the process, as a rule.
_prometheus: "dict[int, Tuple[Any, PrometheusCollector]]" = {}
_otel: "dict[int, Tuple[Any, List[Any]]]" = {}


def register(registry: Any = None) -> PrometheusCollector:
    """Register the process's polylock metrics with a prometheus_client registry
    (``prometheus_client.REGISTRY`` by default) and return the collector (for
    ``registry.unregister``). Registering again with the same registry changes nothing and returns
    the same collector.
    Needs the ``prometheus_client`` package (the wheel's ``metrics`` extra)."""
    try:
        import prometheus_client
    except ImportError as e:
        raise ImportError(
            "polylock.metrics.register() needs the prometheus_client package: "
            "pip install prometheus_client (the metrics extra of polylock's wheel); polylock.metrics.text() needs nothing"
        ) from e
    if registry is None:
        registry = prometheus_client.REGISTRY
    with _registered_lock:
        known = _prometheus.get(id(registry))
        collector = known[1] if known is not None else PrometheusCollector()
        try:
            registry.register(collector)
        except ValueError:  # "Duplicated timeseries": ours already there (or someone's of our names)
            if known is None:
                raise
            return collector
        _prometheus[id(registry)] = (registry, collector)
        return collector


def register_otel(meter_provider: Any = None) -> "list[Any]":
    """Report the process's polylock metrics through OpenTelemetry: observable counters and gauges
    of a meter named ``polylock`` from ``meter_provider`` (the global one by default), read when
    the SDK collects. Counters lose their ``_total`` (exporters add their own suffix); a histogram
    cannot be observed, so each is reported as two observable counters, ``<name>_count`` and
    ``<name>_sum`` (seconds). Returns the instruments; again with the same provider, the same.
    Needs the ``opentelemetry-api`` package."""
    try:
        from opentelemetry import metrics as otel
        from opentelemetry.metrics import Observation
    except ImportError as e:
        raise ImportError(
            "polylock.metrics.register_otel() needs the opentelemetry-api package: pip install opentelemetry-api"
        ) from e
    provider = meter_provider if meter_provider is not None else otel.get_meter_provider()
    with _registered_lock:
        if id(provider) in _otel:
            return _otel[id(provider)][1]
        meter = provider.get_meter("polylock", _native.VERSION)

        def observe(name: str, part: str) -> Any:
            def callback(_options: Any) -> Iterable[Any]:
                out = []
                for f in snapshot():
                    if f.name != name:
                        continue
                    for s in f.samples:
                        v = s.value
                        if isinstance(v, Histogram):
                            v = float(v.count) if part == "count" else v.sum
                        out.append(Observation(v, dict(s.labels)))
                return out

            return callback

        made: List[Any] = []
        for name, typ, help_ in FAMILIES:
            if typ == "histogram":
                made.append(
                    meter.create_observable_counter(
                        name + "_count", callbacks=[observe(name, "count")], description=help_ + " (count)"
                    )
                )
                made.append(
                    meter.create_observable_counter(
                        name + "_sum", callbacks=[observe(name, "sum")], unit="s", description=help_ + " (sum)"
                    )
                )
            elif typ == "counter":
                short = name[: -len("_total")] if name.endswith("_total") else name
                made.append(meter.create_observable_counter(short, callbacks=[observe(name, "")], description=help_))
            else:
                made.append(meter.create_observable_gauge(name, callbacks=[observe(name, "")], description=help_))
        _otel[id(provider)] = (provider, made)
        return made
