"""Throughput and latency of authenticated GET /api/v1/users/me, against a bare Starlette app.

Run: .venv/bin/python bench/users_me.py [--concurrency 16] [--requests 3000] [--seconds 60]
                                        [--warmup 200] [--database-url URL]

Starts ``palaver serve`` as a subprocess on a temporary data directory (SQLite unless
--database-url is given), creates an organization with the CLI, then drives
GET /api/v1/users/me with HTTP Basic auth from N concurrent httpx.AsyncClient tasks. The
same load then goes to a bare Starlette app (one route returning a small JSON object)
served by uvicorn with the options ``palaver serve`` uses (uvloop, httptools, one worker,
log level warning), so the ratio shows what Palaver's request pipeline costs above the
framework and server. Everything listens on and connects to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import common
import httpx
from common import LOOPBACK, bounded, clean_environment, cpu_seconds, free_port, palaver, server_env

# Mirrors palaver.bootstrap.run_server, so the two servers differ only in the app.
UVICORN_OPTIONS = {
    "loop": "uvloop",
    "http": "httptools",
    "log_level": "warning",
    "proxy_headers": True,
    "timeout_graceful_shutdown": 5,
}
MAX_CONCURRENCY = 512
MAX_REQUESTS = 1_000_000
MAX_SECONDS = 600.0


# The bare app, run in its own process by `--serve-bare PORT` -----------------------------------


def serve_bare(port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def users_me(request: Request) -> JSONResponse:
        return JSONResponse({"result": "success", "msg": "", "user_id": 1, "full_name": "Bench Owner"})

    app = Starlette(routes=[Route("/api/v1/users/me", users_me)])
    uvicorn.run(app, host=LOOPBACK, port=port, **UVICORN_OPTIONS)  # type: ignore[arg-type]


# Servers -------------------------------------------------------------------------------------


@contextmanager
def running(
    argv: list[str], env: dict[str, str], log: Path, ready_url: str
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise SystemExit(f"server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise SystemExit(f"server did not start within 60 s:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(ready_url, timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def create_bench_realm(env: dict[str, str]) -> tuple[str, str, str]:
    """A fresh organization made with the CLI; returns (string ID, owner email, API key)."""
    realm = common.create_bench_realm(env)
    return realm.string_id, realm.email, realm.api_key


# Load ----------------------------------------------------------------------------------------


async def drive(
    url: str, headers: dict[str, str], concurrency: int, requests: int, seconds: float
) -> tuple[int, int, float, list[float]]:
    """Send up to ``requests`` GETs (or for ``seconds``) from ``concurrency`` tasks."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    latencies: list[float] = []
    errors = 0
    issued = 0
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=30, trust_env=False) as client:
        start = time.perf_counter()
        deadline = start + seconds

        async def worker() -> None:
            nonlocal issued, errors
            while issued < requests and time.perf_counter() < deadline:
                issued += 1
                t0 = time.perf_counter()
                try:
                    response = await client.get(url)
                    ok = response.status_code == 200 and response.json().get("result") == "success"
                except httpx.HTTPError:
                    ok = False
                latencies.append(time.perf_counter() - t0)
                errors += not ok

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    return issued, errors, elapsed, latencies


def client_loop() -> tuple[str, Callable[[], asyncio.AbstractEventLoop] | None]:
    """uvloop when installed (a dependency of Palaver's), so the client costs less."""
    try:
        import uvloop
    except ImportError:
        return "asyncio", None
    return "uvloop", uvloop.new_event_loop


def measure(
    name: str, url: str, headers: dict[str, str], args: argparse.Namespace, server_pid: int
) -> common.Measurement:
    with asyncio.Runner(loop_factory=client_loop()[1]) as runner:
        if args.warmup:
            runner.run(drive(url, headers, args.concurrency, args.warmup, MAX_SECONDS))
        before = cpu_seconds(server_pid)
        issued, errors, elapsed, latencies = runner.run(
            drive(url, headers, args.concurrency, args.requests, args.seconds)
        )
        used = cpu_seconds(server_pid) - before
    return common.Measurement(name, issued, errors, elapsed, latencies, used)


# Main ----------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--concurrency", type=bounded(int, 1, MAX_CONCURRENCY), default=16, help="concurrent clients (16)"
    )
    parser.add_argument(
        "--requests",
        type=bounded(int, 1, MAX_REQUESTS),
        default=3000,
        help="measured requests per target (3000); the run stops at this or --seconds",
    )
    parser.add_argument(
        "--seconds",
        type=bounded(float, 0.5, MAX_SECONDS),
        default=60.0,
        help="longest measured run per target (60)",
    )
    parser.add_argument(
        "--warmup", type=bounded(int, 0, 100_000), default=200, help="unmeasured requests first (200)"
    )
    parser.add_argument(
        "--database-url",
        help="Palaver's database (default: SQLite in a temporary directory); a scratch "
        "database: an organization bench-XXXX is created in it and left behind",
    )
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="500 requests after 50 warm-up ones")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.warmup = 500, 50
    return args


def main() -> None:
    args = parse_args()
    if args.serve_bare is not None:
        serve_bare(args.serve_bare)
        return
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-"))
    try:
        env = server_env(tmp / "data", args.database_url)
        database = "postgresql" if args.database_url and "postgres" in args.database_url else "sqlite"

        string_id, email, api_key = create_bench_realm(env)
        port = free_port()
        auth = "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()
        # The realm is chosen by subdomain; the connection still goes to 127.0.0.1.
        palaver_headers = {"Host": f"{string_id}.{LOOPBACK}:{port}", "Authorization": auth}
        with running(
            palaver("serve", "--port", str(port)),
            env,
            tmp / "palaver.log",
            f"http://{LOOPBACK}:{port}/api/v1/server_settings",
        ) as server:
            url = f"http://{LOOPBACK}:{port}/api/v1/users/me"
            probe = httpx.get(url, headers=palaver_headers, trust_env=False)
            if probe.status_code != 200:
                raise SystemExit(f"GET /users/me answered {probe.status_code}: {probe.text}")
            ours = measure("palaver", url, palaver_headers, args, server.pid)

        port = free_port()
        url = f"http://{LOOPBACK}:{port}/api/v1/users/me"
        with running(
            [sys.executable, str(Path(__file__).resolve()), "--serve-bare", str(port)],
            clean_environment(),
            tmp / "bare.log",
            url,
        ) as server:
            bare = measure("bare starlette", url, {"Authorization": auth}, args, server.pid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        "GET /api/v1/users/me, loopback, uvicorn (uvloop, httptools, 1 worker); "
        f"client: httpx.AsyncClient on {client_loop()[0]}"
    )
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs (load average {load} at the end), "
        f"palaver database {database}"
    )
    print(
        f"concurrency {args.concurrency}, up to {args.requests} requests or {args.seconds:g} s "
        f"per target, after {args.warmup} warm-up requests"
    )
    print()
    header = ("target", "requests", "errors", "seconds", "req/s", "p50 ms", "p99 ms", "CPU ms/req")
    print("{:<16} {:>8} {:>6} {:>8} {:>9} {:>8} {:>8} {:>10}".format(*header))
    for m in (ours, bare):
        print(
            f"{m.name:<16} {m.requests:>8} {m.errors:>6} {m.seconds:>8.2f} {m.rps:>9.1f} "
            f"{m.p(0.50):>8.2f} {m.p(0.99):>8.2f} {m.server_ms:>10.3f}"
        )
    ratio = f"{ours.rps / bare.rps:.3f}" if bare.rps else "n/a"
    p50 = ours.p(0.50) / bare.p(0.50)
    p99 = ours.p(0.99) / bare.p(0.99)
    cpu = ours.server_ms / bare.server_ms
    print(f"{'palaver/bare':<16} {'':>8} {'':>6} {'':>8} {ratio:>9} {p50:>8.2f} {p99:>8.2f} {cpu:>10.2f}")
    print(f"server CPU above bare: {ours.server_ms - bare.server_ms:.3f} ms per request")
    if ours.errors or bare.errors:
        raise SystemExit("some requests failed; the figures above are not comparable")


if __name__ == "__main__":
    main()
