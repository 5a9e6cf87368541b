"""The serving loop accepts every waiting connection in one turn, where uvloop's server takes
one per turn; it serves, stops and pauses as an asyncio server does."""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from palaver.listening import EagerAcceptLoop, EagerAcceptServer, listening_sockets

WAITING = 40


class Recorded(asyncio.Protocol):
    """Records its transport in ``made``; answers what it receives in capitals."""

    def __init__(self, made: list[asyncio.BaseTransport]) -> None:
        self.made = made
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.made.append(transport)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data.upper())


def run(loop_factory: Callable[[], asyncio.AbstractEventLoop], main: Coroutine[Any, Any, Any]) -> Any:
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main)


async def turns_to_accept_waiting_connections() -> int:
    """Connections made while the loop is not running wait in the kernel's queue; how many
    turns of the loop it then takes until every one is open."""
    loop = asyncio.get_running_loop()
    made: list[asyncio.BaseTransport] = []
    server = await loop.create_server(lambda: Recorded(made), "127.0.0.1", 0, backlog=128)
    port = server.sockets[0].getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(WAITING)]
    turns = 0
    try:
        while len(made) < WAITING and turns < 10 * WAITING:
            turns += 1
            await asyncio.sleep(0)
    finally:
        server.close()
        for client in clients:
            client.close()
        for transport in made:
            transport.close()
    assert len(made) == WAITING
    return turns


def test_every_waiting_connection_is_accepted_in_a_few_turns() -> None:
    # Three: the accepts, then the transports opening, then connection_made (asyncio: 4).
    assert run(EagerAcceptLoop, turns_to_accept_waiting_connections()) <= 5


def test_uvloops_own_server_takes_a_turn_per_connection() -> None:
    # Why EagerAcceptLoop exists (41 turns for 40); if uvloop ever drains its queue,
    # listening.py can go.
    assert run(uvloop.new_event_loop, turns_to_accept_waiting_connections()) >= WAITING // 2


async def serve_then_close() -> tuple[bytes, bool]:
    loop = asyncio.get_running_loop()
    made: list[asyncio.BaseTransport] = []
    server = await loop.create_server(lambda: Recorded(made), "127.0.0.1", 0)
    assert isinstance(server, EagerAcceptServer) and server.is_serving()
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"hello")
    answer = await reader.readexactly(5)
    server.close()
    await server.wait_closed()
    refused = False
    try:
        await asyncio.open_connection("127.0.0.1", port)
    except ConnectionRefusedError:
        refused = True
    writer.close()
    return answer, refused and not server.is_serving()


def test_it_serves_and_close_stops_listening() -> None:
    assert run(EagerAcceptLoop, serve_then_close()) == (b"HELLO", True)


async def serve_on_a_given_socket() -> bytes:
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    made: list[asyncio.BaseTransport] = []
    server = await asyncio.get_running_loop().create_server(lambda: Recorded(made), sock=sock, backlog=64)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"abc")
    answer = await reader.readexactly(3)
    writer.close()
    server.close()
    return answer


def test_a_socket_handed_over_is_served_as_uvicorns_workers_hand_it() -> None:
    assert run(EagerAcceptLoop, serve_on_a_given_socket()) == b"ABC"


class OutOfDescriptors:
    """A listening socket whose accept fails as when the process has no descriptors left."""

    def __init__(self) -> None:
        self.calls = 0

    def accept(self) -> tuple[socket.socket, Any]:
        self.calls += 1
        raise OSError(errno.EMFILE, "Too many open files")


async def pause_when_out_of_descriptors() -> tuple[bool, bool]:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
    assert isinstance(server, EagerAcceptServer)
    server.pause_seconds = 0.01  # a second in service
    failing = OutOfDescriptors()
    server._accept(failing)  # type: ignore[arg-type]  # only accept() is used
    paused = not server.is_serving() and failing.calls == 1
    for _ in range(200):
        if server.is_serving():
            break
        await asyncio.sleep(0.005)
    resumed = server.is_serving()
    server.close()
    return paused, resumed


def test_out_of_descriptors_pauses_accepting_then_resumes(caplog: pytest.LogCaptureFixture) -> None:
    assert run(EagerAcceptLoop, pause_when_out_of_descriptors()) == (True, True)
    assert "cannot accept connections (Too many open files)" in caplog.text


def test_listening_sockets_bind_every_address_of_the_host() -> None:
    sockets = listening_sockets("localhost", 0, 16)
    try:
        families = {sock.family for sock in sockets}
        assert socket.AF_INET in families
        for sock in sockets:
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    finally:
        for sock in sockets:
            sock.close()


def test_a_port_in_use_is_named_as_uvloop_names_it() -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    try:
        port = taken.getsockname()[1]
        with pytest.raises(
            OSError,
            match=r"error while attempting to bind on address \('127.0.0.1', \d+\): address already in use",
        ):
            listening_sockets("127.0.0.1", port, 16)
    finally:
        taken.close()


class Refusing(asyncio.Protocol):
    def __init__(self) -> None:
        raise RuntimeError("no protocol for this one")


async def a_connection_that_cannot_be_opened() -> tuple[bool, bool]:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Refusing, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    client.settimeout(5)
    try:
        # The server closes its end: the client reads end-of-file rather than waiting.
        closed = await asyncio.to_thread(client.recv, 1) == b""
    finally:
        client.close()
    still_serving = server.is_serving()
    server.close()
    return closed, still_serving


def test_a_connection_whose_protocol_fails_is_closed_and_serving_goes_on() -> None:
    assert run(EagerAcceptLoop, a_connection_that_cannot_be_opened()) == (True, True)
