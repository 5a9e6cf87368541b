"""Sending messages: sequential latency and 32 concurrent senders.

Run: .venv/bin/python bench/send_messages.py [--quick] [--messages 1000] [--concurrency 32]
                                             [--concurrent-messages 3000] [--subscribers 50]
                                             [--database-url URL] [--no-pin]

Starts ``palaver serve`` (one worker, pinned to one CPU with the client on the other) on a
copy of a cached organization with a channel of ``--subscribers`` subscribers, then
(a) one connection sends ``--messages`` messages one after another (p50/p99 latency);
(b) ``--concurrency`` connections send ``--concurrent-messages`` between them (messages
per second). Every send is a real ``POST /api/v1/messages``. Then the same load goes to
the bare app (Basic auth, a form parse and one SQLite insert, same uvicorn options), so
the last rows are ratios. Server and client CPU per message come from /proc and getrusage.
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

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
    quick_flag,
    run,
    seed_channel,
    serve,
)

CHANNEL = "seed channel 0"


def dataset(subscribers: int, database_url: str | None, tmp: Path) -> Dataset:
    def build(env: dict[str, str], realm: Realm) -> dict[str, str]:
        return {"seeded": seed_channel(env, realm, subscribers)}

    return cached_dataset(
        "send", {"subscribers": subscribers}, build, database_url=database_url, scratch=tmp / "data"
    )


async def measure(server: Server, realm: Realm, args: argparse.Namespace) -> list[Measurement]:
    host = realm.host(server.port)

    def message(prefix: str) -> Callable[[int], bytes]:
        def make(i: int) -> bytes:
            topic, content = f"{prefix} {i % 10}", f"{prefix} {i}"
            form = {"type": "stream", "to": CHANNEL, "topic": topic, "content": content}
            return build_request("POST", "/api/v1/messages", host, realm.authorization, form)

        return make

    sequential = await drive(
        server,
        f"{server.name}: sequential",
        message("sequential"),
        count=args.messages,
        concurrency=1,
        warmup=20,
    )
    concurrent = await drive(
        server,
        f"{server.name}: {args.concurrency} senders",
        message("concurrent"),
        count=args.concurrent_messages,
        concurrency=args.concurrency,
        warmup=args.concurrency,
    )
    return [sequential, concurrent]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000, choices=range(1, 100_001), metavar="N")
    parser.add_argument("--concurrency", type=int, default=32, choices=range(1, 257), metavar="N")
    parser.add_argument(
        "--concurrent-messages", type=int, default=3000, choices=range(1, 100_001), metavar="N"
    )
    parser.add_argument("--subscribers", type=int, default=50, choices=range(2, 10_001), metavar="N")
    parser.add_argument("--database-url", help="a scratch database (default: SQLite, cached in bench/.data)")
    quick_flag(parser)
    args = parser.parse_args()
    if args.quick:
        args.messages, args.concurrent_messages = 200, 600
    server_cpu, client_cpu = (None, None) if args.no_pin else cpus()
    pin_self(client_cpu)
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-send-"))
    try:
        data = dataset(args.subscribers, args.database_url, tmp).copy_to(tmp / "copy")
        with serve(data.env(), tmp / "palaver.log", cpu=server_cpu) as server:
            ours = run(measure(server, data.realm, args))
        with serve(data.env(), tmp / "bare.log", cpu=server_cpu, bare_db=tmp / "bare.db") as server:
            bare = run(measure(server, bare_realm(), args))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    database = "postgresql" if args.database_url else "sqlite"
    pinned = pin_line(server_cpu, client_cpu)
    print_table(
        f"POST /api/v1/messages to a channel of {args.subscribers} subscribers; {database}; {pinned}; "
        f"{machine_line()} at the end",
        [ours[0], bare[0], ours[1], bare[1]],
        unit="msg",
    )
    sequential, concurrent = ours[0], ours[1]
    share = 100 * concurrent.rps / bare[1].rps if bare[1].rps else math.nan
    print_targets(
        [
            ("sequential send p50", sequential.p(0.5), "<=", 3, "ms"),
            (f"{args.concurrency} senders", concurrent.rps, ">=", 1500, "msg/s"),
            (f"{args.concurrency} senders, share of the bare app's rate", share, ">=", 15, "%"),
        ]
    )


if __name__ == "__main__":
    main()
