"""Empty databases of the kind the suite runs on: ``PALAVER_TEST_DATABASE`` (``sqlite``, the
default, or ``postgresql`` at ``PALAVER_TEST_POSTGRES_URL``'s server)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text

DEFAULT_PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def database_kind() -> str:
    """``sqlite`` or ``postgresql``: what the suite runs on."""
    return os.environ.get("PALAVER_TEST_DATABASE", "sqlite")


@contextmanager
def empty_database(folder: Path, prefix: str = "palaver_test") -> Iterator[str]:
    """The URL of an empty database: a SQLite file in ``folder``, or a uniquely named PostgreSQL
    database (``prefix_…``), dropped afterwards."""
    if database_kind() == "sqlite":
        yield f"sqlite:///{folder / 'palaver.db'}"
        return
    admin_url = os.environ.get("PALAVER_TEST_POSTGRES_URL", DEFAULT_PG_ADMIN_URL)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as conn:
            # FORCE: a server that failed to stop may still hold connections.
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
