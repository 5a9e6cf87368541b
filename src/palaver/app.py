"""The composition root: ``create_app(settings)`` builds every service and route once."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import URLPath
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, NoMatchFound, Route
from starlette.types import Receive, Scope, Send

from palaver.api import discover_routers
from palaver.api.avatars import avatar_routes
from palaver.api.emoji_images import emoji_static_routes
from palaver.api.known_credentials import KnownCredentials
from palaver.api.long_poll import LongPollRoute, LongPolls, LongPollStarlette
from palaver.api.realm_emoji import emoji_image_routes
from palaver.api.realm_export import export_file_routes
from palaver.api.routing import (
    ApiRouter,
    Endpoint,
    error_response,
    internal_error_response,
    make_path_handler,
)
from palaver.api.thumbnails import thumbnail_routes
from palaver.api.uploads import upload_file_routes
from palaver.api.user_content import UserContentOrigin
from palaver.api.webhooks import webhook_routes
from palaver.config import Settings
from palaver.lib.exceptions import JsonableError, MethodNotAllowedError, ResourceNotFoundError
from palaver.lib.i18n import AcceptLanguageMiddleware
from palaver.lib.logs import configure_logging
from palaver.openapi.routes import openapi_routes
from palaver.operations import install_operations
from palaver.services import Services, build_services
from palaver.serving import on_stop_signals
from palaver.web.desktop_flow import desktop_flow_routes
from palaver.web.pages import build_pages, web_routes
from palaver.web.passkeys import passkey_routes
from palaver.web.saml import saml_routes
from palaver.web.sso import sso_routes
from palaver.web.two_factor import two_factor_routes
from palaver.web_pages import web_page_routes
from palaver.workers.change_log import ChangeLogWorker
from palaver.workers.directory_sync import DirectorySyncWorker
from palaver.workers.email import EmailWorker
from palaver.workers.exports import ExportWorker
from palaver.workers.loop import BackgroundWorker
from palaver.workers.outgoing_webhooks import ServiceBotWorker
from palaver.workers.previews import PreviewWorker
from palaver.workers.push import PushWorker
from palaver.workers.retention import RetentionWorker
from palaver.workers.scheduler import Scheduler
from palaver.workers.thumbnails import ThumbnailWorker
from palaver.workers.wal_checkpoint import WalCheckpointWorker

API_PREFIX = "/api/v1"
# The same endpoints for the browser, authenticated by the session cookie (web/sessions.py).
JSON_PREFIX = "/json"


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


def _first_segment(path: str, prefix: str = API_PREFIX) -> str | None:
    """The segment after /api/v1/ (``users`` in /api/v1/users/me); None outside the API."""
    if not path.startswith(prefix + "/"):
        return None
    return path[len(prefix) + 1 :].partition("/")[0]


class _ApiRoutes(BaseRoute):
    """The API's routes in precedence order, tried only where the first segment can match.

    Starlette tries every route in turn, one regular expression each, so a path late in the
    order paid for ~90 failed matches per request. A route whose first segment is literal
    matches no path with another first segment, so skipping it changes nothing: each path
    still gets the first route that matches fully, else the first that matches all but the
    method (a 405), exactly as in the flat list.
    """

    # The inner route that matched, handed from ``matches`` to ``handle`` in the scope.
    _ROUTE_KEY = "palaver.route"

    def __init__(self, routes: list[Route], prefix: str = API_PREFIX) -> None:
        self.routes = routes
        self.prefix = prefix
        literal = [_first_segment(route.path, prefix) for route in routes]
        # A first segment with a parameter in it may match any first segment.
        wild = [seg is None or "{" in seg for seg in literal]
        self._any = [r for r, w in zip(routes, wild, strict=True) if w]
        self._by_segment: dict[str, list[Route]] = {}
        for seg, w in zip(literal, wild, strict=True):
            if seg is not None and not w and seg not in self._by_segment:
                self._by_segment[seg] = [
                    r for r, other, ow in zip(routes, literal, wild, strict=True) if ow or other == seg
                ]

    def _candidates(self, scope: Scope) -> list[Route]:
        if scope.get("root_path"):
            # Served under a path prefix: Starlette strips it before matching; try them all.
            return self.routes
        segment = _first_segment(scope["path"], self.prefix)
        if segment is None:
            # Not under /api/v1/: only a route whose path starts with a parameter could match.
            return self._any
        return self._by_segment.get(segment, self._any)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        partial: tuple[Match, Scope] | None = None
        for route in self._candidates(scope):
            match, child_scope = route.matches(scope)
            if match == Match.FULL:
                return match, {**child_scope, self._ROUTE_KEY: route}
            if match == Match.PARTIAL and partial is None:
                partial = (match, {**child_scope, self._ROUTE_KEY: route})
        return partial or (Match.NONE, {})

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        route: Route = scope[self._ROUTE_KEY]
        await route.handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        for route in self.routes:
            try:
                return route.url_path_for(name, **path_params)
            except NoMatchFound:
                pass
        raise NoMatchFound(name, path_params)


class DirectApi:
    """The API's routes (``/api/v1`` and ``/json``), entered straight from the request
    middleware (``LongPollStarlette``): what Starlette's router, route wrapper, exception
    middleware and server-error middleware would do for them, in one frame.

    A request is taken only when one of the API's route tables matches it fully, and since
    those tables come first among the app's routes, that is the route Starlette would have
    picked; anything else (a path no route takes, a method a path does not: 404 and 405)
    goes through Starlette as before.
    """

    def __init__(self, tables: Sequence[_ApiRoutes]) -> None:
        self._tables = tables

    def match(self, scope: Scope) -> bool:
        if scope.get("root_path"):
            return False
        for table in self._tables:
            match, child_scope = table.matches(scope)
            if match == Match.FULL:
                scope.update(child_scope)
                return True
            if match == Match.PARTIAL:
                return False
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route: Route = scope[_ApiRoutes._ROUTE_KEY]
        request = Request(scope, receive, send)
        try:
            response = await route.endpoint(request)
        except HTTPException as exc:
            response = await _http_exception(request, exc)
        except Exception:
            # As ServerErrorMiddleware: our envelope (nothing has been sent: the handler
            # returns its response), and the exception goes on to the middleware and the
            # server, which log it.
            await internal_error_response()(scope, receive, send)
            raise
        await response(scope, receive, send)


def _path_routes(
    services: Services,
    routers: Sequence[ApiRouter],
    prefix: str = API_PREFIX,
    web: bool = False,
    memory: KnownCredentials | None = None,
) -> list[Route]:
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
        Route(
            prefix + path,
            make_path_handler(services, by_path[path], web=web, memory=memory),
            methods=list(by_path[path]),
        )
        for path in ordered
    ]


def _allowed_methods(request: Request) -> list[str]:
    # Starlette's 405 names only the first route whose path matched; a URL such as
    # /users/5 is served by two routes (PATCH/DELETE by ID, GET by ID or email).
    methods: set[str] = set()
    for top in request.app.router.routes:
        for route in top.routes if isinstance(top, _ApiRoutes) else [top]:
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


def _long_polls(
    services: Services,
    routers: Sequence[ApiRouter],
    mounted: dict[bool, list[Route]],
    known: KnownCredentials,
) -> LongPolls:
    """GET /events on the short path, by the routes that serve it otherwise (``mounted``:
    the API's routes and, under True, the browser's)."""
    endpoint = next(
        (e for router in routers for e in router.endpoints if (e.method, e.path) == ("GET", "/events")),
        None,
    )
    targets = []
    if endpoint is not None:
        for web, routes in mounted.items():
            path = (JSON_PREFIX if web else API_PREFIX) + endpoint.path
            targets += [LongPollRoute(route, endpoint, web) for route in routes if route.path == path]
    return LongPolls(services, targets, known)


def background_workers(services: Services) -> list[BackgroundWorker]:
    """The background workers of a serving process, in the order they start (they stop in
    the reverse order)."""
    settings = services.settings
    follower = services.db.change_log
    ldap = settings.auth.ldap
    candidates: list[BackgroundWorker | None] = [
        # Without Redis: changes committed by one-off commands reach this process's cache,
        # known credentials and queues through the change log (workers/change_log.py).
        None if follower is None else ChangeLogWorker(services, follower),
        # Sends scheduled messages and reminders when due (workers/scheduler.py).
        Scheduler(services),
        # Makes thumbnails of uploaded images (workers/thumbnails.py).
        ThumbnailWorker(services) if settings.thumbnail_worker else None,
        # Link and image previews, when outgoing fetches are allowed (workers/previews.py).
        PreviewWorker(services) if settings.outgoing_fetches else None,
        # Delivers work to outgoing-webhook and embedded bots (workers/outgoing_webhooks.py).
        ServiceBotWorker(services) if settings.service_bot_worker else None,
        # Delivers the email outbox and queues missed-message emails (workers/email.py).
        EmailWorker(services) if settings.email_worker else None,
        # Makes realm exports requested through the API (workers/exports.py).
        ExportWorker(services),
        # Mobile push notifications after commit, when a push path is set (workers/push.py).
        PushWorker(services),
        # Archives messages past their retention period, daily (workers/retention.py).
        RetentionWorker(services) if settings.retention_worker else None,
        # The company directory's people into the organizations' accounts, every
        # [auth.ldap] sync_interval_minutes (workers/directory_sync.py).
        DirectorySyncWorker(services) if ldap is not None and ldap.sync_interval_minutes else None,
    ]
    return [worker for worker in candidates if worker is not None]


def create_app(
    settings: Settings, services: Services | None = None, *, routers: Sequence[ApiRouter] | None = None
) -> Starlette:
    """The ASGI app; ``routers`` replaces the discovered API modules (tests mount their own)."""
    configure_logging(settings)
    services = services or build_services(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # SQLite's log is checkpointed off the request path (workers/wal_checkpoint.py).
        checkpoints = WalCheckpointWorker(services) if settings.is_sqlite else None
        if checkpoints is not None:
            await checkpoints.start()
        # Event queues: restore those saved at the last clean shutdown, collect idle ones.
        await services.bus.start()
        workers = background_workers(services)
        for worker in workers:
            await worker.start()
        try:
            # On SIGTERM/SIGINT, parked long-polls answer at once (serving.py).
            with on_stop_signals(services.bus.begin_draining):
                yield
        finally:
            for worker in reversed(workers):
                await worker.stop()
            # Saves in-process queues for the next start (after requests have finished).
            await services.bus.stop()
            if checkpoints is not None:
                await checkpoints.stop()
            services.close()

    app = LongPollStarlette(
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_exception, Exception: _unhandled_exception},
    )
    app.state.services = services
    api_routers = discover_routers() if routers is None else routers
    # API keys that recently passed, so their next requests skip the look-up (one per process).
    known = KnownCredentials(services.db.realm_state, services.settings)
    api_routes = _path_routes(services, api_routers, memory=known)
    api_table = _ApiRoutes(api_routes)
    app.router.routes.append(api_table)
    # The browser's door to the same endpoints: /json/..., with the session cookie and CSRF.
    browser_routes = _path_routes(services, api_routers, JSON_PREFIX, web=True)
    browser_table = _ApiRoutes(browser_routes, JSON_PREFIX)
    app.router.routes.append(browser_table)
    # The OpenAPI document of these endpoints and its docs page, public (openapi/routes.py).
    app.router.routes.extend(openapi_routes(api_routers, API_PREFIX))
    # Uploaded files are served at the URLs messages link to, outside /api/v1 (api/uploads.py).
    # Thumbnails of uploaded images, before the upload routes (api/thumbnails.py).
    app.router.routes.extend(thumbnail_routes(services))
    app.router.routes.extend(upload_file_routes(services))
    if services.settings.user_content_url:
        # On the user-content origin only signed upload URLs answer (api/user_content.py).
        app.add_middleware(UserContentOrigin, settings=services.settings)
    # Avatars and organization images, and /avatar/ redirects (api/avatars.py); before the
    # custom emoji route, which takes the rest of /user_avatars/.
    app.router.routes.extend(avatar_routes(services))
    # Unicode emoji pictures and the emoji data file (api/emoji_images.py).
    app.router.routes.extend(emoji_static_routes(services))
    # Custom emoji images, at the URLs realm_emoji reports (api/realm_emoji.py).
    app.router.routes.extend(emoji_image_routes(services))
    # Incoming webhooks read raw bodies and provider headers (api/webhooks.py).
    app.router.routes.extend(webhook_routes(services))
    # Server-rendered sign-up, password-reset and email-confirmation pages (web_pages/).
    app.router.routes.extend(web_page_routes(services))
    # Realm export archives, at the export_url GET /export/realm reports (api/realm_export.py).
    app.router.routes.extend(export_file_routes(services))
    # /health, /health/ready, /metrics; request limits, request IDs, access log (operations.py).
    # GET /events skips Starlette's routing layers while it waits (api/long_poll.py).
    long_polls = _long_polls(services, api_routers, {False: api_routes, True: browser_routes}, known)
    install_operations(app, services, long_polls, DirectApi([api_table, browser_table]))
    # The sign-in pages, single sign-on, the app shell at / and its static files (web/).
    pages = build_pages(services)
    # Server-rendered pages start in the browser's language (lib/i18n.py).
    app.add_middleware(AcceptLanguageMiddleware)
    # Before the OpenID Connect routes, whose patterns would take /complete/saml/ too.
    app.router.routes.extend(saml_routes(pages))
    app.router.routes.extend(desktop_flow_routes(pages))
    app.router.routes.extend(sso_routes(pages))
    app.router.routes.extend(two_factor_routes(pages))
    app.router.routes.extend(passkey_routes(pages))
    app.router.routes.extend(web_routes(services, pages))
    return app
