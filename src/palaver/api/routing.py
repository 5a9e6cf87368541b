"""Endpoint registration and the API's route table.

Views are plain functions of ``(ctx, **params)`` returning a dict of extra success fields
(or a Response); an API module registers them on its ``ApiRouter`` under a path of
Starlette's syntax (``/users/{user_id:int}``). ``RouteTable`` is the table the API
application (api/pipeline.py) matches a request against.
"""

from __future__ import annotations

import inspect
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.routing import compile_path

from palaver.api.params import RawParams, ViewParams, build_param_specs
from palaver.api.responses import JsonDict

__all__ = ["ApiRouter", "AuthPolicy", "Endpoint", "JsonDict", "PathRoute", "RouteTable", "View"]

AuthPolicy = Literal["required", "optional", "none"]
View = Callable[..., Any]  # sync views return JsonDict | Response; async views await to one
# An async view's variant for a request by known credentials (api/known_credentials.py):
# ``(services, requester, **params)``, served on the event loop without a session.
KnownView = Callable[..., Any]

_PATH_PARAM = re.compile(r"{(\w+)(?::\w+)?}")


@dataclass
class Endpoint:
    method: str
    path: str
    view: View
    auth: AuthPolicy
    rate_limited: bool
    params: ViewParams
    # An async view may name a variant taking the ``Requester`` in place of ``ctx``, for the
    # requests by known credentials that name ``known_when`` (GET /events: a poll).
    known_view: KnownView | None = None
    known_when: str = ""
    # Decided once at registration, not per request.
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        self.is_async = inspect.iscoroutinefunction(self.view)

    @property
    def specs(self) -> Sequence[Any]:
        return self.params.specs

    def parse(self, raw: RawParams) -> tuple[dict[str, Any], list[str]]:
        return self.params.parse(raw)


class ApiRouter:
    """Collects a module's endpoints; ``create_app`` mounts them under /api/v1 and /json."""

    def __init__(self) -> None:
        self.endpoints: list[Endpoint] = []

    def route(
        self,
        method: str,
        path: str,
        *,
        auth: AuthPolicy = "required",
        rate_limited: bool = True,
        known_view: KnownView | None = None,
        known_when: str = "",
    ) -> Callable[[View], View]:
        def register(view: View) -> View:
            params = ViewParams(build_param_specs(view, set(_PATH_PARAM.findall(path))))
            endpoint = Endpoint(method, path, view, auth, rate_limited, params, known_view, known_when)
            self.endpoints.append(endpoint)
            return view

        return register

    def get(self, path: str, **kw: Any) -> Callable[[View], View]:
        return self.route("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Callable[[View], View]:
        return self.route("POST", path, **kw)

    def patch(self, path: str, **kw: Any) -> Callable[[View], View]:
        return self.route("PATCH", path, **kw)

    def put(self, path: str, **kw: Any) -> Callable[[View], View]:
        return self.route("PUT", path, **kw)

    def delete(self, path: str, **kw: Any) -> Callable[[View], View]:
        return self.route("DELETE", path, **kw)


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


def _first_segment(path: str) -> str:
    """``users`` in /users/me."""
    return path[1:].partition("/")[0]


class PathRoute:
    """One path template and the endpoints serving it, by method."""

    __slots__ = ("convertors", "endpoints", "path", "regex")

    def __init__(self, path: str, endpoints: dict[str, Endpoint]) -> None:
        self.path = path
        self.endpoints = endpoints
        self.regex, _, self.convertors = compile_path(path)

    def match(self, path: str) -> dict[str, Any] | None:
        """The path parameters when ``path`` fits the template (converted: ``{id:int}`` an int)."""
        found = self.regex.match(path)
        if found is None:
            return None
        params: dict[str, Any] = found.groupdict()
        for name, convertor in self.convertors.items():
            params[name] = convertor.convert(params[name])
        return params


class RouteTable:
    """The API's routes in precedence order, indexed by their first path segment.

    A request gets the first route in precedence order whose template fits its path and
    that serves its method. At the first segment where two templates differ, a literal wins
    over a parameter (/users/me before /users/{user_id_or_email}) and a typed parameter over
    free text (/users/{user_id:int} before the email route); each route lists only its own
    methods, so a method one route lacks may be served by a later one (/users/{user_id:int}
    has no GET; /users/{user_id_or_email} does). When a path fits routes but none takes the
    method, the answer is a 405 naming every method of those routes.

    The index: a route whose first segment is literal fits no path with another first
    segment, so a request tries only the routes under its own first segment and those whose
    first segment is a parameter, in the same order (``test_route_index_picks_what_a_scan_would``).
    Trying all of them cost ~90 failed regular expressions for a path late in the order.
    """

    def __init__(self, routes: Iterable[PathRoute]) -> None:
        self.routes = sorted(routes, key=lambda r: (_precedence(r.path), r.path))
        wild = [r for r in self.routes if "{" in _first_segment(r.path)]
        self._wild = wild
        self._by_segment: dict[str, list[PathRoute]] = {}
        for route in self.routes:
            segment = _first_segment(route.path)
            if "{" not in segment and segment not in self._by_segment:
                self._by_segment[segment] = [
                    r for r in self.routes if r in wild or _first_segment(r.path) == segment
                ]

    @classmethod
    def of(cls, endpoints: Iterable[Endpoint]) -> RouteTable:
        by_path: dict[str, dict[str, Endpoint]] = defaultdict(dict)
        for endpoint in endpoints:
            if endpoint.method in by_path[endpoint.path]:
                raise RuntimeError(f"duplicate endpoint {endpoint.method} {endpoint.path}")
            by_path[endpoint.path][endpoint.method] = endpoint
        return cls(PathRoute(path, methods) for path, methods in by_path.items())

    def candidates(self, path: str) -> list[PathRoute]:
        """The routes that may fit ``path``, in precedence order."""
        return self._by_segment.get(_first_segment(path), self._wild)

    def match(self, method: str, path: str) -> tuple[PathRoute, Endpoint, dict[str, Any]] | list[str]:
        """The route, endpoint and path parameters for the request; else the methods the
        routes fitting its path take (none: no route fits, a 404)."""
        allowed: set[str] = set()
        # HEAD is GET without the body (the server leaves it out).
        wanted = "GET" if method == "HEAD" else method
        for route in self.candidates(path):
            params = route.match(path)
            if params is None:
                continue
            endpoint = route.endpoints.get(wanted)
            if endpoint is not None:
                return route, endpoint, params
            allowed.update(route.endpoints)
        if "GET" in allowed:
            allowed.add("HEAD")
        return sorted(allowed)
