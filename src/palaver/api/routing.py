"""Endpoint registration and the request pipeline shared by every API view.

A request goes: read the body (async) -> one worker-thread hop -> authenticate -> rate
limit -> parse parameters -> call the view -> render the envelope. Views are plain sync
functions of ``(ctx, **params)`` returning a dict of extra success fields.
"""

from __future__ import annotations

import base64
import binascii
import inspect
import logging
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl

import orjson
from pydantic_core import from_json
from sqlalchemy import bindparam, select
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import Response

from palaver.api.context import Ctx
from palaver.api.multipart import read_multipart
from palaver.api.params import ParamSpec, RawParams, build_param_specs, parse_params
from palaver.db.transaction import set_actor
from palaver.lib.exceptions import (
    JsonableError,
    MethodNotAllowedError,
    RealmDeactivatedError,
    UnauthorizedError,
    UserDeactivatedError,
)
from palaver.lib.logs import note_user
from palaver.lib.operational_errors import ConflictingWriteError
from palaver.lib.passwords import has_api_key_format
from palaver.lib.rate_limit import raise_if_limited
from palaver.lib.realm import get_realm_by_string_id, subdomain_for_host
from palaver.lib.realm_cache import realm_settings
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.services import Services
from palaver.web.sessions import WebCredentials, authenticate_web, web_credentials

logger = logging.getLogger("palaver.api")

JsonDict = dict[str, Any]
AuthPolicy = Literal["required", "optional", "none"]
View = Callable[..., Any]  # sync views return JsonDict | Response; async views await to one

_PATH_PARAM = re.compile(r"{(\w+)(?::\w+)?}")


@dataclass
class Endpoint:
    method: str
    path: str
    view: View
    auth: AuthPolicy
    rate_limited: bool
    specs: list[ParamSpec] = field(default_factory=list)
    # Decided once at registration, not per request.
    is_async: bool = field(init=False)
    _params: _ParamIndex = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.is_async = inspect.iscoroutinefunction(self.view)
        self._params = _ParamIndex(self.specs)

    def parse(self, raw: RawParams) -> tuple[dict[str, Any], list[str]]:
        """``parse_params`` of the view's parameters, with the same result and errors."""
        return self._params.parse(self.specs, raw)


class _ParamIndex:
    """Which of an endpoint's parameters a request names, so ``parse_params`` only walks those.

    GET /events declares thirteen parameters (the POST /register ones) and a poll sends
    two; ``parse_params`` looks every name up in the request for each. A parameter the
    request does not name contributes its default and no used name, so parsing only the
    named ones (and those in the path or taking files, which always parse) over the same
    values gives the same arguments, ignored names and first error. A missing required
    parameter is an error whose order matters: then the full walk runs.
    """

    __slots__ = ("_always", "_by_name", "_defaults", "_required")

    def __init__(self, specs: list[ParamSpec]) -> None:
        self._always = frozenset(i for i, s in enumerate(specs) if s.in_path or s.is_file)
        self._required = frozenset(i for i, s in enumerate(specs) if s.required and i not in self._always)
        self._by_name: dict[str, tuple[int, ...]] = {}
        for i, spec in enumerate(specs):
            if i not in self._always:
                for name in spec.names:
                    self._by_name[name] = (*self._by_name.get(name, ()), i)
        # In the specs' order, as ``parse_params`` fills them; parsed values replace them.
        self._defaults = {spec.arg_name: spec.default for spec in specs}

    def parse(self, specs: list[ParamSpec], raw: RawParams) -> tuple[dict[str, Any], list[str]]:
        named = set(self._always)
        for name in raw.values:
            named.update(self._by_name.get(name, ()))
        if not self._required <= named:
            return parse_params(specs, raw)
        parsed, ignored = parse_params([specs[i] for i in sorted(named)], raw)
        kwargs = self._defaults.copy()
        kwargs.update(parsed)
        return kwargs, ignored


class ApiRouter:
    """Collects a module's endpoints; ``create_app`` mounts them under /api/v1."""

    def __init__(self) -> None:
        self.endpoints: list[Endpoint] = []

    def route(
        self, method: str, path: str, *, auth: AuthPolicy = "required", rate_limited: bool = True
    ) -> Callable[[View], View]:
        def register(view: View) -> View:
            specs = build_param_specs(view, set(_PATH_PARAM.findall(path)))
            self.endpoints.append(Endpoint(method, path, view, auth, rate_limited, specs))
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


_JSON_CONTENT_TYPE = (b"content-type", b"application/json")
# An API answer is one person's data (or an error about their request): no shared cache
# (a proxy, a CDN) may keep it, and the browser may not store it on disk for the next
# person at the same computer. A view that sets its own Cache-Control keeps it.
_NO_STORE = (b"cache-control", b"private, no-store")
_FRAMING = frozenset({b"content-length", b"content-type"})


class JsonResponse(Response):
    """Starlette's ``Response`` for a JSON body, its header fields encoded directly.

    The same fields in the same order as ``Response(..., media_type="application/json")``
    gives, without its general handling (a mapping copied and searched, a media type
    inspected) in every answer, thousands at once when one message wakes the long-polls.
    """

    media_type = "application/json"

    def __init__(self, body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.background = None
        self.body = body
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        cached = any(name == b"cache-control" for name, _ in raw)
        if any(name in _FRAMING for name, _ in raw):
            self.init_headers(headers)  # the caller set framing itself: Starlette's rules
            if not cached:
                self.raw_headers.append(_NO_STORE)
            return
        if not (status < 200 or status in (204, 304)):
            raw.append((b"content-length", str(len(body)).encode("latin-1")))
        raw.append(_JSON_CONTENT_TYPE)
        if not cached:
            raw.append(_NO_STORE)
        self.raw_headers = raw


def json_response(body: JsonDict, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JsonResponse(orjson.dumps(body), status, headers)


def error_response(error: JsonableError, headers: dict[str, str] | None = None) -> Response:
    return json_response(error.to_dict(), error.http_status, {**(headers or {}), **error.headers})


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


async def read_request_params(request: Request) -> RawParams:
    """Gather query-string and body parameters; the body wins where both name one."""
    values = query_values(request.scope.get("query_string", b""))
    files: dict[str, UploadFile] = {}
    try:
        headers = request.headers
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == "multipart/form-data":
            form = await read_multipart(request)
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    files[key] = value
                else:
                    values[key] = value
        # HTTP/1.1 framing: without either header there is no body (a GET, mostly) to wait for.
        elif "content-length" in headers or "transfer-encoding" in headers:
            body = await request.body()
            if content_type == "application/json" and body:
                values.update(_json_object(body))
            elif body:
                values.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict"))
    # Starlette reports a broken multipart body as an HTTPException of its own.
    except (UnicodeDecodeError, ValueError, MultiPartException, HTTPException, KeyError, AssertionError):
        raise JsonableError("Malformed request body") from None
    return RawParams(values=values, files=files, path=dict(request.path_params))


def _credentials(header: str) -> tuple[str, str]:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        raise UnauthorizedError("This endpoint requires HTTP basic authentication.")
    try:
        email, sep, api_key = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise UnauthorizedError("Invalid authorization header for basic auth") from None
    if not sep:
        raise UnauthorizedError("Invalid authorization header for basic auth")
    return email, api_key


# Built once: constructing the statement costs more per request than running its cached
# compiled form does.
_USER_BY_API_KEY = select(UserProfile).where(UserProfile.api_key == bindparam("api_key"))


def authenticate(
    session: Session, services: Services, auth: AuthPolicy, host: str, header: str | None
) -> tuple[Requester | None, int | None]:
    """Who sends the request (None: anonymous) and the ID of the organization it is for
    (None: the host names none, which only ``auth="none"``/``"optional"`` allow)."""
    string_id = subdomain_for_host(services.settings, host)
    if auth == "none":
        # Views that need no login (server settings, fetching a key) judge the realm's state.
        realm = get_realm_by_string_id(session, string_id)
        return None, None if realm is None else realm.id
    if auth == "optional" and not header:
        realm = get_realm_by_string_id(session, string_id)
        if realm is not None and realm.deactivated:
            # Anonymous (spectator) access must not outlive the organization.
            raise RealmDeactivatedError()
        return None, None if realm is None else realm.id
    if not header:
        raise UnauthorizedError()
    email, api_key = _credentials(header)
    # As Zulip's server answers HTTP Basic credentials: 401 UNAUTHORIZED, "Malformed API
    # key" for what cannot be a key (checked before any query: PostgreSQL refuses even to
    # compare with a NUL), "Invalid API key" for a key that opens no account or another's.
    api_key = api_key.strip()
    if not has_api_key_format(api_key):
        raise UnauthorizedError("Malformed API key")
    # One indexed lookup by key; the email must then name the same account. The row stays
    # in the session, so a view's ``ctx.me`` loads nothing more.
    user = session.scalars(_USER_BY_API_KEY, {"api_key": api_key}).one_or_none()
    if user is None or email.strip().lower() not in (user.email.lower(), user.delivery_email.lower()):
        raise UnauthorizedError("Invalid API key")
    # The realm's row from this process's cache (every change to it drops the cached one).
    cached = realm_settings(session, user.realm_id)
    if cached.string_id != string_id:
        raise UnauthorizedError("Account is not associated with this subdomain")
    if cached.deactivated:
        raise RealmDeactivatedError()
    if not user.is_active:
        raise UserDeactivatedError()
    return Requester.of(user), user.realm_id


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
        e.headers = {**headers, **e.headers}
        raise
    return kwargs, ignored, headers


def _prepare(
    session: Session, services: Services, endpoint: Endpoint, info: RequestInfo, raw: RawParams
) -> Prepared:
    if info.web is not None:
        requester, realm_id = authenticate_web(session, services, endpoint.auth, info.host, info.web)
    else:
        requester, realm_id = authenticate(session, services, endpoint.auth, info.host, info.authorization)
    return _admitted(session, services, endpoint, info, raw, requester, realm_id)


def _prepare_known(
    session: Session,
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    requester: Requester,
) -> Prepared:
    """``_prepare`` for a request by known credentials: no authentication query."""
    return _admitted(session, services, endpoint, info, raw, requester, requester.realm_id)


def _admitted(
    session: Session,
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    requester: Requester | None,
    realm_id: int | None,
) -> Prepared:
    user_id = None if requester is None else requester.user_id
    if user_id is not None:
        # Its writes fence this user's reads off the read replica for a while (db.read_session).
        set_actor(session, user_id)
    kwargs, ignored, headers = admit(services, endpoint, user_id, info.client_ip, raw)
    ctx = Ctx(services, session, requester, realm_id, info.client_ip, info.user_agent)
    return Prepared(ctx, kwargs, ignored, headers)


def render(result: JsonDict | Response, headers: dict[str, str], ignored: list[str]) -> Response:
    """The response to a view's result: the success envelope, or the view's own Response."""
    if isinstance(result, Response):
        for name, value in headers.items():
            result.headers.setdefault(name, value)
        return result
    body: JsonDict = {"result": "success", "msg": "", **result}
    if ignored:
        body["ignored_parameters_unsupported"] = ignored
    return json_response(body, headers=headers)


def internal_error_response() -> Response:
    return json_response(
        {"result": "error", "msg": "Internal server error", "code": "BAD_REQUEST"}, status=500
    )


def internal_error(
    endpoint: Endpoint, session: Session | None = None, services: Services | None = None
) -> Response:
    """The response to an exception no view meant to raise (call from ``except``)."""
    if session is not None:
        _end(session, session.rollback)
    error = sys.exc_info()[1]
    if services is not None and services.outages is not None and error is not None:
        # The database or Redis is unreachable: the client should retry, not report a bug.
        unavailable = services.outages.unavailable_error(error)
        if unavailable is not None:
            return error_response(unavailable)
    if isinstance(error, IntegrityError):
        # A uniqueness or reference rule the database enforces and the view's own check did
        # not see coming (a concurrent request took the name first): the request conflicts
        # with data, it is no server failure. Logged in full, as above, so a check gets added.
        logger.warning(
            "Database refused a conflicting write in %s %s", endpoint.method, endpoint.path, exc_info=True
        )
        return error_response(ConflictingWriteError())
    if isinstance(error, DataError):
        # The database refused a value (out of range, too long): input a view did not check.
        # Logged in full so the check gets added, but it is the client's request that failed.
        logger.warning("Database rejected input in %s %s", endpoint.method, endpoint.path, exc_info=True)
        return error_response(JsonableError("Invalid request data"))
    logger.exception("Unhandled error in %s %s", endpoint.method, endpoint.path)
    return internal_error_response()


def _end(session: Session, end: Callable[[], None]) -> None:
    """Roll back or close a request's session; a connection the database dropped is discarded.

    Both roll back, and a rollback on a connection the server terminated raises. The
    request's answer is decided by then (an error, or a long poll about to park), so the
    dead connection is only thrown away; the pool's pre-ping replaces it.
    """
    try:
        end()
    except Exception:
        session.invalidate()


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


def execute(
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    memory: CredentialMemory | None = None,
) -> Response:
    """Everything after the body is read; runs on a worker thread (it does blocking I/O)."""
    session = services.db.session()
    prepared: Prepared | None = None
    try:
        known = None if memory is None or endpoint.auth == "none" else memory.requester(info)
        if known is not None:
            prepared = _prepare_known(session, services, endpoint, info, raw, known)
        else:
            observer = None if memory is None or endpoint.auth == "none" else memory.recorder(info)
            if observer is not None:
                observer.before(session)
            prepared = _prepare(session, services, endpoint, info, raw)
            if observer is not None:
                observer.after(prepared)
        return render(endpoint.view(prepared.ctx, **prepared.kwargs), prepared.headers, prepared.ignored)
    except JsonableError as e:
        return error_response(e, prepared.headers if prepared else None)
    except Exception:
        return internal_error(endpoint, session, services)
    finally:
        _end(session, session.close)


def prepare_for_async_view(
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    observer: PrepareObserver | None = None,
) -> Prepared | Response:
    """The blocking half of an async view's request, run on a worker thread.

    The session is closed before the view runs on the event loop: async views (long
    polls) must not hold a database connection while they wait: they read ``ctx.requester``.
    """
    session = services.db.session()
    try:
        if observer is not None:
            observer.before(session)
        return _prepare(session, services, endpoint, info, raw)
    except JsonableError as e:
        return error_response(e)
    except Exception:
        return internal_error(endpoint, session, services)
    finally:
        _end(session, session.close)


async def execute_async(
    services: Services,
    endpoint: Endpoint,
    info: RequestInfo,
    raw: RawParams,
    observer: PrepareObserver | None = None,
) -> Response:
    prepared = await run_in_threadpool(prepare_for_async_view, services, endpoint, info, raw, observer)
    # An async view may wait long (a parked long-poll, thousands at once): from here on this
    # frame keeps only what rendering needs; the view's coroutine holds the rest.
    del info, raw
    if isinstance(prepared, Response):
        return prepared
    if observer is not None:
        observer.after(prepared)
        del observer
    headers, ignored = prepared.headers, prepared.ignored
    try:
        pending = endpoint.view(prepared.ctx, **prepared.kwargs)
        del prepared
        return render(await pending, headers, ignored)
    except JsonableError as e:
        return error_response(e, headers)
    except Exception:
        return internal_error(endpoint, services=services)


def web_challenge(response: Response) -> None:
    """Adapt a response of a /json endpoint: the browser authenticates by session cookie."""
    if "www-authenticate" in response.headers:
        # A Basic challenge would make the browser pop up its own password dialog.
        response.headers["WWW-Authenticate"] = "Session"


def make_path_handler(
    services: Services,
    endpoints: dict[str, Endpoint],
    *,
    web: bool = False,
    memory: CredentialMemory | None = None,
) -> Callable[[Request], Any]:
    """One Starlette endpoint per path, dispatching on method so 405s stay in our envelope.

    ``web``: the path is served under /json, authenticated by the session cookie.
    ``memory``: credentials known to belong to a user, for sync views.
    """
    allowed = sorted(endpoints)

    async def handle(request: Request) -> Response:
        response = await _handle(request)
        if web:
            web_challenge(response)
        return response

    async def _handle(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        endpoint = endpoints.get(method)
        if endpoint is None:
            return error_response(MethodNotAllowedError(allowed))
        try:
            raw = await read_request_params(request)
            info = RequestInfo(
                host=request.headers.get("host", ""),
                authorization=request.headers.get("authorization"),
                client_ip=request.client.host if request.client else "",
                user_agent=request.headers.get("user-agent", ""),
                web=web_credentials(request) if web else None,
            )
            if endpoint.is_async:
                return await execute_async(services, endpoint, info, raw)
            return await run_in_threadpool(execute, services, endpoint, info, raw, memory)
        except JsonableError as e:
            return error_response(e)
        finally:
            # Uploads spool to temporary files, which Starlette leaves to us to close.
            await request.close()

    return handle
