"""Shared pieces of the benchmarks: servers, the bare baseline, a light HTTP client, datasets.

- ``serve`` starts ``palaver serve`` (or the bare app) as a real process on 127.0.0.1,
  pinned with ``taskset`` when asked, and waits until it answers; ``Server`` reads the
  CPU time and resident memory of it and its worker processes from ``/proc``.
- The bare app (``python bench/common.py bare ...``) is the floor every benchmark prints
  beside Palaver's figure: Starlette under uvicorn with the options ``palaver serve``
  uses, doing the least a real server must for the same request (Basic auth, parse, one
  SQLite statement, JSON), so results read as ratios on a noisy machine.
- ``Connection`` is a raw keep-alive HTTP/1.1 client on asyncio (a few tens of
  microseconds per request where httpx costs about a millisecond), so the load generator
  measures the server and not itself; ``ClientCost`` reports what it did cost.
- ``cached_dataset`` builds a seeded organization once (bulk inserts through ``palaver
  seed-users`` / ``seed-messages``) and keeps it under ``bench/.data/`` (git-ignored),
  keyed by its sizes and the schema, so a rerun does not seed again.

Everything listens on and connects to 127.0.0.1 only; every loop is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import math
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DATA_ROOT = BENCH_DIR / ".data"
LOOPBACK = "127.0.0.1"
# Mirrors palaver.bootstrap.run_server, so the bare server differs only in the app.
UVICORN_OPTIONS: dict[str, Any] = {
    "loop": "uvloop",
    "http": "httptools",
    "log_level": "warning",
    "access_log": False,
    "timeout_graceful_shutdown": 5,
    "timeout_keep_alive": 20,  # palaver's keep_alive_timeout_seconds
}
BARE_EMAIL = "bare@example.com"
BARE_KEY = "bare-api-key"


# Processes -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def clean_environment(**extra: str) -> dict[str, str]:
    """This environment without Palaver settings or proxies, plus ``extra``."""
    dropped = ("PALAVER_", "DATABASE_URL", "REDIS_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    for proxy in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env.pop(proxy, None)
    env.update(extra)
    return env


def server_env(
    data_dir: Path, database_url: str | None = None, redis_url: str | None = None, **extra: str
) -> dict[str, str]:
    """The environment every benchmark's ``palaver`` runs with, plus ``extra``.

    Rate limiting stays on (its cost is part of every request) but never refuses, and
    password hashing is cheap so creating organizations and users doesn't dominate.
    """
    env = clean_environment(
        PALAVER_DATA_DIR=str(data_dir),
        PALAVER_HOST=LOOPBACK,
        PALAVER_LOG_LEVEL="warning",
        PALAVER_CREATE_DEMO_REALM="false",
        PALAVER_API_RATE_LIMIT="1000000000/60",
        PALAVER_PASSWORD_TIME_COST="1",
        PALAVER_PASSWORD_MEMORY_COST_KIB="8",
        **extra,
    )
    if database_url:
        env["PALAVER_DATABASE_URL"] = database_url
    if redis_url:
        env["PALAVER_REDIS_URL"] = redis_url
    return env


def _stat_fields(pid: int) -> list[str]:
    # Fields after the parenthesised command name (which may hold spaces).
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process (all its threads) has used; NaN if it is gone."""
    try:
        fields = _stat_fields(pid)
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (uvicorn's workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                children.setdefault(int(_stat_fields(int(entry.name))[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def _port_sockets(port: int) -> dict[int, str]:
    """Inode to TCP state (``0A`` listening, ``01`` established) of the IPv4 sockets whose
    local port is ``port``: on the server's side of loopback connections, its own."""
    sockets = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port:
            sockets[int(fields[9])] = fields[3]
    return sockets


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes


def connections_per_worker(server: Server) -> list[int]:
    """Established connections each worker process of ``server`` holds, busiest first.

    The workers are the processes below the main one that listen on the port (the main
    process of ``--workers N`` holds the listening sockets too, but accepts nothing)."""
    sockets = _port_sockets(server.port)
    counts = []
    for pid in descendants(server.pid):
        held = _socket_inodes(pid)
        if pid != server.pid and any(sockets.get(inode) == "0A" for inode in held):
            counts.append(sum(1 for inode in held if sockets.get(inode) == "01"))
    if not counts:  # one process, serving itself
        counts.append(sum(1 for inode in _socket_inodes(server.pid) if sockets.get(inode) == "01"))
    return sorted(counts, reverse=True)


def processes_named(name: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() == name:
                    pids.append(int(entry.name))
    return pids


def cpus() -> tuple[int | None, int | None]:
    """(server CPU, client CPU): two different ones when this process may use two or more."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) >= 2 and shutil.which("taskset"):
        return allowed[0], allowed[1]
    return None, None


def pin_self(cpu: int | None) -> None:
    """Pin this process (the load generator) to one CPU, away from the server's."""
    if cpu is not None:
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(int(task.name), {cpu})


def raise_file_limit(connections: int) -> None:
    """Room for ``connections`` sockets here and in the servers started from here."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 2 * connections + 512))
    if wanted < connections + 256:
        raise SystemExit(f"the file-descriptor limit ({hard}) is too low for {connections} connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def pin_line(server_cpu: int | None, client_cpu: int | None) -> str:
    if server_cpu is None:
        return "unpinned"
    return f"server on CPU {server_cpu}, client on CPU {client_cpu}"


def machine_line() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} CPUs, load average {load}"


def exit_on_sigterm() -> None:
    """SIGTERM (``timeout``'s, a CI job's) ends the run as an exception would: ``finally``
    blocks remove its temporary directories and stop what it started."""

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def palaver(*args: str) -> list[str]:
    return [sys.executable, "-m", "palaver.cli", *args]


def run_cli(env: dict[str, str], *args: str, timeout: float = 3600) -> str:
    """Run a ``palaver`` command to completion; its standard output, or exit with its errors."""
    done = subprocess.run(
        palaver(*args), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise SystemExit(f"palaver {args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def basic_auth(email: str, api_key: str) -> str:
    return "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    name: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def pids(self) -> list[int]:
        return descendants(self.process.pid)

    def cpu_seconds(self) -> float:
        """CPU time of the server and its worker processes so far."""
        return sum(cpu_seconds(pid) for pid in self.pids())

    def rss_bytes(self) -> int:
        return sum(rss_bytes(pid) for pid in self.pids())


@contextlib.contextmanager
def serve(
    env: dict[str, str],
    log: Path,
    *,
    workers: int = 1,
    cpu: int | None = None,
    bare_db: Path | None = None,
    ready_path: str = "/api/v1/server_settings",
) -> Iterator[Server]:
    """``palaver serve`` (or, with ``bare_db``, the bare app on that SQLite file) on a free
    port of 127.0.0.1 until the block ends; on CPU ``cpu`` when given (taskset)."""
    port = free_port()
    if bare_db is not None:
        argv = [sys.executable, str(Path(__file__).resolve()), "bare", "--port", str(port)]
        argv += ["--db", str(bare_db), "--workers", str(workers)]
        name = "bare" if workers == 1 else f"bare x{workers}"
        ready_path = "/ready"
    else:
        argv = palaver("serve", "--port", str(port), "--workers", str(workers))
        name = "palaver" if workers == 1 else f"palaver x{workers}"
    if cpu is not None:
        argv = ["taskset", "--cpu-list", str(cpu), *argv]
    with log.open("ab") as out:
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        _wait_ready(process, port, ready_path, log)
        yield Server(process, port, name)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(process: subprocess.Popen[bytes], port: int, path: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    request = f"GET {path} HTTP/1.1\r\nHost: {LOOPBACK}\r\nConnection: close\r\n\r\n".encode()
    while True:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise SystemExit(f"server did not start within 120 s:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=5) as sock:
            sock.sendall(request)
            if sock.recv(64).startswith(b"HTTP/1.1 200"):
                return
        time.sleep(0.2)


def wait_idle(server: Server, *, quiet: float = 0.05, window: float = 1.0, timeout: float = 300) -> None:
    """Until the server has used under ``quiet`` CPU seconds in ``window``."""
    deadline = time.monotonic() + timeout
    previous = server.cpu_seconds()
    while time.monotonic() < deadline:
        time.sleep(window)
        current = server.cpu_seconds()
        if current - previous < quiet:
            return
        previous = current
    raise SystemExit(f"{server.name} never went idle")


# Organizations and cached datasets ------------------------------------------------------------


@dataclass
class Realm:
    string_id: str
    email: str
    api_key: str

    def host(self, port: int) -> str:
        # The realm is chosen by subdomain; the connection still goes to 127.0.0.1.
        return f"{self.string_id}.{LOOPBACK}:{port}"

    @property
    def authorization(self) -> str:
        return basic_auth(self.email, self.api_key)


def create_bench_realm(env: dict[str, str]) -> Realm:
    """A fresh organization made with the CLI."""
    string_id = f"bench-{secrets.token_hex(4)}"
    email = f"owner@{string_id}.example.com"
    output = run_cli(
        env,
        "create-realm",
        "--name",
        "Bench",
        "--string-id",
        string_id,
        "--owner-email",
        email,
        "--owner-name",
        "Bench Owner",
        # One argument: a URL-safe token may start with "-", which would read as a flag.
        f"--password={secrets.token_urlsafe(16)}",
        timeout=180,
    )
    match = re.search(r"API key (\w+)", output)
    if match is None:
        raise SystemExit(f"no API key in create-realm output:\n{output}")
    return Realm(string_id, email, match.group(1))


def schema_key() -> str:
    """Changes when the migrations or the seeding code do, so a cache is never stale."""
    digest = hashlib.sha256()
    src = ROOT / "src" / "palaver"
    for path in sorted((src / "migrations" / "versions").glob("*.py")):
        digest.update(path.name.encode())
    digest.update((src / "seed.py").read_bytes())
    return digest.hexdigest()[:12]


@dataclass
class Dataset:
    data_dir: Path
    realm: Realm
    extra: dict[str, Any] = field(default_factory=dict)
    database_url: str | None = None

    def env(self, data_dir: Path | None = None, **extra: str) -> dict[str, str]:
        return server_env(data_dir or self.data_dir, self.database_url, **extra)

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "palaver.db"

    def copy_to(self, target: Path) -> Dataset:
        """A working copy for a benchmark that writes (SQLite only)."""
        if self.database_url:
            return self
        target.mkdir(parents=True, exist_ok=True)
        for path in self.data_dir.iterdir():
            if path.is_file():
                shutil.copy2(path, target / path.name)
        return Dataset(target, self.realm, self.extra)


def cached_dataset(
    name: str,
    sizes: dict[str, Any],
    build: Callable[[dict[str, str], Realm], dict[str, Any]],
    *,
    database_url: str | None = None,
    scratch: Path | None = None,
) -> Dataset:
    """An organization seeded by ``build(env, realm)`` (which returns extra facts to keep).

    SQLite datasets live under ``bench/.data/NAME-KEY/`` and are reused while the sizes
    and the schema are the same. With ``database_url`` (a scratch database) the dataset
    is built there every time, with its data directory in ``scratch``.
    """
    if database_url:
        if scratch is None:
            raise ValueError("a scratch directory is needed with a database URL")
        env = server_env(scratch, database_url)
        realm = create_bench_realm(env)
        return Dataset(scratch, realm, build(env, realm), database_url)
    key = hashlib.sha256(json.dumps([sizes, schema_key()], sort_keys=True).encode()).hexdigest()[:10]
    directory = DATA_ROOT / f"{name}-{key}"
    meta = directory / "meta.json"
    if meta.exists():
        saved = json.loads(meta.read_text())
        # What an earlier server left: queues it persisted at shutdown.
        (directory / "event_queues.json").unlink(missing_ok=True)
        print(f"dataset {name} {sizes}: cached in {directory}", file=sys.stderr)
        return Dataset(directory, Realm(**saved["realm"]), saved["extra"])
    building = directory.with_name(directory.name + f".building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    started = time.monotonic()
    print(f"dataset {name} {sizes}: seeding into {directory} ...", file=sys.stderr)
    env = server_env(building)
    realm = create_bench_realm(env)
    extra = build(env, realm)
    (building / "meta.json").write_text(
        json.dumps({"sizes": sizes, "realm": realm.__dict__, "extra": extra}, indent=1)
    )
    shutil.rmtree(directory, ignore_errors=True)
    building.rename(directory)
    print(f"dataset {name}: seeded in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return Dataset(directory, realm, extra)


def large_organization(
    users: int, channels: int, *, database_url: str | None = None, scratch: Path | None = None
) -> Dataset:
    """``users`` members and ``channels`` channels made by ``palaver seed-users`` (the owner
    in every channel, each member in 10): the organization ``register.py`` and
    ``realm_changes.py`` share (cached as ``register``)."""

    def build(env: dict[str, str], realm: Realm) -> dict[str, Any]:
        argv = ["seed-users", "--realm", realm.string_id, "--users", str(users), "--channels", str(channels)]
        return {"seeded": run_cli(env, *argv).strip()}

    sizes = {"users": users, "channels": channels}
    return cached_dataset("register", sizes, build, database_url=database_url, scratch=scratch)


def seed_channel(
    env: dict[str, str], realm: Realm, subscribers: int, messages: int = 0, channels: int = 1
) -> str:
    """``palaver seed-messages``: ``channels`` channels of ``subscribers`` members (the
    owner among them), and ``messages`` messages spread over them (10% direct)."""
    return run_cli(
        env,
        "seed-messages",
        "--realm",
        realm.string_id,
        "--messages",
        str(messages),
        "--channels",
        str(channels),
        "--subscribers",
        str(subscribers),
        "--quiet",
    ).strip()


def sql_rows(env: dict[str, str], sql: str, **params: Any) -> list[tuple[Any, ...]]:
    """Rows of one statement on the dataset's database (IDs and keys at set-up)."""
    from sqlalchemy import create_engine, text

    url = env.get("PALAVER_DATABASE_URL") or f"sqlite:///{Path(env['PALAVER_DATA_DIR']) / 'palaver.db'}"
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(sql), params)]
    finally:
        engine.dispose()


# Measurements ---------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile, in milliseconds, of values in seconds."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000


@dataclass
class Measurement:
    name: str
    requests: int
    errors: int
    seconds: float
    latencies: list[float]
    server_cpu_seconds: float = math.nan
    client_cpu_seconds: float = math.nan
    error_samples: list[str] = field(default_factory=list)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def p(self, q: float) -> float:
        return percentile(self.latencies, q)

    @property
    def server_ms(self) -> float:
        """Server CPU milliseconds per request: unlike latency, hardly moved by other load."""
        return 1000 * self.server_cpu_seconds / self.requests if self.requests else math.nan

    @property
    def client_ms(self) -> float:
        return 1000 * self.client_cpu_seconds / self.requests if self.requests else math.nan


def print_table(title: str, rows: list[Measurement], unit: str = "req") -> None:
    """Rows, then palaver/bare ratios for each palaver row against the bare row after it."""
    print(title)
    header: tuple[str, ...] = ("", "count", "errors", f"{unit}/s", "p50 ms", "p99 ms")
    header += (f"srv CPU ms/{unit}", f"client ms/{unit}")
    print("  {:<36} {:>7} {:>6} {:>9} {:>9} {:>9} {:>16} {:>14}".format(*header))
    for m in rows:
        print(
            f"  {m.name:<36} {m.requests:>7} {m.errors:>6} {m.rps:>9,.0f} {m.p(0.5):>9.2f} "
            f"{m.p(0.99):>9.2f} {m.server_ms:>16.3f} {m.client_ms:>14.3f}"
        )
    bares = [m for m in rows if m.name.startswith("bare")]
    for m in rows:
        if m.name.startswith("bare") or not bares:
            continue
        bare = next((b for b in bares if b.name.split(":", 1)[-1] == m.name.split(":", 1)[-1]), bares[0])

        def ratio(a: float, b: float) -> str:
            return f"{a / b:.3f}" if b and not math.isnan(a) and not math.isnan(b) else "n/a"

        print(
            f"  {m.name + ' / ' + bare.name.split(':')[0]:<36} {'':>7} {'':>6} {ratio(m.rps, bare.rps):>9} "
            f"{ratio(m.p(0.5), bare.p(0.5)):>9} {ratio(m.p(0.99), bare.p(0.99)):>9} "
            f"{ratio(m.server_ms, bare.server_ms):>16}"
        )
    for m in rows:
        for sample in m.error_samples[:3]:
            print(f"  {m.name} error: {sample}")


def print_targets(checks: list[tuple[str, float, str, float, str]]) -> None:
    """One line per issue-11 target: this run's figure, the target, and whether it was met.

    Each check is (what, figure, "<=" or ">=", target, unit). A figure that could not be
    measured (NaN) is "not met".
    """
    print("targets:" if checks else "targets: none at these sizes")
    for what, value, op, target, unit in checks:
        met = value <= target if op == "<=" else value >= target
        shown = "n/a" if math.isnan(value) else f"{value:,.2f}"
        print(f"  {what}: {shown} {unit}, target {op} {target:,g} {unit}: {'met' if met else 'NOT met'}")


class ClientCost:
    """This process's CPU time (every thread) between two points."""

    def __init__(self) -> None:
        self.started = self._now()

    @staticmethod
    def _now() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def seconds(self) -> float:
        return self._now() - self.started


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (a dependency of Palaver's), so the client costs less."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return cast(asyncio.AbstractEventLoop, uvloop.new_event_loop())


def run(coro: Any) -> Any:
    with asyncio.Runner(loop_factory=new_loop) as runner:
        return runner.run(coro)


# A light HTTP/1.1 client ----------------------------------------------------------------------


class HttpError(Exception):
    pass


class _Wire(asyncio.Protocol):
    """One transport's worth of a ``Connection``: parses only the status, Content-Length
    (or chunked encoding) and the body."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement the interface without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(HttpError(f"connection lost: {exc}"))

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is None or self.waiter.done():
            return
        parsed = self._parse()
        if parsed is not None:
            self.waiter.set_result(parsed)

    def _parse(self) -> tuple[int, bytes] | None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = bytes(self.buffer[:end]).lower() + b"\r\n"
        status = int(head[9:12])
        at = head.find(b"\r\ncontent-length:")
        if at >= 0:
            length = int(head[at + 17 : head.index(b"\r\n", at + 2)])
            if len(self.buffer) < end + 4 + length:
                return None
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            return status, body
        if b"transfer-encoding: chunked" not in head:
            raise HttpError("response without a length")
        position, chunks = end + 4, []
        while True:
            line_end = self.buffer.find(b"\r\n", position)
            if line_end < 0:
                return None
            size = int(bytes(self.buffer[position:line_end]).split(b";")[0], 16)
            if len(self.buffer) < line_end + 2 + size + 2:
                return None
            chunks.append(bytes(self.buffer[line_end + 2 : line_end + 2 + size]))
            position = line_end + 2 + size + 2
            if size == 0:
                del self.buffer[:position]
                return status, b"".join(chunks)


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1:port; one request at a time."""

    # Below the servers' keep-alive timeout (20 s): a connection idle longer is replaced
    # before use, as browsers do, or a request could race the server closing it.
    IDLE_LIMIT = 15.0

    def __init__(self, port: int, wire: _Wire) -> None:
        self.port = port
        self.wire = wire
        self.last_used = time.monotonic()

    @classmethod
    async def open(cls, port: int) -> Connection:
        _, wire = await asyncio.get_running_loop().create_connection(_Wire, LOOPBACK, port)
        return cls(port, wire)

    @property
    def closed(self) -> bool:
        return self.wire.closed

    async def request(self, raw: bytes, timeout: float = 60) -> tuple[int, bytes]:
        wire = self.wire
        if wire.closed or wire.transport is None or time.monotonic() - self.last_used > self.IDLE_LIMIT:
            # Closed by the server while idle, or about to be: open another. A connection
            # lost during a request is an error, not retried.
            if wire.transport is not None:
                wire.transport.close()
            _, wire = await asyncio.get_running_loop().create_connection(_Wire, LOOPBACK, self.port)
            self.wire = wire
        assert wire.transport is not None
        wire.waiter = asyncio.get_running_loop().create_future()
        wire.transport.write(raw)
        try:
            return await asyncio.wait_for(wire.waiter, timeout)
        finally:
            self.last_used = time.monotonic()

    def close(self) -> None:
        if self.wire.transport is not None:
            self.wire.transport.close()


def build_request(
    method: str, path: str, host: str, authorization: str, form: dict[str, str] | None = None
) -> bytes:
    from urllib.parse import urlencode

    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {authorization}\r\n"
    if form is None:
        return (head + "\r\n").encode()
    body = urlencode(form).encode()
    head += f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def query(path: str, params: dict[str, str]) -> str:
    from urllib.parse import urlencode

    return f"{path}?{urlencode(params)}"


async def drive(
    server: Server,
    name: str,
    make: Callable[[int], bytes],
    *,
    count: int,
    concurrency: int,
    seconds: float = 600,
    warmup: int = 0,
    ok: Callable[[int, bytes], bool] = lambda status, body: status == 200,
) -> Measurement:
    """``count`` requests (``make(i)`` builds the i-th) from ``concurrency`` connections,
    stopping after ``seconds``; latency per request, server and client CPU over the run."""
    connections = [await Connection.open(server.port) for _ in range(concurrency)]
    try:
        for i in range(warmup):
            await connections[i % concurrency].request(make(-1 - i))
        latencies: list[float] = []
        errors: list[str] = []
        counter = iter(range(count))
        server_before, client = server.cpu_seconds(), ClientCost()
        started = time.perf_counter()
        deadline = started + seconds

        async def worker(connection: Connection) -> None:
            for i in counter:
                if time.perf_counter() > deadline:
                    return
                raw = make(i)
                t0 = time.perf_counter()
                try:
                    status, body = await connection.request(raw)
                    good = ok(status, body)
                except (HttpError, TimeoutError, OSError) as error:
                    status, body, good = 0, repr(error).encode(), False
                latencies.append(time.perf_counter() - t0)
                if not good:
                    errors.append(f"{status} {body[:200].decode(errors='replace')}")

        await asyncio.gather(*(worker(c) for c in connections))
        elapsed = time.perf_counter() - started
        return Measurement(
            name,
            len(latencies),
            len(errors),
            elapsed,
            latencies,
            server.cpu_seconds() - server_before,
            client.seconds(),
            errors[:5],
        )
    finally:
        for connection in connections:
            connection.close()


Number = TypeVar("Number", int, float)


def bounded(kind: Callable[[str], Number], low: Number, high: Number) -> Callable[[str], Number]:
    """An argparse ``type``: a number from ``low`` to ``high`` (``choices=range(…)`` would
    list every allowed value in its error)."""

    def parse(text: str) -> Number:
        value = kind(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:,} and {high:,}")
        return value

    return parse


def organization_flags(parser: argparse.ArgumentParser, *, minimum: int) -> None:
    """``--users`` and ``--channels`` of ``large_organization`` (10,000 and 1,000; at least
    ``minimum`` each); ``quick_organization`` makes them 1,000 and 100."""
    parser.add_argument("--users", type=bounded(int, minimum, 100_000), default=10_000, metavar="N")
    parser.add_argument("--channels", type=bounded(int, minimum, 10_000), default=1_000, metavar="N")


def quick_organization(args: argparse.Namespace) -> None:
    args.users, args.channels = 1_000, 100


def quick_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="small sizes: proves it works in seconds")
    parser.add_argument("--no-pin", action="store_true", help="leave the server and the client unpinned")


# The bare baseline app --------------------------------------------------------------------------


def bare_app(db_path: Path) -> Any:
    """Starlette doing the least a server must: Basic auth, parse, one SQLite statement.

    ``db_path`` is a copy of (or the same file as) the Palaver database of the benchmark, so
    the reads run against the same million rows; the inserts go to a table of its own.
    """
    import sqlite3
    from urllib.parse import parse_qsl

    import orjson
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    db = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=10000"):
        db.execute(f"PRAGMA {pragma}")
    created: list[bool] = []
    expected = basic_auth(BARE_EMAIL, BARE_KEY)
    waiting: list[asyncio.Future[bytes]] = []

    def json(data: Any, status: int = 200) -> Response:
        return Response(orjson.dumps(data), status, media_type="application/json")

    def authorized(request: Request) -> bool:
        header = request.headers.get("authorization", "")
        if header == expected:
            return True
        with contextlib.suppress(ValueError):
            email, _, _ = base64.b64decode(header.removeprefix("Basic ")).decode().partition(":")
            return email != ""
        return False

    async def send(request: Request) -> Response:
        if not authorized(request):
            return json({"result": "error"}, 401)
        form = dict(parse_qsl((await request.body()).decode()))
        if not created:  # on first use, so that reading benchmarks leave their dataset as it was
            db.execute(
                "CREATE TABLE IF NOT EXISTS bare_message (id INTEGER PRIMARY KEY, sender TEXT, "
                "recipient TEXT, topic TEXT, content TEXT, sent REAL)"
            )
            created.append(True)
        cursor = db.execute(
            "INSERT INTO bare_message (sender, recipient, topic, content, sent) VALUES (?, ?, ?, ?, ?)",
            (BARE_EMAIL, form.get("to"), form.get("topic"), form.get("content"), time.time()),
        )
        message_id = cursor.lastrowid
        body = orjson.dumps({"type": "message", "id": 0, "message": {"id": message_id, **form}})
        body = b'{"result":"success","msg":"","events":[' + body + b"]}"
        for future in waiting:
            if not future.done():
                future.set_result(body)
        waiting.clear()
        return json({"result": "success", "msg": "", "id": message_id})

    async def messages(request: Request) -> Response:
        if not authorized(request):
            return json({"result": "error"}, 401)
        count = int(request.query_params.get("num_before", "50"))
        narrow = orjson.loads(request.query_params.get("narrow", "[]"))
        terms = {term["operator"]: term["operand"] for term in narrow}
        columns = "m.id, m.sender_id, m.recipient_id, m.subject, m.content, m.rendered_content, m.date_sent"
        channel_join = "JOIN stream s ON s.recipient_id = m.recipient_id"
        if "search" in terms:
            # FTS5 hands rows out in rowid order: newest first without sorting every match.
            where, values = "message_fts MATCH ?", [terms["search"]]
            if "channel" in terms:
                where += " AND s.id = ?"
                values.append(terms["channel"])
            sql = (
                f"SELECT {columns} FROM message_fts JOIN message m ON m.id = message_fts.rowid "
                f"{channel_join if 'channel' in terms else ''} WHERE {where} "
                "ORDER BY message_fts.rowid DESC LIMIT ?"
            )
            rows = db.execute(sql, (*values, count)).fetchall()
        elif "channel" in terms:
            where, values = "s.id = ?", [terms["channel"]]
            if "topic" in terms:
                where += " AND lower(m.subject) = lower(?)"
                values.append(terms["topic"])
            sql = f"SELECT {columns} FROM message m {channel_join} WHERE {where} ORDER BY m.id DESC LIMIT ?"
            rows = db.execute(sql, (*values, count)).fetchall()
        else:
            sql = f"SELECT {columns} FROM message m ORDER BY m.id DESC LIMIT ?"
            rows = db.execute(sql, (count,)).fetchall()
        keys = ("id", "sender_id", "recipient_id", "subject", "content", "rendered_content", "timestamp")
        found = [dict(zip(keys, row, strict=True)) for row in reversed(rows)]
        return json({"result": "success", "msg": "", "messages": found})

    async def register(request: Request) -> Response:
        if not authorized(request):
            return json({"result": "error"}, 401)
        await request.body()
        users = db.execute(
            "SELECT id, email, full_name, role, is_active, date_joined, timezone FROM user_profile"
        ).fetchall()
        channels = db.execute("SELECT id, name, description, recipient_id FROM stream").fetchall()
        subscribers = db.execute(
            "SELECT recipient_id, group_concat(user_profile_id) FROM subscription GROUP BY recipient_id"
        ).fetchall()
        members = dict(subscribers)
        user_keys = ("user_id", "email", "full_name", "role", "is_active", "date_joined", "timezone")
        return json(
            {
                "result": "success",
                "msg": "",
                "queue_id": secrets.token_hex(8),
                "realm_users": [dict(zip(user_keys, u, strict=True)) for u in users],
                "subscriptions": [
                    {
                        "stream_id": c[0],
                        "name": c[1],
                        "description": c[2],
                        "subscribers": [int(x) for x in (members.get(c[3]) or "").split(",") if x],
                    }
                    for c in channels
                ],
            }
        )

    async def events(request: Request) -> Response:
        if not authorized(request):
            return json({"result": "error"}, 401)
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        waiting.append(future)
        try:
            body = await asyncio.wait_for(future, 55)
        except TimeoutError:
            body = b'{"result":"success","msg":"","events":[{"type":"heartbeat","id":0}]}'
        return Response(body, media_type="application/json")

    async def delete_queue(request: Request) -> Response:
        return json({"result": "success", "msg": ""})

    async def ready(request: Request) -> Response:
        return json({"result": "success"})

    return Starlette(
        routes=[
            Route("/api/v1/messages", send, methods=["POST"]),
            Route("/api/v1/messages", messages, methods=["GET"]),
            Route("/api/v1/register", register, methods=["POST"]),
            Route("/api/v1/events", events, methods=["GET"]),
            Route("/api/v1/events", delete_queue, methods=["DELETE"]),
            Route("/ready", ready),
        ]
    )


def bare_factory() -> Any:
    """For uvicorn's workers, which import the app by name."""
    return bare_app(Path(os.environ["BENCH_BARE_DB"]))


def serve_bare(port: int, db: Path, workers: int) -> None:
    import uvicorn

    sys.path.insert(0, str(BENCH_DIR))
    if workers == 1:
        uvicorn.run(bare_app(db), host=LOOPBACK, port=port, **UVICORN_OPTIONS)
        return
    os.environ["BENCH_BARE_DB"] = str(db)
    options = dict(UVICORN_OPTIONS, host=LOOPBACK, port=port, workers=workers, factory=True)
    uvicorn.run("common:bare_factory", **options)


def bare_db_for(dataset: Dataset | None, tmp: Path) -> Path:
    """The SQLite file the bare app uses: the dataset's (reads) or an empty one."""
    if dataset is not None and not dataset.database_url:
        return dataset.sqlite_path
    return tmp / "bare.db"


def bare_realm() -> Realm:
    return Realm("bare", BARE_EMAIL, BARE_KEY)


def main() -> None:
    parser = argparse.ArgumentParser(description="the bare baseline server")
    sub = parser.add_subparsers(dest="command", required=True)
    bare = sub.add_parser("bare")
    bare.add_argument("--port", type=int, required=True)
    bare.add_argument("--db", type=Path, required=True)
    bare.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    serve_bare(args.port, args.db, args.workers)


if __name__ == "__main__":
    main()
