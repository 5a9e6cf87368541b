"""The API application: every request to /api/v1 and /json, from its route to its answer.

``ApiApp`` is a plain ASGI application, mounted by the composition root (app.py) inside
Starlette's middleware stack. A request goes:

    match the route table (404 / 405)  ->  read the query and body  ->
    sync view:  one worker-thread hop: authenticate -> rate limit -> parse -> view
    async view: authenticate on a worker thread (its session closed after), then on the loop
                rate limit -> parse -> view; by known credentials, the view's ``known_view``
                on the loop without the database (GET /events: a poll)
    ->  render the envelope

Views are plain functions of ``(ctx, **params)`` returning a dict of extra success fields.
Every exception raised on the way becomes its answer in one place, ``ApiApp.__call__``,
through ``responses.error_for``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl

from pydantic_core import from_json
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from palaver.api.authentication import authenticate
from palaver.api.context import Ctx
from palaver.api.multipart import read_multipart
from palaver.api.params import RawParams
from palaver.api.responses import JsonDict, exception_response, success_response
from palaver.api.routing import Endpoint, RouteTable
from palaver.db.transaction import set_actor
from palaver.lib.exceptions import JsonableError
from palaver.lib.logs import note_user
from palaver.lib.rate_limit import MemoryRateLimiter, NoRateLimiter, raise_if_limited
from palaver.models.requester import Requester
from palaver.services import Services
from palaver.web.sessions import WebCredentials, authenticate_web, web_credentials

# Where the API application leaves the template of the route that matched (its mount's
# prefix included); the request middleware labels the request's metrics and log line by it.
ROUTE_TEMPLATE_KEY = "palaver.route"


@dataclass(frozen=True)
class RequestInfo:
    host: str
    authorization: str | None
    client_ip: str
    user_agent: str
    # Set for /json requests, which authenticate with the session cookie instead.
    web: WebCredentials | None = None


@dataclass
class Prepared:
    """An authenticated, rate-limited request with validated parameters."""

    ctx: Ctx
    kwargs: dict[str, Any]
    ignored: list[str]
    headers: dict[str, str]


class PrepareObserver(Protocol):
    """Watches a request being authenticated in full (api/known_credentials.py)."""

    def before(self, session: Session) -> None:
        """On the worker thread, before authentication reads the database."""

    def after(self, prepared: Prepared) -> None:
        """Once the request is authenticated, before the view runs."""


class CredentialMemory(Protocol):
    """Credentials known to belong to a user (api/known_credentials.py)."""

    def requester(self, info: RequestInfo) -> Requester | None:
        """Who sent ``info`` when its credentials are known, else None."""

    def recorder(self, info: RequestInfo) -> PrepareObserver | None:
        """What remembers the outcome of authenticating ``info`` in full, if anything can."""


# -- Reading the request ------------------------------------------------------------------------


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        # Parsed as parameter values are (big integers stay exact, no NaN), not with orjson.
        decoded = from_json(body, allow_inf_nan=False)
    except ValueError:
        raise JsonableError("Malformed JSON body", code="INVALID_JSON") from None
    if not isinstance(decoded, dict):
        raise JsonableError("Malformed JSON body: expected an object", code="INVALID_JSON")
    return decoded


_URL_NOISE = str.maketrans("", "", "\t\r\n")


def _url_query(query_string: bytes) -> str:
    """``request.url.query``, without building the whole URL (Starlette decodes the bytes as
    UTF-8; ``urlsplit`` drops tabs and line breaks and leaves a fragment out)."""
    text = query_string.decode()
    if "\t" in text or "\r" in text or "\n" in text:
        text = text.translate(_URL_NOISE)
    return text.partition("#")[0] if "#" in text else text


def query_values(query_string: bytes) -> dict[str, Any]:
    """The query string's parameters (the last of a repeated name wins)."""
    if not query_string:
        return {}
    try:
        text = _url_query(query_string)
        if "%" in text or "+" in text:
            return dict(parse_qsl(text, keep_blank_values=True, errors="strict"))
    except (UnicodeDecodeError, ValueError):
        raise JsonableError("Malformed request body") from None
    # Nothing to unquote (a long-poll's query, mostly): what parse_qsl gives, without its
    # per-field unquoting and checks.
    values: dict[str, Any] = {}
    for pair in text.split("&"):
        if pair:
            name, _, value = pair.partition("=")
            values[name] = value
    return values


# Headers that announce a body (HTTP/1.1 framing): without either there is none to wait for.
_FRAMING = (b"content-length", b"transfer-encoding")


async def read_request(
    scope: Scope, receive: Receive, web: bool
) -> tuple[RequestInfo, RawParams, Request | None]:
    """Who is asking and the query-string and body parameters (the body wins where both name
    one); and the ``Request`` that read a body, to be closed once answered (uploads spool to
    temporary files). The headers are read from the scope in one pass: a request without a
    body (a GET, a long-poll) needs no ``Request`` at all."""
    host = authorization = user_agent = content_type = None
    body = False
    # As Starlette's ``Headers.get``: the first field of each name, decoded as Latin-1.
    for key, value in scope["headers"]:
        if key == b"host":
            host = value if host is None else host
        elif key == b"authorization":
            authorization = value if authorization is None else authorization
        elif key == b"user-agent":
            user_agent = value if user_agent is None else user_agent
        elif key == b"content-type":
            content_type = value if content_type is None else content_type
        elif key in _FRAMING:
            body = True
    values = query_values(scope.get("query_string", b""))
    files: dict[str, UploadFile] = {}
    request = Request(scope, receive) if body or web else None
    kind = content_type.decode("latin-1").split(";")[0].strip().lower() if content_type else ""
    try:
        if request is not None and kind == "multipart/form-data":
            form = await read_multipart(request)
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    files[key] = value
                else:
                    values[key] = value
        elif request is not None and body:
            data = await request.body()
            if kind == "application/json" and data:
                values.update(_json_object(data))
            elif data:
                values.update(parse_qsl(data.decode("utf-8"), keep_blank_values=True, errors="strict"))
    # Starlette reports a broken multipart body as an HTTPException of its own.
    except (UnicodeDecodeError, ValueError, MultiPartException, HTTPException, KeyError, AssertionError):
        raise JsonableError("Malformed request body") from None
    client = scope.get("client")
    info = RequestInfo(
        host=host.decode("latin-1") if host is not None else "",
        authorization=authorization.decode("latin-1") if authorization is not None else None,
        client_ip=client[0] if client else "",
        user_agent=user_agent.decode("latin-1") if user_agent is not None else "",
        web=web_credentials(request) if request is not None and web else None,
    )
    raw = RawParams(values=values, files=files, path=scope["path_params"])
    return info, raw, request if body else None


# -- Authentication, rate limit and parameters --------------------------------------------------


def _rate_limit(services: Services, user_id: int | None, client_ip: str) -> dict[str, str]:
    """Count a request against its user's (or, anonymous, its address's) API limit; the
    rate-limit headers of its answer, or RateLimitedError."""
    rule = services.settings.api_rate_limit
    key = f"user:{user_id}" if user_id is not None else f"ip:{client_ip}"
    result = services.rate_limiter.hit(key, rule)
    raise_if_limited(result, "api")
    return {
        "X-RateLimit-Limit": str(result.limit),
        "X-RateLimit-Remaining": str(result.remaining),
        "X-RateLimit-Reset": str(int(result.reset_at)),
    }


def _carrying(headers: dict[str, str], error: JsonableError) -> JsonableError:
    """``error`` with the rate-limit headers its answer carries too."""
    error.headers = {**headers, **error.headers}
    return error


def admit(
    services: Services, endpoint: Endpoint, user_id: int | None, client_ip: str, raw: RawParams
) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    """What follows authentication: the access log's user, the rate limit and the parameters.
    Returns the view's keyword arguments, the ignored parameter names and the rate-limit headers
    (which an error raised here carries too)."""
    if user_id is not None:
        note_user(user_id)
    headers = _rate_limit(services, user_id, client_ip) if endpoint.rate_limited else {}
    try:
        kwargs, ignored = endpoint.parse(raw)
    except JsonableError as e:
        raise _carrying(headers, e) from None
    return kwargs, ignored, headers


def prepare(
    session: Session,
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    known: Requester | None = None,
) -> Prepared:
    """Authenticate (by ``known`` when the credentials are known: no query), then admit."""
    if known is not None:
        requester: Requester | None = known
        realm_id: int | None = known.realm_id
    elif info.web is not None:
        requester, realm_id = authenticate_web(session, services, endpoint.auth, info.host, info.web)
    else:
        requester, realm_id = authenticate(session, services, endpoint.auth, info.host, info.authorization)
    user_id = None if requester is None else requester.user_id
    if user_id is not None:
        # Its writes fence this user's reads off the read replica for a while (db.read_session).
        set_actor(session, user_id)
    kwargs, ignored, headers = admit(services, endpoint, user_id, info.client_ip, raw)
    ctx = Ctx(services, session, requester, realm_id, info.client_ip, info.user_agent)
    return Prepared(ctx, kwargs, ignored, headers)


def _end(session: Session, end: Callable[[], None]) -> None:
    """Close a request's session; a connection the database dropped is discarded.

    Closing rolls back, and a rollback on a connection the server terminated raises. The
    request's answer is decided by then (an error, or a long poll about to park), so the
    dead connection is only thrown away; the pool's pre-ping replaces it.
    """
    try:
        end()
    except Exception:
        session.invalidate()


def render(result: JsonDict | Response, headers: dict[str, str], ignored: list[str]) -> Response:
    """The response to a view's result: the success envelope, or the view's own Response."""
    if isinstance(result, Response):
        for name, value in headers.items():
            result.headers.setdefault(name, value)
        return result
    return success_response(result, headers, ignored)


# -- Running the view ---------------------------------------------------------------------------


def execute(
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    memory: CredentialMemory | None = None,
) -> Response:
    """A sync view's request after its body is read; runs on a worker thread (blocking I/O)."""
    session = services.db.session()
    try:
        known = None if memory is None or endpoint.auth == "none" else memory.requester(info)
        observer = None
        if known is None and memory is not None and endpoint.auth != "none":
            observer = memory.recorder(info)
            if observer is not None:
                observer.before(session)
        prepared = prepare(session, services, endpoint, info, raw, known)
        if observer is not None:
            observer.after(prepared)
        try:
            result = endpoint.view(prepared.ctx, **prepared.kwargs)
        except JsonableError as e:
            raise _carrying(prepared.headers, e) from None
        return render(result, prepared.headers, prepared.ignored)
    finally:
        _end(session, session.close)


def prepare_for_async_view(
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    observer: PrepareObserver | None = None,
) -> Prepared:
    """The blocking half of an async view's request, run on a worker thread.

    The session is closed before the view runs on the event loop: async views (long
    polls) must not hold a database connection while they wait: they read ``ctx.requester``.
    """
    session = services.db.session()
    try:
        if observer is not None:
            observer.before(session)
        prepared = prepare(session, services, endpoint, info, raw)
        if observer is not None:
            observer.after(prepared)
        return prepared
    finally:
        _end(session, session.close)


async def execute_async(
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    memory: CredentialMemory | None = None,
) -> Response:
    """An async view's request. An async view may wait long (a parked long-poll, thousands
    at once): each frame keeps only what rendering needs; the view's coroutine holds the rest."""
    known = None
    if memory is not None and endpoint.known_view is not None and endpoint.known_when in raw.values:
        known = memory.requester(info)
    if known is not None:
        return await _known_async(services, endpoint, known, info.client_ip, raw)
    observer = memory.recorder(info) if memory is not None and endpoint.auth != "none" else None
    pending = await run_in_threadpool(prepare_for_async_view, services, endpoint, info, raw, observer)
    del info, raw, observer
    headers, ignored = pending.headers, pending.ignored
    result = endpoint.view(pending.ctx, **pending.kwargs)
    del pending
    try:
        return render(await result, headers, ignored)
    except JsonableError as e:
        raise _carrying(headers, e) from None


async def _known_async(
    services: Services, endpoint: Endpoint, requester: Requester, client_ip: str, raw: RawParams
) -> Response:
    """A request by known credentials to an async view with a ``known_view``: admitted and
    served on the loop, with no worker thread, no session and no database (the view takes
    the ``Requester`` in place of a ``Ctx``)."""
    user_id = requester.user_id
    if isinstance(services.rate_limiter, MemoryRateLimiter | NoRateLimiter):
        kwargs, ignored, headers = admit(services, endpoint, user_id, client_ip, raw)
    else:
        # Redis counts the rate limit: a round trip, not to be waited for on the loop.
        kwargs, ignored, headers = await run_in_threadpool(admit, services, endpoint, user_id, client_ip, raw)
    assert endpoint.known_view is not None
    del raw
    result = endpoint.known_view(services, requester, **kwargs)
    del kwargs
    try:
        return render(await result, headers, ignored)
    except JsonableError as e:
        raise _carrying(headers, e) from None


def web_challenge(response: Response) -> None:
    """Adapt a response of a /json endpoint: the browser authenticates by session cookie."""
    if "www-authenticate" in response.headers:
        # A Basic challenge would make the browser pop up its own password dialog.
        response.headers["WWW-Authenticate"] = "Session"


class ApiApp:
    """The API's endpoints under one prefix, as an ASGI application.

    ``web``: the prefix is the browser's (/json), authenticated by the session cookie.
    ``memory``: credentials known to belong to a user (api/known_credentials.py).
    ``fallback``: what serves the paths under the prefix that no endpoint's route fits; it
    raises Starlette's 404 for those it does not take either.
    """

    def __init__(
        self,
        services: Services,
        table: RouteTable,
        prefix: str,
        *,
        web: bool = False,
        memory: CredentialMemory | None = None,
        fallback: ASGIApp | None = None,
    ) -> None:
        self.services = services
        self.table = table
        self.prefix = prefix
        self.web = web
        self.memory = memory
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise HTTPException(404)
        method = scope["method"]
        # The path under the mount: Starlette's Mount extends ``root_path`` by its prefix.
        path: str = scope["path"][len(scope.get("root_path", "")) :]
        reading: list[Request] = []
        try:
            found = self.table.match(method, path)
            if isinstance(found, list):
                if not found and self.fallback is not None:
                    # Not an endpoint's path: the other routes under the prefix (app.py).
                    await self.fallback(scope, receive, send)
                    return
                # Answered as Starlette's router answers a path or method of no route.
                if found:
                    raise HTTPException(405, headers={"Allow": ", ".join(found)})
                raise HTTPException(404)
            route, endpoint, scope["path_params"] = found
            del found
            scope[ROUTE_TEMPLATE_KEY] = self.prefix + route.path
            # Passed on, not kept in this frame: a parked poll holds only what its view keeps.
            response = await self._answer(endpoint, reading, *await read_request(scope, receive, self.web))
        except ClientDisconnect:
            # The client went away mid-body: nobody to answer; the request middleware logs
            # it as such (499), not as a server error.
            raise
        except Exception as exc:
            where = f"{method} {scope.get(ROUTE_TEMPLATE_KEY, path)}"
            response = exception_response(exc, self.services.outages, where)
        finally:
            for request in reading:
                await request.close()
        if self.web:
            web_challenge(response)
        await response(scope, receive, send)

    def _answer(
        self,
        endpoint: Endpoint,
        reading: list[Request],
        info: RequestInfo,
        raw: RawParams,
        request: Request | None,
    ) -> Coroutine[Any, Any, Response]:
        # Not async: this frame (and what it refers to) ends before an async view waits.
        if request is not None:
            reading.append(request)
        if endpoint.is_async:
            return execute_async(self.services, endpoint, info, raw, self.memory)
        return run_in_threadpool(execute, self.services, endpoint, info, raw, self.memory)
