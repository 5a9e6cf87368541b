"""Fan-out latency: N clients parked in GET /events, one channel message to all of them.

Run: .venv/bin/python bench/events_fanout.py [--clients 1000] [--database-url URL] [--redis-url URL]

Starts ``palaver serve`` (one process, SQLite unless --database-url; in-process queues
unless --redis-url) on a temporary data directory, seeds N users in bulk (``palaver
seed-users``), subscribes them all to one channel, registers one queue each
(``event_types=["message"]``), parks one GET /events long-poll per queue, then sends one
message to the channel. It reports the time from the send request until the p50 and p99
client, and the last one, has the message, and the server's CPU time over the fan-out.

The waiting clients run in a child process on lean raw-HTTP connections; on a machine with
two or more CPUs the server is pinned to one and the clients to another (``--no-pin`` to
leave both to the scheduler). The message goes out only once the server has gone idle,
i.e. every long-poll is parked. The file-descriptor limit is raised to fit. Loopback only;
at most 5,000 clients.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import math
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from users_me import (
    LOOPBACK,
    client_loop,
    create_bench_realm,
    free_port,
    palaver,
    run_cli,
    running,
    server_env,
)

MAX_CLIENTS = 5_000
CLIENT_TIMEOUT_SECONDS = 120


def seed_users(env: dict[str, str], string_id: str, count: int) -> list[tuple[int, str, str]]:
    """(id, email, api_key) of ``count`` new members, made by ``palaver seed-users``.

    Bulk rows without events: creating users through ``do_create_user`` tells every
    existing user about each new one, which for 5,000 users is 12.5 million events.
    """
    from sqlalchemy import select

    from palaver.config import load_settings
    from palaver.lib.realm import get_realm_by_string_id
    from palaver.models import UserProfile
    from palaver.services import build_services

    run_cli(env, "seed-users", "--realm", string_id, "--users", str(count), "--channels", "0")
    settings = load_settings(env={k: v for k, v in env.items() if k.startswith("PALAVER_")})
    services = build_services(settings)
    try:
        with services.db.session() as session:
            realm = get_realm_by_string_id(session, string_id)
            assert realm is not None
            rows = session.execute(
                select(UserProfile.id, UserProfile.email, UserProfile.api_key)
                .where(UserProfile.realm_id == realm.id, UserProfile.full_name.like("Seed User %"))
                .order_by(UserProfile.id)
            )
            users = [(user_id, email, api_key) for user_id, email, api_key in rows]
    finally:
        services.close()
    return users


def clear_redis_queues(env: dict[str, str]) -> None:
    """Delete the queues a run left in Redis (its key prefix is its own database's)."""
    from palaver.config import load_settings
    from palaver.events.redis_backend import RedisQueueBackend
    from palaver.services import build_queue_backend

    backend = build_queue_backend(
        load_settings(env={k: v for k, v in env.items() if k.startswith("PALAVER_")})
    )
    try:
        if isinstance(backend, RedisQueueBackend):
            backend.delete_everything()
    finally:
        backend.close()


def auth(email: str, api_key: str) -> str:
    return "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(port: int) -> int:
    """The ``palaver serve --port PORT`` process (one worker serves in that process)."""
    wanted = ["serve", "--port", str(port)]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "palaver.cli" in argv and all(a in argv for a in wanted):
            return int(entry.name)
    raise SystemExit(f"no palaver serve process on port {port}")


def pin(pid: int, cpu: int | None) -> None:
    """Pin every thread of a process to one CPU (threads started later inherit it)."""
    if cpu is None:
        return
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(task.name), {cpu})


# The waiting clients ------------------------------------------------------------------------
#
# They run in a child process (pinned to the other CPU when there are two), on raw keep-alive
# HTTP/1.1 connections with pre-built request bytes, and parse only the status line,
# Content-Length and body: a general-purpose client costs about a millisecond per response,
# which with thousands of clients on the server's cores would be measured as fan-out time.


class _LongPoll(asyncio.Protocol):
    def __init__(self, host: str, authorization: str, queue_id: str) -> None:
        self.prefix = f"GET /api/v1/events?queue_id={queue_id}&last_event_id=".encode()
        self.suffix = f" HTTP/1.1\r\nHost: {host}\r\nAuthorization: {authorization}\r\n\r\n".encode()
        # Called with the receipt time and the body (prefixed "HTTP <status>" unless a 200).
        self.done: Callable[[float, bytes], None] = lambda received, body: None
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement the interface without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def poll(self, last_event_id: int) -> None:
        assert self.transport is not None
        self.transport.write(self.prefix + str(last_event_id).encode() + self.suffix)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buffer[:end]).lower() + b"\r\n"
        at = head.find(b"\r\ncontent-length:")
        length = int(head[at + 17 : head.index(b"\r\n", at + 2)]) if at >= 0 else 0
        if len(self.buffer) < end + 4 + length:
            return
        received = time.monotonic()
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        status = head[9:12]
        del self.buffer[: end + 4 + length]
        self.done(received, body if status == b"200" else b"HTTP " + status + b" " + body)


async def _waiting_clients(port: int, host: str, clients: list[tuple[str, str]], conn: Connection) -> None:
    loop = asyncio.get_running_loop()
    arrivals: list[float] = []
    errors: list[str] = []
    finished = asyncio.Event()
    polls: list[_LongPoll] = []

    def on_response(poll: _LongPoll) -> Callable[[float, bytes], None]:
        def done(received: float, body: bytes) -> None:
            if body.startswith(b"HTTP "):
                errors.append(body[:200].decode(errors="replace"))
                finished.set()
                return
            events = orjson.loads(body)["events"]
            if any(e["type"] == "message" for e in events):
                arrivals.append(received)
                if len(arrivals) == len(clients):
                    finished.set()
            else:
                # A heartbeat: acknowledge it and park again.
                poll.poll(max(e["id"] for e in events))

        return done

    connect = asyncio.Semaphore(256)

    async def open_one(authorization: str, queue_id: str) -> None:
        async with connect:
            poll = _LongPoll(host, authorization, queue_id)
            poll.done = on_response(poll)
            await loop.create_connection(lambda: poll, LOOPBACK, port)
            poll.poll(-1)
            polls.append(poll)

    await asyncio.gather(*(open_one(a, q) for a, q in clients))
    conn.send(len(polls))
    # The parent sends the message once every long-poll is parked; then we wait for them.
    try:
        await asyncio.wait_for(finished.wait(), timeout=CLIENT_TIMEOUT_SECONDS)
    except TimeoutError:
        errors.append(f"only {len(arrivals)} of {len(clients)} clients got the message in time")
    conn.send((arrivals, errors))
    for poll in polls:
        if poll.transport is not None:
            poll.transport.close()


def waiting_clients_process(
    port: int, host: str, clients: list[tuple[str, str]], conn: Connection, cpu: int | None
) -> None:
    pin(os.getpid(), cpu)
    with asyncio.Runner(loop_factory=client_loop()[1]) as runner:
        runner.run(_waiting_clients(port, host, clients, conn))


def server_idle(pid: int, *, quiet: float = 0.05, window: float = 1.0, timeout: float = 300) -> None:
    """Wait until the server has used under ``quiet`` CPU seconds over ``window``: every
    long-poll has been read, authenticated and parked.
    """
    deadline = time.monotonic() + timeout
    previous = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(window)
        current = cpu_seconds(pid)
        if current - previous < quiet:
            return
        previous = current
    raise SystemExit("the server never went idle while long-polls parked")


async def register_all(
    base: str, host: str, owner: tuple[str, str], users: list[tuple[int, str, str]]
) -> tuple[list[str], float]:
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32, keepalive_expiry=2)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120, trust_env=False) as client:
        created = await client.post(
            "/api/v1/channels/create",
            headers={"Host": host, "Authorization": auth(*owner)},
            data={"name": "fanout", "subscribers": "[" + ",".join(str(u[0]) for u in users) + "]"},
        )
        created.raise_for_status()
        semaphore = asyncio.Semaphore(32)

        async def register(user: tuple[int, str, str]) -> str:
            async with semaphore:
                response = await client.post(
                    "/api/v1/register",
                    headers={"Host": host, "Authorization": auth(user[1], user[2])},
                    data={"event_types": '["message"]', "fetch_event_types": '["message"]'},
                )
                response.raise_for_status()
                return str(response.json()["queue_id"])

        started = time.monotonic()
        queue_ids = await asyncio.gather(*(register(u) for u in users))
        return queue_ids, time.monotonic() - started


def receive(conn: Connection, child: multiprocessing.process.BaseProcess) -> Any:
    while not conn.poll(0.5):
        if not child.is_alive():
            raise SystemExit(f"the waiting clients' process exited with {child.exitcode}")
    return conn.recv()


def fan_out(
    port: int,
    host: str,
    owner: tuple[str, str],
    users: list[tuple[int, str, str]],
    server: int,
    client_cpu: int | None,
) -> dict[str, float]:
    base = f"http://{LOOPBACK}:{port}"
    queue_ids, register_seconds = asyncio.run(register_all(base, host, owner, users))
    clients = [(auth(u[1], u[2]), q) for u, q in zip(users, queue_ids, strict=True)]
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("fork").Process(
        target=waiting_clients_process, args=(port, host, clients, theirs, client_cpu)
    )
    child.start()
    try:
        started = time.monotonic()
        receive(ours, child)  # every long-poll is sent
        server_idle(server)
        park_seconds = time.monotonic() - started
        cpu_before = cpu_seconds(server)
        sent_at = time.monotonic()
        sent = httpx.post(
            base + "/api/v1/messages",
            headers={"Host": host, "Authorization": auth(*owner)},
            data={"type": "stream", "to": "fanout", "topic": "bench", "content": "hello"},
            timeout=120,
            trust_env=False,
        )
        send_seconds = time.monotonic() - sent_at
        sent.raise_for_status()
        arrivals, errors = receive(ours, child)
        # Everything the server did for the fan-out: the send, delivery, every answer.
        server_cpu = cpu_seconds(server) - cpu_before
        if errors:
            raise SystemExit(f"waiting clients failed: {errors[:3]}")
    finally:
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    latencies = [t - sent_at for t in arrivals]
    return {
        "register_s": register_seconds,
        "park_s": park_seconds,
        "send_ms": send_seconds * 1000,
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
        "last_ms": max(latencies) * 1000,
        "server_cpu_ms": server_cpu * 1000,
        "server_cpu_per_client_ms": server_cpu * 1000 / len(users),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--redis-url", default=None, help="use the Redis queue store (queues deleted after)")
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="leave the server and the clients unpinned on a multi-CPU machine",
    )
    args = parser.parse_args()
    if not 1 <= args.clients <= MAX_CLIENTS:
        raise SystemExit(f"--clients must be 1 to {MAX_CLIENTS}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 2 * args.clients + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu, client_cpu = (cpus[0], cpus[1]) if len(cpus) >= 2 and not args.no_pin else (None, None)
    tmp = Path(tempfile.mkdtemp(prefix="palaver-fanout-"))
    try:
        env = server_env(tmp / "data", args.database_url, args.redis_url)
        string_id, email, api_key = create_bench_realm(env)
        users = seed_users(env, string_id, args.clients)
        port = free_port()
        with running(
            palaver("serve", "--port", str(port)),
            env,
            tmp / "palaver.log",
            f"http://{LOOPBACK}:{port}/api/v1/server_settings",
        ):
            pid = server_pid(port)
            pin(pid, server_cpu)
            result = fan_out(port, f"{string_id}.{LOOPBACK}:{port}", (email, api_key), users, pid, client_cpu)
    finally:
        if args.redis_url:
            clear_redis_queues(env)
        shutil.rmtree(tmp, ignore_errors=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    store = "redis" if args.redis_url else "in-process"
    pinned = (
        f"server on CPU {server_cpu}, clients on CPU {client_cpu}" if server_cpu is not None else "unpinned"
    )
    print(
        f"{args.clients} parked clients, {store} queues, {os.cpu_count()} CPUs ({pinned}), "
        f"load average {load} at the end"
    )
    print(", ".join(f"{k} {v:.1f}" for k, v in result.items()))


if __name__ == "__main__":
    main()
