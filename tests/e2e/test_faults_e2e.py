"""Dependencies that fail: Redis and PostgreSQL unreachable at start or lost while serving.

A real ``palaver serve`` runs against a Redis this test starts on a spare loopback port
(and stops and starts again while clients poll and send), or against PostgreSQL whose
connections are terminated under it. Requests may answer 503 with ``retry-after`` while a
dependency is away; none answers 500, every message acknowledged is stored and reaches
the listening client, and the server recovers by itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.e2e.test_events_e2e import demo_logins
from tests.e2e.test_restart_e2e import Restartable, register_message_queue, restartable  # noqa: F401 (fixture)
from tests.helpers import require_redis
from tests.servers import clean_environment, free_port, http_client, http_get, http_post, launch

pytestmark = pytest.mark.e2e

PG_ADMIN_URL = os.environ.get(
    "PALAVER_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


# Messages acknowledged before a fault and again after it: load counted in operations.
LOAD = 10


@dataclass
class SpareRedis:
    """A redis-server of this test's own, on a spare port, with an append-only file so its
    data (the event queues) survives being stopped and started as a production one does."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "yes",
                "--appendfsync", "always",
                "--dir", str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def spare_redis(tmp_path: Path) -> Iterator[SpareRedis]:
    if shutil.which("redis-server") is None:
        # A run told to use Redis must not lose its fault tests silently.
        if os.environ.get("PALAVER_TEST_REDIS_URL"):
            pytest.fail("PALAVER_TEST_REDIS_URL is set but there is no redis-server on PATH")
        pytest.skip("no redis-server on PATH")
    directory = tmp_path / "redis"
    directory.mkdir()
    redis = SpareRedis(directory)
    redis.start()
    yield redis
    redis.stop()


@dataclass
class Traffic:
    """A poller (zulip-terminal's loop, keeping its queue) and a sender, both recording
    every status they get."""

    url: str
    poll_auth: tuple[str, str]
    send_auth: tuple[str, str]
    queue_id: str
    statuses: list[int] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    acknowledged: list[int] = field(default_factory=list)
    received: set[int] = field(default_factory=set)
    polling: bool = True
    sending: bool = True
    threads: list[threading.Thread] = field(default_factory=list)

    def _record(self, response: httpx.Response) -> None:
        self.statuses.append(response.status_code)
        if response.status_code == 503:
            body = response.json()
            if "retry-after" not in body or "Retry-After" not in response.headers:
                self.bad.append(f"503 without retry-after: {response.text}")
        elif response.status_code != 200:
            self.bad.append(f"{response.status_code}: {response.text}")

    def poll(self) -> None:
        last = -1
        with http_client(base_url=self.url, auth=self.poll_auth, timeout=90) as http:
            while self.polling:
                try:
                    response = http.get(
                        "/api/v1/events", params={"queue_id": self.queue_id, "last_event_id": last}
                    )
                except httpx.TransportError:
                    time.sleep(0.1)
                    continue
                self._record(response)
                if response.status_code != 200:
                    time.sleep(0.2)
                    continue
                for event in response.json()["events"]:
                    last = max(last, event["id"])
                    if event["type"] == "message":
                        self.received.add(event["message"]["id"])

    def send(self) -> None:
        with http_client(base_url=self.url, auth=self.send_auth, timeout=30) as http:
            while self.sending:
                data = {
                    "type": "stream",
                    "to": "general",
                    "topic": "faults",
                    "content": f"m{len(self.statuses)}",
                }
                try:
                    response = http.post("/api/v1/messages", data=data)
                except httpx.TransportError:
                    time.sleep(0.1)
                    continue
                self._record(response)
                if response.status_code == 200:
                    self.acknowledged.append(response.json()["id"])
                time.sleep(0.05)

    def start(self) -> None:
        for target in (self.poll, self.send):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self.threads.append(thread)

    def wait_for_acknowledged(self, count: int, timeout: float = 30) -> None:
        """Until ``count`` messages in all were acknowledged (load measured in messages, not
        seconds: the same amount of traffic however loaded the machine is)."""
        deadline = time.monotonic() + timeout
        while len(self.acknowledged) < count:
            assert time.monotonic() < deadline, f"{len(self.acknowledged)} of {count} acknowledged"
            time.sleep(0.02)

    def stop(self, timeout: float = 20) -> None:
        """Stop sending; wait until every acknowledged message reached the poller; stop it."""
        self.sending = False
        self.threads[1].join(timeout=60)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not set(self.acknowledged) <= self.received:
            time.sleep(0.02)
        self.polling = False
        # The poller is parked in a long-poll (heartbeats every 45 s): one more message ends it.
        with http_client(base_url=self.url, auth=self.send_auth, timeout=30) as http:
            data = {"type": "stream", "to": "general", "topic": "faults", "content": "wake the poller"}
            assert http.post("/api/v1/messages", data=data).status_code == 200
        self.threads[0].join(timeout=30)
        assert not self.threads[0].is_alive()
        missing = sorted(set(self.acknowledged) - self.received)
        assert not missing, f"{len(missing)} acknowledged message(s) never arrived: {missing[:10]}"


def _stored_message_ids(url: str, auth: tuple[str, str]) -> set[int]:
    response = http_get(
        f"{url}/api/v1/messages",
        auth=auth,
        params={"anchor": "newest", "num_before": 5000, "num_after": 0, "narrow": "[]"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return {m["id"] for m in response.json()["messages"]}


@pytest.mark.parametrize("workers", [1, 2])
def test_redis_stopped_and_started_while_clients_poll_and_send(
    restartable: Callable[..., Restartable],  # noqa: F811 (the imported fixture)
    spare_redis: SpareRedis,
    workers: int,
) -> None:
    server = restartable(workers=workers, redis_url=spare_redis.url)
    server.start()
    assert server.server is not None
    owner, ann = demo_logins(server.server)
    traffic = Traffic(server.url, owner, ann, register_message_queue(server.url, owner))
    traffic.start()
    traffic.wait_for_acknowledged(LOAD)
    spare_redis.stop()
    # Away while the sender goes on: the server acknowledges sends without Redis (it holds
    # their events until Redis returns), and parked polls wait rather than fail.
    traffic.wait_for_acknowledged(len(traffic.acknowledged) + LOAD, timeout=10)
    # The outage is real to the server: a new queue needs Redis, and is refused in the envelope.
    refused = http_post(
        f"{server.url}/api/v1/register", auth=owner, data={"event_types": '["message"]'}, timeout=30
    )
    assert refused.status_code == 503, refused.text
    assert refused.json()["result"] == "error"
    spare_redis.start()
    # The server recovers by itself: new registrations work again.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if http_get(f"{server.url}/health/ready", timeout=5).status_code == 200:
            break
        time.sleep(0.05)
    register_message_queue(server.url, owner)
    traffic.wait_for_acknowledged(len(traffic.acknowledged) + LOAD)
    traffic.stop()
    assert traffic.bad == [], traffic.bad[:5]
    assert len(traffic.acknowledged) > 5
    # Acknowledged while Redis was away: stored, and delivered once it returned.
    assert set(traffic.acknowledged) <= _stored_message_ids(server.url, owner)
    log = server.server.log.read_text()
    assert "Traceback" not in log
    # One line per outage and process, not one per failed request.
    assert log.count("redis unreachable") <= workers, log[-3000:]
    server.stop()


@pytest.fixture
def postgres_database() -> Iterator[str]:
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"palaver_faults_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as error:
        # The PostgreSQL run of the suite must not lose its fault tests silently.
        if os.environ.get("PALAVER_TEST_DATABASE") == "postgresql":
            pytest.fail(f"PALAVER_TEST_DATABASE=postgresql but no PostgreSQL at {PG_ADMIN_URL}: {error}")
        pytest.skip(f"no PostgreSQL at {PG_ADMIN_URL}: {error}")
    yield name
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_postgresql_connections_terminated_while_serving(
    restartable: Callable[..., Restartable],  # noqa: F811 (the imported fixture)
    postgres_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = restartable()
    database_url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + postgres_database
    original_env = server.env

    def env() -> dict[str, str]:
        values = original_env()
        values["PALAVER_DATABASE_URL"] = database_url
        return values

    monkeypatch.setattr(server, "env", env)
    server.start()
    assert server.server is not None
    owner, ann = demo_logins(server.server)
    traffic = Traffic(server.url, owner, ann, register_message_queue(server.url, owner))
    traffic.start()
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        for _ in range(3):
            traffic.wait_for_acknowledged(len(traffic.acknowledged) + LOAD // 2)
            with admin.connect() as conn:
                killed = conn.execute(
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE datname = :name AND pid <> pg_backend_pid()"
                    ),
                    {"name": postgres_database},
                ).scalar()
            assert killed
        traffic.wait_for_acknowledged(len(traffic.acknowledged) + LOAD)
    finally:
        admin.dispose()
    traffic.stop()
    assert server.server is not None
    if traffic.bad:
        print(server.server.log.read_text()[-20000:])  # shown with the failure
    assert traffic.bad == [], traffic.bad[:5]
    assert len(traffic.acknowledged) > 5
    assert set(traffic.acknowledged) <= _stored_message_ids(server.url, owner)
    assert "Traceback" not in server.server.log.read_text()
    server.stop()


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [
        ("PALAVER_REDIS_URL", "redis://127.0.0.1:{port}/0", "Redis at 127.0.0.1:{port}/0 (redis_url)"),
        (
            "PALAVER_DATABASE_URL",
            "postgresql://postgres@127.0.0.1:{port}/palaver",
            "PostgreSQL at 127.0.0.1:{port}/palaver (database_url)",
        ),
    ],
)
def test_unreachable_dependency_at_start_is_one_line_then_exit(
    tmp_path: Path, setting: str, value: str, named: str
) -> None:
    closed = free_port()  # nothing listens there
    env = clean_environment(
        PALAVER_DATA_DIR=str(tmp_path),
        PALAVER_PORT=str(free_port()),
        PALAVER_STARTUP_DEPENDENCY_TIMEOUT_SECONDS="1",
    )
    env[setting] = value.format(port=closed)
    started = time.monotonic()
    process = launch(env, [], tmp_path / "stdout.txt", tmp_path / "stderr.txt")
    returncode = process.wait(timeout=60)
    elapsed = time.monotonic() - started
    assert returncode != 0
    stderr = (tmp_path / "stderr.txt").read_text()
    lines = stderr.strip().splitlines()
    assert len(lines) == 2, stderr
    assert lines[0].startswith(f"palaver: waiting for {named.format(port=closed)}"), lines[0]
    assert lines[1].startswith("palaver: error: "), lines[1]
    assert named.format(port=closed) in lines[1]
    assert "startup_dependency_timeout_seconds" in lines[1]
    assert 1 <= elapsed < 20


def test_kill_9_of_a_worker_under_load(restartable: Callable[..., Restartable]) -> None:  # noqa: F811
    """A worker dies without warning while clients poll and send: the supervisor replaces it,
    queues live on in Redis, requests it held fail to connect (and are retried), none 5xx."""
    from tests.e2e.test_events_e2e import REDIS_URL

    require_redis(REDIS_URL)
    server = restartable(workers=2, redis_url=REDIS_URL)
    server.start()
    assert server.server is not None
    owner, ann = demo_logins(server.server)
    traffic = Traffic(server.url, owner, ann, register_message_queue(server.url, owner))
    traffic.start()
    traffic.wait_for_acknowledged(LOAD)
    victim = server.server.worker_pids()[0]
    before_kill = len(traffic.acknowledged)
    os.kill(victim, 9)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pids = server.server.worker_pids()
        if len(pids) == 2 and victim not in pids:
            break
        time.sleep(0.05)
    traffic.wait_for_acknowledged(len(traffic.acknowledged) + LOAD)
    traffic.stop()
    assert traffic.bad == [], traffic.bad[:5]
    # Sending went on once the worker was replaced.
    assert len(traffic.acknowledged) > before_kill > 0
    assert set(traffic.acknowledged) <= _stored_message_ids(server.url, owner)
    server.stop()
