"""Fresh databases (SQLite or PostgreSQL, as the suite runs) for export/import round trips."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from palaver.app import create_app
from palaver.migrate import upgrade
from palaver.services import Services, build_services
from tests.client import TestClient
from tests.conftest import DEFAULT_PG_ADMIN_URL, make_test_settings


@dataclass
class Server:
    services: Services
    client: TestClient


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Callable[[str], Server]]:
    """Makes servers on new, empty databases; each with its own data (uploads) directory."""
    made: list[tuple[Server, str | None]] = []
    admin_url = os.environ.get("PALAVER_TEST_POSTGRES_URL", DEFAULT_PG_ADMIN_URL)
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")

    def make(label: str) -> Server:
        pg_name = None
        if os.environ.get("PALAVER_TEST_DATABASE", "sqlite") == "sqlite":
            url = f"sqlite:///{tmp_path / label / 'palaver.db'}"
        else:
            pg_name = f"palaver_test_{uuid.uuid4().hex[:12]}"
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{pg_name}"'))
            url = admin_url.rsplit("/", 1)[0] + "/" + pg_name
        settings = make_test_settings(url, tmp_path / label)
        services = build_services(settings)
        upgrade(services.db.engine)
        client = TestClient(create_app(settings, services), base_url="http://palaver.test")
        client.__enter__()
        server = Server(services, client)
        made.append((server, pg_name))
        return server

    yield make
    for server, pg_name in made:
        server.client.__exit__(None, None, None)
        server.services.close()
        if pg_name:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)'))
    admin.dispose()
