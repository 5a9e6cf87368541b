"""The change log worker (workers/change_log.py): its position survives a clean restart, so
queues restored at start hear what commands committed while the server was stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from palaver.cache import change_log
from palaver.migrate import upgrade
from palaver.services import Services
from palaver.workers.change_log import POSITION_FILE, ChangeLogWorker
from tests.sqlite_services import sqlite_services


def _record(services: Services, name: str) -> None:
    event = {"type": "realm_user", "op": "update", "person": {"user_id": 1, "full_name": name}}
    with services.db.engine.begin() as conn:
        change_log.record(conn, [1], ["user_profile.full_name"], [(1, event, [1])])


def _serve_once(services: Services, between: Any = None) -> None:
    """Start and stop the worker as the app's lifespan does (``between`` runs while it runs)."""
    follower = services.db.cache.change_log
    assert follower is not None

    async def run() -> None:
        worker = ChangeLogWorker(services, follower)
        await worker.start()
        if between is not None:
            await asyncio.to_thread(between)
            await asyncio.to_thread(follower.poll)
        await worker.stop()

    asyncio.run(run())


def test_a_restart_delivers_what_was_committed_while_stopped(tmp_path: Path) -> None:
    delivered: list[str] = []
    with sqlite_services(tmp_path) as first:
        upgrade(first.db.engine)
        _record(first, "before the first start")
        first.bus.add_listener(lambda _r, e, _u: delivered.append(e["person"]["full_name"]))
        _serve_once(first, lambda: _record(first, "while serving"))
    assert (tmp_path / POSITION_FILE).exists()
    with sqlite_services(tmp_path) as stopped:
        _record(stopped, "while stopped")
    with sqlite_services(tmp_path) as second:
        second.bus.add_listener(lambda _r, e, _u: delivered.append(e["person"]["full_name"]))
        _serve_once(second, lambda: None)
    assert delivered == ["while serving", "while stopped"]


def test_without_a_saved_position_it_starts_at_the_newest_row(tmp_path: Path) -> None:
    delivered: list[str] = []
    with sqlite_services(tmp_path) as services:
        upgrade(services.db.engine)
        _record(services, "old")
        services.bus.add_listener(lambda _r, e, _u: delivered.append(e["person"]["full_name"]))
        _serve_once(services, lambda: None)
    assert delivered == []
