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
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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


def configure_protocol(settings: Settings) -> None:
    GuardedHttpToolsProtocol.max_header_bytes = settings.max_request_header_kib * 1024
    GuardedHttpToolsProtocol.max_headers = settings.max_request_headers
    GuardedHttpToolsProtocol.header_timeout = settings.request_header_timeout_seconds
