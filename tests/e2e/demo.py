"""``palaver serve`` on an empty database, where it makes the demo organization.

The server starts on an empty database (a fresh SQLite file, or with
PALAVER_TEST_DATABASE=postgresql a uniquely named PostgreSQL database made and dropped
here), creates the demo organization, and prints a zuliprc for its owner.

``tests/test_zulip_client.py`` starts one of its own: it checks the demo organization as
``serve`` made it (its exact members, the printed login). The other modules that drive the
demo owner's client share one server for the session (``tests/e2e/conftest.py``), through
the ``server``, ``client`` and ``server_database_url`` fixtures imported from here: each
start costs seconds of imports, and each of those modules works on things of its own (its
channels, topics, drafts, emoji, fields, groups, alert words), never on a count of the
organization's members or channels.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import zulip

from tests import databases
from tests.servers import RunningServer, server_environment, start_running_server, stop


@contextmanager
def empty_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An empty database of the session's kind: `serve` makes the demo only on an empty one."""
    with databases.empty_database(tmp_path_factory.mktemp("e2e-db"), "palaver_e2e") as url:
        yield url


@contextmanager
def demo_server(
    tmp_path_factory: pytest.TempPathFactory, database_url: str, *, entry_point: bool = False
) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("e2e-server")
    # DATABASE_URL: the unprefixed name, as a hosting platform would set it.
    env = server_environment(tmp / "data", DATABASE_URL=database_url)
    running = start_running_server(tmp, env, entry_point=entry_point)
    try:
        # DATABASE_URL was honoured over the default SQLite file in the data dir.
        assert not (running.data_dir / "palaver.db").exists()
        yield running
    finally:
        stop(running.process)


# The session's shared demo server, under the names the tests use.


@pytest.fixture
def server_database_url(shared_demo_database_url: str) -> str:
    return shared_demo_database_url


@pytest.fixture
def server(shared_demo_server: RunningServer) -> RunningServer:
    return shared_demo_server


@pytest.fixture
def client(shared_demo_client: zulip.Client) -> zulip.Client:
    return shared_demo_client
