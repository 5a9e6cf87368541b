"""SQLite's log is checkpointed by the worker, not by the commits of requests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from palaver.app import create_app
from palaver.services import Services
from palaver.workers import wal_checkpoint
from palaver.workers.wal_checkpoint import WalCheckpointWorker
from tests.client import TestClient
from tests.helpers import until
from tests.sqlite_services import sqlite_services as own_sqlite_services


@pytest.fixture
def sqlite_services(tmp_path: Path) -> Iterator[Services]:
    """Services of a SQLite file of their own (the worker runs on SQLite only)."""
    with own_sqlite_services(tmp_path, "CREATE TABLE t (x TEXT)") as built:
        yield built


def _autocheckpoint(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one())


def _write(engine: Engine, rows: int) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO t VALUES (?)", [("x" * 2000,)] * rows)


def _log_frames(engine: Engine) -> int:
    """Frames in the log (a PASSIVE checkpoint that copies what the worker left)."""
    with engine.connect() as conn:
        return int(conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").one()[1])


async def test_commits_leave_checkpoints_to_the_worker(
    sqlite_services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = sqlite_services.db.engine
    assert _autocheckpoint(engine) == 1000  # SQLite's default, outside a running server
    monkeypatch.setattr(wal_checkpoint, "BUSY_INTERVAL", 0.01)
    monkeypatch.setattr(wal_checkpoint, "IDLE_INTERVAL", 0.01)
    worker = WalCheckpointWorker(sqlite_services)
    copied: list[int] = []
    real_checkpoint = wal_checkpoint.checkpoint

    def recording(engine: Engine, mode: str = "PASSIVE") -> int:
        copied.append(real_checkpoint(engine, mode))
        return copied[-1]

    monkeypatch.setattr(wal_checkpoint, "checkpoint", recording)
    await worker.start()
    try:
        # Every connection of the running server leaves the log to the worker.
        assert _autocheckpoint(engine) == 0
        # Past SQLite's 1,000-page threshold: no commit checkpoints, the worker copies it all.
        _write(engine, 3000)
        await until(lambda: bool(copied) and copied[-1] >= 1000)
    finally:
        await worker.stop()
    # Stopping empties the log for whoever opens the file next, and later connections
    # checkpoint by themselves again.
    assert (tmp_path / "palaver.db-wal").stat().st_size == 0
    assert _log_frames(engine) == 0
    engine.pool.dispose()
    assert _autocheckpoint(engine) == 1000


def test_the_server_runs_it_on_sqlite(sqlite_services: Services) -> None:
    engine = sqlite_services.db.engine
    app = create_app(sqlite_services.settings, sqlite_services)
    with TestClient(app, base_url="http://palaver.test"):
        assert _autocheckpoint(engine) == 0
    assert not sqlite_services.db.wal_checkpoints_in_background
