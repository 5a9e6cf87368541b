"""``palaver serve``'s uvicorn options on a real socket: within the limits the bytes are plain
uvicorn's; past the head limits the answer is a 408 or 431 and the connection closes.

Each server here is ``uvicorn.Server`` started in this process on 127.0.0.1, once with the
options ``palaver serve`` passes (``serving.uvicorn_options``: the guarded protocol, the
eager-accept loop) and once with uvicorn's plain ``httptools`` and ``uvloop``. An uvicorn
upgrade that moves the parser callbacks the guard extends, or changes what it answers, fails
here (and in ``tests/e2e/test_limits_e2e.py``, against ``palaver serve`` itself).
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import uvicorn

from palaver.config import Settings
from palaver.serving import uvicorn_options
from tests.conftest import make_test_settings

HEADER_TIMEOUT = 0.5


async def echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers with what it was asked and what body it read; streams when asked to."""
    assert scope["type"] == "http"
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    answer = orjson.dumps(
        {
            "method": scope["method"],
            "path": scope["path"],
            "query": scope["query_string"].decode(),
            "body": body.decode(),
        }
    )
    if scope["path"] == "/stream":
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": b"one,", "more_body": True})
        await send({"type": "http.response.body", "body": b"two"})
        return
    status = 404 if scope["path"] == "/missing" else 200
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def _settings(tmp_path: Path) -> Settings:
    return make_test_settings(
        f"sqlite:///{tmp_path / 'unused.db'}",
        tmp_path,
        max_request_header_kib=4,
        max_request_headers=20,
        request_header_timeout_seconds=HEADER_TIMEOUT,
        keep_alive_timeout_seconds=5,
    )


@contextlib.contextmanager
def running(**options: Any) -> Iterator[int]:
    """``uvicorn.Server`` with ``options`` on a free loopback port, in a thread; yields the port."""
    options.update(
        host="127.0.0.1", port=0, lifespan="off", ws="none", date_header=False, log_level="warning"
    )
    server = uvicorn.Server(uvicorn.Config(echo, **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def palaver_port(tmp_path: Path) -> Iterator[int]:
    with running(**uvicorn_options(_settings(tmp_path))) as port:
        yield port


@pytest.fixture
def plain_port() -> Iterator[int]:
    with running(http="httptools", loop="uvloop") as port:
        yield port


def exchange(port: int, *parts: bytes, pause: float = 0, wait: float = 3) -> tuple[bytes, bool]:
    """Send ``parts`` (``pause`` seconds apart); what came back, and whether the server closed."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for i, part in enumerate(parts):
            if i and pause:
                time.sleep(pause)
            with contextlib.suppress(OSError):
                sock.sendall(part)
        sock.settimeout(wait)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            return received, False
        except ConnectionResetError:
            pass
        return received, True


REQUESTS = [
    b"GET /users/me?x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    b"GET /missing HTTP/1.0\r\nHost: a\r\n\r\n",
    b"HEAD /users/me HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    b"POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\nConnection: close\r\n\r\na=1&b=2",
    b"POST /chunks HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    b"POST /continue HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n"
    b"Connection: close\r\n\r\nok",
    b"GET /stream HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    # Two requests in one write (pipelined), then a third on the same connection.
    b"GET /first HTTP/1.1\r\nHost: a\r\n\r\nGET /second HTTP/1.1\r\nHost: a\r\n\r\n"
    b"GET /third HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    # A head just within both limits (4 KiB, 20 fields).
    b"GET /big HTTP/1.1\r\nHost: a\r\n"
    + b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 150) for i in range(18))
    + b"Connection: close\r\n\r\n",
    # Malformed: uvicorn's own 400.
    b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
]


@pytest.mark.parametrize("request_bytes", REQUESTS, ids=range(len(REQUESTS)))
def test_within_the_limits_the_bytes_are_plain_uvicorns(
    palaver_port: int, plain_port: int, request_bytes: bytes
) -> None:
    ours, ours_closed = exchange(palaver_port, request_bytes)
    theirs, theirs_closed = exchange(plain_port, request_bytes)
    assert ours.startswith(b"HTTP/1.1 ")
    assert (ours, ours_closed) == (theirs, theirs_closed)


def _envelope(answer: bytes) -> dict[str, Any]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    assert re.search(rb"content-type: application/json", head)
    parsed: dict[str, Any] = orjson.loads(body)
    return parsed


def test_an_oversized_head_is_431_and_closed(palaver_port: int) -> None:
    answer, closed = exchange(
        palaver_port, b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 5000 + b"\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n") and closed
    assert _envelope(answer) == {
        "result": "error",
        "msg": "Request header fields too large",
        "code": "BAD_REQUEST",
    }
    # A long URL counts toward the head too.
    answer, closed = exchange(palaver_port, b"GET /" + b"u" * 5000 + b" HTTP/1.1\r\nHost: a\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431") and closed


def test_too_many_header_fields_is_431_and_closed(palaver_port: int) -> None:
    fields = b"".join(b"X-F%d: 1\r\n" % i for i in range(25))
    answer, closed = exchange(palaver_port, b"GET / HTTP/1.1\r\nHost: a\r\n" + fields + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431") and closed


def test_the_limits_hold_for_every_request_on_a_connection(palaver_port: int) -> None:
    first = b"GET /ok HTTP/1.1\r\nHost: a\r\n\r\n"
    second = b"GET /again HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 5000 + b"\r\n\r\n"
    answer, closed = exchange(palaver_port, first, second, pause=0.1)
    assert answer.startswith(b"HTTP/1.1 200") and closed
    assert b"HTTP/1.1 431" in answer


def test_a_head_that_trickles_in_is_408_and_closed(palaver_port: int) -> None:
    # Slowloris: a byte of header every 0.2 s never completes the head within 0.5 s.
    started = time.monotonic()
    parts = [b"GET / HTTP/1.1\r\nHost: a\r\n", *(b"X-A: 1\r\n" for _ in range(10))]
    answer, closed = exchange(palaver_port, *parts, pause=0.2, wait=5)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n") and closed
    assert _envelope(answer)["msg"] == "The request headers did not arrive in time"
    assert time.monotonic() - started < HEADER_TIMEOUT + 2.5


def test_a_connection_that_sends_nothing_is_408_and_closed(palaver_port: int) -> None:
    started = time.monotonic()
    answer, closed = exchange(palaver_port, wait=5)
    assert answer.startswith(b"HTTP/1.1 408") and closed
    assert time.monotonic() - started < HEADER_TIMEOUT + 2


def test_plain_uvicorn_leaves_the_head_unbounded(plain_port: int) -> None:
    """Why the guard exists: with uvicorn's public options (httptools), neither a large head
    nor a silent or trickling client is stopped. If this fails, uvicorn has grown head limits
    of its own, and ``GuardedHttpToolsProtocol`` can give way to them."""
    answer, _ = exchange(
        plain_port,
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 200")
    answer, closed = exchange(plain_port, b"GET / HTTP/1.1\r\n", wait=HEADER_TIMEOUT * 4)
    assert (answer, closed) == (b"", False)
