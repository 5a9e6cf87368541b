"""POST /register in a large organization: 10,000 users and 1,000 channels.

Run: .venv/bin/python bench/register.py [--quick] [--users 10000] [--channels 1000]
                                        [--requests 50] [--database-url URL]
                                        [--profile VARIANT | --timing VARIANT] [--no-pin]

Seeds (once; cached under bench/.data/) an organization with ``palaver seed-users`` (bulk
rows; the owner joins every channel, each member 10), starts ``palaver serve`` (one
process, pinned to one CPU, the client on the other; SQLite unless --database-url), and
registers as the owner ``--requests`` times in sequence after a few warm-up calls: with
the defaults (every event type; what zulip-terminal and the Python client ask for), as
Zulip's web app asks (``include_subscribers``, ``client_gravatar``, ``slim_presence``), and
as Palaver's own web client's first phase asks (no user list, no ``streams``). Each queue
is deleted after its request. Prints p50/p99 latency, the
server's CPU per request and the response size, then the same for the bare app, whose
register reads every user, every channel and every channel's subscribers from the same
SQLite file in three SELECTs and sends them as JSON. ``--profile`` instead runs the same
registers in this process under cProfile and prints the CPU time of each state provider
and the top functions; ``--timing`` the same without the profiler, with the state's JSON
encoding. Loopback only.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import math
import os
import pstats
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from common import (
    LOOPBACK,
    ROOT,
    Dataset,
    Server,
    bare_realm,
    bounded,
    cpus,
    large_organization,
    machine_line,
    organization_flags,
    percentile,
    pin_line,
    pin_self,
    print_targets,
    quick_flag,
    quick_organization,
    serve,
)

TARGET_P50_MS = 60.0
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


def palaver_client_variant() -> dict[str, str]:
    """The first-phase /register of Palaver's own web client, read from its source
    (``store/state.js``: every event type heard, all but the user list and ``streams``
    fetched; ``events.js`` for the other options)."""
    source = (ROOT / "src/palaver/web/static/app/store/state.js").read_text()
    start = source.index("export const EVENT_TYPES = [")
    listed = source[start : source.index("];", start)]
    event_types = re.findall(r'"(\w+)"', listed)
    extra = source[source.index("export const FETCH_TYPES") :].split("\n", 1)[0]
    fetched = [*event_types, *re.findall(r'"(\w+)"', extra)]
    return {
        "apply_markdown": "true",
        "client_gravatar": "false",
        "slim_presence": "true",
        "include_subscribers": "false",
        "event_types": json.dumps(event_types),
        "fetch_event_types": json.dumps([t for t in fetched if t not in ("realm_user", "stream")]),
        "client_capabilities": '{"notification_settings_null": true, "bulk_message_deletion": true, '
        '"user_avatar_url_field_optional": false, "stream_typing_notifications": true, '
        '"user_settings_object": true}',
    }


VARIANTS["own client"] = palaver_client_variant()


def dataset(args: argparse.Namespace, tmp: Path) -> Dataset:
    return large_organization(args.users, args.channels, database_url=args.database_url, scratch=tmp / "data")


def measure(
    base: str, headers: dict[str, str], data: dict[str, str], requests: int, server: Server
) -> tuple[list[float], int, float]:
    """Latencies, the response size, and the server's CPU seconds per request (the
    figure least disturbed by other load on the machine; it includes the DELETE)."""
    latencies: list[float] = []
    size = 0
    cpu_start = math.nan
    with httpx.Client(base_url=base, headers=headers, timeout=120, trust_env=False) as client:
        for index in range(requests + 3):
            if index == 3:
                cpu_start = server.cpu_seconds()
            started = time.perf_counter()
            response = client.post("/api/v1/register", data=data)
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            size = len(response.content)
            client.request("DELETE", "/api/v1/events", params={"queue_id": response.json()["queue_id"]})
            if index >= 3:
                latencies.append(elapsed)
    return latencies, size, (server.cpu_seconds() - cpu_start) / requests


def profile(
    env: dict[str, str], string_id: str, email: str, data: dict[str, str], requests: int, *, cprofile: bool
) -> None:
    """The register path without HTTP: queue creation plus every state provider, then the
    JSON encoding; under cProfile, or (``cprofile`` False) timed alone."""
    os.environ.update({k: v for k, v in env.items() if k.startswith("PALAVER_")})
    from palaver.api.events import register_options
    from palaver.config import load_settings
    from palaver.lib.realm import get_realm_by_string_id
    from palaver.lib.register import (
        StateContext,
        StateDict,
        StateProvider,
        providers_replaced,
        register_queue,
        registered_providers,
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
    totals: dict[str, list[float]] = {"register_queue (all providers)": [], "orjson.dumps": []}
    recording = False

    def timed(provider: StateProvider) -> StateProvider:
        def run(ctx: StateContext) -> StateDict:
            started = time.process_time()
            state = provider(ctx)
            if recording:
                provider_cpu.setdefault(provider.__qualname__, []).append(time.process_time() - started)
            return state

        return run

    timed_providers = [dataclasses.replace(r, provider=timed(r.provider)) for r in registered_providers()]
    try:
        with providers_replaced(timed_providers):
            for index in range(requests + 3):
                with services.db.session() as session:
                    realm = get_realm_by_string_id(session, string_id)
                    assert realm is not None
                    user = get_user_by_delivery_email(session, realm.id, email)
                    assert user is not None
                    recording = index >= 3
                    if recording and cprofile:
                        profiler.enable()
                    started = time.process_time()
                    state = register_queue(session, settings, services.bus, user, options)
                    encoding = time.process_time()
                    orjson.dumps(state)
                    finished = time.process_time()
                    profiler.disable()
                    if recording:
                        totals["register_queue (all providers)"].append(encoding - started)
                        totals["orjson.dumps"].append(finished - encoding)
                    services.bus.delete_queue(user.id, state["queue_id"])
    finally:
        services.close()
    # Under the profiler only their proportions mean much.
    print(f"CPU per register by state provider (median, {'under cProfile' if cprofile else 'no profiler'}):")
    for name, times in [
        *totals.items(),
        *sorted(provider_cpu.items(), key=lambda item: -sorted(item[1])[len(item[1]) // 2]),
    ]:
        median = sorted(times)[len(times) // 2] * 1000
        if median >= 0.5:
            print(f"  {name:<40} {median:7.1f} ms")
    if cprofile:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    organization_flags(parser, minimum=0)
    parser.add_argument("--requests", type=bounded(int, 1, 10_000), default=50, metavar="N")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--profile", choices=list(VARIANTS), help="profile one variant in-process")
    parser.add_argument("--timing", choices=list(VARIANTS), help="time one variant in-process, no profiler")
    quick_flag(parser)
    args = parser.parse_args()
    if args.quick:
        quick_organization(args)
        args.requests = 10
    pins = (None, None) if args.no_pin else cpus()
    pin_self(pins[1])
    tmp = Path(tempfile.mkdtemp(prefix="palaver-register-"))
    results: dict[str, tuple[list[float], int, float]] = {}
    try:
        data = dataset(args, tmp)
        realm = data.realm
        if args.profile or args.timing:
            variant = VARIANTS[args.profile or args.timing]
            env = data.env()
            profile(env, realm.string_id, realm.email, variant, args.requests, cprofile=bool(args.profile))
            return
        servers: list[tuple[str, dict[str, str], Path | None]] = [("palaver", data.env(), None)]
        if not data.database_url:
            servers.append(("bare", data.env(), data.sqlite_path))
        for label, env, bare_db in servers:
            with serve(env, tmp / f"{label}.log", cpu=pins[0], bare_db=bare_db) as server:
                who = realm if bare_db is None else bare_realm()
                headers = {"Host": who.host(server.port), "Authorization": who.authorization}
                for name, form in VARIANTS.items():
                    base = f"http://{LOOPBACK}:{server.port}"
                    results[f"{label}: {name}"] = measure(base, headers, form, args.requests, server)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    database = "postgresql" if args.database_url else "sqlite"
    print(
        f"POST /register as the owner (subscribed to every channel): {args.users:,} users, "
        f"{args.channels:,} channels, {database}; {pin_line(*pins)}; {machine_line()} at the end"
    )
    print(f"  {'':<24} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'server CPU ms':>14} {'bytes':>10}")
    for name, (latencies, size, cpu) in results.items():
        print(
            f"  {name:<24} {len(latencies):>8} {percentile(latencies, 0.5):>8.1f} "
            f"{percentile(latencies, 0.99):>8.1f} {cpu * 1000:>14.1f} {size:>10}"
        )
    for name in VARIANTS:
        ours, bare = results.get(f"palaver: {name}"), results.get(f"bare: {name}")
        if ours and bare:
            p50 = percentile(ours[0], 0.5) / percentile(bare[0], 0.5)
            print(f"  palaver / bare, {name}: p50 {p50:.2f}, server CPU {ours[2] / bare[2]:.2f}")
    web_app = results.get("palaver: web app")
    p50 = percentile(web_app[0], 0.5) if web_app else math.nan
    print_targets([("web app options, p50", p50, "<=", TARGET_P50_MS, "ms")])


if __name__ == "__main__":
    main()
