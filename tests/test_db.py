"""The write transaction (db/transaction.py): on SQLite writers of one process wait their turn; on
PostgreSQL a request's reads and its write share one transaction."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event, func, select, table, text, update

from palaver.db import engine
from palaver.db.database import Database
from palaver.db.group_commit import GroupCommit
from palaver.db.transaction import ParallelWrites, notification, transaction
from palaver.events.bus import InProcessEventBus
from palaver.events.types import TypingStop, TypingUser
from palaver.lib.dependencies import dependency_of
from palaver.models import UserProfile
from palaver.services import Services
from tests.conftest import make_test_settings
from tests.helpers import SeededRealm


def test_each_kind_of_database_runs_writes_its_way(services: Services) -> None:
    """SQLite: writers take turns and group their commits; PostgreSQL: they run in parallel."""
    expected = GroupCommit if services.settings.is_sqlite else ParallelWrites
    assert type(services.db.writes) is expected
    with services.db.session() as session:
        assert services.db.grouped_write(session, lambda tx, on: tx.session is session and on is session)


@pytest.fixture
def sqlite_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    # A busy timeout far shorter than the writes below: a writer left to SQLite's busy
    # handler fails with "database is locked" (what 32 concurrent senders used to get).
    monkeypatch.setattr(engine, "SQLITE_BUSY_TIMEOUT_MS", 50)
    settings = make_test_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path)
    database = Database(settings, InProcessEventBus())
    with database.session() as session, transaction(session):
        session.execute(text("CREATE TABLE item (writer INTEGER)"))
    yield database
    database.dispose()


def test_writers_in_one_process_queue_past_the_busy_timeout(sqlite_db: Database) -> None:
    first_writing = threading.Event()
    errors: list[BaseException] = []

    def write(writer: int, hold_seconds: float) -> None:
        try:
            with sqlite_db.session() as session:
                # A read first, as requests do (authentication) before their write.
                session.execute(text("SELECT count(*) FROM item")).scalar()
                if writer:
                    first_writing.wait(5)
                with transaction(session):
                    session.execute(text("INSERT INTO item VALUES (:w)"), {"w": writer})
                    if not writer:
                        first_writing.set()
                    time.sleep(hold_seconds)
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(0, 0.3))]
    threads += [threading.Thread(target=write, args=(n, 0.02)) for n in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    with sqlite_db.session() as session:
        written = sorted(session.execute(text("SELECT writer FROM item")).scalars())
    assert written == list(range(9))


def test_a_failed_write_lets_the_next_writer_in(sqlite_db: Database) -> None:
    with sqlite_db.session() as session:
        with pytest.raises(RuntimeError), transaction(session):
            session.execute(text("INSERT INTO item VALUES (1)"))
            raise RuntimeError("rolled back")
        with transaction(session):
            session.execute(text("INSERT INTO item VALUES (2)"))
        assert session.execute(text("SELECT writer FROM item")).scalars().all() == [2]


def test_a_write_whose_connection_is_dropped_raises_the_drop(sqlite_db: Database) -> None:
    """Not a "rollback first" error from tidying up: the outage mapping must see the drop."""
    from sqlalchemy.exc import OperationalError

    with sqlite_db.session() as session:
        with pytest.raises(OperationalError, match="terminating connection"), transaction(session):
            session.connection().invalidate()
            raise OperationalError("INSERT", {}, ConnectionResetError("terminating connection"))
        # The session goes on with a new connection.
        session.rollback()
        assert session.execute(text("SELECT 1")).scalar() == 1


def test_a_write_after_reads_begins_anew_only_where_the_backend_needs_it(services: Services) -> None:
    engine = services.db.engine
    begins: list[object] = []
    checkouts: list[object] = []
    # Only this thread's: the background workers of the services the tests share use the
    # same engine and may check a connection out meanwhile (seen once in CI: 4 checkouts).
    this_thread = threading.get_ident()

    def on_begin(conn: object) -> None:
        if threading.get_ident() == this_thread:
            begins.append(conn)

    def on_checkout(*_: object) -> None:
        if threading.get_ident() == this_thread:
            checkouts.append(None)

    event.listen(engine, "begin", on_begin)
    event.listen(engine.pool, "checkout", on_checkout)
    try:
        with services.db.session() as session:
            session.execute(text("SELECT 1"))  # authentication, access checks
            with transaction(session):
                session.execute(text("SELECT 2"))
            assert not session.in_transaction()
            # A write that fails after reads ends the transaction it carried on, too.
            with pytest.raises(RuntimeError), transaction(session):
                session.execute(text("SELECT 3"))
                raise RuntimeError
            assert not session.in_transaction()
    finally:
        event.remove(engine, "begin", on_begin)
        event.remove(engine.pool, "checkout", on_checkout)
    # SQLite takes its write lock at BEGIN, so the reads' transaction ends first. At
    # READ COMMITTED a new transaction would see nothing newer: PostgreSQL carries on.
    expected = 3 if services.settings.is_sqlite else 2
    assert (len(begins), len(checkouts)) == (expected, expected)


def test_a_notification_neither_waits_for_the_write_lock_nor_lets_a_write_through(
    sqlite_db: Database,
) -> None:
    published: list[tuple[int, object, list[int]]] = []
    sqlite_db.bus.add_listener(
        lambda realm_id, event, user_ids: published.append((realm_id, event, list(user_ids)))
    )
    writing, done = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        with sqlite_db.session() as session, transaction(session):
            session.execute(text("INSERT INTO item VALUES (1)"))
            writing.set()
            done.wait(10)

    writer = threading.Thread(target=hold_the_write_lock)
    writer.start()
    try:
        assert writing.wait(5)
        started = time.monotonic()
        with sqlite_db.session() as session, notification(session) as tx:
            # A read declared as one (textual SQL counts as writing every table).
            session.execute(select(func.count()).select_from(table("item"))).scalar()
            tx.send_event(
                1, TypingStop(message_type="direct", sender=TypingUser(user_id=1, email="a@b.c")), [1]
            )
            assert published == []  # only when the block completes
        # Not queued behind the writer, which holds the lock until told to stop.
        assert time.monotonic() - started < 1
        assert [(realm_id, user_ids) for realm_id, _, user_ids in published] == [(1, [1])]
    finally:
        done.set()
        writer.join()

    published.clear()
    with sqlite_db.session() as session:
        with pytest.raises(RuntimeError, match="a write in a notification"), notification(session) as tx:
            tx.send_event(
                1, TypingStop(message_type="direct", sender=TypingUser(user_id=1, email="a@b.c")), [1]
            )
            session.execute(text("INSERT INTO item VALUES (2)"))
        session.rollback()
    assert published == []
    with sqlite_db.session() as session:
        assert session.execute(text("SELECT writer FROM item")).scalars().all() == [1]


def test_a_write_rereads_what_others_changed_but_not_the_ids(services: Services, realm: SeededRealm) -> None:
    statements: list[str] = []
    this_thread = threading.get_ident()

    def on_execute(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if threading.get_ident() == this_thread:
            statements.append(statement)

    with services.db.session() as session:
        user = session.get(UserProfile, realm.hamlet.id)
        assert user is not None
        # Another request renames the user meanwhile.
        with services.db.session() as other, transaction(other):
            other.execute(update(UserProfile).where(UserProfile.id == user.id).values(full_name="Renamed"))
        event.listen(services.db.engine, "before_cursor_execute", on_execute)
        try:
            with transaction(session):
                # An ID never changes: reading it costs no query.
                before = len(statements)
                assert (user.id, user.realm_id) == (realm.hamlet.id, realm.id)
                assert len(statements) == before
                # Anything else is read again, inside the write transaction.
                assert user.full_name == "Renamed"
                assert len(statements) == before + 1
        finally:
            event.remove(services.db.engine, "before_cursor_execute", on_execute)


def test_a_write_locked_out_by_another_process_is_a_database_error(
    sqlite_db: Database, tmp_path: Path
) -> None:
    """BEGIN IMMEDIATE runs on the driver's connection; its failure still reads as SQLAlchemy's
    OperationalError, which requests answer as an outage (503), not as a bug (500)."""
    from sqlalchemy.exc import OperationalError

    other = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with sqlite_db.session() as session:
            with pytest.raises(OperationalError, match="database is locked") as raised, transaction(session):
                session.execute(text("INSERT INTO item VALUES (1)"))
            assert dependency_of(raised.value) == "database"
        other.execute("ROLLBACK")
        with sqlite_db.session() as session, transaction(session):
            session.execute(text("INSERT INTO item VALUES (2)"))
    finally:
        other.close()
