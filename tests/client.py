"""A ``TestClient`` whose requests cost one hop to the app's event loop instead of about nine.

Starlette's ``TestClient`` runs the app on an event loop in a portal thread, as a server
would, and each request crosses from the test's thread to that loop once per step: make two
events, a body stream and a cancel scope, start the app, wait for the response's start, one
more crossing per body chunk and one to finish. Each crossing is a thread hop; together they
were about a fifth of the suite's CPU. This transport keeps the same loop and thread (the
app's background tasks, long-polls and concurrent requests from several test threads behave
as before) but crosses once per request: the app runs to completion on the loop and the
whole response comes back.

What a test sees is the same as with Starlette's transport: the same ASGI scope, the body
received once then ``http.disconnect`` once the response is complete, the app's background
tasks finished before the call returns, a server exception raised in the test (or, with
``raise_server_exceptions=False``, a 500 when nothing was sent). Responses are read whole,
which is what every request of the suite does (none streams). WebSocket requests go through
Starlette's own transport.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import anyio
import httpx
from starlette.testclient import TestClient as StarletteTestClient
from starlette.types import ASGIApp, Message

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass
class _Response:
    """What the app sent, checked in order as Starlette's transport checks it."""

    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: list[bytes] = field(default_factory=list)
    trailers: list[tuple[bytes, bytes]] = field(default_factory=list)
    trailers_expected: bool = False
    debug: dict[str, Any] | None = None
    started: bool = False
    body_complete: bool = False

    def take(self, message: Message) -> bool:
        """Record one message of the app's; whether the response is now complete."""
        kind = message["type"]
        if kind == "http.response.start":
            assert not self.started, 'Received multiple "http.response.start" messages.'
            self.started = True
            self.status = message["status"]
            self.headers = [(k.decode(), v.decode()) for k, v in message.get("headers", [])]
            self.trailers_expected = message.get("trailers", False)
        elif kind == "http.response.body":
            assert self.started, 'Received "http.response.body" without "http.response.start".'
            assert not self.body_complete, 'Received "http.response.body" after body completed.'
            self.body.append(bytes(message.get("body", b"")))
            self.body_complete = not message.get("more_body", False)
            return self.body_complete and not self.trailers_expected
        elif kind == "http.response.trailers":
            assert self.trailers_expected and self.body_complete, 'Unexpected "http.response.trailers".'
            self.trailers.extend(message.get("headers", []))
            return not message.get("more_trailers", False)
        elif kind == "http.response.debug":
            self.debug = message["info"]
        return False


class _OneHopTransport(httpx.BaseTransport):
    def __init__(
        self, client: TestClient, fallback: httpx.BaseTransport, raise_server_exceptions: bool
    ) -> None:
        self.client = client
        self.fallback = fallback
        self.raise_server_exceptions = raise_server_exceptions

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in _DEFAULT_PORTS:
            return self.fallback.handle_request(request)
        headers = [] if "host" in request.headers else [(b"host", url.netloc)]
        headers += [(key.lower().encode(), value.encode()) for key, value in request.headers.multi_items()]
        scope: dict[str, Any] = {
            "type": "http",
            "http_version": "1.1",
            "method": request.method,
            "path": unquote(url.path),
            "raw_path": url.raw_path.split(b"?", 1)[0],
            "root_path": self.client.root_path,
            "scheme": url.scheme,
            "query_string": url.query.decode("ascii").encode(),
            "headers": headers,
            "client": self.client.client_address,
            "server": [url.raw_host.decode("ascii"), url.port or _DEFAULT_PORTS[url.scheme]],
            "extensions": {"http.response.debug": {}, "http.response.trailers": {}},
            "state": self.client.app_state.copy(),
        }
        body = request.read()
        with self.client._portal_factory() as portal:
            response = portal.call(self._run, scope, body)
        raw = httpx.Response(
            response.status,
            headers=response.headers,
            # As Starlette's transport: a HEAD response has no body, whatever the app sent.
            stream=httpx.ByteStream(b"" if request.method == "HEAD" else b"".join(response.body)),
            request=request,
        )
        if response.trailers_expected:
            raw.extensions["http.response.trailers"] = response.trailers
        if response.debug is not None:
            raw.extensions["http.response.debug"] = response.debug
            for name in ("template", "context"):
                if name in response.debug:
                    setattr(raw, name, response.debug[name])
        return raw

    async def _run(self, scope: dict[str, Any], body: bytes) -> _Response:
        response = _Response()
        complete = anyio.Event()
        received = False

        async def receive() -> Message:
            nonlocal received
            if received:
                await complete.wait()
                return {"type": "http.disconnect"}
            received = True
            return {"type": "http.request", "body": body}

        async def send(message: Message) -> None:
            if response.take(message):
                complete.set()

        try:
            await self.client.app(scope, receive, send)
        except Exception:
            if self.raise_server_exceptions:
                raise
            if not response.started:
                return _Response(status=500)
        if not response.started:
            if self.raise_server_exceptions:
                raise AssertionError("TestClient did not receive any response.")
            return _Response(status=500)
        return response


class TestClient(StarletteTestClient):
    """Starlette's client with the one-hop transport for HTTP requests."""

    __test__ = False
    _transport: httpx.BaseTransport

    def __init__(
        self,
        app: ASGIApp,
        base_url: str = "http://testserver",
        raise_server_exceptions: bool = True,
        root_path: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            app,
            base_url=base_url,
            raise_server_exceptions=raise_server_exceptions,
            root_path=root_path,
            **kwargs,
        )
        self.root_path = root_path
        self.client_address = kwargs.get("client", ("testclient", 50000))
        self._transport = _OneHopTransport(self, self._transport, raise_server_exceptions)
