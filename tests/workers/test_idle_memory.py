"""SQLite's pool and the heap after a burst: kept while busy, given back once quiet."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from sqlalchemy import Connection

from palaver.services import Services
from palaver.workers import idle_memory
from palaver.workers.idle_memory import IdleMemoryWorker
from palaver.workers.loop import BackgroundWorker
from tests.sqlite_services import sqlite_services as own_sqlite_services

BURST = 12


@pytest.fixture
def sqlite_services(tmp_path: Path) -> Iterator[Services]:
    with own_sqlite_services(tmp_path, "CREATE TABLE t (x TEXT)") as built:
        yield built


@pytest.fixture
def worker(sqlite_services: Services, monkeypatch: pytest.MonkeyPatch) -> IdleMemoryWorker:
    # Rounds are called by the tests: the worker's own task waits past the test.
    monkeypatch.setattr(idle_memory, "QUIET_SECONDS", 600.0)
    return IdleMemoryWorker(sqlite_services)


def _burst(services: Services, size: int) -> None:
    """``size`` connections in use at once, each having read, then returned to the pool."""
    connections: list[Connection] = [services.db.engine.connect() for _ in range(size)]
    for conn in connections:
        conn.exec_driver_sql("SELECT count(*) FROM t").scalar_one()
    for conn in connections:
        conn.close()


async def test_a_burst_keeps_its_connections_until_a_quiet_window(
    sqlite_services: Services, worker: IdleMemoryWorker
) -> None:
    pool = sqlite_services.db.engine.pool
    await worker.start()
    try:
        _burst(sqlite_services, BURST)
        assert pool.checkedin() == BURST  # type: ignore[attr-defined]
        # The window of the burst: busy, so the connections stay for the next burst.
        worker.run_round()
        assert pool.checkedin() == BURST  # type: ignore[attr-defined]
        # A window with one connection in use at a time is quiet: the idle ones close.
        _burst(sqlite_services, 1)
        worker.run_round()
        assert pool.checkedin() == 0  # type: ignore[attr-defined]
        # Given back once per quiet stretch: a lone request's connection then stays.
        _burst(sqlite_services, 1)
        worker.run_round()
        assert pool.checkedin() == 1  # type: ignore[attr-defined]
        # Until the next burst and the quiet after it.
        _burst(sqlite_services, BURST)
        worker.run_round()
        worker.run_round()
        assert pool.checkedin() == 0  # type: ignore[attr-defined]
    finally:
        await worker.stop()


async def test_each_window_logs_what_requests_held_at_debug_level(
    sqlite_services: Services, worker: IdleMemoryWorker, caplog: pytest.LogCaptureFixture
) -> None:
    await worker.start()
    try:
        _burst(sqlite_services, BURST)
        with caplog.at_level(logging.DEBUG, logger=idle_memory.logger.name):
            worker.run_round()
            worker.run_round()
    finally:
        await worker.stop()
    windows = [r.getMessage() for r in caplog.records if r.getMessage().startswith("idle window")]
    assert windows == [
        f"idle window: at most {BURST} connections held at once, 0 now",
        "idle window: at most 0 connections held at once, 0 now",
    ]


async def test_a_connection_held_across_windows_counts_in_each(
    sqlite_services: Services, worker: IdleMemoryWorker
) -> None:
    pool = sqlite_services.db.engine.pool
    await worker.start()
    try:
        _burst(sqlite_services, BURST)
        worker.run_round()
        with sqlite_services.db.engine.connect() as held:
            held.exec_driver_sql("SELECT 1")
            # Two in use at once while this one is held, in a window after the burst.
            _burst(sqlite_services, 1)
            worker.run_round()
            assert pool.checkedin() == BURST - 1  # type: ignore[attr-defined]
    finally:
        await worker.stop()


class _HoldingRound(BackgroundWorker):
    """A worker whose one round holds three connections at once, as overlapping rounds of
    the change-log follower and the WAL checkpoint do."""

    name = "palaver-test-holding-round"
    label = "holding round"
    logger: ClassVar[logging.Logger] = logging.getLogger(__name__)

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.done = threading.Event()

    def default_delay(self) -> float | None:
        return None

    def run_round(self) -> float | None:
        _burst(self.services, 3)
        self.done.set()
        return None


async def test_the_background_rounds_connections_leave_a_window_quiet(
    sqlite_services: Services, worker: IdleMemoryWorker
) -> None:
    pool = sqlite_services.db.engine.pool
    await worker.start()
    rounds = _HoldingRound(sqlite_services)
    try:
        _burst(sqlite_services, BURST)
        worker.run_round()
        await rounds.start()
        assert await asyncio.to_thread(rounds.done.wait, 10)
        await rounds.stop()
        # Requests held at most one connection at once (none): quiet, whatever the rounds held.
        _burst(sqlite_services, 1)
        worker.run_round()
        assert pool.checkedin() == 0  # type: ignore[attr-defined]
    finally:
        await rounds.stop()
        await worker.stop()
