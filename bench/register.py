"""POST /register latency in a large organization: 10,000 users and 1,000 channels.

Run: .venv/bin/python bench/register.py [--users 10000] [--channels 1000] [--requests 50]
                                        [--database-url URL] [--profile]

Makes an organization with the CLI, fills it with ``palaver seed-users`` (bulk rows; the
owner joins every channel, each member joins 10), starts ``palaver serve`` (one process,
SQLite unless --database-url), and registers as the owner ``--requests`` times in
sequence after a few warm-up calls, once with the defaults (every event type; what
zulip-terminal and the Python client ask for) and once as the web app asks
(``include_subscribers``, ``client_gravatar``, ``slim_presence``). Each queue is deleted
after its request. Prints p50/p99 latency and the response size. ``--profile`` instead
runs the same registers in this process under cProfile and prints the top functions.
Loopback only.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import math
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from users_me import LOOPBACK, clean_environment, create_bench_realm, free_port, palaver, running

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
    done = subprocess.run(
        palaver("seed-users", "--realm", string_id, "--users", str(users), "--channels", str(channels)),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(f"palaver seed-users failed:\n{done.stderr}")
    return done.stdout.strip()


def measure(
    base: str, headers: dict[str, str], data: dict[str, str], requests: int
) -> tuple[list[float], int]:
    latencies: list[float] = []
    size = 0
    with httpx.Client(base_url=base, headers=headers, timeout=120, trust_env=False) as client:
        for index in range(requests + 3):
            started = time.perf_counter()
            response = client.post("/api/v1/register", data=data)
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            size = len(response.content)
            client.request("DELETE", "/api/v1/events", params={"queue_id": response.json()["queue_id"]})
            if index >= 3:
                latencies.append(elapsed)
    return latencies, size


def profile(env: dict[str, str], string_id: str, email: str, data: dict[str, str], requests: int) -> None:
    """The register path without HTTP: queue creation plus every state provider."""
    os.environ.update({k: v for k, v in env.items() if k.startswith("PALAVER_")})
    from palaver.api.events import register_options
    from palaver.config import load_settings
    from palaver.lib.realm import get_realm_by_string_id
    from palaver.lib.register import register_queue
    from palaver.lib.users import get_user_by_delivery_email
    from palaver.services import build_services

    settings = load_settings(env={k: v for k, v in env.items() if k.startswith("PALAVER_")})
    services = build_services(settings)
    parsed: dict[str, Any] = {k: v == "true" for k, v in data.items() if v in ("true", "false")}
    if "client_capabilities" in data:
        import json

        parsed["client_capabilities"] = json.loads(data["client_capabilities"])
    options = register_options(**parsed)
    profiler = cProfile.Profile()
    try:
        for index in range(requests + 3):
            with services.db.session() as session:
                realm = get_realm_by_string_id(session, string_id)
                assert realm is not None
                user = get_user_by_delivery_email(session, realm.id, email)
                assert user is not None
                if index >= 3:
                    profiler.enable()
                register_queue(session, settings, services.bus, user, options)
                profiler.disable()
    finally:
        services.close()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--profile", choices=list(VARIANTS), help="profile one variant in-process")
    args = parser.parse_args()
    if not (0 <= args.users <= 100_000 and 0 <= args.channels <= 10_000 and 1 <= args.requests <= 10_000):
        raise SystemExit("--users 0-100,000, --channels 0-10,000, --requests 1-10,000")
    tmp = Path(tempfile.mkdtemp(prefix="palaver-register-"))
    results: dict[str, tuple[list[float], int]] = {}
    try:
        env = clean_environment(
            PALAVER_DATA_DIR=str(tmp / "data"),
            PALAVER_HOST=LOOPBACK,
            PALAVER_LOG_LEVEL="warning",
            PALAVER_CREATE_DEMO_REALM="false",
            PALAVER_API_RATE_LIMIT="1000000000/60",
            PALAVER_PASSWORD_TIME_COST="1",
            PALAVER_PASSWORD_MEMORY_COST_KIB="8",
        )
        if args.database_url:
            env["PALAVER_DATABASE_URL"] = args.database_url
        string_id, email, api_key = create_bench_realm(env)
        started = time.monotonic()
        print(seed(env, string_id, args.users, args.channels), f"(wall {time.monotonic() - started:.1f}s)")
        if args.profile:
            profile(env, string_id, email, VARIANTS[args.profile], args.requests)
            return
        port = free_port()
        with running(
            palaver("serve", "--port", str(port)),
            env,
            tmp / "palaver.log",
            f"http://{LOOPBACK}:{port}/api/v1/server_settings",
        ):
            headers = {
                "Host": f"{string_id}.{LOOPBACK}:{port}",
                "Authorization": "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode(),
            }
            for name, data in VARIANTS.items():
                results[name] = measure(f"http://{LOOPBACK}:{port}", headers, data, args.requests)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    database = "postgresql" if args.database_url else "sqlite"
    print(
        f"POST /register as the owner (subscribed to every channel): {args.users} users, "
        f"{args.channels} channels, {database}; {os.cpu_count()} CPUs, load average {load} at the end"
    )
    print(f"{'variant':<10} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'bytes':>10}")
    for name, (latencies, size) in results.items():
        print(
            f"{name:<10} {len(latencies):>8} {percentile(latencies, 0.5):>8.1f} "
            f"{percentile(latencies, 0.99):>8.1f} {size:>10}"
        )
    print(f"target: p99 <= {TARGET_P99_MS:.0f} ms")


if __name__ == "__main__":
    main()
