"""Fixtures: one database per test run (SQLite or PostgreSQL), a fresh realm per test.

PALAVER_TEST_DATABASE=postgresql runs the suite against a uniquely named PostgreSQL
database (created here, dropped afterwards) on PALAVER_TEST_POSTGRES_URL.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.nodeid import NodeId

from palaver.app import create_app
from palaver.config import Settings, load_settings
from palaver.migrate import upgrade
from palaver.services import Services, build_services
from tests.client import TestClient
from tests.databases import empty_database
from tests.forked import stop_fork_server
from tests.helpers import Api, EventRecorder, SeededRealm, seed_realm, wait_for_change_log

# Records the operations the suite calls and checks their bodies against the reference.
# Validates every event the session's bus publishes against its typed model.
pytest_plugins = ["tests.reference_fidelity", "tests.event_validation", "tests.push_helpers"]


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under pytest-xdist (``--dist loadgroup``), keep the tests that share an expensive fixture
    on one worker: a module's module-scoped fixture (a real server) is made once, and a
    directory's session- or package-scoped ones (the browser and its live server, the e2e
    demo server) too. The session fixtures of this file are each worker's own (its database,
    its app) and group nothing. Every other test goes to whichever worker is free.

    Marked as each test is collected, before any ``pytest_collection_modifyitems``."""
    config = item.config
    if not getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    group = _shared_fixture_group(item)
    if group is not None:
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, name each grouped test ``<nodeid>@<group>``, the form the loadgroup
    scheduler groups by. pytest-xdist 3.8 appends it to ``item._nodeid``, which pytest 9 no
    longer reads (the ID lives in ``item._id``), so without this every test was scheduled on
    its own and each worker started its own copy of every shared server. Skipped where xdist
    already did it (a version that writes the ID where pytest reads it)."""
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
        return
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if marker is None:
            continue
        suffix = f"@{marker.args[0]}"
        if not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)
    # Longest first. xdist hands out work in the order collected, and the tests that start
    # real servers or a browser (tests/web, tests/e2e, tests/concurrency: groups of up to
    # 50 s on one worker) sort late, so they ran last while the other workers had nothing
    # left. A stable sort: within each part the order is the collection's.
    items.sort(key=lambda item: not _starts_servers(item))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection left alive (every module of Palaver, SQLAlchemy, pydantic and the
    tests: ~200,000 objects) out of the garbage collector's reach: nothing of it becomes
    garbage, and each full collection during the run walked all of it again. Freezing it
    halves the collector's time, ~3 % of a worker's CPU (measured with gc.callbacks)."""
    gc.collect()
    gc.freeze()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the fork server the real servers were forked from (``tests/forked.py``), and
    wait for it: it would otherwise outlive the run by a moment, and the CPU time of every
    server it reaped would be counted nowhere (``time scripts/test`` reads it from here)."""
    stop_fork_server()


# The test directories whose tests start servers or browsers of their own.
_LONG_RUNNING_DIRS = frozenset({"web", "e2e", "concurrency"})


def _starts_servers(item: pytest.Item) -> bool:
    """Whether the test's directory under ``tests/`` is one of ``_LONG_RUNNING_DIRS``."""
    path = item.nodeid.split("::", 1)[0].split("/")
    return len(path) > 2 and path[1] in _LONG_RUNNING_DIRS


def _shared_fixture_group(item: pytest.Item) -> str | None:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module_group = None
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if fixturedef.scope in ("session", "package") and fixturedef.baseid not in ("", "tests"):
                return f"shared:{fixturedef.baseid}"
            if fixturedef.scope == "module":
                module_group = f"module:{item.nodeid.split('::', 1)[0]}"
    return module_group


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with empty_database(tmp_path_factory.mktemp("db")) as url:
        yield url


def make_test_settings(database_url: str, data_dir: Path, **overrides: object) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "data_dir": data_dir,
        "external_url": "http://palaver.test",
        "password_time_cost": 1,
        "password_memory_cost_kib": 8,
        "api_rate_limit": "100000/60",
        "auth_rate_limit_per_username": "1000/60",
        "auth_rate_limit_per_ip": "1000/60",
        "create_demo_realm": False,
        "log_level": "warning",
        # The suite checks Gravatar URLs (client_gravatar); tests of generated avatars and
        # of previews build apps with their own settings (tests/api/test_avatars.py).
        "gravatar": True,
        "outgoing_fetches": False,
        # Service-bot tests drive the worker themselves (tests/workers/).
        "service_bot_worker": False,
        # Tests drive the email worker themselves (tests/lib/email/), with their own clock.
        "email_worker": False,
        # Retention runs a minute after start: in the shared test app it would archive some
        # earlier test's messages in the middle of a later test (tests/workers drive it).
        "retention_worker": False,
        # Thumbnail tests see an image pending, then drive the worker (tests/api/test_thumbnails.py);
        # the shared app's worker thumbnailed it first when the machine was busy.
        "thumbnail_worker": False,
        "email_gateway_domain": "palaver.test",
    }
    values.update(overrides)
    return load_settings(env={}, **values)


@pytest.fixture(scope="session")
def settings(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return make_test_settings(database_url, tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def services(settings: Settings, request: pytest.FixtureRequest) -> Iterator[Services]:
    built = build_services(settings)
    # The plugin module itself (loaded through pytest_plugins; importing it here would stop
    # pytest rewriting its asserts).
    validation = request.config.pluginmanager.get_plugin("tests.event_validation")
    assert validation is not None
    built.bus.add_listener(validation.listener)
    upgrade(built.db.engine)
    yield built
    built.close()


@pytest.fixture(scope="session")
def client(settings: Settings, services: Services) -> Iterator[TestClient]:
    with TestClient(create_app(settings, services), base_url="http://palaver.test") as test_client:
        yield test_client


@pytest.fixture(autouse=True)
def _one_off_changes_applied(request: pytest.FixtureRequest) -> Iterator[None]:
    """What a test's one-off commands committed is applied by the session's app (which
    follows the change log a few times a second) before the next test begins: their events
    must not arrive in a later test's recorder."""
    services: Services | None = (
        request.getfixturevalue("services") if "services" in request.fixturenames else None
    )
    yield
    if services is not None:
        wait_for_change_log(services)


@pytest.fixture
def realm(services: Services) -> SeededRealm:
    return seed_realm(services)


@pytest.fixture
def api(client: TestClient, realm: SeededRealm) -> Api:
    return Api(client, realm)


@pytest.fixture
def events(services: Services) -> Iterator[EventRecorder]:
    recorder = EventRecorder()
    services.bus.add_listener(recorder)
    yield recorder
    services.bus.remove_listener(recorder)
