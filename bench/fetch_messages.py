"""Fetching messages: GET /api/v1/messages in a channel+topic narrow and a search narrow.

Run: .venv/bin/python bench/fetch_messages.py [--messages 1000000] [--requests 300]
                                              [--concurrency 8] [--search WORD]
                                              [--database-url URL]

Starts ``palaver serve`` (one worker) on 127.0.0.1 with a temporary data directory, makes
an organization with the CLI and fills it with ``palaver seed-messages --messages N``
(10 channels, 20 topics each, 10 subscribers, 10% direct messages). Then, for each
narrow, one client makes ``--requests`` requests in sequence (p50/p99 latency) and
``--concurrency`` clients make as many again (requests per second). Each request asks for
the newest 20 messages, as a client opening the view does. Each row also gives the
server's CPU time per request, which moves far less with other load than latency does.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from send_messages import seed_channel, serving
from users_me import LOOPBACK, Measurement, create_bench_realm, free_port, server_env


def params_for(narrow: list[dict[str, Any]]) -> dict[str, str]:
    return {"anchor": "newest", "num_before": "20", "num_after": "0", "narrow": json.dumps(narrow)}


def sequential(url: str, headers: dict[str, str], params: dict[str, str], count: int) -> Measurement:
    latencies: list[float] = []
    errors = 0
    with httpx.Client(headers=headers, timeout=60, trust_env=False) as client:
        for _ in range(10):  # warm-up, not measured
            client.get(url, params=params)
        started = time.perf_counter()
        for _ in range(count):
            t0 = time.perf_counter()
            response = client.get(url, params=params)
            latencies.append(time.perf_counter() - t0)
            errors += response.status_code != 200
        seconds = time.perf_counter() - started
    return Measurement("sequential", count, errors, seconds, latencies)


async def concurrent(
    url: str, headers: dict[str, str], params: dict[str, str], count: int, concurrency: int
) -> Measurement:
    latencies: list[float] = []
    errors = 0
    remaining = iter(range(count))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=60, trust_env=False) as client:

        async def reader() -> None:
            nonlocal errors
            for _ in remaining:
                t0 = time.perf_counter()
                response = await client.get(url, params=params)
                latencies.append(time.perf_counter() - t0)
                errors += response.status_code != 200

        started = time.perf_counter()
        await asyncio.gather(*(reader() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
    return Measurement(f"{concurrency} concurrent", count, errors, seconds, latencies)


def report(label: str, m: Measurement, found: int, cpu_seconds: float) -> None:
    print(
        f"{label:>28} {m.name:>13}: {m.requests} requests, {m.errors} errors, {m.rps:,.0f} req/s, "
        f"p50 {m.percentile(0.5):.2f} ms, p99 {m.percentile(0.99):.2f} ms, "
        f"server CPU {1000 * cpu_seconds / m.requests:.2f} ms/req ({found} messages per page)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--messages", type=int, default=1_000_000, choices=range(100, 10_000_001), metavar="N"
    )
    parser.add_argument("--requests", type=int, default=300, choices=range(1, 100_001), metavar="N")
    parser.add_argument("--concurrency", type=int, default=8, choices=range(1, 257), metavar="N")
    parser.add_argument("--search", default="coffee", help="word to search for (default: coffee)")
    parser.add_argument("--database-url", help="a scratch database (default: SQLite in a temporary dir)")
    parser.add_argument("--server-cpu", type=int, metavar="N", help="pin the server to this CPU")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-fetch-"))
    results: list[tuple[str, Measurement, int, float]] = []
    try:
        env = server_env(tmp / "data", args.database_url)
        string_id, email, api_key = create_bench_realm(env)
        seed_channel(env, string_id, 10, args.messages)
        port = free_port()
        auth = "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()
        headers = {"Host": f"{string_id}.{LOOPBACK}:{port}", "Authorization": auth}
        base = f"http://{LOOPBACK}:{port}/api/v1"
        with serving(port, env, tmp / "palaver.log", args.server_cpu) as server:
            with httpx.Client(headers=headers, timeout=60, trust_env=False) as client:
                stream_id = client.get(f"{base}/get_stream_id", params={"stream": "seed channel 0"}).json()[
                    "stream_id"
                ]
                topic = client.get(f"{base}/users/me/{stream_id}/topics").json()["topics"][0]["name"]
            narrows = {
                "channel+topic": [
                    {"operator": "channel", "operand": stream_id},
                    {"operator": "topic", "operand": topic},
                ],
                f"search {args.search!r}": [{"operator": "search", "operand": args.search}],
                f"channel+search {args.search!r}": [
                    {"operator": "channel", "operand": stream_id},
                    {"operator": "search", "operand": args.search},
                ],
            }
            url = f"{base}/messages"
            for label, narrow in narrows.items():
                params = params_for(narrow)
                with httpx.Client(headers=headers, timeout=60, trust_env=False) as client:
                    found = len(client.get(url, params=params).json()["messages"])
                before = server.cpu_seconds()
                measured = sequential(url, headers, params, args.requests)
                middle = server.cpu_seconds()
                results.append((label, measured, found, middle - before))
                measured = asyncio.run(concurrent(url, headers, params, args.requests, args.concurrency))
                results.append((label, measured, found, server.cpu_seconds() - middle))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    database = "postgresql" if args.database_url and "postgres" in args.database_url else "sqlite"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"GET /api/v1/messages, newest 20, {args.messages:,} seeded messages; {database}; "
        f"{os.cpu_count()} CPUs; load {load}"
    )
    for label, measured, found, cpu_seconds in results:
        report(label, measured, found, cpu_seconds)


if __name__ == "__main__":
    main()
