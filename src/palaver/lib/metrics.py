"""Prometheus metrics: what ``GET /metrics`` reports.

The metric objects are module-level, as ``prometheus_client`` intends (one registry per
process). With several worker processes, ``palaver serve`` points
``PROMETHEUS_MULTIPROC_DIR`` at a directory under ``data_dir`` that it empties at start
(``prepare_multiprocess_dir``); each worker then writes its samples to files there, and
whichever worker answers a scrape adds up every process's files. Gauges of things a
process holds (parked polls, checked-out connections) are summed over live processes
only; a worker that was killed is dropped from them at the next scrape.

Recording is cheap (an increment under a lock, or a write to a memory-mapped file), so
it happens inline on the request path.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
MULTIPROC_DIR_NAME = "prometheus-multiproc"

# Request latencies from a cached read (~1 ms) to a large /register (seconds).
_LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

REQUESTS = Counter(
    "palaver_http_requests_total",
    "HTTP requests answered, by method, route template and status",
    ["method", "route", "status"],
)
REQUEST_SECONDS = Histogram(
    "palaver_http_request_duration_seconds",
    "Time to answer an HTTP request (long-polls included, under their own route)",
    ["method", "route"],
    buckets=_LATENCY_BUCKETS,
)
MESSAGES_SENT = Counter("palaver_messages_sent_total", "Messages sent (committed message events)")
EVENTS_PUBLISHED = Counter("palaver_events_published_total", "Events published by actions, by type", ["type"])
EVENTS_DELIVERED = Counter("palaver_events_delivered_total", "Events handed to clients by GET /events")
PARKED_POLLS = Gauge(
    "palaver_event_parked_polls", "GET /events requests waiting for news", multiprocess_mode="livesum"
)
DB_CONNECTIONS_IN_USE = Gauge(
    "palaver_db_connections_in_use",
    "Database connections checked out of the pool",
    multiprocess_mode="livesum",
)
DB_POOL_SIZE = Gauge(
    "palaver_db_pool_size", "Connections each process's pool keeps open", multiprocess_mode="livesum"
)
RATE_LIMITED = Counter("palaver_rate_limited_total", "Requests refused by a rate limit, by limit", ["limit"])
DEPENDENCY_ERRORS = Counter(
    "palaver_dependency_errors_total",
    "Requests answered 503 because a dependency was unreachable",
    ["dependency"],
)


class RequestRecorder:
    """Counts and times requests (``REQUESTS``, ``REQUEST_SECONDS``), with each label set's
    series looked up once.

    prometheus_client's ``labels`` takes a lock and builds the key of the series on every
    call: for a fan-out to thousands of long-polls it was about a sixth of the server's
    work. Methods are the client's to choose, so past ``MAX_SERIES`` label sets the rest
    are looked up each time, as before.
    """

    MAX_SERIES = 4096

    def __init__(self) -> None:
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def record(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        series = self._series.get(key)
        if series is None:
            series = (
                REQUESTS.labels(method, route, str(status)),
                REQUEST_SECONDS.labels(method, route),
            )
            if len(self._series) < self.MAX_SERIES:
                self._series[key] = series
        series[0].inc()
        series[1].observe(seconds)


class PublishedCounter:
    """A bus listener (events/bus.py) counting what actions publish.

    One message is published as several events (recipients grouped by their flags), one
    after another in its commit; remembering the last IDs counts each message once.
    """

    def __init__(self) -> None:
        self._recent: dict[int, None] = {}

    def __call__(self, realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> None:
        event_type = str(event.get("type", "unknown"))
        EVENTS_PUBLISHED.labels(event_type).inc()
        if event_type != "message":
            return
        message_id = event.get("message", {}).get("id")
        if message_id in self._recent:
            return
        self._recent[message_id] = None
        if len(self._recent) > 256:
            del self._recent[next(iter(self._recent))]
        MESSAGES_SENT.inc()


# Exposition --------------------------------------------------------------------------------


class QueueCountCollector(Collector):
    """The number of event queues, read from the store at scrape time.

    With Redis every process sees the same count, so one reading is right however many
    processes there are; the memory store is single-process by construction.
    """

    def __init__(self, count: Any) -> None:
        self._count = count

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily("palaver_event_queues", "Event queues registered and not yet collected")
        try:
            family.add_metric([], float(self._count()))
        except Exception:
            # A scrape while the store is unreachable reports no value rather than failing.
            return
        yield family


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def prepare_multiprocess_dir(data_dir: Path) -> Path:
    """Empty (or create) the shared metrics directory and point this process tree at it.

    Call before the worker processes start; files left by a previous run would otherwise
    be added to this run's counters.
    """
    path = (data_dir / MULTIPROC_DIR_NAME).resolve()
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    os.environ[MULTIPROC_ENV] = str(path)
    return path


def _drop_dead_processes(path: str) -> None:
    """Forget live-only gauges of processes that exited without saying so (kill -9)."""
    pids: set[int] = set()
    for name in os.listdir(path):
        if name.startswith("gauge_live") and name.endswith(".db"):
            digits = name.rsplit("_", 1)[-1].removesuffix(".db")
            if digits.isdigit():
                pids.add(int(digits))
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            # prometheus_client.multiprocess has no annotations.
            multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
        except PermissionError:
            pass


def exposition(extra: Sequence[Collector] = ()) -> tuple[bytes, str]:
    """The text a scrape receives, and its content type."""
    path = multiprocess_dir()
    if path:
        _drop_dead_processes(path)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]  # unannotated
        text = generate_latest(registry)
    else:
        text = generate_latest(REGISTRY)
    # Collectors of this app (each test builds its own app) go in a registry of their own;
    # the text format allows families from several registries one after the other.
    own = CollectorRegistry()
    for collector in extra:
        own.register(collector)
    return text + generate_latest(own), CONTENT_TYPE_LATEST
