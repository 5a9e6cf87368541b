"""Services on a SQLite file of their own, for what exists on SQLite only (whichever database
the suite runs on): WAL checkpoints, group commit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from palaver.services import Services, build_services
from tests.conftest import make_test_settings


@contextmanager
def sqlite_services(directory: Path, *statements: str) -> Iterator[Services]:
    """Services on ``directory/palaver.db``, without migrations: ``statements`` make the tables."""
    built = build_services(make_test_settings(f"sqlite:///{directory / 'palaver.db'}", directory))
    with built.db.engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)
    try:
        yield built
    finally:
        built.close()
