"""Two ways in for the concurrency tests: the app in this process, and ``palaver serve``.

The real server shares the test database, so realms seeded here are the ones it serves;
its Host-based realm routing matches the in-process app's (same ``external_url``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from palaver.config import Settings
from tests.client import TestClient
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.servers import RunningServer, clean_environment, http_client, start_running_server, stop


# One server for the directory, started by the first test that asks for it (a start costs
# seconds of imports): every test works in a realm of its own (``realm``), so none depends on
# what another did before it. A session fixture in the tests' closure also keeps the
# directory on one xdist worker (tests/conftest.py), so the server starts once per run.
@pytest.fixture(scope="session")
def real_server(
    settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[], RunningServer]]:
    started: list[RunningServer] = []

    def get() -> RunningServer:
        if not started:
            tmp: Path = tmp_path_factory.mktemp("concurrency-server")
            env = clean_environment(
                PALAVER_DATA_DIR=str(tmp / "data"),
                PALAVER_DATABASE_URL=settings.database_url,
                PALAVER_EXTERNAL_URL=settings.external_url,
                PALAVER_CREATE_DEMO_REALM="false",
                PALAVER_RATE_LIMITING="false",
                PALAVER_PASSWORD_TIME_COST="1",
                PALAVER_PASSWORD_MEMORY_COST_KIB="8",
                PALAVER_LOG_LEVEL="warning",
                # It shares the session's database: its background workers would take up other
                # tests' work as the test app's settings keep them from doing (an email worker
                # here delivered another test's login notice before that test's own worker ran).
                PALAVER_EMAIL_WORKER="false",
                PALAVER_SERVICE_BOT_WORKER="false",
                PALAVER_RETENTION_WORKER="false",
                PALAVER_OUTGOING_FETCHES="false",
            )
            started.append(start_running_server(tmp, env))
        return started[0]

    yield get
    for running in started:
        stop(running.process)
        assert "Traceback" not in running.stderr.read_text(), running.logs()


@pytest.fixture(params=["in-process", "real-server"])
def conc_api(
    request: pytest.FixtureRequest,
    client: TestClient,
    realm: SeededRealm,
    real_server: Callable[[], RunningServer],
) -> Iterator[Api]:
    if request.param == "in-process":
        yield Api(client, realm)
        return
    with http_client(base_url=real_server().url, timeout=60) as http:
        yield Api(http, realm)  # type: ignore[arg-type]  # httpx.Client has TestClient's request()


class EventTap:
    """A client's event queue, read through the API as a client would."""

    def __init__(self, api: Api, realm: SeededRealm, user: str = "iago") -> None:
        self.api, self.user = api, realm.users[user]
        state = assert_json_success(api.post(self.user, "register", {}))
        self.queue_id, self.last = state["queue_id"], state["last_event_id"]

    def events(self) -> list[dict[str, Any]]:
        body = assert_json_success(
            self.api.get(
                self.user, "events", {"queue_id": self.queue_id, "last_event_id": -1, "dont_block": True}
            )
        )
        return [e for e in body["events"] if e["type"] != "heartbeat"]

    def of_type(self, kind: str, op: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["type"] == kind and (op is None or e.get("op") == op)]
