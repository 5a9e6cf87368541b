"""The composition root: ``create_app(settings)`` builds every service and route once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, Router

from palaver.api import discover_routers
from palaver.api.avatars import avatar_routes
from palaver.api.dispatch import ApiDispatch
from palaver.api.emoji_images import emoji_static_routes
from palaver.api.known_credentials import KnownCredentials
from palaver.api.pipeline import ApiApp
from palaver.api.realm_emoji import emoji_image_routes
from palaver.api.realm_export import export_file_routes
from palaver.api.responses import error_for, error_response
from palaver.api.routing import ApiRouter, RouteTable
from palaver.api.thumbnails import thumbnail_routes
from palaver.api.uploads import upload_file_routes
from palaver.api.user_content import UserContentOrigin
from palaver.api.webhooks import webhook_routes
from palaver.cache.credentials import CredentialVersions
from palaver.config import Settings
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
from palaver.workers.idle_memory import IdleMemoryWorker
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


def _error_handler(services: Services) -> Callable[[Request, Exception], Awaitable[Response]]:
    """Starlette's answer to an exception of any route outside the API application (pages,
    files) and to a path no route takes: the API's envelope, by the one mapping."""

    async def handle(request: Request, exc: Exception) -> Response:
        return error_response(error_for(exc, services.outages))

    return handle


def _split(prefix: str, routes: list[Route]) -> tuple[list[BaseRoute], list[BaseRoute]]:
    """The routes outside ``prefix``, and those under it with their paths made relative to
    it (as a mount's routes are)."""
    outside: list[BaseRoute] = []
    under: list[BaseRoute] = []
    for route in routes:
        if route.path.startswith(prefix + "/"):
            relative = route.path.removeprefix(prefix)
            under.append(Route(relative, route.endpoint, methods=route.methods, name=route.name))
        else:
            outside.append(route)
    return outside, under


def background_workers(services: Services) -> list[BackgroundWorker]:
    """The background workers of a serving process, in the order they start (they stop in
    the reverse order)."""
    settings = services.settings
    follower = services.db.cache.change_log
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
        # Closes SQLite's idle connections and trims the heap once the server is quiet
        # (workers/idle_memory.py).
        IdleMemoryWorker(services),
    ]
    return [worker for worker in candidates if worker is not None]


def create_app(
    settings: Settings,
    services: Services | None = None,
    *,
    routers: Sequence[ApiRouter] | None = None,
    api_dispatch: bool = True,
) -> Starlette:
    """The ASGI app; ``routers`` replaces the discovered API modules (tests mount their own).

    ``api_dispatch``: the API's doors are taken by ``ApiDispatch`` (api/dispatch.py),
    innermost among the middleware; off, only by their ``Mount`` (tests compare the two).
    """
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

    handler = _error_handler(services)
    # HTTPException: a path or method no route takes. Exception: anything else a route
    # raises (Starlette answers it, then re-raises it for the server to log).
    app = Starlette(lifespan=lifespan, exception_handlers={HTTPException: handler, Exception: handler})
    app.state.services = services
    api_routers = discover_routers() if routers is None else routers
    table = RouteTable.of(e for router in api_routers for e in router.endpoints)
    # API keys that recently passed, so their next requests skip the look-up (one per process).
    known = KnownCredentials(CredentialVersions(services.db.realm_state), services.settings)
    app.state.known_credentials = known
    # The OpenAPI document of these endpoints and its docs page, public (openapi/routes.py);
    # and incoming webhooks, which read raw bodies and provider headers (api/webhooks.py).
    outside, under_api = _split(
        API_PREFIX, [*openapi_routes(api_routers, API_PREFIX), *webhook_routes(services)]
    )
    # The API (api/pipeline.py) first: most requests are its. Under /api/v1 the routes above
    # serve the paths that are no endpoint's. The browser's door to the same endpoints is
    # /json/..., with the session cookie and CSRF.
    api = ApiApp(services, table, API_PREFIX, memory=known, fallback=Router(under_api))
    web_api = ApiApp(services, table, JSON_PREFIX, web=True)
    app.router.routes.append(Mount(API_PREFIX, api))
    app.router.routes.append(Mount(JSON_PREFIX, web_api))
    if api_dispatch:
        # The first middleware added is the innermost: every later one wraps the API too.
        # It skips ExceptionMiddleware and the router for the API's requests (api/dispatch.py);
        # the mounts above stay, for anything that walks the routes.
        doors = [(API_PREFIX, api), (JSON_PREFIX, web_api)]
        app.add_middleware(ApiDispatch, doors=doors, exception_handlers=app.exception_handlers)
    app.router.routes.extend(outside)
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
    # Server-rendered sign-up, password-reset and email-confirmation pages (web_pages/).
    app.router.routes.extend(web_page_routes(services))
    # Realm export archives, at the export_url GET /export/realm reports (api/realm_export.py).
    app.router.routes.extend(export_file_routes(services))
    # /health, /health/ready, /metrics; request limits, request IDs, access log (operations.py).
    install_operations(app, services)
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
