"""The API's doors taken straight from the middleware: /api/v1/... and /json/... to their
``ApiApp`` without Starlette's ``ExceptionMiddleware`` and router.

Installed innermost among the app's middleware (the first ``add_middleware``), so every
middleware added the Starlette way still wraps every API request; only the two layers
between the last middleware and a ``Mount`` are skipped. They do nothing an API request
needs: ``ApiApp`` matches its own routes and maps its own errors (api/responses.py). The
scope an ``ApiApp`` gets is the one its ``Mount`` would give: ``root_path`` extended by the
prefix, and the app's exception handlers for the Starlette routes of its fallback.
A path that is no door's goes on to the rest of the app unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send


class ApiDispatch:
    def __init__(
        self,
        app: ASGIApp,
        doors: Sequence[tuple[str, ASGIApp]],
        exception_handlers: Mapping[Any, Callable[..., Any]],
    ) -> None:
        self.app = app
        self.doors = [(prefix + "/", prefix, door) for prefix, door in doors]
        # As Starlette gives them to ExceptionMiddleware for the routes below it: 500 and
        # Exception belong to ServerErrorMiddleware (outside), status codes apart.
        handlers = {k: v for k, v in exception_handlers.items() if k not in (500, Exception)}
        by_status = {k: v for k, v in handlers.items() if isinstance(k, int)}
        by_type = {k: v for k, v in handlers.items() if not isinstance(k, int)}
        self.handlers = (by_type, by_status)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            root_path: str = scope.get("root_path", "")
            # The path under the root path, as Starlette's routing reads it.
            route_path = path
            if root_path and path.startswith(root_path) and path[len(root_path) : len(root_path) + 1] == "/":
                route_path = path[len(root_path) :]
            for slash, prefix, door in self.doors:
                if route_path.startswith(slash):
                    scope["app_root_path"] = scope.get("app_root_path", root_path)
                    scope["root_path"] = root_path + prefix
                    scope["starlette.exception_handlers"] = self.handlers
                    await door(scope, receive, send)
                    return
        await self.app(scope, receive, send)
