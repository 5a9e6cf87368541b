"""The event loop a serving process runs: uvloop, accepting every waiting connection at once.

uvloop's own servers (libuv underneath) take one connection off the listening socket per
turn of the event loop. A busy loop turns a few dozen times a second, so when many clients
connect together (their keep-alive connections expired at once, a restart, a network blip)
the newcomers wait in the kernel's accept queue, each turn letting one in: with the loop
busy 20 ms a turn, 100 connections took 2 s to be accepted (asyncio's own loop: 0.08 s).
With 16 keep-alive clients holding a process's loop 3 ms per request, 100 connections
opened together waited up to 6 s for their first answer under plain uvloop, 0.5 s here.

``EagerAcceptLoop`` is uvloop with ``create_server`` replaced for plain TCP: the listening
sockets are watched with ``add_reader``, and each time they are readable every waiting
connection (up to the backlog) is accepted and handed to uvloop as an accepted socket, so
the transports and protocols are uvloop's and uvicorn's as before. TLS (which Palaver leaves
to a proxy) and other options keep uvloop's server.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import socket
from collections.abc import Callable, Iterable
from typing import Any

import uvloop

logger = logging.getLogger("palaver.serving")

# Out of file descriptors: stop accepting for this long (as asyncio does) rather than spin.
_PAUSE_AFTER_RESOURCE_ERROR_SECONDS = 1.0
_RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class EagerAcceptServer:
    """What uvicorn uses of an ``asyncio.Server``: the listening sockets, and ``close``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        sockets: Iterable[socket.socket],
        backlog: int,
    ) -> None:
        self._loop = loop
        self._protocol_factory = protocol_factory
        self._sockets = list(sockets)
        self._backlog = backlog
        self._serving = False
        self.pause_seconds = _PAUSE_AFTER_RESOURCE_ERROR_SECONDS
        for sock in self._sockets:
            sock.setblocking(False)
            sock.listen(backlog)
        self._start()

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return tuple(self._sockets)

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_serving(self) -> bool:
        return self._serving

    def close(self) -> None:
        """Stop accepting and close the listening sockets; open connections are left alone."""
        self._stop()
        sockets, self._sockets = self._sockets, []
        for sock in sockets:
            sock.close()

    async def wait_closed(self) -> None:
        return None

    def _start(self) -> None:
        if not self._serving and self._sockets:
            self._serving = True
            for sock in self._sockets:
                self._loop.add_reader(sock.fileno(), self._accept, sock)

    def _stop(self) -> None:
        if self._serving:
            self._serving = False
            for sock in self._sockets:
                self._loop.remove_reader(sock.fileno())

    def _accept(self, listening: socket.socket) -> None:
        # Bounded by the backlog, so a flood of connections cannot hold the loop forever.
        for _ in range(self._backlog):
            try:
                connection, _ = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue  # gone before it was accepted
            except OSError as error:
                if error.errno not in _RESOURCE_ERRORS:
                    raise
                logger.error(
                    "cannot accept connections (%s); pausing for %g s", error.strerror, self.pause_seconds
                )
                self._stop()
                self._loop.call_later(self.pause_seconds, self._start)
                return
            connection.setblocking(False)
            opening = self._loop.create_task(
                self._loop.connect_accepted_socket(self._protocol_factory, connection)
            )
            opening.add_done_callback(functools.partial(_opened, connection))


def _opened(connection: socket.socket, task: asyncio.Task[Any]) -> None:
    # A client that reset the connection before it was opened: nothing to serve, no noise,
    # and its descriptor closed now rather than whenever the socket object is collected.
    if not task.cancelled() and task.exception() is not None:
        logger.debug("accepted connection could not be opened: %r", task.exception())
        connection.close()


def listening_sockets(host: str | None, port: int, backlog: int) -> list[socket.socket]:
    """Bound, listening sockets for ``host`` (every address it resolves to) and ``port``, as
    ``loop.create_server(host=..., port=...)`` makes them."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                # One socket per family, as asyncio binds them: no IPv4-mapped duplicates.
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as error:
                # uvloop's wording, which uvicorn logs before it exits.
                reason = (error.strerror or str(error)).lower()
                message = f"error while attempting to bind on address {address!r}: {reason}"
                raise OSError(error.errno, message) from None
            sock.listen(backlog)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class EagerAcceptLoop(uvloop.Loop):
    async def create_server(  # type: ignore[override]  # the options Palaver's uvicorn passes
        self,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        host: str | None = None,
        port: int | None = None,
        *,
        sock: socket.socket | None = None,
        backlog: int = 100,
        ssl: Any = None,
        **options: Any,
    ) -> Any:
        if ssl is not None or options:
            # Not what Palaver serves (TLS ends at its proxy): uvloop's own server.
            if sock is not None:
                return await super().create_server(
                    protocol_factory, sock=sock, backlog=backlog, ssl=ssl, **options
                )
            return await super().create_server(
                protocol_factory, host, port or 0, backlog=backlog, ssl=ssl, **options
            )
        sockets = [sock] if sock is not None else listening_sockets(host, port or 0, backlog)
        return EagerAcceptServer(self, protocol_factory, sockets, backlog)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvicorn's ``loop`` option, as ``palaver.listening:new_event_loop``."""
    return EagerAcceptLoop()
