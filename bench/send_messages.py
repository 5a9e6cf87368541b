"""Sending messages: sequential latency and concurrent throughput of POST /api/v1/messages.

Run: .venv/bin/python bench/send_messages.py [--messages 1000] [--concurrency 32]
                                             [--concurrent-messages 3000] [--subscribers 50]
                                             [--database-url URL]

Starts ``palaver serve`` (one worker) on 127.0.0.1 with a temporary data directory, makes
an organization with the CLI and, through ``palaver seed-messages --messages 0``, a
channel with ``--subscribers`` subscribers. Then (a) one client sends ``--messages``
messages one after another and reports p50/p99 latency; (b) ``--concurrency`` clients
send ``--concurrent-messages`` messages between them and report messages per second.

Each row also gives the server's CPU time per message (from /proc, on Linux): unlike
latency and throughput it hardly moves with the machine's other load, and 1000 divided by
it is what one core could serve. ``--server-cpu N`` pins the server to CPU N (taskset).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from users_me import (
    LOOPBACK,
    Measurement,
    cpu_seconds,
    create_bench_realm,
    free_port,
    palaver,
    running,
    server_env,
)

CHANNEL = "seed channel 0"

# Failed requests by status code, and the first body of each, so a run says why it failed.
failures: Counter[int] = Counter()
failure_bodies: dict[int, str] = {}


def note(response: httpx.Response) -> bool:
    """Whether the request failed; records how."""
    if response.status_code == 200:
        return False
    failures[response.status_code] += 1
    failure_bodies.setdefault(response.status_code, response.text[:300])
    return True


def seed_channel(env: dict[str, str], string_id: str, subscribers: int, messages: int = 0) -> None:
    argv = palaver(
        "seed-messages",
        "--realm",
        string_id,
        "--messages",
        str(messages),
        "--channels",
        "1" if messages == 0 else "10",
        "--subscribers",
        str(subscribers),
    )
    # The seed's progress bar goes straight to this terminal.
    done = subprocess.run(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit("palaver seed-messages failed")
    print(done.stdout.strip(), file=sys.stderr)


@dataclass
class Server:
    process: subprocess.Popen[bytes]

    def cpu_seconds(self) -> float:
        """User plus system CPU time the server has used so far; NaN where /proc is missing."""
        return cpu_seconds(self.process.pid)


@contextmanager
def serving(port: int, env: dict[str, str], log: Path, cpu: int | None = None) -> Iterator[Server]:
    """``palaver serve`` on ``port`` until the block ends (users_me.running, with CPU pinning)."""
    argv = palaver("serve", "--port", str(port))
    if cpu is not None:
        argv = ["taskset", "--cpu-list", str(cpu), *argv]
    with running(argv, env, log, f"http://{LOOPBACK}:{port}/api/v1/server_settings") as process:
        yield Server(process)


def sequential(url: str, headers: dict[str, str], count: int) -> Measurement:
    latencies: list[float] = []
    errors = 0
    with httpx.Client(headers=headers, timeout=30, trust_env=False) as client:
        for i in range(20):  # warm-up, not measured
            client.post(url, data={"type": "stream", "to": CHANNEL, "topic": "warmup", "content": f"w{i}"})
        started = time.perf_counter()
        for i in range(count):
            data = {"type": "stream", "to": CHANNEL, "topic": f"seq {i % 10}", "content": f"sequential {i}"}
            t0 = time.perf_counter()
            response = client.post(url, data=data)
            latencies.append(time.perf_counter() - t0)
            errors += note(response)
        seconds = time.perf_counter() - started
    return Measurement("sequential", count, errors, seconds, latencies)


async def concurrent(url: str, headers: dict[str, str], count: int, concurrency: int) -> Measurement:
    latencies: list[float] = []
    errors = 0
    remaining = iter(range(count))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=60, trust_env=False) as client:

        async def sender(n: int) -> None:
            nonlocal errors
            for i in remaining:
                data = {"type": "stream", "to": CHANNEL, "topic": f"client {n}", "content": f"concurrent {i}"}
                t0 = time.perf_counter()
                response = await client.post(url, data=data)
                latencies.append(time.perf_counter() - t0)
                errors += note(response)

        started = time.perf_counter()
        await asyncio.gather(*(sender(n) for n in range(concurrency)))
        seconds = time.perf_counter() - started
    return Measurement(f"{concurrency} concurrent", count, errors, seconds, latencies)


def report(m: Measurement, cpu_seconds: float) -> None:
    cpu_ms = 1000 * cpu_seconds / m.requests
    print(
        f"{m.name:>14}: {m.requests} messages, {m.errors} errors, {m.seconds:.2f}s, "
        f"{m.rps:,.0f} msg/s, p50 {m.percentile(0.5):.2f} ms, p99 {m.percentile(0.99):.2f} ms; "
        f"server CPU {cpu_ms:.2f} ms/msg (one core: {1000 / cpu_ms:,.0f} msg/s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000, choices=range(1, 100_001), metavar="N")
    parser.add_argument("--concurrency", type=int, default=32, choices=range(1, 257), metavar="N")
    parser.add_argument(
        "--concurrent-messages", type=int, default=3000, choices=range(1, 100_001), metavar="N"
    )
    parser.add_argument("--subscribers", type=int, default=50, choices=range(2, 10_001), metavar="N")
    parser.add_argument(
        "--database-url", help="a scratch database (default: SQLite in a temporary directory)"
    )
    parser.add_argument("--server-cpu", type=int, metavar="N", help="pin the server to this CPU")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-send-"))
    try:
        env = server_env(tmp / "data", args.database_url)
        string_id, email, api_key = create_bench_realm(env)
        seed_channel(env, string_id, args.subscribers)
        port = free_port()
        auth = "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()
        headers = {"Host": f"{string_id}.{LOOPBACK}:{port}", "Authorization": auth}
        url = f"http://{LOOPBACK}:{port}/api/v1/messages"
        with serving(port, env, tmp / "palaver.log", args.server_cpu) as server:
            # The warm-up requests of `sequential` are counted too; 20 in 1,000 is noise.
            before = server.cpu_seconds()
            seq = sequential(url, headers, args.messages)
            middle = server.cpu_seconds()
            conc = asyncio.run(concurrent(url, headers, args.concurrent_messages, args.concurrency))
            after = server.cpu_seconds()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    database = "postgresql" if args.database_url and "postgres" in args.database_url else "sqlite"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    pinned = f", server on CPU {args.server_cpu}" if args.server_cpu is not None else ""
    print(
        f"POST /api/v1/messages to a channel with {args.subscribers} subscribers; {database}; "
        f"{os.cpu_count()} CPUs{pinned}; load {load}"
    )
    report(seq, middle - before)
    report(conc, after - middle)
    for status, count in sorted(failures.items()):
        print(f"  {count} responses with status {status}, e.g. {failure_bodies[status]}")


if __name__ == "__main__":
    main()
