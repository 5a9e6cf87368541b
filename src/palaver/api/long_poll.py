"""GET /events on a short path: the API pipeline without Starlette's routing layers.

A parked long-poll keeps everything on its await chain alive until an event or a
heartbeat, and thousands are parked at once. Through Starlette each one holds the
exception middleware, the router, the API dispatcher (with its own copy of the scope), the
route, two request wrappers, a ``Request`` and the path handler: coroutine frames and
objects worth about as much as the rest of the poll together (bench/queue_memory.py measures it).

``RequestMiddleware`` (api/middleware.py) hands a plain GET of an events URL (no body,
not under a path prefix) straight to ``LongPolls.serve``, after its own work (request ID,
header limits, proxies), and records the access log and metrics as for any request. What
happens in between is the general pipeline's (routing.py): the same parameter reading,
``execute_async`` (authentication, rate limit, parameter validation, the view, errors and
envelope) and, for /json, the session cookie and the answer to a failed login. Anything
else (HEAD, a body, another method) takes the general path, so its answers do not change.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from palaver.api.events import poll_queue
from palaver.api.known_credentials import KnownCredentials
from palaver.api.params import RawParams
from palaver.api.routing import (
    Endpoint,
    RequestInfo,
    admit,
    error_response,
    execute_async,
    internal_error,
    internal_error_response,
    query_values,
    render,
    web_challenge,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.rate_limit import MemoryRateLimiter, NoRateLimiter
from palaver.services import Services
from palaver.web.sessions import web_credentials

# Where the API's route dispatcher leaves the route that matched; the middleware labels
# the request's metrics and log line with its template.
_ROUTE_SCOPE_KEY = "palaver.route"
# Headers that announce a body (HTTP/1.1 framing), or a multipart one to read as a form.
_BODY_HEADERS = (b"content-length", b"transfer-encoding")


@dataclass(frozen=True, slots=True)
class LongPollRoute:
    """One events URL: the Starlette route it replaces, and the GET endpoint it serves."""

    route: Route
    endpoint: Endpoint
    web: bool


class LongPolls:
    """The events URLs served on the short path (/api/v1/events, /json/events)."""

    def __init__(self, services: Services, routes: Iterable[LongPollRoute], known: KnownCredentials) -> None:
        self.services = services
        self._by_path = {target.route.path: target for target in routes}
        self.known = known

    def match(self, scope: Scope) -> LongPollRoute | None:
        """The route when this request may take the short path, else None."""
        if scope["method"] != "GET" or scope.get("root_path"):
            return None
        target = self._by_path.get(scope["path"])
        if target is None:
            return None
        for key, value in scope["headers"]:
            if key in _BODY_HEADERS or (key == b"content-type" and b"multipart/" in value.lower()):
                return None
        return target

    async def serve(self, target: LongPollRoute, scope: Scope, receive: Receive, send: Send) -> None:
        scope[_ROUTE_SCOPE_KEY] = target.route
        try:
            # Passed on, not kept in this frame: the answer drops them before the wait.
            response = await self._answer(target.endpoint, *_request(scope, target.web))
        except JsonableError as e:
            response = error_response(e)
        except Exception as error:
            outages = self.services.outages
            unavailable = outages.unavailable_error(error) if outages is not None else None
            if unavailable is None:
                # As Starlette's ServerErrorMiddleware would (this path bypasses it, see
                # ``LongPollStarlette``): our envelope, nothing having been sent, and the
                # exception goes on to the middleware and the server, which log it.
                # (``execute_async`` answers the view's own errors; this is for a bug in
                # reading the request.)
                await internal_error_response()(scope, receive, send)
                raise
            # The database or Redis went away: a 503 to retry, as on the general path.
            response = error_response(unavailable)
        if target.web:
            web_challenge(response)
        # An error while sending goes on as well; the response has started by then.
        await response(scope, receive, send)

    def _answer(self, endpoint: Endpoint, info: RequestInfo, raw: RawParams) -> Coroutine[Any, Any, Response]:
        # Not async: this frame (and what it refers to) ends before the poll waits.
        if "queue_id" not in raw.values:
            # Not a poll of an existing queue (the view answers the error): the full path.
            return execute_async(self.services, endpoint, info, raw)
        requester = self.known.requester(info)
        if requester is not None:
            return self._answer_known(endpoint, requester.user_id, info, raw)
        return execute_async(self.services, endpoint, info, raw, self.known.recorder(info))

    async def _answer_known(
        self, endpoint: Endpoint, user_id: int, info: RequestInfo, raw: RawParams
    ) -> Response:
        """A poll of a known user's queue (api/known_credentials.py): what ``execute_async`` does
        after authenticating, without a worker thread or the database."""
        services = self.services
        try:
            if isinstance(services.rate_limiter, MemoryRateLimiter | NoRateLimiter):
                kwargs, ignored, headers = admit(services, endpoint, user_id, info.client_ip, raw)
            else:
                # Redis counts the rate limit: a round trip, not to be waited for on the loop.
                admitted = await run_in_threadpool(admit, services, endpoint, user_id, info.client_ip, raw)
                kwargs, ignored, headers = admitted
        except JsonableError as e:
            return error_response(e)
        queue_id, last_event_id, dont_block = (
            kwargs["queue_id"],
            kwargs["last_event_id"],
            kwargs["dont_block"],
        )
        # As ``execute_async`` and the view do: nothing the wait does not need stays alive.
        del info, raw, kwargs
        try:
            result = await poll_queue(services.bus, user_id, queue_id, last_event_id, dont_block)
        except JsonableError as e:
            return error_response(e, headers)
        except Exception:
            return internal_error(endpoint, services=services)
        return render(result, headers, ignored)


def _request(scope: Scope, web: bool) -> tuple[RequestInfo, RawParams]:
    """What ``make_path_handler`` reads of a request without a body."""
    raw = RawParams(values=query_values(scope.get("query_string", b"")), files={}, path={})
    # As Starlette's Headers.get: the first field of each name, decoded as Latin-1.
    host = authorization = user_agent = None
    for key, value in scope["headers"]:
        if key == b"host":
            host = value if host is None else host
        elif key == b"authorization":
            authorization = value if authorization is None else authorization
        elif key == b"user-agent":
            user_agent = value if user_agent is None else user_agent
    client = scope.get("client")
    info = RequestInfo(
        host=host.decode("latin-1") if host is not None else "",
        authorization=authorization.decode("latin-1") if authorization is not None else None,
        client_ip=client[0] if client else "",
        user_agent=user_agent.decode("latin-1") if user_agent is not None else "",
        # Only the cookie and CSRF header are read; the Request is dropped at once.
        web=web_credentials(Request(scope)) if web else None,
    )
    return info, raw


class DirectRoutes(Protocol):
    """API routes served without Starlette's stack (``app.DirectApi``)."""

    def match(self, scope: Scope) -> bool:
        """Whether this request is one of them (then the scope holds its route)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request ``match`` took."""


class LongPollStarlette(Starlette):
    """Starlette, with GET /events and the API's routes handed straight to the request
    middleware.

    Starlette's own ``__call__``, its ServerErrorMiddleware, ExceptionMiddleware, router and
    route wrapper are five more frames (two of them making a ``Request`` each) for every
    request, and a parked poll keeps its frames for as long as it waits. ``LongPolls.serve``
    and ``app.DirectApi`` do what those layers would for these requests.
    ``install_operations`` sets ``short_path`` (the same ``RequestMiddleware``, in front of
    them); every other request (files, pages, a path or method no API route takes) goes
    through Starlette as before.
    """

    short_path: ASGIApp | None = None
    long_polls: LongPolls | None = None
    direct: DirectRoutes | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.short_path is not None
            and scope["type"] == "http"
            and (
                (self.long_polls is not None and self.long_polls.match(scope) is not None)
                or (self.direct is not None and self.direct.match(scope))
            )
        ):
            scope["app"] = self
            scope.setdefault("router", self.router)  # as Starlette's router sets it (url_for)
            await self.short_path(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)
