"""Fan-out latency: N clients parked in GET /events, one channel message to all of them.

Run: .venv/bin/python bench/events_fanout.py [--clients 1000] [--database-url URL] [--redis-url URL]

Starts ``palaver serve`` (one process, SQLite unless --database-url; in-process queues
unless --redis-url) on a temporary data directory, seeds N users in bulk (``palaver
seed-users``), subscribes them all to one channel, registers one queue each
(``event_types=["message"]``), parks one GET /events long-poll per queue, then sends one
message to the channel. It reports the time from the send request until the
p50 and p99 client, and the last one, has the message. Clients run in this process on
one event loop; the file-descriptor limit is raised to fit. Loopback only; at most 5,000
clients.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from users_me import LOOPBACK, clean_environment, create_bench_realm, free_port, palaver, running

MAX_CLIENTS = 5_000


def seed_users(env: dict[str, str], string_id: str, count: int) -> list[tuple[int, str, str]]:
    """(id, email, api_key) of ``count`` new members, made by ``palaver seed-users``.

    Bulk rows without events: creating users through ``do_create_user`` tells every
    existing user about each new one, which for 5,000 users is 12.5 million events.
    """
    from sqlalchemy import select

    from palaver.config import load_settings
    from palaver.lib.realm import get_realm_by_string_id
    from palaver.models import UserProfile
    from palaver.services import build_services

    done = subprocess.run(
        palaver("seed-users", "--realm", string_id, "--users", str(count), "--channels", "0"),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(f"palaver seed-users failed:\n{done.stderr}")
    settings = load_settings(env={k: v for k, v in env.items() if k.startswith("PALAVER_")})
    services = build_services(settings)
    try:
        with services.db.session() as session:
            realm = get_realm_by_string_id(session, string_id)
            assert realm is not None
            rows = session.execute(
                select(UserProfile.id, UserProfile.email, UserProfile.api_key)
                .where(UserProfile.realm_id == realm.id, UserProfile.full_name.like("Seed User %"))
                .order_by(UserProfile.id)
            )
            users = [(user_id, email, api_key) for user_id, email, api_key in rows]
    finally:
        services.close()
    return users


def clear_redis_queues(env: dict[str, str]) -> None:
    """Delete the queues a run left in Redis (its key prefix is its own database's)."""
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


def auth(email: str, api_key: str) -> str:
    return "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000


async def run(
    base: str, host: str, owner: tuple[str, str], users: list[tuple[int, str, str]]
) -> dict[str, float]:
    # Expire idle connections before uvicorn does (5 s), or a reused one may be closed under us.
    limits = httpx.Limits(
        max_connections=len(users) + 16, max_keepalive_connections=len(users) + 16, keepalive_expiry=2
    )
    timeout = httpx.Timeout(120.0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout, trust_env=False) as client:
        owner_headers = {"Host": host, "Authorization": auth(*owner)}
        created = await client.post(
            "/api/v1/channels/create",
            headers=owner_headers,
            data={"name": "fanout", "subscribers": "[" + ",".join(str(u[0]) for u in users) + "]"},
        )
        created.raise_for_status()
        semaphore = asyncio.Semaphore(32)

        async def register(user: tuple[int, str, str]) -> str:
            async with semaphore:
                response = await client.post(
                    "/api/v1/register",
                    headers={"Host": host, "Authorization": auth(user[1], user[2])},
                    data={"event_types": '["message"]', "fetch_event_types": '["message"]'},
                )
                response.raise_for_status()
                return str(response.json()["queue_id"])

        started = time.monotonic()
        queue_ids = await asyncio.gather(*(register(u) for u in users))
        register_seconds = time.monotonic() - started
        arrivals: list[float] = []
        sent_at = 0.0

        async def poll(user: tuple[int, str, str], queue_id: str) -> None:
            headers = {"Host": host, "Authorization": auth(user[1], user[2])}
            last = -1
            while True:
                response = await client.get(
                    "/api/v1/events", headers=headers, params={"queue_id": queue_id, "last_event_id": last}
                )
                events = response.json()["events"]
                if any(e["type"] == "message" for e in events):
                    arrivals.append(time.monotonic() - sent_at)
                    return
                last = max([last, *(e["id"] for e in events)])

        pollers = [asyncio.create_task(poll(u, q)) for u, q in zip(users, queue_ids, strict=True)]
        # Let every long-poll reach the server and park before the message goes out.
        await asyncio.sleep(3 + len(users) / 1000)
        sent_at = time.monotonic()
        sent = await client.post(
            "/api/v1/messages",
            headers=owner_headers,
            data={"type": "stream", "to": "fanout", "topic": "bench", "content": "hello"},
        )
        sent.raise_for_status()
        send_seconds = time.monotonic() - sent_at
        await asyncio.wait_for(asyncio.gather(*pollers), timeout=120)
    return {
        "register_s": register_seconds,
        "send_ms": send_seconds * 1000,
        "p50_ms": percentile(arrivals, 0.5),
        "p99_ms": percentile(arrivals, 0.99),
        "last_ms": max(arrivals) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--redis-url", default=None, help="use the Redis queue store (queues deleted after)")
    args = parser.parse_args()
    if not 1 <= args.clients <= MAX_CLIENTS:
        raise SystemExit(f"--clients must be 1 to {MAX_CLIENTS}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 2 * args.clients + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    tmp = Path(tempfile.mkdtemp(prefix="palaver-fanout-"))
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
        if args.redis_url:
            env["PALAVER_REDIS_URL"] = args.redis_url
        string_id, email, api_key = create_bench_realm(env)
        users = seed_users(env, string_id, args.clients)
        port = free_port()
        with running(
            palaver("serve", "--port", str(port)),
            env,
            tmp / "palaver.log",
            f"http://{LOOPBACK}:{port}/api/v1/server_settings",
        ):
            result = asyncio.run(
                run(f"http://{LOOPBACK}:{port}", f"{string_id}.{LOOPBACK}:{port}", (email, api_key), users)
            )
    finally:
        if args.redis_url:
            clear_redis_queues(env)
        shutil.rmtree(tmp, ignore_errors=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    store = "redis" if args.redis_url else "in-process"
    print(
        f"{args.clients} parked clients, {store} queues, {os.cpu_count()} CPUs, "
        f"load average {load} at the end"
    )
    print(", ".join(f"{k} {v:.1f}" for k, v in result.items()))


if __name__ == "__main__":
    main()
