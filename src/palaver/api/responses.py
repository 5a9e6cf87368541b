"""The API's answers: the success and error envelopes, and the one mapping from an exception
to the error a client gets.

Every error answer of the server is ``error_response(error_for(exc, outages))`` or, for an
error the code raised on purpose, ``error_response(error)``: the API application (its
views, an unknown path, a wrong method), Starlette's exception handlers for every other route
(app.py) and the request middleware's own refusals (api/middleware.py). So a status is
decided in one place: ``error_for`` turns a ``JsonableError`` into itself, Starlette's 404 and
405 into ours, an unreachable database or Redis into a 503, a write the database refused into
a 400, and anything else into the 500 envelope.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from sqlalchemy.exc import DataError, IntegrityError
from starlette.exceptions import HTTPException
from starlette.responses import Response

from palaver.lib.dependencies import OutageMonitor
from palaver.lib.exceptions import JsonableError, MethodNotAllowedError, ResourceNotFoundError
from palaver.lib.operational_errors import ConflictingWriteError

logger = logging.getLogger("palaver.api")

JsonDict = dict[str, Any]

_JSON_CONTENT_TYPE = (b"content-type", b"application/json")
# An API answer is one person's data (or an error about their request): no shared cache
# (a proxy, a CDN) may keep it, and the browser may not store it on disk for the next
# person at the same computer. A view that sets its own Cache-Control keeps it.
_NO_STORE = (b"cache-control", b"private, no-store")
_FRAMING = frozenset({b"content-length", b"content-type"})


class JsonResponse(Response):
    """The one response type of JSON answers: Starlette's ``Response`` with the media type
    ``application/json`` and ``Cache-Control: private, no-store`` (tests/api/test_routing.py
    ``test_json_response_is_starlettes`` checks the fields against Starlette's).

    Its header fields are encoded directly rather than by ``Response.init_headers`` (a
    mapping copied and searched, a media type inspected): that is paid by every answer,
    thousands at once when one message wakes the long-polls.
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


def success_response(result: JsonDict, headers: dict[str, str], ignored: list[str]) -> Response:
    """The success envelope around a view's result."""
    body: JsonDict = {"result": "success", "msg": "", **result}
    if ignored:
        body["ignored_parameters_unsupported"] = ignored
    return json_response(body, headers=headers)


def error_response(error: JsonableError, headers: dict[str, str] | None = None) -> Response:
    """The error envelope (``result``, ``msg``, ``code`` and the error's data) at its status."""
    return json_response(error.to_dict(), error.http_status, {**(headers or {}), **error.headers})


class InternalServerError(JsonableError):
    """An exception no code meant to raise: the client learns nothing of it but the status."""

    http_status = 500

    def __init__(self) -> None:
        super().__init__("Internal server error")


def error_for(exc: BaseException, outages: OutageMonitor | None) -> JsonableError:
    """The error a client gets for ``exc``, raised while serving its request.

    Not logged here when it is a 500: the caller that swallows the exception logs it (the API
    application), or lets it go on to the server, which does.
    """
    if isinstance(exc, JsonableError):
        return exc
    if isinstance(exc, HTTPException):
        # Starlette's router and the API application's route table raise these for a path
        # that no route takes, or a method that no route of the path takes.
        if exc.status_code == 404:
            return ResourceNotFoundError()
        if exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            return MethodNotAllowedError([m.strip() for m in allowed.split(",") if m.strip()])
        return JsonableError("Bad request", status=exc.status_code)
    # The database or Redis is unreachable (or a disk is full): the client should retry,
    # not report a bug.
    unavailable = outages.unavailable_error(exc) if outages is not None else None
    if unavailable is not None:
        return unavailable
    if isinstance(exc, IntegrityError):
        # A uniqueness or reference rule the database enforces and the view's own check did
        # not see coming (a concurrent request took the name first): the request conflicts
        # with data, it is no server failure. Logged in full, so a check gets added.
        logger.warning("Database refused a conflicting write", exc_info=exc)
        return ConflictingWriteError()
    if isinstance(exc, DataError):
        # The database refused a value (out of range, too long): input a view did not check.
        logger.warning("Database rejected input", exc_info=exc)
        return JsonableError("Invalid request data")
    return InternalServerError()


def exception_response(exc: Exception, outages: OutageMonitor | None, where: str) -> Response:
    """The answer of a route that catches ``exc`` itself (call from ``except``): its error's
    envelope, a 500 logged with its traceback, since the exception goes no further."""
    error = error_for(exc, outages)
    if isinstance(error, InternalServerError):
        logger.exception("Unhandled error in %s", where)
    return error_response(error)
