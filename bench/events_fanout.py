"""Fan-out latency: N clients parked in GET /events, one channel message to all.

Run: .venv/bin/python bench/events_fanout.py [--quick] [--clients 1000,5000]
                                             [--database-url URL] [--redis-url URL] [--no-pin]

For each client count: starts ``palaver serve`` (one process, SQLite unless
--database-url; in-process queues unless --redis-url) on a copy of a cached organization
of N seeded members (``palaver seed-users``, bulk rows, cached under bench/.data/),
subscribes them all to a new channel, registers one queue each
(``event_types=["message"]``), parks one GET /events long-poll per queue, then sends one
message to the channel. It reports the time from the send request until the p50 and p99
client, and the last one, has the message, and the server's CPU time over the fan-out.
Then the bare app does the same: N long-polls parked on futures, woken by one POST that
inserts a row, so each count has its ratio.

The waiting clients run in a child process on lean raw-HTTP connections; on a machine with
two or more CPUs the server is pinned to one and the clients to another (``--no-pin`` to
leave both to the scheduler). The message goes out only once the server has gone idle,
i.e. every long-poll is parked. The file-descriptor limit is raised to fit. Loopback only;
at most 5,000 clients.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast

import httpx
import orjson
from common import (
    LOOPBACK,
    ClientCost,
    Dataset,
    Realm,
    Server,
    bare_realm,
    basic_auth,
    cached_dataset,
    cpus,
    machine_line,
    new_loop,
    percentile,
    pin_line,
    pin_self,
    print_targets,
    quick_flag,
    raise_file_limit,
    run_cli,
    serve,
    sql_rows,
    wait_idle,
)

MAX_CLIENTS = 5_000
CLIENT_TIMEOUT_SECONDS = 120


def dataset(users: int, database_url: str | None, tmp: Path) -> Dataset:
    """An organization of ``users`` seeded members, with their (id, email, API key).

    Bulk rows without events: creating users through ``do_create_user`` tells every
    existing user about each new one, which for 5,000 users is 12.5 million events.
    """

    def build(env: dict[str, str], realm: Realm) -> dict[str, Any]:
        run_cli(env, "seed-users", "--realm", realm.string_id, "--users", str(users), "--channels", "0")
        rows = sql_rows(
            env,
            "SELECT id, email, api_key FROM user_profile WHERE full_name LIKE 'Seed User %' ORDER BY id",
        )
        return {"users": [list(row) for row in rows]}

    return cached_dataset("fanout", {"users": users}, build, database_url=database_url, scratch=tmp / "data")


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


async def _waiting_clients(
    port: int, host: str, clients: list[tuple[str, str]], conn: Connection, rounds: int
) -> None:
    loop = asyncio.get_running_loop()
    arrivals: list[float] = []
    errors: list[str] = []
    finished = asyncio.Event()
    polls: list[_LongPoll] = []
    remaining = [rounds]

    def on_response(poll: _LongPoll) -> Callable[[float, bytes], None]:
        def done(received: float, body: bytes) -> None:
            if body.startswith(b"HTTP "):
                errors.append(body[:200].decode(errors="replace"))
                finished.set()
                return
            events = orjson.loads(body)["events"]
            if any(e["type"] == "message" for e in events):
                arrivals.append(received)
                if remaining[0] > 1:
                    # Another round follows: park again at once, as a client does.
                    poll.poll(max(e["id"] for e in events))
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
    # The parent sends each round's message once every long-poll is parked; then we wait.
    while remaining[0] > 0 and not errors:
        try:
            await asyncio.wait_for(finished.wait(), timeout=CLIENT_TIMEOUT_SECONDS)
        except TimeoutError:
            errors.append(f"only {len(arrivals)} of {len(clients)} clients got the message in time")
        conn.send((list(arrivals), errors))
        arrivals.clear()
        finished.clear()
        remaining[0] -= 1
    for poll in polls:
        if poll.transport is not None:
            poll.transport.close()


def waiting_clients_process(
    port: int, host: str, clients: list[tuple[str, str]], conn: Connection, cpu: int | None, rounds: int
) -> None:
    pin_self(cpu)
    cost = ClientCost()
    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(_waiting_clients(port, host, clients, conn, rounds))
    conn.send(cost.seconds())


async def register_all(
    base: str, host: str, owner: tuple[str, str], users: list[tuple[int, str, str]]
) -> tuple[list[str], float]:
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32, keepalive_expiry=2)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120, trust_env=False) as client:
        created = await client.post(
            "/api/v1/channels/create",
            headers={"Host": host, "Authorization": basic_auth(*owner)},
            data={"name": f"fanout {len(users)}", "subscribers": json.dumps([u[0] for u in users])},
        )
        created.raise_for_status()
        semaphore = asyncio.Semaphore(32)

        async def register(user: tuple[int, str, str]) -> str:
            async with semaphore:
                response = await client.post(
                    "/api/v1/register",
                    headers={"Host": host, "Authorization": basic_auth(user[1], user[2])},
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
    server: Server,
    host: str,
    sender: str,
    clients: list[tuple[str, str]],
    client_cpu: int | None,
    rounds: int = 1,
) -> list[dict[str, float]]:
    """Park a long-poll for each (authorization, queue ID), send one message as ``sender``;
    ``rounds`` times, the clients parking again after each. The figures of each round."""
    base = f"http://{LOOPBACK}:{server.port}"
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("fork").Process(
        target=waiting_clients_process, args=(server.port, host, clients, theirs, client_cpu, rounds)
    )
    child.start()
    results = []
    try:
        started = time.monotonic()
        receive(ours, child)  # every long-poll is sent
        for _ in range(rounds):
            wait_idle(server)
            park_seconds = time.monotonic() - started
            cpu_before = server.cpu_seconds()
            sent_at = time.monotonic()
            sent = httpx.post(
                base + "/api/v1/messages",
                headers={"Host": host, "Authorization": sender},
                data={"type": "stream", "to": f"fanout {len(clients)}", "topic": "bench", "content": "hello"},
                timeout=120,
                trust_env=False,
            )
            send_seconds = time.monotonic() - sent_at
            sent.raise_for_status()
            arrivals, errors = receive(ours, child)
            # Everything the server did for the fan-out: the send, delivery, every answer
            # (and, between rounds, the polls parking again).
            server_cpu = server.cpu_seconds() - cpu_before
            if errors:
                raise SystemExit(f"waiting clients failed: {errors[:3]}")
            latencies = [t - sent_at for t in arrivals]
            results.append(
                {
                    "park_s": park_seconds,
                    "send_ms": send_seconds * 1000,
                    "p50_ms": percentile(latencies, 0.5),
                    "p99_ms": percentile(latencies, 0.99),
                    "last_ms": max(latencies) * 1000,
                    "server_cpu_ms": server_cpu * 1000,
                }
            )
            started = time.monotonic()
        client_cpu_seconds = receive(ours, child)
    finally:
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    for result in results:
        result["client_cpu_ms"] = client_cpu_seconds * 1000 / rounds
    return results


def _median_round(results: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the rounds after the first (the first alone when one)."""
    warm = results[1:] or results
    return {key: statistics.median(r[key] for r in warm) for key in warm[0]}


def one_count(
    count: int, data: Dataset, args: argparse.Namespace, tmp: Path, pins: tuple[int | None, int | None]
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    server_cpu, client_cpu = pins
    users = [tuple(u) for u in data.extra["users"][:count]]
    copy = data.copy_to(tmp / f"copy-{count}")
    env = copy.env(redis_url=args.redis_url) if args.redis_url else copy.env()
    try:
        with serve(env, tmp / "palaver.log", cpu=server_cpu) as server:
            host = copy.realm.host(server.port)
            queue_ids, _ = asyncio.run(
                register_all(
                    f"http://{LOOPBACK}:{server.port}",
                    host,
                    (copy.realm.email, copy.realm.api_key),
                    cast(list[tuple[int, str, str]], users),
                )
            )
            clients = [(basic_auth(u[1], u[2]), q) for u, q in zip(users, queue_ids, strict=True)]
            ours = fan_out(server, host, copy.realm.authorization, clients, client_cpu, args.rounds)
    finally:
        if args.redis_url:
            clear_redis_queues(env)
    with serve(env, tmp / "bare.log", cpu=server_cpu, bare_db=tmp / "bare.db") as server:
        bare = bare_realm()
        clients = [(bare.authorization, f"q{i}") for i in range(count)]
        theirs = fan_out(server, LOOPBACK, bare.authorization, clients, client_cpu, args.rounds)
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1000,5000", help="client counts, comma-separated")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--redis-url", default=None, help="use the Redis queue store (queues deleted after)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="messages in a row, clients parking again after each (a 'warm' row: median after the first)",
    )
    quick_flag(parser)
    args = parser.parse_args()
    counts = [200] if args.quick else [int(c) for c in args.clients.split(",")]
    if not all(1 <= c <= MAX_CLIENTS for c in counts):
        raise SystemExit(f"--clients must be 1 to {MAX_CLIENTS}")
    if not 1 <= args.rounds <= 50:
        raise SystemExit("--rounds must be 1 to 50")
    raise_file_limit(max(counts))
    pins = (None, None) if args.no_pin else cpus()
    tmp = Path(tempfile.mkdtemp(prefix="palaver-fanout-"))
    results = []
    try:
        data = dataset(max(counts), args.database_url, tmp)
        for count in counts:
            results.append((count, *one_count(count, data, args, tmp, pins)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    store = "redis" if args.redis_url else "in-process"
    print(
        f"Fan-out of one message to N parked long-polls; {store} queues; {pin_line(*pins)}; {machine_line()}"
    )
    keys = ("send_ms", "p50_ms", "p99_ms", "last_ms", "server_cpu_ms", "client_cpu_ms", "park_s")
    print("  {:<16}".format("") + "".join(f"{k:>15}" for k in keys))
    for count, our_rounds, bare_rounds in results:
        rows = [("", our_rounds[0], bare_rounds[0])]
        if args.rounds > 1:
            rows.append((" warm", _median_round(our_rounds), _median_round(bare_rounds)))
        for label, ours, bare in rows:
            print(f"  {'palaver ' + str(count) + label:<16}" + "".join(f"{ours[k]:>15.1f}" for k in keys))
            print(f"  {'bare ' + str(count) + label:<16}" + "".join(f"{bare[k]:>15.1f}" for k in keys))
            ratio = "".join(f"{ours[k] / bare[k] if bare[k] else math.nan:>15.2f}" for k in keys)
            print(f"  {'palaver / bare':<16}" + ratio)
    # The targets, for the counts it names: the first message's p99.
    limits = {1000: 100, 5000: 500}
    print_targets(
        [
            (f"{count:,} clients, p99", our_rounds[0]["p99_ms"], "<=", limits[count], "ms")
            for count, our_rounds, _bare in results
            if count in limits
        ]
    )


if __name__ == "__main__":
    main()
