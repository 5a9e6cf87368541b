"""The demo server the e2e modules share (tests/e2e/demo.py says which, and why)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import zulip

from tests.e2e.demo import demo_server, empty_database
from tests.servers import RunningServer


@pytest.fixture(scope="session")
def shared_demo_database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with empty_database(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="session")
def shared_demo_server(
    tmp_path_factory: pytest.TempPathFactory, shared_demo_database_url: str
) -> Iterator[RunningServer]:
    with demo_server(tmp_path_factory, shared_demo_database_url) as running:
        yield running


@pytest.fixture(scope="session")
def shared_demo_client(shared_demo_server: RunningServer) -> zulip.Client:
    return zulip.Client(config_file=str(shared_demo_server.zuliprc))
