"""Workers that add capacity (issue 11 7h): 1 vs 2 workers on PostgreSQL + Redis.

Run: .venv/bin/python bench/workers.py [--quick] [--messages 3000] [--concurrency 32]
                                       [--postgres postgresql://postgres@127.0.0.1:5432/postgres]
                                       [--redis-url redis://127.0.0.1:6379/0]

32 connections send ``--messages`` channel messages (50 subscribers) to, in turn:
``palaver serve`` with one SQLite worker (the reference), one worker on PostgreSQL +
Redis, and two workers on PostgreSQL + Redis; then the bare app (Basic auth, a form
parse, one SQLite insert) with one and with two uvicorn workers, the ceiling of what a
second process can add on this machine. Nothing is pinned: two workers need both CPUs,
and the load generator shares them (its own CPU is printed).

Per row: messages/s, p50/p99, and CPU per message of the server processes, of the
PostgreSQL backends serving this run's database (found in ``pg_stat_activity``), and of
``redis-server`` (shared with anything else using it). A scratch database
``palaver_bench_XXXX`` is created on the PostgreSQL server and dropped after, and the
run's Redis keys are deleted. Loopback only.
"""

from __future__ import annotations

import argparse
import math
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from common import (
    Dataset,
    Measurement,
    Realm,
    Server,
    bare_realm,
    build_request,
    cpu_seconds,
    drive,
    machine_line,
    processes_named,
    quick_flag,
    run,
    serve,
    sql_rows,
)
from send_messages import CHANNEL
from send_messages import dataset as send_dataset


@contextmanager
def scratch_database(admin_url: str) -> Iterator[str]:
    """A new empty database on the PostgreSQL server of ``admin_url``; dropped after."""
    import psycopg

    name = f"palaver_bench_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    try:
        yield admin_url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin_url, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def postgres_cpu(env: dict[str, str]) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend connected to the run's database."""
    url = env.get("PALAVER_DATABASE_URL")
    if not url:
        return {}
    name = url.rsplit("/", 1)[1]
    pids = sql_rows(env, "SELECT pid FROM pg_stat_activity WHERE datname = :d", d=name)
    found = {pid: cpu_seconds(pid) for (pid,) in pids}
    return {pid: cpu for pid, cpu in found.items() if not math.isnan(cpu)}  # NaN: it has just exited


def redis_cpu() -> float:
    return sum(cpu_seconds(pid) for pid in processes_named("redis-server"))


def clear_redis(env: dict[str, str]) -> None:
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


@dataclass
class Row:
    measurement: Measurement
    postgres_seconds: float = 0.0
    redis_seconds: float = 0.0

    def per_message(self, seconds: float) -> float:
        count = self.measurement.requests
        return 1000 * seconds / count if count else math.nan

    @property
    def total_ms(self) -> float:
        m = self.measurement
        return self.per_message(m.server_cpu_seconds + self.postgres_seconds + self.redis_seconds)


async def send_load(server: Server, realm: Realm, env: dict[str, str], args: argparse.Namespace) -> Row:
    host = realm.host(server.port)

    def make(i: int) -> bytes:
        form = {"type": "stream", "to": CHANNEL, "topic": f"w {i % 10}", "content": f"worker load {i}"}
        return build_request("POST", "/api/v1/messages", host, realm.authorization, form)

    # The warm-up opens every pooled database connection, so the backends are known before.
    await drive(server, "warm-up", make, count=4 * args.concurrency, concurrency=args.concurrency)
    postgres_before, redis_before = postgres_cpu(env), redis_cpu()
    measured = await drive(
        server, server.name, make, count=args.messages, concurrency=args.concurrency, seconds=300
    )
    postgres_after = postgres_cpu(env)
    postgres = sum(cpu - postgres_before.get(pid, 0.0) for pid, cpu in postgres_after.items())
    return Row(measured, postgres, redis_cpu() - redis_before if env.get("PALAVER_REDIS_URL") else 0.0)


def print_rows(rows: list[Row], args: argparse.Namespace) -> None:
    print(
        f"POST /api/v1/messages, {args.concurrency} senders, channel of 50 subscribers, {args.messages} "
        f"messages a row; unpinned; {machine_line()} at the end"
    )
    header = ("", "msg/s", "p50 ms", "p99 ms", "server ms", "+postgres", "+redis", "total ms", "client ms")
    print("  {:<26} {:>8} {:>8} {:>8} {:>10} {:>10} {:>8} {:>9} {:>10}".format(*header))
    for row in rows:
        m = row.measurement
        print(
            f"  {m.name:<26} {m.rps:>8,.0f} {m.p(0.5):>8.1f} {m.p(0.99):>8.1f} {m.server_ms:>10.2f} "
            f"{row.per_message(row.postgres_seconds):>10.2f} {row.per_message(row.redis_seconds):>8.2f} "
            f"{row.total_ms:>9.2f} {m.client_ms:>10.3f}"
        )
        for sample in m.error_samples[:2]:
            print(f"    error: {sample}")
    by_name = {row.measurement.name: row for row in rows}

    def ratio(a: str, b: str, value: Callable[[Row], float]) -> str:
        if a in by_name and b in by_name and value(by_name[b]):
            return f"{value(by_name[a]) / value(by_name[b]):.2f}"
        return "n/a"

    print(
        "palaver 2 workers / 1 worker (PostgreSQL + Redis), msg/s: "
        f"{ratio('palaver pg+redis x2', 'palaver pg+redis', lambda r: r.measurement.rps)} (target >= 1.5); "
        "bare 2 / 1: "
        f"{ratio('bare x2', 'bare', lambda r: r.measurement.rps)}"
    )
    print(
        "CPU per message, 1 worker PostgreSQL + Redis (all processes) / 1 SQLite worker: "
        f"{ratio('palaver pg+redis', 'palaver sqlite', lambda r: r.total_ms)} (target <= 1.5); "
        f"palaver sqlite / bare msg/s: {ratio('palaver sqlite', 'bare', lambda r: r.measurement.rps)}"
    )
    print("redis-server CPU is the whole server's: other users of it on this machine count too")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000, choices=range(1, 100_001), metavar="N")
    parser.add_argument("--concurrency", type=int, default=32, choices=range(1, 257), metavar="N")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    quick_flag(parser)
    args = parser.parse_args()
    if args.quick:
        args.messages = 200
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-workers-"))
    rows: list[Row] = []
    try:
        sqlite = send_dataset(50, None, tmp).copy_to(tmp / "sqlite")
        with serve(sqlite.env(), tmp / "sqlite.log") as server:
            server.name = "palaver sqlite"
            rows.append(run(send_load(server, sqlite.realm, sqlite.env(), args)))
        with scratch_database(args.postgres) as database_url:
            postgres: Dataset = send_dataset(50, database_url, tmp)
            env = postgres.env(PALAVER_REDIS_URL=args.redis_url)
            try:
                for workers in (1, 2):
                    with serve(env, tmp / f"pg{workers}.log", workers=workers) as server:
                        server.name = "palaver pg+redis" + (f" x{workers}" if workers > 1 else "")
                        rows.append(run(send_load(server, postgres.realm, env, args)))
            finally:
                clear_redis(env)
        for workers in (1, 2):
            with serve(sqlite.env(), tmp / "bare.log", workers=workers, bare_db=tmp / "bare.db") as server:
                rows.append(run(send_load(server, bare_realm(), {}, args)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_rows(rows, args)


if __name__ == "__main__":
    main()
