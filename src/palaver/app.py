"""The composition root: ``create_app(settings)`` builds every service and route once."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from palaver.api import discover_routers
from palaver.api.realm_emoji import emoji_image_routes
from palaver.api.routing import (
    ApiRouter,
    Endpoint,
    error_response,
    internal_error_response,
    make_path_handler,
)
from palaver.api.uploads import upload_file_routes
from palaver.config import Settings
from palaver.lib.exceptions import JsonableError, MethodNotAllowedError, ResourceNotFoundError
from palaver.lib.scheduler import Scheduler
from palaver.services import Services, build_services

API_PREFIX = "/api/v1"


def _precedence(path: str) -> tuple[int, ...]:
    """Rank a path segment by segment: literal, then typed parameter, then free text."""
    ranks = []
    for segment in path.strip("/").split("/"):
        if "{" not in segment:
            ranks.append(0)
        elif ":path}" in segment:
            ranks.append(3)  # spans segments, so it must come after everything
        elif ":" in segment:
            ranks.append(1)  # {user_id:int} only takes digits
        else:
            ranks.append(2)
    return tuple(ranks)


def _path_routes(services: Services, routers: Sequence[ApiRouter]) -> list[Route]:
    by_path: dict[str, dict[str, Endpoint]] = defaultdict(dict)
    for router in routers:
        for endpoint in router.endpoints:
            if endpoint.method in by_path[endpoint.path]:
                raise RuntimeError(f"duplicate endpoint {endpoint.method} {endpoint.path}")
            by_path[endpoint.path][endpoint.method] = endpoint
    # Starlette takes the first route that matches, so at the first segment where two paths
    # differ, a literal must win over a parameter (/users/me before /users/{user_id_or_email})
    # and a typed parameter over free text (/users/{user_id:int} before the same email route).
    ordered = sorted(by_path, key=lambda p: (_precedence(p), p))
    # Each route lists only its own methods: Starlette then keeps looking for a route that
    # takes the method (/users/{user_id:int} has no GET; /users/{user_id_or_email} does).
    return [
        Route(API_PREFIX + path, make_path_handler(services, by_path[path]), methods=list(by_path[path]))
        for path in ordered
    ]


def _allowed_methods(request: Request) -> list[str]:
    # Starlette's 405 names only the first route whose path matched; a URL such as
    # /users/5 is served by two routes (PATCH/DELETE by ID, GET by ID or email).
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.methods and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods
    return sorted(methods)


async def _http_exception(request: Request, exc: Exception) -> Response:
    # Starlette raises these for unmatched paths; clients get our envelope, not the default.
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 405:
        return error_response(MethodNotAllowedError(_allowed_methods(request)))
    if status == 404:
        return error_response(ResourceNotFoundError())
    return error_response(JsonableError("Bad request", status=status))


async def _unhandled_exception(request: Request, exc: Exception) -> Response:
    # Views' errors are caught in the pipeline; this covers anything that escapes it, so a
    # client never sees a plain-text traceback page. Starlette logs the exception itself.
    return internal_error_response()


def create_app(
    settings: Settings, services: Services | None = None, *, routers: Sequence[ApiRouter] | None = None
) -> FastAPI:
    """The ASGI app; ``routers`` replaces the discovered API modules (tests mount their own)."""
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    services = services or build_services(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Event queues: restore those saved at the last clean shutdown, collect idle ones.
        await services.bus.start()
        # Sends scheduled messages and reminders when due (lib/scheduler.py).
        scheduler = Scheduler(services)
        await scheduler.start()
        try:
            yield
        finally:
            await scheduler.stop()
            # Saves in-process queues for the next start (after requests have finished).
            await services.bus.stop()
            services.close()

    app = FastAPI(
        title="Palaver",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_exception, Exception: _unhandled_exception},
    )
    app.state.services = services
    for route in _path_routes(services, discover_routers() if routers is None else routers):
        app.router.routes.append(route)
    # Uploaded files are served at the URLs messages link to, outside /api/v1 (api/uploads.py).
    app.router.routes.extend(upload_file_routes(services))
    # Custom emoji images, at the URLs realm_emoji reports (api/realm_emoji.py).
    app.router.routes.extend(emoji_image_routes(services))
    return app
