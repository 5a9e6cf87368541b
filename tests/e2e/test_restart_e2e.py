"""Restarts users do not notice: zulip-terminal's polling pattern across a server restart.

A client registers, long-polls, and keeps polling with the same queue and its
``last_event_id`` while the server is stopped with SIGTERM and started again (or, with
several workers, while the workers are replaced one by one). Every poll answers 200 or
fails to connect (and is retried, as clients do); every message sent and acknowledged,
including those sent just before the restart, arrives; the queue is never lost.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_events_e2e import REDIS_URL, Server, demo_logins
from tests.helpers import require_redis
from tests.servers import (
    clean_environment,
    free_port,
    http_client,
    http_get,
    http_post,
    launch,
    wait_until_healthy,
)

pytestmark = pytest.mark.e2e


@dataclass
class Restartable:
    """One ``palaver serve`` that can be stopped and started again on the same port."""

    tmp_path: Path
    workers: int
    redis_url: str | None
    port: int = field(default_factory=free_port)
    server: Server | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = clean_environment(
            PALAVER_DATA_DIR=str(self.tmp_path),
            PALAVER_DATABASE_URL=f"sqlite:///{self.tmp_path / 'palaver.db'}",
            PALAVER_HOST="127.0.0.1",
            PALAVER_PORT=str(self.port),
            PALAVER_LOG_LEVEL="info",
            PALAVER_PASSWORD_TIME_COST="1",
            PALAVER_PASSWORD_MEMORY_COST_KIB="8",
            PALAVER_API_RATE_LIMIT="100000/60",
            # Long enough that a poll parked at SIGTERM could only end early by the drain.
            PALAVER_HEARTBEAT_SECONDS="45",
        )
        if self.redis_url:
            env["PALAVER_REDIS_URL"] = self.redis_url
        return env

    def start(self) -> float:
        """Start the server; the seconds until it answers requests."""
        started = time.monotonic()
        self.starts += 1
        log = self.tmp_path / f"server-{self.starts}.log"
        env = self.env()
        process = launch(env, ["--workers", str(self.workers)], log)
        logins = self.server.logins if self.server else None
        self.server = Server(self.url, env, process, log, logins)
        wait_until_healthy(self.url, process, lambda: log.read_text()[-3000:])
        return time.monotonic() - started

    def stop(self, timeout: float = 20) -> float:
        """SIGTERM, as systemd and container runtimes send; the seconds until it exited."""
        assert self.server is not None
        started = time.monotonic()
        self.server.process.send_signal(signal.SIGTERM)
        self.server.process.wait(timeout=timeout)
        return time.monotonic() - started

    def kill(self) -> None:
        if self.server is not None and self.server.process.poll() is None:
            os.killpg(self.server.process.pid, signal.SIGKILL)
            self.server.process.wait()


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Callable[..., Restartable]]:
    made: list[Restartable] = []

    def make(*, workers: int = 1, redis_url: str | None = None) -> Restartable:
        server = Restartable(tmp_path, workers, redis_url)
        made.append(server)
        return server

    yield make
    for server in made:
        server.kill()
    if any(server.redis_url for server in made):
        import redis

        from palaver.config import load_settings
        from palaver.events.redis_backend import RedisQueueBackend

        client = redis.Redis.from_url(REDIS_URL)
        prefix = RedisQueueBackend.default_key_prefix(
            load_settings(env={}, database_url=f"sqlite:///{tmp_path / 'palaver.db'}").database_url
        )
        keys = list(client.scan_iter(match=prefix + "*"))
        if keys:
            client.delete(*keys)
        client.close()


@dataclass
class Poller:
    """zulip-terminal's loop: GET /events with the same queue and the last ID it saw, forever;
    a connection failure is retried after a short pause, anything but 200 is recorded."""

    url: str
    auth: tuple[str, str]
    queue_id: str
    last_event_id: int = -1
    events: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    connection_errors: int = 0
    stopping: bool = False
    arrived: threading.Condition = field(default_factory=threading.Condition)
    thread: threading.Thread | None = None

    def run(self) -> None:
        with http_client(base_url=self.url, auth=self.auth, timeout=90) as http:
            while not self.stopping:
                try:
                    params: dict[str, str | int] = {
                        "queue_id": self.queue_id,
                        "last_event_id": self.last_event_id,
                    }
                    response = http.get("/api/v1/events", params=params)
                except httpx.TransportError:
                    self.connection_errors += 1
                    time.sleep(0.05)
                    continue
                self.statuses.append(response.status_code)
                if response.status_code != 200:
                    self.failures.append(response.text)
                    time.sleep(0.2)
                    continue
                with self.arrived:
                    for event in response.json()["events"]:
                        self.last_event_id = max(self.last_event_id, event["id"])
                        self.events.append(event)
                    self.arrived.notify_all()

    def start(self) -> None:
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while not predicate(self.events):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"not within {timeout}s; got {self.events}")
                self.arrived.wait(remaining)

    def message_ids(self) -> set[int]:
        return {e["message"]["id"] for e in self.events if e["type"] == "message"}


# Messages sent before and after a restart: load counted in operations, not seconds.
LOAD = 10


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.02)


def _send(url: str, auth: tuple[str, str], content: str) -> int:
    response = http_post(
        f"{url}/api/v1/messages",
        auth=auth,
        data={"type": "stream", "to": "general", "topic": "restarts", "content": content},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return int(response.json()["id"])


def register_message_queue(url: str, auth: tuple[str, str]) -> str:
    """A queue of message and restart events for `auth`; its ID."""
    response = http_post(
        f"{url}/api/v1/register", auth=auth, data={"event_types": '["message", "restart"]'}, timeout=30
    )
    assert response.status_code == 200, response.text
    return str(response.json()["queue_id"])


def _parked_polls(url: str) -> float:
    """Long-polls parked in the server's processes, from its metrics."""
    for line in http_get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith("palaver_event_parked_polls "):
            return float(line.split()[1])
    return 0.0


def _parked_poll_answers_on_sigterm(server: Restartable, auth: tuple[str, str], queue_id: str) -> float:
    """A poll parked with nothing to say answers 200 (a heartbeat) well before the exit."""
    answered: dict[str, Any] = {}

    def poll() -> None:
        response = http_get(
            f"{server.url}/api/v1/events",
            auth=auth,
            params={"queue_id": queue_id, "last_event_id": -1},
            timeout=90,
        )
        answered["at"] = time.monotonic()
        answered["response"] = response

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    # Parked (the heartbeat interval is 45 s): waited for rather than assumed after a pause,
    # which a loaded machine could outlast before the request even arrived.
    _wait_until(lambda: _parked_polls(server.url) >= 1, "the poll parked")
    assert thread.is_alive()
    signalled = time.monotonic()
    stop_seconds = server.stop()
    thread.join(timeout=5)
    response = answered["response"]
    assert response.status_code == 200, response.text
    assert [e["type"] for e in response.json()["events"]] == ["heartbeat"]
    # Well before the 45 s heartbeat (a supervisor relays SIGTERM to its workers twice a second).
    assert answered["at"] - signalled < 3.0
    return stop_seconds


def _check_restart(server: Restartable) -> None:
    first_start = server.start()
    assert server.server is not None
    owner, _ann = demo_logins(server.server)
    queue_id = register_message_queue(server.url, owner)

    stop_seconds = _parked_poll_answers_on_sigterm(server, owner, queue_id)
    start_seconds = server.start()
    print(f"\nrestart ({server.workers} worker(s)): first start {first_start:.2f}s, ")
    print(f"stop {stop_seconds:.2f}s, start {start_seconds:.2f}s")

    poller = Poller(server.url, owner, queue_id)
    poller.start()
    sent = [_send(server.url, owner, f"before restart {i}") for i in range(5)]
    poller.wait_for(bool, timeout=10)
    # Acknowledged just before SIGTERM: the poller may not have seen these yet.
    sent += [_send(server.url, owner, f"right before SIGTERM {i}") for i in range(5)]
    server.stop()
    server.start()
    sent += [_send(server.url, owner, f"after restart {i}") for i in range(3)]
    poller.wait_for(lambda events: set(sent) <= {e["message"]["id"] for e in events if "message" in e}, 20)
    poller.stopping = True
    _send(server.url, owner, "wake the poller so it stops")
    assert poller.thread is not None
    poller.thread.join(timeout=10)
    assert poller.failures == [], poller.failures
    assert set(poller.statuses) == {200}
    # Each message exactly once, in order.
    ids = [e["message"]["id"] for e in poller.events if e["type"] == "message"]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)
    server.stop()


def test_restart_with_in_process_queues(restartable: Callable[..., Restartable]) -> None:
    _check_restart(restartable())


def test_restart_with_redis_and_several_workers(restartable: Callable[..., Restartable]) -> None:
    require_redis(REDIS_URL)
    _check_restart(restartable(workers=2, redis_url=REDIS_URL))


def test_rolling_restart_of_workers_loses_nothing(restartable: Callable[..., Restartable]) -> None:
    """SIGHUP replaces each worker in turn while clients poll and send."""
    require_redis(REDIS_URL)
    server = restartable(workers=2, redis_url=REDIS_URL)
    server.start()
    assert server.server is not None
    owner, ann = demo_logins(server.server)
    poller = Poller(server.url, owner, register_message_queue(server.url, owner))
    poller.start()
    sent: list[int] = []
    sending = True

    def send_continuously() -> None:
        while sending:
            # A connection failure is not acknowledged, so not counted; a client retries.
            with contextlib.suppress(httpx.TransportError):
                sent.append(_send(server.url, ann, f"during rolling restart {len(sent)}"))
            time.sleep(0.05)

    sender = threading.Thread(target=send_continuously, daemon=True)
    sender.start()
    _wait_until(lambda: len(sent) >= LOAD, "messages sent before the SIGHUP")
    old_workers = set(server.server.worker_pids())
    server.server.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        current = set(server.server.worker_pids())
        if len(current) == 2 and not current & old_workers:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"workers not replaced: {server.server.log.read_text()[-3000:]}")
    replaced_at = len(sent)
    _wait_until(lambda: len(sent) >= replaced_at + LOAD, "messages sent after the replacement")
    sending = False
    sender.join(timeout=30)
    poller.wait_for(lambda events: set(sent) <= {e["message"]["id"] for e in events if "message" in e}, 20)
    poller.stopping = True
    _send(server.url, owner, "wake the poller so it stops")
    assert poller.thread is not None
    poller.thread.join(timeout=10)
    assert poller.failures == [], poller.failures
    assert set(poller.statuses) == {200}
    assert len(sent) > 5
    server.stop()
