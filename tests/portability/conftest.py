"""Fresh databases (SQLite or PostgreSQL, as the suite runs) for export/import round trips."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from palaver.app import create_app
from palaver.migrate import upgrade
from palaver.services import Services, build_services
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.databases import empty_database


@dataclass
class Server:
    services: Services
    client: TestClient


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Callable[[str], Server]]:
    """Makes servers on new, empty databases; each with its own data (uploads) directory."""
    with ExitStack() as stack:

        def make(label: str) -> Server:
            (tmp_path / label).mkdir(parents=True, exist_ok=True)
            url = stack.enter_context(empty_database(tmp_path / label))
            settings = make_test_settings(url, tmp_path / label)
            services = build_services(settings)
            stack.callback(services.close)
            upgrade(services.db.engine)
            client = stack.enter_context(
                TestClient(create_app(settings, services), base_url="http://palaver.test")
            )
            return Server(services, client)

        yield make
