"""Group commit (SQLite): concurrent writes share one transaction, each in its own savepoint."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.group_commit import GroupCommit
from palaver.db.transaction import Tx
from palaver.events.types.client import Heartbeat
from palaver.services import Services
from tests.sqlite_services import sqlite_services

TABLES = (
    "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
    "CREATE TABLE t (x INTEGER, parent_id INTEGER REFERENCES parent (id))",
    "INSERT INTO parent VALUES (1)",
)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    with sqlite_services(tmp_path, *TABLES) as built:
        yield built


@pytest.fixture
def published(services: Services) -> list[int]:
    """The realm IDs of events published (each test's write ``x`` sends one to realm ``x``)."""
    seen: list[int] = []
    services.bus.add_listener(lambda realm_id, _event, _users: seen.append(realm_id))
    return seen


def _insert(x: int, *, fail: bool = False, parent: int = 1) -> Any:
    def work(tx: Tx, session: Session) -> int:
        session.execute(text("INSERT INTO t VALUES (:x, :p)"), {"x": x, "p": parent})
        tx.send_event(x, Heartbeat(), [1])
        if fail:
            raise ValueError(f"write {x} fails")
        return x

    return work


def _rows(services: Services) -> set[int]:
    with services.db.engine.connect() as conn:
        return {row[0] for row in conn.execute(text("SELECT x FROM t"))}


def _queued(services: Services) -> int:
    group = services.db.writes
    assert isinstance(group, GroupCommit)
    with group._mutex:
        return len(group._queue)


def _concurrently(services: Services, works: list[Any], *, first: Any) -> dict[int, Any]:
    """Run ``first`` as the leader, blocked until every one of ``works`` has queued behind it;
    returns each write's result or exception, by index (``first`` is -1)."""
    outcomes: dict[int, Any] = {}

    def run(index: int, work: Any) -> None:
        with services.db.session() as session:
            try:
                outcomes[index] = services.db.grouped_write(session, work)
            except Exception as error:
                outcomes[index] = error

    leading = threading.Event()

    def leader_work(tx: Tx, session: Session) -> Any:
        leading.set()
        deadline = time.monotonic() + 10
        while _queued(services) < len(works):
            assert time.monotonic() < deadline, "the other writers never queued"
            time.sleep(0.001)
        return first(tx, session)

    leader = threading.Thread(target=run, args=(-1, leader_work))
    leader.start()
    assert leading.wait(timeout=10)
    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(works)]
    for thread in threads:
        thread.start()
    for thread in [leader, *threads]:
        thread.join(timeout=20)
    return outcomes


def test_writers_queued_behind_a_batch_share_the_next_commit(
    services: Services, published: list[int]
) -> None:
    outcomes = _concurrently(services, [_insert(x) for x in (1, 2, 3)], first=_insert(0))
    assert outcomes == {-1: 0, 0: 1, 1: 2, 2: 3}
    assert _rows(services) == {0, 1, 2, 3}
    assert sorted(published) == [0, 1, 2, 3]
    group = services.db.writes
    assert isinstance(group, GroupCommit)
    # The leader's write alone, then the three that queued meanwhile in one transaction.
    assert (group.batches, group.writes) == (2, 4)


def test_a_failing_write_is_rolled_back_alone(services: Services, published: list[int]) -> None:
    works = [_insert(1), _insert(2, fail=True), _insert(3)]
    outcomes = _concurrently(services, works, first=_insert(0))
    assert isinstance(outcomes[1], ValueError)
    assert (outcomes[-1], outcomes[0], outcomes[2]) == (0, 1, 3)
    # Neither its row nor its event: the savepoint is gone and so is what it queued.
    assert _rows(services) == {0, 1, 3}
    assert sorted(published) == [0, 1, 3]


def test_a_failed_commit_fails_every_write_of_the_batch(services: Services, published: list[int]) -> None:
    def deferred_violation(tx: Tx, session: Session) -> int:
        # Foreign keys checked at commit: the whole batch's commit fails, after every write
        # of it succeeded.
        session.execute(text("PRAGMA defer_foreign_keys = ON"))
        return int(_insert(3, parent=99)(tx, session))

    outcomes = _concurrently(services, [_insert(1), _insert(2), deferred_violation], first=_insert(0))
    assert outcomes[-1] == 0
    assert all(isinstance(outcomes[i], IntegrityError) for i in (0, 1, 2))
    assert _rows(services) == {0}
    assert published == [0]


def test_inside_an_open_transaction_a_write_joins_it(services: Services, published: list[int]) -> None:
    with services.db.session() as session, services.db.transaction(session) as tx:
        assert services.db.grouped_write(session, lambda inner, _s: inner is tx)
        assert published == []
    group = services.db.writes
    assert isinstance(group, GroupCommit)
    assert group.batches == 0


def test_a_write_alone_takes_no_savepoint_and_fails_whole(services: Services, published: list[int]) -> None:
    statements: list[str] = []
    event.listen(services.db.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    with services.db.session() as session:
        assert services.db.grouped_write(session, _insert(1)) == 1
        with pytest.raises(ValueError, match="write 2 fails"):
            services.db.grouped_write(session, _insert(2, fail=True))
    assert not [s for s in statements if "SAVEPOINT" in s.upper()]
    # The failed write's row and event are gone with its transaction.
    assert _rows(services) == {1}
    assert published == [1]
