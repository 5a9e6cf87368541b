"""``palaver serve --workers N``: a listening socket per worker slot (supervisor.py).

What the kernel shows is checked through /proc: which sockets listen on the port, which
process holds each, and which worker holds each accepted connection.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_events_e2e import REDIS_URL, Server
from tests.helpers import require_redis
from tests.servers import free_port, http_client, launch, server_environment, wait_until_healthy

pytestmark = pytest.mark.e2e

LISTEN, ESTABLISHED = "0A", "01"


def _tcp_sockets(port: int, state: str) -> set[int]:
    """Inodes of the IPv4 sockets whose local port is ``port``, in ``state``."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
            inodes.add(int(fields[9]))
    return inodes


def _held_sockets(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    # The supervisor's own account of what it was doing meanwhile, for a failure in CI.
    said = f"; server log:\n{log.read_text()[-4000:]}" if log is not None else ""
    raise AssertionError(f"timed out waiting for {what}{said}")


def _serving_slots(server: Server, port: int, workers: int) -> bool:
    return len(server.worker_pids()) == workers and len(_tcp_sockets(port, LISTEN)) == workers


def _fresh_requests(server: Server, count: int) -> list[int]:
    """``count`` requests, each on a new connection (so each lands on a slot the kernel picks)."""
    statuses = []
    for _ in range(count):
        with http_client(timeout=30) as client:
            try:
                statuses.append(client.get(f"{server.url}/health").status_code)
            except httpx.TimeoutException as error:
                # A slot left without a worker; the supervisor's log says what it did.
                raise AssertionError(f"{error!r}; server log:\n{server.log.read_text()[-4000:]}") from error
    return statuses


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, int]]:
    require_redis(REDIS_URL)
    tmp_path = tmp_path_factory.mktemp("supervisor")
    port = free_port()
    env = server_environment(
        tmp_path,
        PALAVER_DATABASE_URL=f"sqlite:///{tmp_path / 'palaver.db'}",
        PALAVER_REDIS_URL=REDIS_URL,
        PALAVER_HOST="127.0.0.1",
        PALAVER_PORT=str(port),
        PALAVER_HEARTBEAT_SECONDS="2",
        # The supervisor's own lines (a worker died, another started) for a failure's report.
        PALAVER_LOG_LEVEL="info",
    )
    log = tmp_path / "server.log"
    server = Server(f"http://127.0.0.1:{port}", env, launch(env, ["--workers", "2"], log), log)
    try:
        wait_until_healthy(server.url, server.process, lambda: log.read_text()[-3000:])
        _wait_for(lambda: _serving_slots(server, port, 2), "both workers listening")
        yield server, port
    finally:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait()


def test_each_worker_listens_on_a_socket_of_its_own_and_connections_spread(
    two_workers: tuple[Server, int],
) -> None:
    server, port = two_workers
    listening = _tcp_sockets(port, LISTEN)
    workers = server.worker_pids()
    held = [_held_sockets(pid) & listening for pid in workers]
    assert [len(h) for h in held] == [1, 1]
    assert held[0] != held[1]
    # The supervisor keeps both, so a worker's replacement finds its slot's backlog intact.
    assert listening <= _held_sockets(server.process.pid)

    # A burst of 32 connections, as a load balancer opens its pool: with one shared socket,
    # the first worker to wake accepted nearly all of them (bench/workers.py).
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
    try:
        for client in clients:
            client.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        for client in clients:
            assert client.recv(64).startswith(b"HTTP/1.1 200")
        accepted = _tcp_sockets(port, ESTABLISHED)
        per_worker = [len(_held_sockets(pid) & accepted) for pid in workers]
    finally:
        for client in clients:
            client.close()
    assert sum(per_worker) == 32
    # The kernel hashes each connection's addresses to a slot: a 32/0 or 31/1 split
    # would be the shared socket's behaviour, and is a one-in-a-million draw here.
    assert min(per_worker) >= 4, per_worker


def test_removing_and_adding_a_worker_leaves_no_socket_without_one(two_workers: tuple[Server, int]) -> None:
    server, port = two_workers
    server.process.send_signal(signal.SIGTTOU)
    _wait_for(lambda: _serving_slots(server, port, 1), "one worker and one listening socket")
    # Had the removed slot's socket stayed open with no worker, about half of these
    # connections would wait in its backlog until the timeout.
    assert _fresh_requests(server, 16) == [200] * 16

    server.process.send_signal(signal.SIGTTIN)
    _wait_for(lambda: _serving_slots(server, port, 2), "two workers listening again")
    assert _fresh_requests(server, 16) == [200] * 16


def test_a_killed_workers_connections_wait_for_its_replacement(two_workers: tuple[Server, int]) -> None:
    server, port = two_workers
    victim = server.worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    # New connections hashed to the dead worker's slot queue on its socket, which the
    # supervisor still holds, and are answered once the replacement listens on it.
    assert _fresh_requests(server, 16) == [200] * 16
    _wait_for(
        lambda: _serving_slots(server, port, 2) and victim not in server.worker_pids(), "the replacement"
    )
    assert _fresh_requests(server, 16) == [200] * 16


def test_a_worker_killed_while_its_health_check_waits_is_replaced_at_once(
    two_workers: tuple[Server, int],
) -> None:
    # The race CI once lost: the supervisor pinged a worker, and the worker died before it
    # answered. Stopping the worker first makes that the certain case: the supervisor's
    # next round pings it (every half second) and waits for an answer that cannot come.
    server, port = two_workers
    victim = server.worker_pids()[0]
    os.kill(victim, signal.SIGSTOP)
    time.sleep(1.5)
    os.kill(victim, signal.SIGKILL)
    # With uvicorn's wait on the pipe alone, the death was noticed (and the slot had a
    # worker again) only when the health check's 30 s timeout ran out.
    _wait_for(
        lambda: f"worker [{victim}] died" in server.log.read_text(),
        "the death noticed",
        timeout=15,
        log=server.log,
    )
    _wait_for(
        lambda: _serving_slots(server, port, 2) and victim not in server.worker_pids(), "the replacement"
    )
    assert _fresh_requests(server, 16) == [200] * 16
