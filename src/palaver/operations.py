"""Wiring the operator's pieces into an app: probes, metrics, limits, outages, access log.

``create_app`` calls ``install_operations`` once, after mounting its routes; everything
here is additive to the API itself (see README "Operating").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from starlette.applications import Starlette

from palaver.api.health import health_routes
from palaver.api.middleware import RequestMiddleware
from palaver.lib import metrics
from palaver.lib.dependencies import STORAGE, OutageMonitor, check_database, check_redis, probe_free_space
from palaver.services import Services


def install_operations(app: Starlette, services: Services) -> None:
    """Health routes, the database pool's metrics and the request middleware."""
    settings = services.settings
    bus = services.bus
    bus.max_parked_per_user = settings.max_parked_polls_per_user
    bus.max_parked = settings.max_parked_polls
    if not getattr(bus, "palaver_metrics", False):
        # Once per bus: tests build several apps on one set of services.
        bus.add_listener(metrics.PublishedCounter())
        # A mark on the bus object itself, not part of its interface.
        bus.palaver_metrics = True  # type: ignore[attr-defined]

    probes = {"database": lambda: check_database(services.db.engine)}
    # Where a full disk stops writes: the data directory, the uploads and a SQLite database.
    directories = [settings.data_dir]
    if settings.upload_dir is not None and not settings.s3_bucket:
        directories.append(settings.upload_dir)
    if settings.is_sqlite:
        directories.append(Path(settings.database_url.removeprefix("sqlite:///")).parent)
    probes[STORAGE] = probe_free_space(directories)
    if settings.redis_url:
        url = settings.redis_url
        probes["redis"] = lambda: check_redis(url)
    services.outages = OutageMonitor(probes)

    engine = services.db.engine
    size = getattr(engine.pool, "size", None)
    if callable(size):
        metrics.DB_POOL_SIZE.inc(size())

    def checked_out(*_: Any) -> None:
        metrics.DB_CONNECTIONS_IN_USE.inc()

    def checked_in(*_: Any) -> None:
        metrics.DB_CONNECTIONS_IN_USE.dec()

    event.listen(engine, "checkout", checked_out)
    event.listen(engine, "checkin", checked_in)

    app.router.routes.extend(health_routes(services))
    app.add_middleware(RequestMiddleware, settings=settings, outages=services.outages)
