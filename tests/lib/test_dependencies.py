"""Dependencies: waiting for them at start, 503s and one log line per outage while serving."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest
import redis

from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.app import create_app
from palaver.config import Settings
from palaver.lib.dependencies import (
    DependencyUnavailableError,
    OutageMonitor,
    describe_address,
    wait_for_dependencies,
)
from palaver.services import Services
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import wait_until
from tests.servers import free_port

router = ApiRouter()
outage = {"on": True}


@router.get("/needs_redis", auth="none")
def needs_redis(ctx: Ctx) -> JsonDict:
    if outage["on"]:
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")
    return {}


@router.get("/needs_redis_async", auth="none")
async def needs_redis_async(ctx: Ctx) -> JsonDict:
    raise redis.exceptions.TimeoutError("Timeout reading from socket")


@pytest.fixture
def tclient(settings: Settings, services: Services) -> TestClient:
    return TestClient(create_app(settings, services, routers=[router]), base_url="http://palaver.test")


def test_unreachable_dependency_is_a_503_logged_once(
    tclient: TestClient, services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    assert services.outages is not None
    services.outages.recovered("redis")
    outage["on"] = True
    with caplog.at_level(logging.INFO, logger="palaver.dependencies"):
        for path in ["needs_redis"] * 3 + ["needs_redis_async"]:
            response = tclient.get(f"/api/v1/{path}")
            assert response.status_code == 503
            body = response.json()
            assert body["result"] == "error"
            assert body["retry-after"] == 2
            assert response.headers["Retry-After"] == "2"
    lines = [r for r in caplog.records if r.name == "palaver.dependencies"]
    assert len(lines) == 1
    assert "redis unreachable" in lines[0].getMessage()
    assert "redis" in services.outages.down
    services.outages.recovered("redis")
    outage["on"] = False
    assert tclient.get("/api/v1/needs_redis").status_code == 200


def test_recovery_is_found_by_probing(caplog: pytest.LogCaptureFixture) -> None:
    up = {"now": False}
    probes = {"made": 0}

    def probe() -> None:
        probes["made"] += 1
        if not up["now"]:
            raise ConnectionError("refused")

    monitor = OutageMonitor({"redis": probe})
    monitor.PROBE_INTERVAL = 0.05
    with caplog.at_level(logging.INFO, logger="palaver.dependencies"):
        monitor.failed("redis", ConnectionError("refused"))
        monitor.failed("redis", ConnectionError("refused"))
        # Refused probes keep it down.
        wait_until(lambda: probes["made"] >= 3)
        assert monitor.down == {"redis"}
        up["now"] = True
        wait_until(lambda: not monitor.down)
    monitor.close()
    assert monitor.down == frozenset()
    messages = [r.getMessage() for r in caplog.records if r.name == "palaver.dependencies"]
    assert len(messages) == 2
    assert "reachable again" in messages[1]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"redis_url": "redis://127.0.0.1:{port}/0"}, "Redis at 127.0.0.1:{port}/0 (redis_url)"),
        (
            {"database_url": "postgresql://user:secret@127.0.0.1:{port}/chat"},
            "PostgreSQL at 127.0.0.1:{port}/chat (database_url)",
        ),
    ],
)
def test_start_up_waits_with_backoff_then_gives_up(
    tmp_path: Path, overrides: dict[str, str], named: str
) -> None:
    port = free_port()
    values: dict[str, Any] = {k: v.format(port=port) for k, v in overrides.items()}
    settings = make_test_settings(
        values.pop("database_url", f"sqlite:///{tmp_path / 'x.db'}"),
        tmp_path,
        startup_dependency_timeout_seconds=10,
        **values,
    )
    clock = FakeClock()
    out = io.StringIO()
    with pytest.raises(DependencyUnavailableError) as raised:
        wait_for_dependencies(settings, out=out, sleep=clock.sleep, clock=clock)
    message = str(raised.value)
    assert named.format(port=port) in message
    assert "secret" not in message and "secret" not in out.getvalue()
    assert "gave up after 10 s" in message
    # One line while waiting, however many attempts.
    assert out.getvalue().count("\n") == 1
    assert out.getvalue().startswith(f"palaver: waiting for {named.format(port=port)}")
    # Exponential backoff, capped.
    assert clock.sleeps[:4] == [0.2, 0.4, 0.8, 1.6]
    assert max(clock.sleeps) <= 5.0


def test_start_up_returns_at_once_when_everything_answers(settings: Settings) -> None:
    out = io.StringIO()
    wait_for_dependencies(settings, out=out)
    assert out.getvalue() == ""


def test_addresses_never_show_credentials() -> None:
    assert describe_address("postgresql+psycopg://u:pw@db.internal:5433/chat") == "db.internal:5433/chat"
    assert describe_address("redis://:pw@cache/0") == "cache/0"
