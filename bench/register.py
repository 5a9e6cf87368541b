"""POST /register latency in a large organization: 10,000 users and 1,000 channels.

Run: .venv/bin/python bench/register.py [--users 10000] [--channels 1000] [--requests 50]
                                        [--database-url URL] [--profile VARIANT]
                                        [--data-dir DIR]

Makes an organization with the CLI, fills it with ``palaver seed-users`` (bulk rows; the
owner joins every channel, each member joins 10), starts ``palaver serve`` (one process,
SQLite unless --database-url), and registers as the owner ``--requests`` times in
sequence after a few warm-up calls, once with the defaults (every event type; what
zulip-terminal and the Python client ask for) and once as the web app asks
(``include_subscribers``, ``client_gravatar``, ``slim_presence``). Each queue is deleted
after its request. Prints p50/p99 latency and the response size. ``--profile`` instead
runs the same registers in this process under cProfile and prints the CPU time of each
state provider and the top functions. ``--data-dir`` keeps the seeded organization there
and reuses it on later runs (SQLite), so profiling after a change skips the seeding.
Loopback only.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import dataclasses
import json
import math
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from users_me import (
    LOOPBACK,
    cpu_seconds,
    create_bench_realm,
    free_port,
    palaver,
    run_cli,
    running,
    server_env,
)

TARGET_P99_MS = 150.0
VARIANTS: dict[str, dict[str, str]] = {
    "defaults": {},
    "web app": {
        "include_subscribers": "true",
        "client_gravatar": "true",
        "slim_presence": "true",
        "apply_markdown": "true",
        "client_capabilities": '{"notification_settings_null": true, "bulk_message_deletion": true, '
        '"user_avatar_url_field_optional": true, "stream_typing_notifications": true, '
        '"user_settings_object": true, "empty_topic_name": true}',
    },
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000


def seed(env: dict[str, str], string_id: str, users: int, channels: int) -> str:
    return run_cli(
        env, "seed-users", "--realm", string_id, "--users", str(users), "--channels", str(channels)
    ).strip()


def seeded_realm(env: dict[str, str], record: Path, args: argparse.Namespace) -> tuple[str, str, str]:
    """(string ID, owner email, API key) of the seeded organization, seeding it unless
    ``record`` names one seeded with the same sizes."""
    wanted = {"users": args.users, "channels": args.channels, "database_url": args.database_url}
    if record.exists():
        saved = json.loads(record.read_text())
        if saved["sizes"] == wanted:
            print(f"Reusing {saved['string_id']} from {record}")
            return saved["string_id"], saved["email"], saved["api_key"]
        raise SystemExit(f"{record} holds an organization of other sizes: {saved['sizes']}")
    string_id, email, api_key = create_bench_realm(env)
    started = time.monotonic()
    print(seed(env, string_id, args.users, args.channels), f"(wall {time.monotonic() - started:.1f}s)")
    record.write_text(
        json.dumps({"sizes": wanted, "string_id": string_id, "email": email, "api_key": api_key})
    )
    return string_id, email, api_key


def measure(
    base: str, headers: dict[str, str], data: dict[str, str], requests: int, server_pid: int
) -> tuple[list[float], int, float]:
    """Latencies, the response size, and the server's CPU seconds per request (the
    figure least disturbed by other load on the machine; it includes the DELETE)."""
    latencies: list[float] = []
    size = 0
    cpu_start = math.nan
    with httpx.Client(base_url=base, headers=headers, timeout=120, trust_env=False) as client:
        for index in range(requests + 3):
            if index == 3:
                cpu_start = cpu_seconds(server_pid)
            started = time.perf_counter()
            response = client.post("/api/v1/register", data=data)
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            size = len(response.content)
            client.request("DELETE", "/api/v1/events", params={"queue_id": response.json()["queue_id"]})
            if index >= 3:
                latencies.append(elapsed)
    return latencies, size, (cpu_seconds(server_pid) - cpu_start) / requests


def profile(env: dict[str, str], string_id: str, email: str, data: dict[str, str], requests: int) -> None:
    """The register path without HTTP: queue creation plus every state provider."""
    os.environ.update({k: v for k, v in env.items() if k.startswith("PALAVER_")})
    from palaver.api.events import register_options
    from palaver.config import load_settings
    from palaver.lib.realm import get_realm_by_string_id
    from palaver.lib.register import (
        StateContext,
        StateDict,
        StateProvider,
        _discover_providers,
        _registry,
        register_queue,
    )
    from palaver.lib.users import get_user_by_delivery_email
    from palaver.services import build_services

    settings = load_settings(env={k: v for k, v in env.items() if k.startswith("PALAVER_")})
    services = build_services(settings)
    parsed: dict[str, Any] = {k: v == "true" for k, v in data.items() if v in ("true", "false")}
    if "client_capabilities" in data:
        parsed["client_capabilities"] = json.loads(data["client_capabilities"])
    options = register_options(**parsed)
    profiler = cProfile.Profile()
    provider_cpu: dict[str, list[float]] = {}
    recording = False

    def timed(provider: StateProvider) -> StateProvider:
        def run(ctx: StateContext) -> StateDict:
            started = time.process_time()
            state = provider(ctx)
            if recording:
                provider_cpu.setdefault(provider.__qualname__, []).append(time.process_time() - started)
            return state

        return run

    _discover_providers()
    originals = list(_registry)
    _registry[:] = [dataclasses.replace(r, provider=timed(r.provider)) for r in originals]
    try:
        for index in range(requests + 3):
            with services.db.session() as session:
                realm = get_realm_by_string_id(session, string_id)
                assert realm is not None
                user = get_user_by_delivery_email(session, realm.id, email)
                assert user is not None
                recording = index >= 3
                if recording:
                    profiler.enable()
                state = register_queue(session, settings, services.bus, user, options)
                profiler.disable()
                services.bus.delete_queue(user.id, state["queue_id"])
    finally:
        _registry[:] = originals
        services.close()
    # Under the profiler, so only their proportions mean much.
    print("CPU per register by state provider (median, under cProfile):")
    for name, times in sorted(provider_cpu.items(), key=lambda item: -sorted(item[1])[len(item[1]) // 2]):
        median = sorted(times)[len(times) // 2] * 1000
        if median >= 1:
            print(f"  {name:<40} {median:7.1f} ms")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--profile", choices=list(VARIANTS), help="profile one variant in-process")
    parser.add_argument("--data-dir", type=Path, help="keep the seeded organization here and reuse it")
    args = parser.parse_args()
    if not (0 <= args.users <= 100_000 and 0 <= args.channels <= 10_000 and 1 <= args.requests <= 10_000):
        raise SystemExit("--users 0-100,000, --channels 0-10,000, --requests 1-10,000")
    tmp = Path(tempfile.mkdtemp(prefix="palaver-register-"))
    data_dir = args.data_dir.resolve() if args.data_dir else tmp / "data"
    results: dict[str, tuple[list[float], int, float]] = {}
    try:
        env = server_env(data_dir, args.database_url)
        string_id, email, api_key = seeded_realm(env, data_dir / "bench-register.json", args)
        if args.profile:
            profile(env, string_id, email, VARIANTS[args.profile], args.requests)
            return
        port = free_port()
        with running(
            palaver("serve", "--port", str(port)),
            env,
            tmp / "palaver.log",
            f"http://{LOOPBACK}:{port}/api/v1/server_settings",
        ) as server:
            headers = {
                "Host": f"{string_id}.{LOOPBACK}:{port}",
                "Authorization": "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode(),
            }
            for name, data in VARIANTS.items():
                results[name] = measure(f"http://{LOOPBACK}:{port}", headers, data, args.requests, server.pid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    database = "postgresql" if args.database_url else "sqlite"
    print(
        f"POST /register as the owner (subscribed to every channel): {args.users} users, "
        f"{args.channels} channels, {database}; {os.cpu_count()} CPUs, load average {load} at the end"
    )
    print(f"{'variant':<10} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'server CPU ms':>14} {'bytes':>10}")
    for name, (latencies, size, cpu) in results.items():
        print(
            f"{name:<10} {len(latencies):>8} {percentile(latencies, 0.5):>8.1f} "
            f"{percentile(latencies, 0.99):>8.1f} {cpu * 1000:>14.1f} {size:>10}"
        )
    print(f"target: p99 <= {TARGET_P99_MS:.0f} ms")


if __name__ == "__main__":
    main()
