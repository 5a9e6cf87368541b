"""What a serving process adds to uvicorn: long-polls answered on a stop signal, and limits
on the request head.

uvicorn, on SIGTERM or SIGINT, stops accepting connections and then waits for every open
request to finish. A parked ``GET /events`` would wait its whole heartbeat interval, past
the graceful-shutdown timeout, and then be cancelled into a 500. So each process chains
its own handler in front of uvicorn's (``on_stop_signals``): the signal first drains the
queue backend (every parked long-poll answers at once with a heartbeat or its events, and
no new one parks), then uvicorn's handler proceeds as usual. Clients poll again with the
same queue and ``last_event_id`` and reach the next process; nothing is lost because
queues are saved (memory store) or live in Redis.

Where each request limit is enforced, once: the head (size, field count, time to send it)
by ``GuardedHttpToolsProtocol`` here, before the app sees the request; the body (size,
pause between chunks) by the ASGI middleware (``api/middleware.py``); idle keep-alive
connections by uvicorn's own ``timeout_keep_alive``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from types import FrameType
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from palaver.config import Settings
from palaver.lib.exceptions import JsonableError
from palaver.lib.operational_errors import RequestHeadersTooLargeError, RequestHeadTimeoutError

logger = logging.getLogger("palaver.server")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def on_stop_signals(on_stop: Callable[[], None]) -> Iterator[None]:
    """Run ``on_stop`` on this event loop when a stop signal arrives, then the previous handler.

    Only the main thread may set signal handlers; elsewhere (a test client running the app
    on a thread of its own) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {int(sig): signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handler(sig: int, frame: FrameType | None) -> None:
        # A signal handler runs between two bytecodes of the loop's own thread; the loop's
        # thread-safe entry point is the one safe way in.
        loop.call_soon_threadsafe(on_stop)
        earlier = previous.get(sig)
        if callable(earlier):
            earlier(sig, frame)
        elif earlier == signal.SIG_DFL:
            # Nobody else handles it (not under uvicorn): keep the default meaning.
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for number, earlier in previous.items():
            if signal.getsignal(number) is handler:
                signal.signal(number, earlier)


# The request head's limits, which uvicorn has no option for --------------------------------


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, plus limits on the request head.

    uvicorn's public options bound a request head neither in size nor in number of fields
    (with httptools), nor in the time a client takes to send it: a connection that trickles a
    header byte every few seconds, or sends nothing, is held forever (slowloris). Here a
    request head must arrive within ``header_timeout`` of its first byte (or of the
    connection opening), and stay within ``max_header_bytes`` and ``max_headers``, else the
    connection gets a 408 or a 431 in the error envelope and is closed. Everything else is
    uvicorn's, unchanged: only the parser callbacks that see the head are extended, each
    calling uvicorn's own (``tests/test_serving.py`` checks that a request within the limits
    gets the same bytes as from ``HttpToolsProtocol``, and ``tests/e2e/test_limits_e2e.py``
    that the limits hold on a real socket, so an uvicorn upgrade that moves these callbacks
    fails there). The body's limits are the ASGI middleware's (``api/middleware.py``).
    """

    # Slots, not instance attributes: uvicorn's protocol already has 27, and a 28th to 31st
    # would turn its shared-key instance dict (288 bytes) into a dict of its own (1.5 KiB),
    # for every open connection (each parked long-poll holds one).
    __slots__ = ("_head_bytes", "_head_count", "_head_timer", "_head_too_large")

    # Set by ``configure_protocol`` in each serving process, before connections arrive.
    max_header_bytes = 16 * 1024
    max_headers = 100
    header_timeout = 10.0

    # uvicorn declares BaseTransport; the event loop hands a stream protocol a Transport.
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._head_count = 0
        self._head_too_large = False
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self._reject(RequestHeadTimeoutError())

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._head_count = 0
        self._arm_head_timer()

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_count += 1
        self._count_head(len(name) + len(value) + 4)
        if self._head_count > self.max_headers:
            self._head_too_large = True
        if self._head_too_large:
            # httptools turns this into HttpParserError; ``send_400_response`` answers it.
            raise ValueError("request head too large")
        super().on_header(name, value)

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.max_header_bytes:
            self._head_too_large = True
            raise ValueError("request head too large")

    def on_headers_complete(self) -> None:
        self._disarm_head_timer()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        if self._head_too_large:
            self._reject(RequestHeadersTooLargeError())
        else:
            super().send_400_response(msg)

    def _reject(self, error: JsonableError) -> None:
        """Answer ``error`` in the envelope and close: the rest of the head cannot be trusted."""
        self._disarm_head_timer()
        body = orjson.dumps(error.to_dict())
        status = HTTPStatus(error.http_status)
        head = [b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode())]
        for name, value in self.server_state.default_headers:
            head.append(name + b": " + value + b"\r\n")
        head.append(b"content-type: application/json\r\ncontent-length: %d\r\n" % len(body))
        head.append(b"connection: close\r\n\r\n")
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def configure_protocol(settings: Settings) -> None:
    """Set the head limits of this process's protocol class (uvicorn builds it from the class)."""
    GuardedHttpToolsProtocol.max_header_bytes = settings.max_request_header_kib * 1024
    GuardedHttpToolsProtocol.max_headers = settings.max_request_headers
    GuardedHttpToolsProtocol.header_timeout = settings.request_header_timeout_seconds


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The ``uvicorn.Config`` options of ``palaver serve``, all public ones (README "Operating")."""
    configure_protocol(settings)
    return {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        # uvloop, accepting every waiting connection per turn of the loop (listening.py).
        "loop": "palaver.listening:new_event_loop",
        # Head size, field count and time limits (above); workers configure them themselves.
        "http": GuardedHttpToolsProtocol,
        # No WebSocket routes (clients long-poll GET /events): no WebSocket library loaded.
        "ws": "none",
        "timeout_keep_alive": math.ceil(settings.keep_alive_timeout_seconds),
        "timeout_graceful_shutdown": 5,
        # X-Forwarded-* are believed only from trusted_proxies, by the app (api/middleware.py).
        "proxy_headers": False,
        # The app writes its own access log, with request IDs, users and durations.
        "access_log": False,
        "log_config": None,
        # A worker starting (or answering the supervisor's ping) on a loaded machine can take
        # more than uvicorn's 5 s; too short, and a rolling restart aborts or a busy worker
        # is killed as hung.
        "timeout_worker_healthcheck": 30,
    }
