"""Instructions per request, in process: a cost the machine's other load moves far less than time.

Run: .venv/bin/python bench/instructions.py [--kind users_me|send|flags|fetch|poll] [--requests 200]
     .venv/bin/python bench/instructions.py --callgrind [--kind send] [--requests 100]

The other benchmarks time a real server over loopback, so their figures move with the
machine's other tenants (a shared 2-CPU VM can run twice as slow in one hour as in
the next). This one builds the app with ``create_app`` on a copy of the ``send`` dataset
(``send_messages.py``'s organization: a channel of 50 subscribers) and calls it as an ASGI
application from the same process: the middleware, routing, authentication, parameters,
view and rendering of a real request, but no sockets, uvicorn or httptools.
The app runs without its lifespan, so no background worker, timer or queue collection
runs in the process: the counts are of the requests alone (and of nothing a worker would do
off the request path, such as delivering push notifications or emails they queue).

``poll`` is one turn of a long-poll: a ``GET /events`` parks on a queue
registered for messages, one message event (a copy of a real send's) is published to that
user, and the poll answers with it. Each turn counts the request, the parking, the delivery
to the queue, the wake-up and the answer: what every client costs per event it receives.

Without ``--callgrind`` it prints the process CPU time per request (still noisy). With it, the
script runs itself under ``valgrind --tool=callgrind --instr-atstart=no``; after the warm-up
requests and a pause for background work to settle it turns the instrumentation on (with
``callgrind_control``), and it prints the instructions counted divided by the requests
measured. Runs minutes apart agree within ~2 %; over hours a tree's figure drifts more, so
compare two trees by runs taken in the same minutes (point ``PYTHONPATH`` at the other tree's
``src/``). ``--out FILE`` keeps the profile for ``callgrind_annotate``. To see which Python
functions take the time, run it without ``--callgrind`` under
``py-spy record --gil --format raw`` with many requests.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
from common import Dataset, Realm, cached_dataset, seed_channel

CHANNEL = "seed channel 0"
KINDS = ("users_me", "send", "flags", "fetch", "poll")
WARMUP = 20
SETTLE_SECONDS = 3.0


def dataset(tmp: Path) -> Dataset:
    def build(env: dict[str, str], realm: Realm) -> dict[str, str]:
        return {"seeded": seed_channel(env, realm, 50)}

    return cached_dataset("send", {"subscribers": 50}, build, scratch=tmp / "data")


class Client:
    """Requests straight into the ASGI application, answered in full before the next."""

    def __init__(self, app: Any, realm: Realm) -> None:
        self.app = app
        self.host = f"{realm.string_id}.127.0.0.1:9".encode()
        token = base64.b64encode(f"{realm.email}:{realm.api_key}".encode())
        self.authorization = b"Basic " + token

    async def request(self, method: str, path: str, form: dict[str, str] | None = None) -> bytes:
        path, _, query = path.partition("?")
        body = urlencode(form).encode() if form is not None else b""
        headers = [(b"host", self.host), (b"authorization", self.authorization)]
        if form is not None:
            headers += [
                (b"content-type", b"application/x-www-form-urlencoded"),
                (b"content-length", str(len(body)).encode()),
            ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 9),
        }
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # a disconnect never comes
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        answer = b"".join(chunks)
        if status != 200:
            raise SystemExit(f"{method} {path}: HTTP {status}: {answer[:300]!r}")
        return answer


def send(client: Client, i: int) -> Any:
    form = {"type": "stream", "to": CHANNEL, "topic": f"topic {i % 10}", "content": f"message {i}"}
    return client.request("POST", "/api/v1/messages", form)


def requests_of(kind: str, client: Client, ids: list[int]) -> Callable[[int], Any]:
    """The i-th request of ``kind``; ``ids``: the messages sent before (flags, fetch)."""
    if kind == "users_me":
        return lambda _i: client.request("GET", "/api/v1/users/me")
    if kind == "send":
        return lambda i: send(client, i)
    if kind == "flags":
        # Marks the same page read and unread in turn: every request changes 20 rows.
        def flags(i: int) -> Any:
            op = "add" if i % 2 == 0 else "remove"
            form = {"messages": str(ids[-20:]), "op": op, "flag": "read"}
            return client.request("POST", "/api/v1/messages/flags", form)

        return flags
    narrow = urlencode(
        {"anchor": "newest", "num_before": "50", "num_after": "0", "narrow": f'[["channel", "{CHANNEL}"]]'}
    )
    return lambda _i: client.request("GET", f"/api/v1/messages?{narrow}")


class Poller:
    """One client's long-poll turns: park a GET /events, publish one event to the user, answer."""

    def __init__(self, app: Any, client: Client) -> None:
        self.app = app
        self.client = client
        self.queue_id = ""
        self.last_event_id = -1
        self.published: tuple[int, dict[str, Any], list[int]] | None = None

    async def prepare(self) -> None:
        form = {"event_types": '["message"]'}
        self.queue_id = orjson.loads(await self.client.request("POST", "/api/v1/register", form))["queue_id"]
        bus = self.app.state.services.bus
        bus.add_listener(self._keep)
        await send(self.client, 0)
        bus.remove_listener(self._keep)
        await self.turn(0)  # takes the real send's own event off the queue

    def _keep(self, realm_id: int, event: dict[str, Any], user_ids: Any) -> None:
        if event.get("type") == "message" and self.published is None:
            self.published = (realm_id, event, list(user_ids))

    async def turn(self, _i: int) -> bytes:
        path = f"/api/v1/events?queue_id={self.queue_id}&last_event_id={self.last_event_id}"
        poll = asyncio.ensure_future(self.client.request("GET", path))
        bus = self.app.state.services.bus
        while bus.parked_polls == 0:
            await asyncio.sleep(0)
            if poll.done():
                break
        if not poll.done():
            assert self.published is not None
            realm_id, event, user_ids = self.published
            bus.publish(realm_id, event, user_ids)
        answer = await poll
        events = orjson.loads(answer)["events"]
        self.last_event_id = events[-1]["id"]
        return answer


async def drive(app: Any, realm: Realm, kind: str, count: int) -> float:
    client = Client(app, realm)
    if kind == "poll":
        poller = Poller(app, client)
        await poller.prepare()
        return await measure(poller.turn, count)
    ids = []
    if kind in ("flags", "fetch"):
        for i in range(50):
            ids.append(orjson.loads(await send(client, i))["id"])
    return await measure(requests_of(kind, client, ids), count)


async def measure(make: Callable[[int], Any], count: int) -> float:
    # The session cache, compiled statements and the realm's cached state fill up first.
    for i in range(WARMUP):
        await make(i)
    # Background work the preparation set off (events, emails to schedule) ends before the
    # window, or it would fall into some runs and not others.
    await asyncio.sleep(SETTLE_SECONDS)
    instrument("on")
    started = time.process_time()
    for i in range(count):
        await make(WARMUP + i)
    seconds = time.process_time() - started
    instrument("off")
    return seconds


def instrument(state: str) -> None:
    """Under callgrind (started with instrumentation off), count only the measured requests."""
    if os.environ.get("PALAVER_BENCH_CALLGRIND"):
        argv = ["callgrind_control", f"--instr={state}", str(os.getpid())]
        subprocess.run(argv, check=True, capture_output=True)


def run_inside(kind: str, count: int, data_dir: Path) -> None:
    data = dataset(data_dir.parent).copy_to(data_dir)
    os.environ.update(data.env())
    from palaver.app import create_app
    from palaver.bootstrap import tune_gc_for_serving
    from palaver.config import load_settings

    app = create_app(load_settings())
    # As a served worker does (asgi.py), but with no full collection during the run: one on the
    # clock would land in some runs and not others.
    tune_gc_for_serving(full_collection_seconds=24 * 3600)

    async def main() -> float:
        # No lifespan: it would start the background workers (the change-log follower's
        # 0.25 s timer, the push worker's probe, the scheduler, queue collection, WAL
        # checkpoints), whose rounds land in valgrind's slow window in some runs and not in
        # others. Requests need none of them.
        try:
            return await drive(app, data.realm, kind, count)
        finally:
            app.state.services.close()

    seconds = asyncio.run(main())
    print(f"{kind}: {count} requests, {seconds / count * 1000:.3f} ms CPU per request (this process)")


def callgrind(kind: str, count: int, tmp: Path, out: Path | None) -> None:
    argv = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out or os.devnull}",
        sys.executable,
        __file__,
        f"--kind={kind}",
        f"--requests={count}",
        f"--data-dir={tmp / 'copy'}",
    ]
    env = {**os.environ, "PALAVER_BENCH_CALLGRIND": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    match = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or match is None:
        raise SystemExit(f"callgrind run failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    per_request = int(match.group(1)) / count
    print(f"{kind}: {per_request / 1e6:.3f} M instructions per request ({count} requests, {WARMUP} before)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=KINDS, default="users_me")
    parser.add_argument("--requests", type=int, default=200, choices=range(1, 100_001), metavar="N")
    parser.add_argument("--callgrind", action="store_true", help="instructions per request, by valgrind")
    parser.add_argument("--out", type=Path, help="with --callgrind: keep the profile for callgrind_annotate")
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.data_dir is not None:
        run_inside(args.kind, args.requests, args.data_dir)
        return
    tmp = Path(tempfile.mkdtemp(prefix="palaver-bench-instr-"))
    try:
        if args.callgrind:
            callgrind(args.kind, args.requests, tmp, args.out)
        else:
            run_inside(args.kind, args.requests, tmp / "copy")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
