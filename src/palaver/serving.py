"""What a serving process does around uvicorn: answering long-polls when told to stop.

uvicorn, on SIGTERM or SIGINT, stops accepting connections and then waits for every open
request to finish. A parked ``GET /events`` would wait its whole heartbeat interval, past
the graceful-shutdown timeout, and then be cancelled into a 500. So each process chains
its own handler in front of uvicorn's: the signal first drains the queue backend (every
parked long-poll answers at once with a heartbeat or its events, and no new one parks),
then uvicorn's handler proceeds as usual. Clients poll again with the same queue and
``last_event_id`` and reach the next process; nothing is lost because queues are saved
(memory store) or live in Redis.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import orjson
from uvicorn._types import ASGISendEvent
from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from palaver.config import Settings

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


# The HTTP protocol, with limits uvicorn leaves open ------------------------------------------


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, plus limits on the request head.

    uvicorn bounds neither the size nor the number of header fields with httptools, nor
    the time a client may take to send them (a connection that trickles a header byte
    every few seconds is held forever: slowloris). Here a request head must arrive within
    ``header_timeout`` of its first byte (or of the connection opening), and stay within
    ``max_header_bytes`` and ``max_headers``, else the connection gets a 408 or a 431 and
    is closed. Body limits and body pace are the ASGI middleware's (api/middleware.py).
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
            self._reject(408, b"Request Timeout", "The request headers did not arrive in time")

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
        # uvicorn builds the cycle by name inside a long method; giving the fresh object our
        # subclass keeps that method whole. Its task has not run yet, so ``send`` resolves
        # to ours from the first message on.
        cycle = self.cycle
        if type(cycle) is RequestResponseCycle:
            cycle.__class__ = OneWriteCycle

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def timeout_keep_alive_handler(self) -> None:
        self._disarm_head_timer()
        super().timeout_keep_alive_handler()

    def send_400_response(self, msg: str) -> None:
        if self._head_too_large:
            self._reject(431, b"Request Header Fields Too Large", "Request header fields too large")
        else:
            super().send_400_response(msg)

    def _reject(self, status: int, reason: bytes, msg: str) -> None:
        self._disarm_head_timer()
        body = orjson.dumps({"result": "error", "msg": msg, "code": "BAD_REQUEST"})
        head = [b"HTTP/1.1 %d %s\r\n" % (status, reason)]
        for name, value in self.server_state.default_headers:
            head.append(name + b": " + value + b"\r\n")
        head.append(b"content-type: application/json\r\ncontent-length: %d\r\n" % len(body))
        head.append(b"connection: close\r\n\r\n")
        self.transport.write(b"".join(head) + body)
        self.transport.close()


class OneWriteCycle(RequestResponseCycle):
    """uvicorn's request/response cycle, writing a response of known length in one piece.

    uvicorn writes the head when the app starts the response and the body when it sends
    it: two writes, two system calls and two TCP segments for every JSON answer, thousands
    at once when a message wakes the long-polls. Here a head that declares its length is
    held until the body comes and both go out in one write (about 1 µs of server CPU less
    per answer). Anything else (no length, a streamed
    body, HEAD, connection handling by the app, an access log) takes uvicorn's own path
    unchanged, after any held head. The one difference on the wire: an app that fails or
    stops between head and body gets its connection closed without the head, where
    uvicorn sends the head and then closes.
    """

    _held: bytes | None = None

    async def send(self, message: ASGISendEvent) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if self.flow.write_paused and not self.disconnected:
                await self.flow.drain()
            if message["type"] == "http.response.body" and not self.disconnected:
                body = message.get("body", b"")
                if not message.get("more_body", False) and len(body) == self.expected_content_length:
                    self.transport.write(held + body)
                    self.expected_content_length = 0
                    self.response_complete = True
                    self.message_event.set()
                    if not self.keep_alive:
                        self.transport.close()
                    self.on_response()
                    return
            if not self.disconnected:
                self.transport.write(held)
        elif message["type"] == "http.response.start" and self._hold_head(message):
            return
        await super().send(message)

    def _hold_head(self, message: Any) -> bool:
        """Build and keep the head of a plain fixed-length response; False leaves it to uvicorn."""
        if self.response_started or self.disconnected or self.flow.write_paused or self.access_log:
            return False
        status = message["status"]
        if self.scope["method"] == "HEAD" or status < 200 or status in (204, 304):
            return False
        headers = self.default_headers + list(message.get("headers", ()))
        length: bytes | None = None
        head = [STATUS_LINE[status]]
        for name, value in headers:
            lowered = name.lower()
            if lowered in _FRAMING:
                return False
            if lowered == b"content-length":
                if length is not None:
                    return False
                length = value
            head += (lowered, b": ", value, b"\r\n")
        if length is None or not length.isdigit():
            return False
        # uvicorn's checks, once over all names and once over all values: a forbidden byte
        # is found in the concatenation exactly when it is in one of the parts. Only then
        # are the headers checked one by one, as uvicorn does, so that the error names the
        # first bad header's fault (a bad value can come before a bad name).
        if HEADER_RE.search(b"".join(name for name, _ in headers)) or HEADER_VALUE_RE.search(
            b"".join(value for _, value in headers)
        ):
            for name, value in headers:
                if HEADER_RE.search(name):
                    raise RuntimeError("Invalid HTTP header name.")
                if HEADER_VALUE_RE.search(value):
                    raise RuntimeError("Invalid HTTP header value.")
        if not self.keep_alive:
            head.append(b"connection: close\r\n")
        head.append(b"\r\n")
        self.response_started = True
        self.waiting_for_100_continue = False
        self.chunked_encoding = False
        self.expected_content_length = int(length)
        self._held = b"".join(head)
        return True


# Header fields that change how the response is framed or the connection kept: uvicorn
# interprets them, so a response carrying one goes its way.
_FRAMING = frozenset((b"transfer-encoding", b"connection"))


def configure_protocol(settings: Settings) -> None:
    GuardedHttpToolsProtocol.max_header_bytes = settings.max_request_header_kib * 1024
    GuardedHttpToolsProtocol.max_headers = settings.max_request_headers
    GuardedHttpToolsProtocol.header_timeout = settings.request_header_timeout_seconds
