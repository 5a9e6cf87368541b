"""Reading messages: newest 50 in narrows, and search, on 1,000,000 messages.

Run: .venv/bin/python bench/fetch_messages.py [--quick] [--messages 1000000] [--requests 300]
                                              [--concurrency 8] [--search WORD]
                                              [--database-url URL] [--no-pin]

Seeds (once; cached under bench/.data/) an organization with ``--messages`` messages
through ``palaver seed-messages`` (bulk rows: 10 channels of 20 topics, 10 subscribers,
10% direct messages; the owner receives everything), starts ``palaver serve`` on it (one
worker, pinned to one CPU, the client on the other), and asks ``GET /api/v1/messages``
for the newest 50 messages of: a channel, a channel+topic, a search (``--search``,
default ``coffee``, a common word) and a channel+search. Each narrow: ``--requests`` in
sequence (p50/p99), then as many from ``--concurrency`` connections (requests per second).
The bare app then answers the same requests on the same SQLite file with one SELECT
(one FTS5 MATCH for searches) and orjson, so each row has its ratio.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
from common import (
    Dataset,
    Measurement,
    Realm,
    Server,
    bare_realm,
    build_request,
    cached_dataset,
    cpus,
    drive,
    machine_line,
    pin_line,
    pin_self,
    print_table,
    print_targets,
    query,
    quick_flag,
    run,
    seed_channel,
    serve,
    sql_rows,
)


def dataset(messages: int, database_url: str | None, tmp: Path) -> Dataset:
    def build(env: dict[str, str], realm: Realm) -> dict[str, Any]:
        seeded = seed_channel(env, realm, 10, messages, channels=10)
        stream_id, recipient_id = sql_rows(
            env, "SELECT id, recipient_id FROM stream WHERE name = 'seed channel 0'"
        )[0]
        newest = "SELECT subject FROM message WHERE recipient_id = :r ORDER BY id DESC LIMIT 1"
        topics = sql_rows(env, newest, r=recipient_id)
        return {"seeded": seeded, "stream_id": stream_id, "topic": topics[0][0] if topics else "t"}

    return cached_dataset(
        "fetch", {"messages": messages}, build, database_url=database_url, scratch=tmp / "data"
    )


def narrows(data: Dataset, search: str) -> dict[str, list[dict[str, Any]]]:
    channel = {"operator": "channel", "operand": data.extra["stream_id"]}
    return {
        "channel": [channel],
        "channel+topic": [channel, {"operator": "topic", "operand": data.extra["topic"]}],
        f"search {search}": [{"operator": "search", "operand": search}],
        f"channel+search {search}": [channel, {"operator": "search", "operand": search}],
    }


def constant(raw: bytes, index: int) -> bytes:
    return raw


def found(status: int, body: bytes) -> bool:
    return status == 200 and bool(orjson.loads(body).get("messages"))


async def measure(server: Server, realm: Realm, data: Dataset, args: argparse.Namespace) -> list[Measurement]:
    host = realm.host(server.port)
    results = []
    for label, narrow in narrows(data, args.search).items():
        params = {"anchor": "newest", "num_before": "50", "num_after": "0", "narrow": json.dumps(narrow)}
        raw = build_request("GET", query("/api/v1/messages", params), host, realm.authorization)
        for concurrency in (1, args.concurrency):
            results.append(
                await drive(
                    server,
                    f"{server.name}: {label}" + (f" x{concurrency}" if concurrency > 1 else ""),
                    functools.partial(constant, raw),
                    count=args.requests,
                    concurrency=concurrency,
                    warmup=10,
                    ok=found,
                )
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sizes = range(100, 10_000_001)
    parser.add_argument("--messages", type=int, default=1_000_000, choices=sizes, metavar="N")
    parser.add_argument(
        "--requests", type=int, choices=range(1, 100_001), metavar="N", help="per row (300; --quick: 100)"
    )
    parser.add_argument("--concurrency", type=int, default=8, choices=range(2, 257), metavar="N")
    parser.add_argument("--search", default="coffee", help="word to search for (default: coffee)")
    parser.add_argument("--database-url", help="a scratch database (default: SQLite, cached in bench/.data)")
    quick_flag(parser)
    args = parser.parse_args()
    if args.quick:
        args.messages = 20_000
    if args.requests is None:
        # Server CPU is read in clock ticks (10 ms): give more requests to compare trees.
        args.requests = 100 if args.quick else 300
    server_cpu, client_cpu = (None, None) if args.no_pin else cpus()
    pin_self(client_cpu)
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-fetch-"))
    try:
        data = dataset(args.messages, args.database_url, tmp)
        with serve(data.env(), tmp / "palaver.log", cpu=server_cpu) as server:
            ours = run(measure(server, data.realm, data, args))
        if data.database_url:
            bare: list[Measurement] = []  # the bare app reads SQLite only
        else:
            with serve(data.env(), tmp / "bare.log", cpu=server_cpu, bare_db=data.sqlite_path) as server:
                bare = run(measure(server, bare_realm(), data, args))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    database = "postgresql" if args.database_url else "sqlite"
    pinned = pin_line(server_cpu, client_cpu)
    rows = [row for pair in zip(ours, bare or ours, strict=True) for row in (pair if bare else pair[:1])]
    print_table(
        f"GET /api/v1/messages, newest 50, {args.messages:,} messages; {database}; {pinned}; "
        f"{machine_line()} at the end",
        rows,
    )
    # Newest-50 rows are the channel and channel+topic narrows; " xN" rows use N connections.
    newest = [m for m in ours if "search" not in m.name]
    sequential = [m for m in newest if " x" not in m.name]
    searches = [m for m in ours if "search" in m.name and " x" not in m.name]
    print_targets(
        [
            ("newest 50, best rate", max((m.rps for m in newest), default=math.nan), ">=", 1000, "req/s"),
            (
                "newest 50, worst sequential p50",
                max((m.p(0.5) for m in sequential), default=math.nan),
                "<=",
                3,
                "ms",
            ),
            (
                "search, worst sequential p50",
                max((m.p(0.5) for m in searches), default=math.nan),
                "<=",
                10,
                "ms",
            ),
        ]
    )


if __name__ == "__main__":
    main()
