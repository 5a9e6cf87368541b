"""Capacity under a realistic mix: how many users one worker holds within
Mattermost's health gate.

Run: .venv/bin/python bench/mix.py [--quick] [--steps 100,200,300,500,...] [--step-seconds 60]
                                   [--users 3000] [--channels 20] [--subscriptions 5]
                                   [--interval 20] [--keep-going] [--no-pin]

An organization of ``--users`` members in ``--channels`` channels, each member in
``--subscriptions`` of them (defaults: 3,000 users, 750 members a channel), with some
history (``--messages`` seeded messages), is seeded once and cached under bench/.data/;
each run works on a copy. ``palaver serve`` (one worker, SQLite) runs pinned to one CPU,
the simulated users in this process on the other.

Each simulated user registers a queue (every event type; only ``message`` state fetched),
keeps one long-poll (``GET /events``) going on its own connection, and on a second
connection does an action every ``--interval`` seconds on average (exponential gaps):
read a topic (newest 50 of a channel+topic, 45%), mark read (20%), send to a channel
(10%), typing (10%), presence (10%), direct message to another simulated user (5%).
Presence polls pass the ``presence_last_update_id`` of the previous answer (-1 at first),
as the reference asks clients to, so each answer holds only what changed since.

Users are added in steps. Once a step's users are registered and a few settling seconds
have passed, a window of ``--step-seconds`` is measured: per-action latency, errors
(failed actions and failed polls), delivery of the messages sent in the window (from the
send request's start to each recipient's long-poll answer), events/s, the server's CPU
and RSS and the load generator's own CPU. The gate, per step: average < 100 ms, p99 < 2 s
and errors < 0.025% over the actions. The run stops after the first step that fails the
gate (``--keep-going`` to go on). Loopback only; bounded by --max-minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import random
import shutil
import tempfile
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
from common import (
    LOOPBACK,
    ClientCost,
    Connection,
    Dataset,
    HttpError,
    Realm,
    Server,
    basic_auth,
    build_request,
    cached_dataset,
    cpus,
    machine_line,
    percentile,
    pin_self,
    print_targets,
    query,
    quick_flag,
    raise_file_limit,
    run,
    run_cli,
    seed_channel,
    serve,
    sql_rows,
)
from prometheus_client.parser import text_string_to_metric_families

ACTIONS = {"read": 45, "mark_read": 20, "send": 10, "typing": 10, "presence": 10, "dm": 5}
GATE_AVG_MS, GATE_P99_MS, GATE_ERRORS = 100.0, 2000.0, 0.00025
REQUEST_TIMEOUT = 30.0


def dataset(args: argparse.Namespace) -> Dataset:
    sizes = {
        "users": args.users,
        "channels": args.channels,
        "subscriptions": args.subscriptions,
        "messages": args.messages,
    }

    def build(env: dict[str, str], realm: Realm) -> dict[str, Any]:
        run_cli(
            env,
            "seed-users",
            "--realm",
            realm.string_id,
            "--users",
            str(args.users),
            "--channels",
            str(args.channels),
            "--subscriptions",
            str(args.subscriptions),
        )
        seed_channel(env, realm, 10, args.messages, channels=args.channels)
        users: dict[int, list[Any]] = {
            user_id: [email, api_key, []]
            for user_id, email, api_key in sql_rows(
                env,
                "SELECT id, email, api_key FROM user_profile "
                "WHERE full_name LIKE 'Seed User %' AND is_active ORDER BY id",
            )
        }
        channels: dict[int, list[str]] = {}
        for stream_id, recipient_id in sql_rows(
            env, "SELECT id, recipient_id FROM stream WHERE name LIKE 'seed channel %'"
        ):
            channels[stream_id] = [
                subject
                for (subject,) in sql_rows(
                    env,
                    "SELECT DISTINCT subject FROM message WHERE recipient_id = :r LIMIT 20",
                    r=recipient_id,
                )
            ] or ["general"]
            members = "SELECT user_profile_id FROM subscription WHERE recipient_id = :r AND active"
            for (user_id,) in sql_rows(env, members, r=recipient_id):
                if user_id in users:
                    users[user_id][2].append(stream_id)
        return {
            "users": [[user_id, *rest] for user_id, rest in users.items()],
            "channels": {str(k): v for k, v in channels.items()},
        }

    return cached_dataset("mix", sizes, build)


@dataclass
class Window:
    """What happened in one measured window."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_samples: list[str] = field(default_factory=list)
    deliveries: list[float] = field(default_factory=list)
    events: int = 0
    polls: int = 0
    poll_errors: int = 0

    def error(self, kind: str, sample: str) -> None:
        self.errors[kind] += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(f"{kind}: {sample[:200]}")


@dataclass
class Load:
    port: int
    host: str
    channels: dict[int, list[str]]
    interval: float
    rng: random.Random
    stopping: bool = False
    window: Window | None = None  # recording while set
    sent: dict[str, float] = field(default_factory=dict)  # message token -> send start
    active: list[int] = field(default_factory=list)  # user IDs online
    tokens: itertools.count[int] = field(default_factory=itertools.count)
    registered: int = 0
    register_latencies: list[float] = field(default_factory=list)
    setup_errors: list[str] = field(default_factory=list)


class SimulatedUser:
    def __init__(self, load: Load, user_id: int, email: str, api_key: str, streams: list[int]) -> None:
        self.load, self.user_id, self.streams = load, user_id, streams
        self.authorization = basic_auth(email, api_key)
        self.queue_id = ""
        self.last_event_id = -1
        self.recent: deque[int] = deque(maxlen=20)
        self.presence_last_update_id = -1
        self.tasks: list[asyncio.Task[None]] = []
        self.connections: list[Connection] = []

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> bytes:
        return build_request(method, path, self.load.host, self.authorization, form)

    async def start(self, registering: asyncio.Semaphore) -> None:
        async with registering:
            self.connections = [await Connection.open(self.load.port) for _ in range(2)]
            await self.register()
        self.load.registered += 1
        self.load.active.append(self.user_id)
        self.tasks = [asyncio.create_task(self.poll()), asyncio.create_task(self.act())]

    async def register(self) -> None:
        form = {
            "fetch_event_types": '["message"]',
            "apply_markdown": "false",
            "client_gravatar": "true",
            "slim_presence": "true",
        }
        started = time.perf_counter()
        status, body = await self.connections[0].request(
            self.request("POST", "/api/v1/register", form), REQUEST_TIMEOUT
        )
        self.load.register_latencies.append(time.perf_counter() - started)
        if status != 200:
            raise HttpError(f"register: {status} {body[:200].decode(errors='replace')}")
        state = orjson.loads(body)
        self.queue_id, self.last_event_id = state["queue_id"], state["last_event_id"]

    async def poll(self) -> None:
        load = self.load
        while not load.stopping:
            path = f"/api/v1/events?queue_id={self.queue_id}&last_event_id={self.last_event_id}"
            raw = self.request("GET", path)
            try:
                status, body = await self.connections[1].request(raw, 600)
            except (HttpError, TimeoutError, OSError) as error:
                status, body = 0, repr(error).encode()
            received = time.perf_counter()
            window = load.window
            if load.stopping:
                return
            if window is not None:
                window.polls += 1
            if status != 200:
                if window is not None:
                    window.poll_errors += 1
                    window.error("poll", f"{status} {body[:200].decode(errors='replace')}")
                await asyncio.sleep(1)
                try:
                    await self.register()
                except (HttpError, TimeoutError, OSError) as error:
                    load.setup_errors.append(str(error)[:200])
                continue
            events = orjson.loads(body)["events"]
            for event in events:
                self.last_event_id = max(self.last_event_id, event["id"])
                if event["type"] == "message":
                    message = event["message"]
                    self.recent.append(message["id"])
                    sent = load.sent.get(message["content"])
                    if sent is not None and window is not None:
                        window.deliveries.append(received - sent)
            if window is not None:
                window.events += len(events)

    def action(self) -> tuple[str, bytes]:
        load = self.load
        kind = load.rng.choices(list(ACTIONS), weights=list(ACTIONS.values()))[0]
        stream = load.rng.choice(self.streams) if self.streams else next(iter(load.channels))
        topic = load.rng.choice(load.channels[stream])
        if kind == "mark_read" and not self.recent:
            kind = "read"
        if kind == "read":
            narrow = [{"operator": "channel", "operand": stream}, {"operator": "topic", "operand": topic}]
            params = {
                "anchor": "newest",
                "num_before": "50",
                "num_after": "0",
                "apply_markdown": "false",
                "narrow": json.dumps(narrow),
            }
            return kind, self.request("GET", query("/api/v1/messages", params))
        if kind == "mark_read":
            ids = json.dumps(list(self.recent))
            self.recent.clear()
            return kind, self.request(
                "POST", "/api/v1/messages/flags", {"op": "add", "flag": "read", "messages": ids}
            )
        if kind == "typing":
            form = {"type": "stream", "op": "start", "stream_id": str(stream), "topic": topic}
            return kind, self.request("POST", "/api/v1/typing", form)
        if kind == "presence":
            form = {
                "status": "active",
                "new_user_input": "true",
                "slim_presence": "true",
                "last_update_id": str(self.presence_last_update_id),
            }
            return kind, self.request("POST", "/api/v1/users/me/presence", form)
        token = f"mix {next(load.tokens)}"
        if kind == "send":
            form = {"type": "stream", "to": str(stream), "topic": topic, "content": token}
        else:
            others = [u for u in load.rng.sample(load.active, min(3, len(load.active))) if u != self.user_id]
            if not others:
                return self.action()
            form = {"type": "direct", "to": json.dumps(others[:1]), "content": token}
        load.sent[token] = time.perf_counter()
        return kind, self.request("POST", "/api/v1/messages", form)

    async def act(self) -> None:
        load = self.load
        # The first action lands anywhere in the first interval, so users don't act in lockstep.
        await asyncio.sleep(load.rng.uniform(0, load.interval))
        while not load.stopping:
            kind, raw = self.action()
            started = time.perf_counter()
            window = load.window
            try:
                status, body = await self.connections[0].request(raw, REQUEST_TIMEOUT)
            except (HttpError, TimeoutError, OSError) as error:
                status, body = 0, repr(error).encode()
            elapsed = time.perf_counter() - started
            if load.stopping:
                return
            if window is not None and window is load.window:
                window.latencies[kind].append(elapsed)
                if status != 200:
                    window.error(kind, f"{status} {body[:200].decode(errors='replace')}")
            if status == 200 and kind == "read":
                self.recent.extend(m["id"] for m in orjson.loads(body)["messages"][-20:])
            elif status == 200 and kind == "presence":
                self.presence_last_update_id = orjson.loads(body)["presence_last_update_id"]
            await asyncio.sleep(load.rng.expovariate(1 / load.interval))

    def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for connection in self.connections:
            connection.close()


@dataclass
class StepResult:
    users: int
    ramp_seconds: float
    window: Window
    seconds: float
    server_cpu: float
    rss: int
    client_cpu: float
    # The server's own average time per action request (see ``server_timings``).
    server_avg_ms: float

    @property
    def all_latencies(self) -> list[float]:
        return [x for values in self.window.latencies.values() for x in values]

    @property
    def actions(self) -> int:
        return len(self.all_latencies)

    @property
    def error_count(self) -> int:
        return sum(self.window.errors.values())

    @property
    def error_rate(self) -> float:
        total = self.actions + self.window.polls
        return self.error_count / total if total else 0.0

    @property
    def average_ms(self) -> float:
        values = self.all_latencies
        return 1000 * sum(values) / len(values) if values else math.nan

    @property
    def passed(self) -> bool:
        return (
            self.actions > 0
            and self.average_ms < GATE_AVG_MS
            and percentile(self.all_latencies, 0.99) < GATE_P99_MS
            and self.error_rate < GATE_ERRORS
        )


# The server's own request timings (``palaver_http_request_duration_seconds``): a count and
# a sum per route, so the server-side average of the actions can be set beside the one the
# load generator measures. Where they differ, the time went outside the server's handling.
_DURATION = "palaver_http_request_duration_seconds"
_LONG_POLL_ROUTE = "/api/v1/events"


def server_timings(port: int) -> dict[tuple[str, str], tuple[float, float]]:
    """(count, seconds) per (method, route) answered so far, from ``/metrics``."""
    text = httpx.get(f"http://{LOOPBACK}:{port}/metrics", timeout=30, trust_env=False).text
    found: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for family in text_string_to_metric_families(text):
        if family.name != _DURATION:
            continue
        for sample in family.samples:
            slot = {_DURATION + "_count": 0, _DURATION + "_sum": 1}.get(sample.name)
            if slot is not None:
                found[sample.labels["method"], sample.labels["route"]][slot] += sample.value
    return {key: (count, seconds) for key, (count, seconds) in found.items()}


def server_actions_ms(
    before: dict[tuple[str, str], tuple[float, float]], after: dict[tuple[str, str], tuple[float, float]]
) -> float:
    """The server's average time per request in between, long-polls left out."""
    count = seconds = 0.0
    for key, (n, total) in after.items():
        if key[1] == _LONG_POLL_ROUTE:
            continue
        n0, total0 = before.get(key, (0.0, 0.0))
        count, seconds = count + n - n0, seconds + total - total0
    return 1000 * seconds / count if count else math.nan


async def run_steps(
    server: Server, realm: Realm, data: Dataset, args: argparse.Namespace
) -> list[StepResult]:
    load = Load(
        server.port,
        realm.host(server.port),
        {int(k): v for k, v in data.extra["channels"].items()},
        args.interval,
        random.Random(args.seed),
    )
    pool = [SimulatedUser(load, u[0], u[1], u[2], u[3]) for u in data.extra["users"]]
    load.rng.shuffle(pool)
    started_users: list[SimulatedUser] = []
    results: list[StepResult] = []
    deadline = time.monotonic() + args.max_minutes * 60
    registering = asyncio.Semaphore(8)
    try:
        for target in args.steps:
            if target > len(pool):
                print(f"step {target}: the organization has only {len(pool)} users", flush=True)
                break
            if time.monotonic() > deadline:
                print(f"stopping: --max-minutes {args.max_minutes} reached", flush=True)
                break
            ramp_started = time.monotonic()
            new = pool[len(started_users) : target]
            outcomes = await asyncio.gather(*(u.start(registering) for u in new), return_exceptions=True)
            started_users += new
            failed = [o for o in outcomes if isinstance(o, BaseException)]
            if failed:
                raise SystemExit(f"{len(failed)} users could not register, e.g. {failed[0]!r}")
            ramp = time.monotonic() - ramp_started
            await asyncio.sleep(args.settle)
            window = Window()
            timings_before = await asyncio.to_thread(server_timings, server.port)
            server_before, client, rss_started = server.cpu_seconds(), ClientCost(), time.perf_counter()
            load.window = window
            await asyncio.sleep(args.step_seconds)
            load.window = None
            seconds = time.perf_counter() - rss_started
            timings_after = await asyncio.to_thread(server_timings, server.port)
            result = StepResult(
                target,
                ramp,
                window,
                seconds,
                (server.cpu_seconds() - server_before) / seconds,
                server.rss_bytes(),
                client.seconds() / seconds,
                server_actions_ms(timings_before, timings_after),
            )
            results.append(result)
            print_step(result, flush=True)
            if not result.passed and not args.keep_going:
                break
    finally:
        load.stopping = True
        for user in started_users:
            user.stop()
        await asyncio.sleep(0.1)
    return results


def print_step(result: StepResult, flush: bool = False) -> None:
    w = result.window
    values = result.all_latencies
    delivered = w.deliveries
    print(
        f"{result.users:>6} users: {result.actions:>6} actions ({result.actions / result.seconds:,.1f}/s), "
        f"avg {result.average_ms:.1f} ms (server-side {result.server_avg_ms:.1f}), "
        f"p50 {percentile(values, 0.5):.1f}, "
        f"p99 {percentile(values, 0.99):.1f} ms, "
        f"errors {result.error_count} ({100 * result.error_rate:.3f}%); "
        f"events {w.events / result.seconds:,.0f}/s, delivery p50 {percentile(delivered, 0.5):.0f} / "
        f"p99 {percentile(delivered, 0.99):.0f} ms ({len(delivered)}); "
        f"server CPU {100 * result.server_cpu:.0f}%, RSS {result.rss / 2**20:.0f} MiB; "
        f"client CPU {100 * result.client_cpu:.0f}%; ramp {result.ramp_seconds:.0f} s; "
        f"gate {'PASS' if result.passed else 'FAIL'}",
        flush=flush,
    )


def print_summary(results: list[StepResult], args: argparse.Namespace) -> None:
    print()
    print(
        f"Realistic mix, one worker, SQLite; {args.users:,} users, {args.channels} channels of "
        f"{args.users * args.subscriptions // max(args.channels, 1):,} members; an action every "
        f"{args.interval:g} s on average; {args.step_seconds:g} s windows; {machine_line()} at the end"
    )
    header: tuple[str, ...] = (
        "users",
        "actions/s",
        "avg ms",
        "p99 ms",
        "errors %",
        "events/s",
        "deliv p50",
        "deliv p99",
    )
    header += ("srv CPU %", "RSS MiB", "client %", "gate")
    print(" ".join(f"{h:>9}" for h in header))
    for r in results:
        values = r.all_latencies
        cells = (
            f"{r.users}",
            f"{r.actions / r.seconds:.1f}",
            f"{r.average_ms:.1f}",
            f"{percentile(values, 0.99):.0f}",
            f"{100 * r.error_rate:.3f}",
            f"{r.window.events / r.seconds:.0f}",
            f"{percentile(r.window.deliveries, 0.5):.0f}",
            f"{percentile(r.window.deliveries, 0.99):.0f}",
            f"{100 * r.server_cpu:.0f}",
            f"{r.rss / 2**20:.0f}",
            f"{100 * r.client_cpu:.0f}",
            "PASS" if r.passed else "FAIL",
        )
        print(" ".join(f"{c:>9}" for c in cells))
    print("per action, p50 / p99 ms (count):")
    for r in results:
        parts = [
            f"{kind} {percentile(v, 0.5):.0f}/{percentile(v, 0.99):.0f} ({len(v)})"
            for kind in ACTIONS
            if (v := r.window.latencies.get(kind, []))
        ]
        print(f"  {r.users:>6} users: " + ", ".join(parts))
        for sample in r.window.error_samples:
            print(f"           error {sample}")
    passed = [r.users for r in results if r.passed]
    print(f"most users within the gate: {max(passed) if passed else 'none'} (towards 5,000)")
    print_targets([("users within the gate, one worker", float(max(passed, default=0)), ">=", 2000, "users")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="100,200,300,500,750,1000,1500,2000,3000", help="users per step")
    parser.add_argument("--step-seconds", type=float, default=60.0, help="measured window per step (60)")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds between a ramp and its window")
    parser.add_argument("--interval", type=float, default=20.0, help="mean seconds between a user's actions")
    parser.add_argument("--users", type=int, default=3000, help="members of the organization (3,000)")
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--subscriptions", type=int, default=5, help="channels each member is in")
    parser.add_argument("--messages", type=int, default=50_000, help="seeded history")
    parser.add_argument("--keep-going", action="store_true", help="run every step, past a failed gate")
    parser.add_argument("--max-minutes", type=float, default=45.0)
    parser.add_argument("--seed", type=int, default=1)
    quick_flag(parser)
    args = parser.parse_args()
    if args.quick:
        args.users, args.messages, args.steps = 300, 2_000, "20,50"
        args.step_seconds, args.settle, args.interval = 8.0, 2.0, 5.0
    args.steps = sorted(int(s) for s in args.steps.split(","))
    if not (args.steps[0] >= 1 and args.steps[-1] <= 20_000 and 1 <= args.step_seconds <= 600):
        raise SystemExit("--steps 1 to 20,000 users; --step-seconds 1 to 600")
    if not 0 < args.max_minutes <= 120:
        raise SystemExit("--max-minutes up to 120")
    raise_file_limit(2 * args.steps[-1])
    server_cpu, client_cpu = (None, None) if args.no_pin else cpus()
    pin_self(client_cpu)
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-mix-"))
    try:
        data = dataset(args).copy_to(tmp / "data")
        env = data.env(PALAVER_EVENT_QUEUE_IDLE_TIMEOUT_SECONDS="3600")
        with serve(env, tmp / "palaver.log", cpu=server_cpu) as server:
            results = run(run_steps(server, data.realm, data, args))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_summary(results, args)


if __name__ == "__main__":
    main()
