"""Workers that add capacity: 1 vs 2 workers on PostgreSQL + Redis.

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
PostgreSQL backends serving this run's database, and of ``redis-server`` (shared with
anything else using it). The backends are sampled from ``pg_stat_activity`` every 0.1 s
during the row, so one that a worker's pool opens and closes within the row counts too
(up to its last sample); the number of PostgreSQL sessions opened in the row is printed
(a pool that churns connections pays for a backend start each time), and so is how many
of the connections each worker holds a second into the row (from ``/proc``: the kernel
spreads them over the workers' sockets by a hash, so splits like 20/12 happen). A scratch database
``palaver_bench_XXXX`` is created on the PostgreSQL server and dropped after, and the
run's Redis keys are deleted. ``--rows`` runs some rows only (profiling). Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import (
    Dataset,
    Measurement,
    Realm,
    Server,
    bare_realm,
    build_request,
    connections_per_worker,
    cpu_seconds,
    drive,
    machine_line,
    print_targets,
    processes_named,
    quick_flag,
    run,
    seed_channel,
    serve,
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


class PostgresMeter:
    """CPU of the backends serving one database while a row runs, and sessions opened.

    Sampled from a connection to the admin database (so the meter is not one of the
    backends it measures): a backend seen first during the row counts whole, one seen
    before counts from its first sample.
    """

    INTERVAL = 0.1

    def __init__(self, admin_url: str, database: str) -> None:
        self.admin_url = admin_url
        self.database = database
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sessions_before = 0
        self.sessions = 0
        self.table_reads: dict[str, tuple[int, ...]] = {}

    def _sessions(self, connection: Any) -> int:
        row = connection.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", (self.database,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _sample(self, connection: Any, baseline: bool) -> None:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.database,)
        ).fetchall()
        for (pid,) in rows:
            cpu = cpu_seconds(pid)
            if math.isnan(cpu):
                continue  # it has just exited: its last sample stands
            if pid not in self._first:
                self._first[pid] = cpu if baseline else 0.0
            self._last[pid] = cpu

    def _run(self, connection: Any) -> None:
        while not self._stop.wait(self.INTERVAL):
            self._sample(connection, baseline=False)

    def _table_reads(self) -> dict[str, tuple[int, int, int]]:
        """Per table: sequential scans, rows they read, index scans (the run's database)."""
        import psycopg

        url = self.admin_url.rsplit("/", 1)[0] + "/" + self.database
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("SELECT pg_stat_clear_snapshot()")
            rows = connection.execute(
                "SELECT relname, seq_scan, seq_tup_read, coalesce(idx_scan, 0) FROM pg_stat_user_tables"
            ).fetchall()
        return {name: (seq, tuples, idx) for name, seq, tuples, idx in rows}

    def __enter__(self) -> PostgresMeter:
        import psycopg

        self._tables_before = self._table_reads()
        self._connection = psycopg.connect(self.admin_url, autocommit=True)
        self._sessions_before = self._sessions(self._connection)
        self._sample(self._connection, baseline=True)
        self._thread = threading.Thread(target=self._run, args=(self._connection,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self._sample(self._connection, baseline=False)
        self.sessions = self._sessions(self._connection) - self._sessions_before
        self._connection.close()
        # Statistics reach the shared view up to a second after a transaction ends.
        time.sleep(1.5)
        after = self._table_reads()
        self.table_reads = {
            name: tuple(a - b for a, b in zip(value, self._tables_before.get(name, (0, 0, 0)), strict=True))
            for name, value in after.items()
        }

    @property
    def seconds(self) -> float:
        return sum(cpu - self._first[pid] for pid, cpu in self._last.items())


ROWS = ("sqlite", "pg1", "pg2", "bare1", "bare2")


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
    postgres_sessions: int = 0

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

    # The warm-up opens the pooled database connections and fills the caches.
    await drive(server, "warm-up", make, count=4 * args.concurrency, concurrency=args.concurrency)
    url = env.get("PALAVER_DATABASE_URL")
    if not url:
        measured = await drive(
            server, server.name, make, count=args.messages, concurrency=args.concurrency, seconds=300
        )
        return Row(measured)
    redis_before = redis_cpu()
    with PostgresMeter(args.postgres, url.rsplit("/", 1)[1]) as meter:
        # How the connections spread over the workers, read once they are all open.
        split = asyncio.get_running_loop().run_in_executor(None, _split_after, server, 1.0)
        measured = await drive(
            server, server.name, make, count=args.messages, concurrency=args.concurrency, seconds=300
        )
    print(f"  {server.name}: connections per worker {'/'.join(map(str, await split))}")
    scans = sorted(meter.table_reads.items(), key=lambda item: -item[1][1])
    busiest = ", ".join(
        f"{name} {seq}/{tuples}/{idx}" for name, (seq, tuples, idx) in scans[:6] if seq or idx
    )
    print(f"  {server.name}: table seq scans/rows read/index scans: {busiest}")
    return Row(measured, meter.seconds, redis_cpu() - redis_before, meter.sessions)


def _split_after(server: Server, seconds: float) -> list[int]:
    time.sleep(seconds)
    return connections_per_worker(server)


def print_rows(rows: list[Row], args: argparse.Namespace) -> None:
    print(
        f"POST /api/v1/messages, {args.concurrency} senders, channel of 50 subscribers, {args.messages} "
        f"messages a row; unpinned; {machine_line()} at the end"
    )
    header = (
        "",
        "msg/s",
        "p50 ms",
        "p99 ms",
        "server ms",
        "+postgres",
        "+redis",
        "total ms",
        "client ms",
        "pg sessions",
    )
    print("  {:<26} {:>8} {:>8} {:>8} {:>10} {:>10} {:>8} {:>9} {:>10} {:>12}".format(*header))
    for row in rows:
        m = row.measurement
        print(
            f"  {m.name:<26} {m.rps:>8,.0f} {m.p(0.5):>8.1f} {m.p(0.99):>8.1f} {m.server_ms:>10.2f} "
            f"{row.per_message(row.postgres_seconds):>10.2f} {row.per_message(row.redis_seconds):>8.2f} "
            f"{row.total_ms:>9.2f} {m.client_ms:>10.3f} {row.postgres_sessions:>12}"
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

    def figure(a: str, b: str, value: Callable[[Row], float]) -> float:
        if a in by_name and b in by_name and value(by_name[b]):
            return value(by_name[a]) / value(by_name[b])
        return math.nan

    print_targets(
        [
            (
                "2 workers / 1 (PostgreSQL + Redis), msg/s",
                figure("palaver pg+redis x2", "palaver pg+redis", lambda r: r.measurement.rps),
                ">=",
                1.5,
                "x",
            ),
            (
                "CPU per message, PostgreSQL + Redis / SQLite",
                figure("palaver pg+redis", "palaver sqlite", lambda r: r.total_ms),
                "<=",
                1.5,
                "x",
            ),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000, choices=range(1, 100_001), metavar="N")
    parser.add_argument("--concurrency", type=int, default=32, choices=range(1, 257), metavar="N")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--history",
        type=int,
        default=5000,
        choices=range(0, 1_000_001),
        metavar="N",
        help="messages already in the channel before a run (default 5000)",
    )
    parser.add_argument(
        "--rows",
        default=",".join(ROWS),
        help=f"comma-separated subset of {','.join(ROWS)} (e.g. pg1 to profile one worker)",
    )
    quick_flag(parser)
    args = parser.parse_args()
    if args.quick:
        args.messages = 200
    wanted = set(args.rows.split(","))
    if not wanted <= set(ROWS):
        parser.error(f"--rows: unknown {sorted(wanted - set(ROWS))}")
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-workers-"))
    rows: list[Row] = []
    try:
        sqlite = send_dataset(50, None, tmp).copy_to(tmp / "sqlite")
        # History first, on both databases: an empty message table is no deployment's, and on
        # PostgreSQL it makes each backend plan its foreign-key checks of user_message rows as
        # sequential scans of message, kept while the table grows (40 scans per send).
        if args.history:
            seed_channel(sqlite.env(), sqlite.realm, 50, messages=args.history)
        if "sqlite" in wanted:
            with serve(sqlite.env(), tmp / "sqlite.log") as server:
                server.name = "palaver sqlite"
                rows.append(run(send_load(server, sqlite.realm, sqlite.env(), args)))
        if wanted & {"pg1", "pg2"}:
            with scratch_database(args.postgres) as database_url:
                postgres: Dataset = send_dataset(50, database_url, tmp)
                env = postgres.env(PALAVER_REDIS_URL=args.redis_url)
                if args.history:
                    seed_channel(env, postgres.realm, 50, messages=args.history)
                try:
                    for workers in (1, 2):
                        if f"pg{workers}" not in wanted:
                            continue
                        with serve(env, tmp / f"pg{workers}.log", workers=workers) as server:
                            server.name = "palaver pg+redis" + (f" x{workers}" if workers > 1 else "")
                            rows.append(run(send_load(server, postgres.realm, env, args)))
                finally:
                    clear_redis(env)
        for workers in (1, 2):
            if f"bare{workers}" not in wanted:
                continue
            with serve(sqlite.env(), tmp / "bare.log", workers=workers, bare_db=tmp / "bare.db") as server:
                rows.append(run(send_load(server, bare_realm(), {}, args)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_rows(rows, args)


if __name__ == "__main__":
    main()
