"""Fan-out latency: N clients parked in GET /events, one channel message to all of them.

Run: .venv/bin/python bench/events_fanout.py [--clients 1000] [--database-url URL]

Starts ``palaver serve`` (one process, SQLite unless --database-url) on a temporary data
directory, seeds N users straight into the database (one transaction through the same
``do_create_user`` action the API uses), subscribes them all to one channel, registers one
queue each (``event_types=["message"]``), parks one GET /events long-poll per queue, then
sends one message to the channel. It reports the time from the send request until the
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
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from users_me import LOOPBACK, clean_environment, create_bench_realm, free_port, palaver, running

MAX_CLIENTS = 5_000


def seed_users(env: dict[str, str], string_id: str, count: int) -> list[tuple[int, str, str]]:
    """(id, email, api_key) of ``count`` new members, created in one transaction."""
    from palaver.actions.users import do_create_user
    from palaver.config import load_settings
    from palaver.db import transaction
    from palaver.lib.realm import get_realm_by_string_id, realm_email_host
    from palaver.services import build_services

    settings = load_settings(env={k: v for k, v in env.items() if k.startswith("PALAVER_")})
    services = build_services(settings)
    users = []
    try:
        with services.db.session() as session:
            realm = get_realm_by_string_id(session, string_id)
            assert realm is not None
            host = realm_email_host(settings, realm)
            with transaction(session):
                for i in range(count):
                    user = do_create_user(
                        session,
                        realm,
                        email=f"fan{i}@{string_id}.example.com",
                        full_name=f"Fan {i}",
                        password_hash=None,
                        email_host=host,
                    )
                    users.append((user.id, user.email, user.api_key))
    finally:
        services.close()
    return users


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
        shutil.rmtree(tmp, ignore_errors=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.clients} parked clients, {os.cpu_count()} CPUs, load average {load} at the end")
    print(", ".join(f"{k} {v:.1f}" for k, v in result.items()))


if __name__ == "__main__":
    main()
