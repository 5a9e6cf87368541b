"""The ASGI layer around every request: identity, limits, proxies, access log and metrics.

One pure ASGI middleware (no per-request Request object), outermost of the app's own:

- a request ID (a sane incoming ``X-Request-Id`` is kept, else a new one), in the
  ``X-Request-Id`` response header and on every log line written while serving it;
- ``X-Forwarded-For`` / ``X-Forwarded-Proto`` believed only from ``trusted_proxies``;
- the body's limits: its size, enforced while it streams in (413; a declared
  ``Content-Length`` over it is refused before reading), and the pause between its
  chunks (408), so a slow sender cannot hold a task; a request with neither
  ``Content-Length`` nor ``Transfer-Encoding`` has no body and is not wrapped. The head's limits (size, field
  count, time) are the HTTP protocol's, enforced before a request reaches any ASGI app
  (serving.py); nothing is checked in both places;
- a client that disconnects mid-request ends quietly (no traceback);
- one access-log line and the request metrics per request, by route template.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
import re
import time

from starlette.requests import ClientDisconnect
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palaver.api.pipeline import ROUTE_TEMPLATE_KEY
from palaver.api.responses import InternalServerError, error_for, error_response
from palaver.config import Settings
from palaver.lib import metrics
from palaver.lib.dependencies import OutageMonitor
from palaver.lib.exceptions import JsonableError
from palaver.lib.logs import RequestLog, current_request
from palaver.lib.operational_errors import RequestBodyTooLargeError, RequestTimeoutError

logger = logging.getLogger("palaver.requests")
access_logger = logging.getLogger("palaver.access")
slow_logger = logging.getLogger("palaver.slow")

LONG_POLL_ROUTE = "/api/v1/events"
# Multipart framing around an upload (boundaries, part headers, other fields).
MULTIPART_SLACK_BYTES = 64 * 1024
_SANE_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:@/+=-]{1,128}")
# Probes and scrapes come every few seconds; their lines go to debug.
_QUIET_ROUTES = frozenset({"/health", "/health/ready", "/metrics"})
# A request has a body only if it carries one of these (RFC 9112 6.3).
_BODY_FRAMING = frozenset({b"content-length", b"transfer-encoding"})


class Limits:
    """The request body's limits, from settings, in bytes and seconds."""

    def __init__(self, settings: Settings) -> None:
        self.body_bytes = settings.max_request_body_kib * 1024
        self.upload_bytes = settings.max_file_upload_size_mib * 1024 * 1024 + MULTIPART_SLACK_BYTES
        self.body_timeout = settings.request_body_timeout_seconds


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


class RequestMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        outages: OutageMonitor | None = None,
    ) -> None:
        self.app = app
        # Routes outside the API pipeline (file serving) meet outages too: 503, not 500.
        self.outages = outages
        self.settings = settings
        self.limits = Limits(settings)
        self.proxies = [ipaddress.ip_network(cidr, strict=False) for cidr in settings.trusted_proxies]
        self._metrics = metrics.RequestRecorder()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        incoming = _header(headers, b"x-request-id")
        if incoming is not None and _SANE_REQUEST_ID.fullmatch(incoming):
            request_id = incoming.decode()
        else:
            # Not ``secrets``: CPython releases the GIL around getrandom(), and on a busy server
            # the event loop then waited for a worker thread to hand it back (up to the 5 ms
            # switch interval): 12 % of the loop's samples in bench/mix.py at 1,250 users. An
            # ID only ties log lines together; it must be unique, not unguessable. (The module's
            # generator is reseeded in each forked worker.)
            request_id = f"{random.getrandbits(64):016x}"
        log = RequestLog(request_id)
        token = current_request.set(log)
        status = 0
        encoded_id = request_id.encode()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (b"x-request-id", encoded_id)]
            await send(message)

        try:
            if self.proxies:
                self._apply_forwarded(scope, headers)
            for key, _ in headers:
                if key in _BODY_FRAMING:
                    break
            else:
                # Neither framing header: the request has no body (RFC 9112 6.3), so there is
                # nothing to limit or time; ``receive`` goes through unwrapped.
                await self.app(scope, receive, send_with_id)
                return
            error = self._check_declared_length(headers)
            if error is None:
                await self.app(scope, self._guard_body(scope, headers, receive), send_with_id)
            else:
                await error_response(error)(scope, receive, send_with_id)
        except ClientDisconnect:
            # The client went away mid-request: nobody to answer, nothing to report.
            status = status or 499
        except Exception as exc:
            # What escaped the routes' own handling: the body guard's 413 and 408 where a
            # route did not catch them, an outage (503) or a refused write (400) in a page or
            # a file route. Anything else goes on to Starlette's handler and the server.
            answer = error_for(exc, self.outages)
            if isinstance(answer, InternalServerError) or status != 0:
                raise
            await error_response(answer)(scope, receive, send_with_id)
        finally:
            self._record(scope, status or 500, time.perf_counter() - started, log)
            current_request.reset(token)

    # Checks ----------------------------------------------------------------------------------

    def _check_declared_length(self, headers: list[tuple[bytes, bytes]]) -> JsonableError | None:
        length = _header(headers, b"content-length")
        if length is not None and length.isdigit() and int(length) > self._body_limit(headers):
            return RequestBodyTooLargeError(self._body_limit(headers))
        return None

    def _body_limit(self, headers: list[tuple[bytes, bytes]]) -> int:
        content_type = _header(headers, b"content-type") or b""
        if content_type.lower().startswith(b"multipart/form-data"):
            return self.limits.upload_bytes
        return self.limits.body_bytes

    def _guard_body(self, scope: Scope, headers: list[tuple[bytes, bytes]], receive: Receive) -> Receive:
        limit = self._body_limit(headers)
        timeout = self.limits.body_timeout
        received = 0
        complete = False

        async def guarded() -> Message:
            nonlocal received, complete
            if complete:
                return await receive()
            try:
                async with asyncio.timeout(timeout):
                    message = await receive()
            except TimeoutError:
                raise RequestTimeoutError() from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise RequestBodyTooLargeError(limit)
                complete = not message.get("more_body", False)
            return message

        return guarded

    def _apply_forwarded(self, scope: Scope, headers: list[tuple[bytes, bytes]]) -> None:
        """Believe the proxy's headers only when the peer is a trusted proxy.

        The client is the rightmost ``X-Forwarded-For`` address not itself a trusted proxy
        (proxies append; anything left of them is whatever the client claimed).
        """
        client = scope.get("client")
        if not client or not self._trusted(client[0]):
            return
        forwarded_for = _header(headers, b"x-forwarded-for")
        if forwarded_for:
            hops = [hop.strip() for hop in forwarded_for.decode("latin-1").split(",") if hop.strip()]
            for hop in reversed(hops):
                if not self._trusted(hop):
                    scope["client"] = (hop, 0)
                    break
            else:
                scope["client"] = (hops[0], 0)
        proto = _header(headers, b"x-forwarded-proto")
        if proto:
            value = proto.decode("latin-1").split(",")[0].strip().lower()
            if value in ("http", "https"):
                scope["scheme"] = value

    def _trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.proxies)

    # Recording -------------------------------------------------------------------------------

    def _route(self, scope: Scope) -> str:
        template = scope.get(ROUTE_TEMPLATE_KEY)
        if template is not None:
            return str(template)
        # Starlette's router leaves the route it chose in the scope.
        matched = scope.get("route")
        prefix = scope.get("root_path", "")
        if isinstance(matched, Mount):
            # The API's mounts name the route that matched (ROUTE_TEMPLATE_KEY, above); one
            # that got here matched none of its routes.
            return "unmatched"
        path = getattr(matched, "path", None) if isinstance(matched, BaseRoute) else None
        if isinstance(path, str):
            return f"{prefix}{path}"
        # Unmatched paths share one label, so scanners cannot grow the metric without bound.
        return "unmatched"

    def _record(self, scope: Scope, status: int, seconds: float, log: RequestLog) -> None:
        route = self._route(scope)
        method = scope.get("method", "")
        self._metrics.record(method, route, status, seconds)
        millis = round(seconds * 1000, 1)
        level = logging.DEBUG if route in _QUIET_ROUTES else logging.INFO
        threshold = self.settings.slow_request_ms
        slow = bool(threshold) and millis > threshold and route != LONG_POLL_ROUTE
        logged = self.settings.access_log and access_logger.isEnabledFor(level)
        if not (logged or slow):
            # No access line at this level and not slow: no fields to gather.
            return
        client = scope.get("client")
        fields = {
            "method": method,
            "path": scope.get("path", ""),
            "route": route,
            "status": status,
            "duration_ms": millis,
            "user_id": log.user_id,
            "client_ip": client[0] if client else "",
            "request_id": log.request_id,
        }
        if logged:
            access_logger.log(
                level,
                "%s %s %d %.1fms user=%s ip=%s",
                method,
                fields["path"],
                status,
                millis,
                log.user_id if log.user_id is not None else "-",
                fields["client_ip"] or "-",
                extra=fields,
            )
        if slow:
            slow_logger.warning("Slow request: %s %s took %.0f ms", method, route, millis, extra=fields)
