"""Probes and metrics for operators: ``/health``, ``/health/ready``, ``/metrics``.

Outside ``/api/v1`` and without authentication, as load balancers and Prometheus expect.
``/health`` says the process serves requests; ``/health/ready`` also reaches the database
and Redis (each with a short timeout) and answers 503 naming what is unreachable, so a
balancer stops sending traffic to a process that could only fail it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.api.responses import json_response
from palaver.lib import metrics
from palaver.lib.dependencies import check_database, check_redis
from palaver.services import Services


def health_routes(services: Services) -> list[Route]:
    queue_count = metrics.QueueCountCollector(services.bus.queue_count_for_metrics)

    async def health(request: Request) -> Response:
        return json_response({"result": "success", "msg": "", "status": "ok"})

    def readiness() -> dict[str, str]:
        checks: dict[str, Callable[[], None]] = {"database": lambda: check_database(services.db.engine)}
        if services.settings.redis_url:
            url = services.settings.redis_url
            checks["redis"] = lambda: check_redis(url)
        results: dict[str, str] = {}
        for name, check in checks.items():
            try:
                check()
                results[name] = "ok"
            except Exception as error:
                results[name] = f"unreachable: {type(error).__name__}"
        return results

    async def ready(request: Request) -> Response:
        results = await run_in_threadpool(readiness)
        if all(value == "ok" for value in results.values()):
            return json_response({"result": "success", "msg": "", "checks": results})
        failing = ", ".join(name for name, value in results.items() if value != "ok")
        body: dict[str, Any] = {
            "result": "error",
            "msg": f"Not ready: {failing} unreachable",
            "code": "BAD_REQUEST",
            "checks": results,
            "retry-after": 5,
        }
        return json_response(body, status=503, headers={"Retry-After": "5"})

    async def scrape(request: Request) -> Response:
        text, content_type = await run_in_threadpool(metrics.exposition, [queue_count])
        return Response(text, media_type=content_type)

    return [
        Route("/health", health, methods=["GET"]),
        Route("/health/ready", ready, methods=["GET"]),
        Route("/metrics", scrape, methods=["GET"]),
    ]
