"""Server memory per idle event queue and per parked long-poll, with 10,000 queues.

Run: .venv/bin/python bench/queue_memory.py [--queues 10000] [--redis-url URL]

Starts ``palaver serve`` (one process; in-process queues unless --redis-url) on a
temporary data directory and reads its resident memory (VmRSS in /proc/<pid>/status):

1. after start-up and a short warm-up (so lazily imported code is counted as baseline);
2. after registering ``--queues`` queues (``event_types=["message"]``, no state fetched),
   which gives the memory of an idle queue;
3. with one GET /events parked on every queue, which gives the memory of a parked
   connection (the connection, its request and the wait), beyond its queue.

Each long-poll runs on a raw keep-alive HTTP/1.1 connection from this process and polls
again after a heartbeat, so all stay parked while the memory is read; the readings are
taken once RSS has been steady for a few seconds. The file-descriptor limit is raised
for both processes. Loopback only; at most 20,000 queues.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from events_fanout import clear_redis_queues, server_pid
from users_me import LOOPBACK, create_bench_realm, free_port, palaver, running, server_env

MAX_QUEUES = 20_000
TARGET_PARKED_BYTES = 16 * 1024


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no VmRSS in /proc status")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--redis-url", default=None, help="use the Redis queue store (a scratch database)")
    args = parser.parse_args()
    if not 1 <= args.queues <= MAX_QUEUES:
        raise SystemExit(f"--queues must be 1 to {MAX_QUEUES}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 2 * args.queues + 512))
    if wanted < args.queues + 256:
        raise SystemExit(f"the hard file-descriptor limit ({hard}) is too low for {args.queues} connections")
    # The server inherits the raised limit.
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    tmp = Path(tempfile.mkdtemp(prefix="palaver-qmem-"))
    try:
        env = server_env(
            tmp / "data",
            redis_url=args.redis_url,
            # Parking 10,000 requests takes a while; none may answer with a heartbeat meanwhile.
            PALAVER_HEARTBEAT_SECONDS="59",
            PALAVER_EVENT_QUEUE_IDLE_TIMEOUT_SECONDS="3600",
        )
        string_id, email, api_key = create_bench_realm(env)
        port = free_port()
        host = f"{string_id}.{LOOPBACK}:{port}"
        authorization = "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()
        headers = {"Host": host, "Authorization": authorization}
        base = f"http://{LOOPBACK}:{port}"
        with running(
            palaver("serve", "--port", str(port)), env, tmp / "palaver.log", base + "/api/v1/server_settings"
        ):
            pid = server_pid(port)
            # Warm-up: the register and long-poll paths, imported and run once.
            warm = asyncio.run(register_queues(base, headers, 50))
            for queue_id in warm[:5]:
                httpx.get(
                    base + "/api/v1/events",
                    params={"queue_id": queue_id, "dont_block": "true"},
                    headers=headers,
                    trust_env=False,
                ).raise_for_status()
            baseline = steady_rss(pid)
            started = time.monotonic()
            queue_ids = asyncio.run(register_queues(base, headers, args.queues))
            register_seconds = time.monotonic() - started
            with_queues = steady_rss(pid)
            poller = Poller(port, host, authorization)
            parked, parked_in = asyncio.run(park_and_measure(poller, queue_ids, pid))
            if poller.errors:
                raise SystemExit(f"long-polls failed: {poller.errors[:3]}")
    finally:
        if args.redis_url:
            clear_redis_queues(env)
        shutil.rmtree(tmp, ignore_errors=True)
    per_queue = (with_queues - baseline) / args.queues
    per_parked = (parked - with_queues) / args.queues
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    store = "redis" if args.redis_url else "in-process"
    print(
        f"{args.queues} queues, {store} store, one server process; {os.cpu_count()} CPUs, "
        f"load average {load} at the end"
    )
    print(
        f"server RSS: baseline {baseline / 2**20:.1f} MiB, with queues {with_queues / 2**20:.1f} MiB, ",
        end="",
    )
    print(f"with every queue long-polled {parked / 2**20:.1f} MiB")
    print(f"registered in {register_seconds:.1f}s, parked in {parked_in:.1f}s")
    print(f"per idle queue: {per_queue / 1024:.1f} KiB")
    print(
        f"per parked connection (beyond its queue): {per_parked / 1024:.1f} KiB "
        f"(target <= {TARGET_PARKED_BYTES // 1024} KiB)"
    )


if __name__ == "__main__":
    main()
