"""Server memory per idle event queue and per parked long-poll, 10,000 queues.

Run: .venv/bin/python bench/queue_memory.py [--quick] [--queues 10000] [--redis-url URL]

Starts ``palaver serve`` (one process; in-process queues unless --redis-url) on a
temporary data directory and reads its resident memory (VmRSS in /proc/<pid>/status):

1. after start-up and a short warm-up (so lazily imported code is counted as baseline),
   then once the server has been quiet for ``QUIET_SECONDS`` (the idle figure: by then the
   server has closed the warm-up's pooled SQLite connections and its expired threads,
   ``workers/idle_memory.py``);
2. after registering ``--queues`` queues (``event_types=["message"]``, no state fetched),
   which gives the memory of an idle queue;
3. with one GET /events parked on every queue, which gives the memory of a parked
   connection (the connection, its request and the wait), beyond its queue.

Each long-poll runs on a raw keep-alive HTTP/1.1 connection from this process and polls
again after a heartbeat, so all stay parked while the memory is read; the readings are
taken once RSS has been steady for a few seconds. The file-descriptor limit is raised
for both processes. The bare app (a long-poll parked on a future) is measured the same
way, for the floor set by uvicorn and Starlette. Loopback only; at most 20,000 queues.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from common import (
    LOOPBACK,
    bare_realm,
    create_bench_realm,
    machine_line,
    print_targets,
    raise_file_limit,
    rss_bytes,
    serve,
    server_env,
)
from events_fanout import clear_redis_queues

MAX_QUEUES = 20_000
# Long enough for anyio's idle threads to expire (10 s) and for the server's idle-memory
# worker to see a whole quiet window (15 s windows: at most 30 s).
QUIET_SECONDS = 40
TARGET_PARKED_BYTES = 16 * 1024


def steady_rss(pid: int, *, seconds: float = 3.0, tolerance: float = 0.005, timeout: float = 60) -> int:
    """RSS once it has changed by less than ``tolerance`` over ``seconds``."""
    deadline = time.monotonic() + timeout
    previous = rss_bytes(pid)
    while True:
        time.sleep(seconds)
        current = rss_bytes(pid)
        if abs(current - previous) <= tolerance * previous or time.monotonic() > deadline:
            return current
        previous = current


def threads_and_database_files(pid: int) -> tuple[int, int]:
    """The process's threads and its open descriptors of SQLite files: what the warm-up's
    concurrent requests left (a pooled connection each), which moves the idle figure."""
    threads = sum(1 for _ in Path(f"/proc/{pid}/task").iterdir())
    files = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd).endswith(".db"):
                files += 1
    return threads, files


async def register_queues(base: str, headers: dict[str, str], count: int) -> list[str]:
    limits = httpx.Limits(max_connections=16, max_keepalive_connections=16, keepalive_expiry=2)
    async with httpx.AsyncClient(
        base_url=base, headers=headers, limits=limits, timeout=60, trust_env=False
    ) as client:
        semaphore = asyncio.Semaphore(16)

        async def one() -> str:
            async with semaphore:
                response = await client.post(
                    "/api/v1/register", data={"event_types": '["message"]', "fetch_event_types": "[]"}
                )
                response.raise_for_status()
                return str(response.json()["queue_id"])

        return await asyncio.gather(*(one() for _ in range(count)))


class Poller:
    """Long-polls every queue on raw connections until stopped."""

    def __init__(self, port: int, host: str, authorization: str) -> None:
        self.port, self.host, self.authorization = port, host, authorization
        self.sent = 0
        self.stopping = False
        self.errors: list[str] = []

    def request(self, queue_id: str, last: int) -> bytes:
        return (
            f"GET /api/v1/events?queue_id={queue_id}&last_event_id={last} HTTP/1.1\r\n"
            f"Host: {self.host}\r\nAuthorization: {self.authorization}\r\n\r\n"
        ).encode()

    async def poll(self, queue_id: str, connect: asyncio.Semaphore) -> None:
        async with connect:
            reader, writer = await asyncio.open_connection(LOOPBACK, self.port)
            writer.write(self.request(queue_id, -1))
            await writer.drain()
        self.sent += 1
        try:
            while not self.stopping:
                head = await reader.readuntil(b"\r\n\r\n")
                status = head.split(b" ", 2)[1]
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = await reader.readexactly(length)
                if status != b"200":
                    self.errors.append(body.decode()[:200])
                    return
                # A heartbeat: acknowledge it and park again.
                last = max(event["id"] for event in orjson.loads(body)["events"])
                writer.write(self.request(queue_id, last))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def park_and_measure(poller: Poller, queue_ids: list[str], pid: int) -> tuple[int, float]:
    connect = asyncio.Semaphore(256)
    started = time.monotonic()
    tasks = [asyncio.create_task(poller.poll(q, connect)) for q in queue_ids]
    while poller.sent < len(queue_ids) and not poller.errors:
        await asyncio.sleep(0.2)
    parked_in = time.monotonic() - started
    # Reading the steady RSS blocks; the pollers keep running on this loop meanwhile.
    rss = await asyncio.to_thread(steady_rss, pid)
    poller.stopping = True
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return rss, parked_in


def measure_bare(tmp: Path, count: int) -> tuple[int, int]:
    """The bare app's RSS before and with ``count`` parked long-polls."""
    realm = bare_realm()
    with serve(server_env(tmp / "data"), tmp / "bare.log", bare_db=tmp / "bare.db") as server:
        baseline = steady_rss(server.pid)
        poller = Poller(server.port, LOOPBACK, realm.authorization)
        parked, _ = asyncio.run(park_and_measure(poller, [f"q{i}" for i in range(count)], server.pid))
        if poller.errors:
            raise SystemExit(f"bare long-polls failed: {poller.errors[:3]}")
    return baseline, parked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--redis-url", default=None, help="use the Redis queue store (a scratch database)")
    parser.add_argument("--quick", action="store_true", help="500 queues")
    args = parser.parse_args()
    if args.quick:
        args.queues = 500
    if not 1 <= args.queues <= MAX_QUEUES:
        raise SystemExit(f"--queues must be 1 to {MAX_QUEUES}")
    # The server inherits the raised limit.
    raise_file_limit(args.queues)
    tmp = Path(tempfile.mkdtemp(prefix="palaver-qmem-"))
    try:
        env = server_env(
            tmp / "data",
            redis_url=args.redis_url,
            # Parking 10,000 requests takes a while; none may answer with a heartbeat meanwhile.
            PALAVER_HEARTBEAT_SECONDS="59",
            PALAVER_EVENT_QUEUE_IDLE_TIMEOUT_SECONDS="3600",
            # Every queue is the owner's: lift the per-user limits (50 queues, 20 parked polls).
            PALAVER_MAX_EVENT_QUEUES_PER_USER=str(args.queues + 100),
            PALAVER_MAX_PARKED_POLLS_PER_USER=str(args.queues + 100),
        )
        realm = create_bench_realm(env)
        with serve(env, tmp / "palaver.log") as server:
            pid, port = server.pid, server.port
            host, authorization = realm.host(port), realm.authorization
            headers = {"Host": host, "Authorization": authorization}
            base = f"http://{LOOPBACK}:{port}"
            # Warm-up: the register and long-poll paths, imported and run once.
            warm = asyncio.run(register_queues(base, headers, 50))
            for queue_id in warm[:5]:
                httpx.get(
                    base + "/api/v1/events",
                    params={"queue_id": queue_id, "dont_block": "true"},
                    headers=headers,
                    trust_env=False,
                ).raise_for_status()
            warm_rss = steady_rss(pid)
            warm_threads, warm_db_files = threads_and_database_files(pid)
            time.sleep(QUIET_SECONDS)
            baseline = steady_rss(pid)
            idle_threads, idle_db_files = threads_and_database_files(pid)
            started = time.monotonic()
            queue_ids = asyncio.run(register_queues(base, headers, args.queues))
            register_seconds = time.monotonic() - started
            with_queues = steady_rss(pid)
            poller = Poller(port, host, authorization)
            parked, parked_in = asyncio.run(park_and_measure(poller, queue_ids, pid))
            if poller.errors:
                raise SystemExit(f"long-polls failed: {poller.errors[:3]}")
        bare_baseline, bare_parked = measure_bare(tmp, args.queues)
    finally:
        if args.redis_url:
            clear_redis_queues(env)
        shutil.rmtree(tmp, ignore_errors=True)
    # From the warmed-up figure: registering reopens the connections and threads quiet closed.
    per_queue = (with_queues - warm_rss) / args.queues
    per_parked = (parked - with_queues) / args.queues
    bare_per_parked = (bare_parked - bare_baseline) / args.queues
    store = "redis" if args.redis_url else "in-process"
    print(f"{args.queues} queues, {store} store, one server process; {machine_line()} at the end")
    print(
        f"palaver RSS: after warm-up {warm_rss / 2**20:.1f} MiB "
        f"({warm_threads} threads, {warm_db_files} open SQLite database files), "
        f"quiet for {QUIET_SECONDS} s (idle) {baseline / 2**20:.1f} MiB, "
        f"with queues {with_queues / 2**20:.1f} MiB, "
        f"with every queue long-polled {parked / 2**20:.1f} MiB"
    )
    print(
        f"idle: {idle_threads} threads, {idle_db_files} open SQLite database files; "
        f"registered in {register_seconds:.1f}s, parked in {parked_in:.1f}s"
    )
    print(f"per idle queue: {per_queue / 1024:.1f} KiB")
    print(f"per parked connection (beyond its queue): {per_parked / 1024:.1f} KiB")
    print(
        f"bare RSS: baseline {bare_baseline / 2**20:.1f} MiB, parked {bare_parked / 2**20:.1f} MiB; "
        f"per parked connection {bare_per_parked / 1024:.1f} KiB; "
        f"palaver / bare {per_parked / bare_per_parked if bare_per_parked > 0 else float('nan'):.2f}"
    )
    print_targets(
        [
            ("per parked long-poll", per_parked / 1024, "<=", TARGET_PARKED_BYTES / 1024, "KiB"),
            ("idle RSS", baseline / 2**20, "<=", 80, "MiB"),
        ]
    )


if __name__ == "__main__":
    main()
