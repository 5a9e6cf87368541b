"""Changes in a large organization (10,000 users, 1,000 channels), and the requests after them.

Run: .venv/bin/python bench/realm_changes.py [--quick] [--users 10000] [--channels 1000]
                                            [--rounds 20] [--no-pin]

A change to a channel's members or to a user drops what the realm-state cache holds about
them, in every process, and tells everyone in the organization who may know. This measures
what that costs the change itself and the requests after it, on the organization
``register.py`` seeds (the same cached dataset: ``palaver seed-users``, the owner in every
channel, each member in 10). On a working copy, one ``palaver serve`` process (pinned to
one CPU, the client on the other), as the owner, ``--rounds`` times: leave a channel, join
it again, send to it twice, ``POST /register`` as the web app asks; set a status, change the
owner's name, each followed by a send, and a ``POST /register``; change the theme (a
personal setting), a send and a ``POST /register`` after it. Then create channels (the owner
their only subscriber) and send to an older channel after each. Prints p50/max latency (the
client's JSON parsing included) and the server's CPU per request (a mean: /proc counts 10 ms
ticks), each beside ``GET /users/me`` measured in the same run (the cheapest authenticated
request: the baseline to read the others as ratios). Loopback only.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from common import (
    Server,
    bounded,
    cpus,
    large_organization,
    machine_line,
    organization_flags,
    pin_line,
    pin_self,
    quick_flag,
    quick_organization,
    serve,
)

BASELINE = "GET /users/me (baseline)"
BASELINE_REPEATS = 20
# What the web app asks for (register.py's "web app" variant, without client capabilities).
WEB_APP = {
    "include_subscribers": "true",
    "client_gravatar": "true",
    "slim_presence": "true",
    "apply_markdown": "true",
}


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


class Timings:
    """Latency and server CPU per labelled request, in milliseconds."""

    def __init__(self, client: httpx.Client, server: Server) -> None:
        self.client, self.server = client, server
        self.rows: dict[str, list[tuple[float, float]]] = {}

    def run(self, label: str, request: Callable[[httpx.Client], httpx.Response]) -> dict[str, Any]:
        cpu = self.server.cpu_seconds()
        started = time.perf_counter()
        response = request(self.client)
        elapsed = time.perf_counter() - started
        body: dict[str, Any] = response.json()
        if body.get("result") != "success":
            raise SystemExit(f"{label}: {response.status_code} {response.text[:300]}")
        self.rows.setdefault(label, []).append((elapsed * 1000, (self.server.cpu_seconds() - cpu) * 1000))
        return body

    def print(self) -> None:
        # CPU as a mean: /proc counts it in 10 ms ticks, too coarse for one request's median.
        def mean_cpu(values: list[tuple[float, float]]) -> float:
            return sum(c for _, c in values) / len(values)

        base_cpu = mean_cpu(self.rows[BASELINE])
        print(f"{'request':<34} {'n':>4} {'p50 ms':>8} {'max ms':>8} {'CPU ms':>8} {'x baseline':>10}")
        for label, values in self.rows.items():
            latencies, cpu = [x for x, _ in values], mean_cpu(values)
            row = f"{label:<34} {len(values):>4} {_median(latencies):>8.1f} {max(latencies):>8.1f}"
            ratio = f"{cpu / base_cpu:>10.1f}" if base_cpu > 0 else f"{'-':>10}"
            print(f"{row} {cpu:>8.1f} {ratio}")


def rounds(timings: Timings, names: list[str], user_id: int, count: int) -> None:
    def send(name: str) -> Callable[[httpx.Client], httpx.Response]:
        data = {"type": "stream", "to": name, "topic": "bench", "content": "hello"}
        return lambda c: c.post("/api/v1/messages", data=data)

    def leave(name: str) -> Callable[[httpx.Client], httpx.Response]:
        params = {"subscriptions": f'["{name}"]'}
        return lambda c: c.request("DELETE", "/api/v1/users/me/subscriptions", params=params)

    def join(name: str) -> Callable[[httpx.Client], httpx.Response]:
        data = {"subscriptions": f'[{{"name": "{name}"}}]'}
        return lambda c: c.post("/api/v1/users/me/subscriptions", data=data)

    def status(text: str) -> Callable[[httpx.Client], httpx.Response]:
        return lambda c: c.post("/api/v1/users/me/status", data={"status_text": text})

    def rename(full_name: str) -> Callable[[httpx.Client], httpx.Response]:
        return lambda c: c.patch("/api/v1/settings", data={"full_name": full_name})

    def register(c: httpx.Client) -> httpx.Response:
        response = c.post("/api/v1/register", data=WEB_APP)
        queue_id = response.json().get("queue_id")
        if queue_id is not None:
            c.request("DELETE", "/api/v1/events", params={"queue_id": queue_id})
        return response

    themes = iter(range(10**6))

    def theme(c: httpx.Client) -> httpx.Response:
        return c.patch("/api/v1/settings", data={"color_scheme": str(1 + next(themes) % 3)})

    def create(name: str) -> Callable[[httpx.Client], httpx.Response]:
        data = {"name": name, "subscribers": f"[{user_id}]"}
        return lambda c: c.post("/api/v1/channels/create", data=data)

    for name in names[:count]:
        # Many: the baseline's CPU is a few ticks of 10 ms, averaged.
        for _ in range(BASELINE_REPEATS):
            timings.run(BASELINE, lambda c: c.get("/api/v1/users/me"))
        timings.run("leave a channel", leave(name))
        timings.run("join it again", join(name))
        timings.run("send to it, first after the join", send(name))
        timings.run("send to it again", send(name))
        timings.run("POST /register, after leave and join", register)
        timings.run("set a status", status(f"busy with {name}"))
        timings.run("send, after the status", send(name))
        timings.run("change one's name", rename(f"Owner of {name}"))
        timings.run("send, after the name change", send(name))
        timings.run("POST /register, after the name", register)
        timings.run("change one's theme", theme)
        timings.run("send, after the theme change", send(name))
        timings.run("POST /register, after the theme", register)
    for index in range(max(1, count // 2)):
        timings.run("create a channel", create(f"bench-{time.time_ns()}-{index}"))
        timings.run("send to another, after the create", send(names[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    organization_flags(parser, minimum=10)
    parser.add_argument("--rounds", type=bounded(int, 1, 200), default=20, metavar="N")
    quick_flag(parser)
    args = parser.parse_args()
    if args.quick:
        quick_organization(args)
        args.rounds = 6

    server_cpu, client_cpu = (None, None) if args.no_pin else cpus()
    pin_self(client_cpu)
    tmp = Path(tempfile.mkdtemp(prefix="palaver-realm-changes-"))
    try:
        dataset = large_organization(args.users, args.channels)
        work = dataset.copy_to(tmp / "data")
        with serve(work.env(), tmp / "server.log", cpu=server_cpu) as server:
            headers = {"Authorization": dataset.realm.authorization, "Host": dataset.realm.host(server.port)}
            base = f"http://127.0.0.1:{server.port}"
            with httpx.Client(base_url=base, headers=headers, timeout=120, trust_env=False) as client:
                timings = Timings(client, server)
                me = timings.run("warm-up", lambda c: c.get("/api/v1/users/me"))
                subscribed = timings.run("warm-up", lambda c: c.get("/api/v1/users/me/subscriptions"))
                names = [s["name"] for s in subscribed["subscriptions"]]
                del timings.rows["warm-up"]
                rounds(timings, names, me["user_id"], args.rounds)
        print(f"realm changes: {args.users:,} users, {args.channels:,} channels; {machine_line()}")
        print(pin_line(server_cpu, client_cpu))
        timings.print()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
