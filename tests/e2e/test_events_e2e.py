"""Real-time events end to end: ``palaver serve`` driven by the ``zulip`` client.

A client listening with ``call_on_each_event`` must hear of another client's change (a
message, typing, a reaction, an edit, a subscription) within a second, on one process with
in-memory queues and on four processes sharing queues in Redis, where the queue must also
outlive every process that served it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import zulip

from palaver.config import load_settings
from palaver.events.redis_backend import RedisQueueBackend
from tests import helpers
from tests.helpers import require_redis
from tests.servers import (
    ServerProcess,
    clean_environment,
    free_port,
    http_client,
    http_post,
    launch,
    wait_until_healthy,
)

pytestmark = pytest.mark.e2e

REDIS_URL = helpers.REDIS_URL


def _redis_available() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@dataclass
class Server:
    url: str
    env: dict[str, str]
    process: ServerProcess
    log: Path
    logins: tuple[tuple[str, str], tuple[str, str]] | None = None

    def client(self, email: str, api_key: str) -> zulip.Client:
        return zulip.Client(email=email, api_key=api_key, site=self.url)

    def worker_pids(self) -> list[int]:
        """The uvicorn worker processes: the children of the fork server that the server
        process starts to fork them (supervisor.py); multiprocessing's resource tracker is
        the server's child too, but serves nothing."""
        processes: dict[int, tuple[int, bytes]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                    command = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                # The parent PID is the second field after the parenthesised command name.
                processes[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), command)
        forkservers = {
            pid
            for pid, (parent, command) in processes.items()
            if parent == self.process.pid and b"forkserver" in command
        }
        return sorted(pid for pid, (parent, _) in processes.items() if parent in forkservers)


def _wait_until_serving(server: Server, timeout: float = 60) -> None:
    wait_until_healthy(server.url, server.process, lambda: server.log.read_text()[-3000:], timeout)


@pytest.fixture(scope="module")
def start_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Server]]:
    """One server per configuration for the whole module (each start costs seconds, several
    workers many more): the tests use the demo organization's owner and Ann, whom the first
    test creates, and each its own listener and queue."""
    started: dict[tuple[int, str | None], Server] = {}
    prefixes: list[str] = []

    def start(*, workers: int = 1, redis_url: str | None = None) -> Server:
        if (workers, redis_url) in started:
            return started[workers, redis_url]
        tmp_path = tmp_path_factory.mktemp(f"events-server-{workers}")
        port = free_port()
        database_url = f"sqlite:///{tmp_path / 'palaver.db'}"
        env = clean_environment(
            PALAVER_DATA_DIR=str(tmp_path),
            PALAVER_DATABASE_URL=database_url,
            PALAVER_HOST="127.0.0.1",
            PALAVER_PORT=str(port),
            PALAVER_LOG_LEVEL="warning",
            PALAVER_PASSWORD_TIME_COST="1",
            PALAVER_PASSWORD_MEMORY_COST_KIB="8",
            PALAVER_API_RATE_LIMIT="100000/60",
            # Long-polls end every two seconds, so workers restart and tests stop promptly.
            PALAVER_HEARTBEAT_SECONDS="2",
            # Tests contact loopback only: no link previews.
            PALAVER_OUTGOING_FETCHES="false",
        )
        if redis_url:
            env["PALAVER_REDIS_URL"] = redis_url
            settings = load_settings(env={}, database_url=database_url, data_dir=str(tmp_path))
            prefixes.append(RedisQueueBackend.default_key_prefix(settings.database_url))
        log = tmp_path / f"server-{port}.log"
        process = launch(env, ["--workers", str(workers)], log)
        server = Server(f"http://127.0.0.1:{port}", env, process, log)
        started[workers, redis_url] = server
        _wait_until_serving(server)
        return server

    yield start
    for server in started.values():
        if server.process.poll() is None:
            os.killpg(server.process.pid, signal.SIGTERM)
            try:
                server.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.process.pid, signal.SIGKILL)
                server.process.wait()
    if prefixes:
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        for prefix in prefixes:
            keys = list(client.scan_iter(match=prefix + "*"))
            if keys:
                client.delete(*keys)
        client.close()


class _Stop(Exception):
    pass


@dataclass
class Listener:
    """``call_on_each_event`` on a thread, recording what it hears and how often it registers."""

    client: zulip.Client
    event_types: list[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    registrations: int = 0
    registered: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    stopping: bool = False
    thread: threading.Thread | None = None

    def start(self) -> None:
        original = self.client.register

        def register(*args: Any, **kwargs: Any) -> dict[str, Any]:
            result: dict[str, Any] = original(*args, **kwargs)
            self.registrations += 1
            self.registered.set()
            return result

        self.client.register = register  # type: ignore[method-assign]  # counts the client's re-registrations

        def on_event(event: dict[str, Any]) -> None:
            with self.arrived:
                self.events.append(event)
                self.arrived.notify_all()
            if self.stopping:
                raise _Stop

        def run() -> None:
            with contextlib.suppress(_Stop):
                self.client.call_on_each_event(on_event, event_types=self.event_types)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.registered.wait(15), "the listener never registered a queue"

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no matching event within {timeout}s; got {self.events}")
                self.arrived.wait(remaining)

    def stop(self, poke: Callable[[], object]) -> None:
        """End the listener at its next event, which ``poke`` causes (heartbeats never
        reach the callback)."""
        self.stopping = True
        poke()
        if self.thread is not None:
            self.thread.join(timeout=10)
            assert not self.thread.is_alive()


def demo_logins(server: Server) -> tuple[tuple[str, str], tuple[str, str]]:
    """The demo owner's credentials, and those of a second user the owner creates."""
    if server.logins is None:
        lines = (Path(server.env["PALAVER_DATA_DIR"]) / "demo.zuliprc").read_text().splitlines()
        zuliprc = dict(line.split("=", 1) for line in lines if "=" in line)
        owner = (zuliprc["email"], zuliprc["key"])
        email, password = "ann@example.com", "ann-password-1"
        created = server.client(*owner).call_endpoint(
            "users", method="POST", request={"email": email, "password": password, "full_name": "Ann"}
        )
        assert created["result"] == "success", created
        fetched = http_post(
            f"{server.url}/api/v1/fetch_api_key", data={"username": email, "password": password}, timeout=10
        )
        server.logins = (owner, (email, fetched.json()["api_key"]))
    return server.logins


def _poke(client: zulip.Client) -> Callable[[], object]:
    return lambda: client.call_endpoint("settings", method="PATCH", request={"enter_sends": True})


def _check_live_events(server: Server) -> Listener:
    (owner_email, owner_key), (ann_email, ann_key) = demo_logins(server)
    listener = Listener(server.client(owner_email, owner_key), ["realm_user", "user_settings"])
    listener.start()
    ann = server.client(ann_email, ann_key)
    owner_elsewhere = server.client(owner_email, owner_key)

    changed = time.monotonic()
    result = ann.call_endpoint("settings", method="PATCH", request={"full_name": "Ann Renamed"})
    assert result["result"] == "success", result
    event = listener.wait_for(lambda e: e["type"] == "realm_user" and e["op"] == "update", timeout=1.0)
    assert time.monotonic() - changed < 1.0
    assert event["person"]["full_name"] == "Ann Renamed"

    changed = time.monotonic()
    result = owner_elsewhere.call_endpoint(
        "settings", method="PATCH", request={"twenty_four_hour_time": True}
    )
    assert result["result"] == "success", result
    event = listener.wait_for(lambda e: e["type"] == "user_settings", timeout=1.0)
    assert time.monotonic() - changed < 1.0
    assert (event["property"], event["value"]) == ("twenty_four_hour_time", True)
    return listener


def test_events_reach_a_zulip_client_within_a_second(start_server: Callable[..., Server]) -> None:
    server = start_server()
    listener = _check_live_events(server)
    listener.stop(_poke(server.client(*demo_logins(server)[0])))
    assert listener.registrations == 1


WORKERS = 4


def test_several_processes_share_queues_in_redis(start_server: Callable[..., Server]) -> None:
    require_redis(REDIS_URL)
    # Four processes, as production runs (palaver serve --workers 4).
    server = start_server(workers=WORKERS, redis_url=REDIS_URL)
    assert len(server.worker_pids()) == WORKERS
    listener = _check_live_events(server)

    # Each request on a fresh connection may land on either process; all know the queue.
    owner = server.client(*demo_logins(server)[0])
    queue = owner.register(event_types=["user_settings"])
    for _ in range(20):
        with http_client(base_url=server.url, auth=(owner.email, owner.api_key)) as fresh:
            response = fresh.get(
                "/api/v1/events",
                params={"queue_id": queue["queue_id"], "last_event_id": -1, "dont_block": "true"},
            )
            assert response.status_code == 200, response.text

    # Every process that ever served the queues dies without warning; new ones take over.
    for pid in server.worker_pids():
        os.kill(pid, signal.SIGKILL)
    _wait_until_serving(server)
    deadline = time.monotonic() + 30
    while len(server.worker_pids()) < WORKERS and time.monotonic() < deadline:
        time.sleep(0.2)
    ann = server.client(*demo_logins(server)[1])
    result = ann.call_endpoint("settings", method="PATCH", request={"full_name": "Ann After"})
    assert result["result"] == "success", result
    event = listener.wait_for(
        lambda e: e["type"] == "realm_user" and e["person"].get("full_name") == "Ann After", timeout=20
    )
    assert event["op"] == "update"
    # The listener kept its queue through the crash: no BAD_EVENT_QUEUE_ID, no new register.
    assert listener.registrations == 1
    listener.stop(_poke(owner))


@pytest.mark.parametrize("workers", [1, WORKERS], ids=["one-process-in-memory", "four-processes-redis"])
def test_conversation_events_arrive_within_a_second(
    start_server: Callable[..., Server], workers: int
) -> None:
    """Two clients talk: messages, typing, reactions, edits and subscriptions arrive live."""
    if workers > 1:
        require_redis(REDIS_URL)
    server = start_server(workers=workers, redis_url=REDIS_URL if workers > 1 else None)
    (owner_email, owner_key), (ann_email, ann_key) = demo_logins(server)
    owner = server.client(owner_email, owner_key)
    ann = server.client(ann_email, ann_key)
    owner_id = owner.get_profile()["user_id"]
    listener = Listener(
        server.client(owner_email, owner_key),
        ["message", "typing", "reaction", "update_message", "subscription"],
    )
    listener.start()

    def within_a_second(action: Callable[[], dict[str, Any]], match: Callable[[dict[str, Any]], bool]) -> Any:
        started = time.monotonic()
        result = action()
        assert result["result"] == "success", result
        event = listener.wait_for(match, timeout=1.0)
        assert time.monotonic() - started < 1.0
        return result, event

    within_a_second(
        lambda: ann.add_subscriptions([{"name": "live talk"}], principals=[owner_id]),
        lambda e: (
            e["type"] == "subscription"
            and e["op"] == "add"
            and any(s["name"] == "live talk" for s in e["subscriptions"])
        ),
    )
    sent, event = within_a_second(
        lambda: ann.send_message({"type": "stream", "to": "live talk", "topic": "plans", "content": "hello"}),
        # call_on_each_event registers without apply_markdown: raw content.
        lambda e: e["type"] == "message" and e["message"]["content"] == "hello",
    )
    message_id = sent["id"]
    assert event["message"]["sender_email"] == ann_email
    within_a_second(
        lambda: ann.set_typing_status({"op": "start", "to": [owner_id]}),
        lambda e: e["type"] == "typing" and e["op"] == "start" and e["sender"]["email"] == ann_email,
    )
    within_a_second(
        lambda: ann.add_reaction({"message_id": message_id, "emoji_name": "octopus"}),
        lambda e: e["type"] == "reaction" and e["op"] == "add" and e["emoji_name"] == "octopus",
    )
    within_a_second(
        lambda: ann.update_message({"message_id": message_id, "content": "hello, edited"}),
        lambda e: e["type"] == "update_message" and e.get("rendered_content") == "<p>hello, edited</p>",
    )
    listener.stop(
        lambda: ann.send_message({"type": "stream", "to": "live talk", "topic": "plans", "content": "bye"})
    )
    assert listener.registrations == 1
