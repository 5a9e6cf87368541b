"""Engine, sessions and the write transaction that carries events to the bus after commit."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Connection, CursorResult, Engine, Result, create_engine, event, select
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

from palaver.config import Settings
from palaver.events.bus import EventBus
from palaver.events.types import Event

logger = logging.getLogger(__name__)
_TX_KEY = "palaver_tx"
_WRITE_OPTION = "palaver_write"

# How long SQLite itself lets a writer wait for another process's write lock.
SQLITE_BUSY_TIMEOUT_MS = 10_000
# How long a writer waits for the other writers of its own process before it goes on to
# SQLite (and its busy timeout) anyway: only a transaction stuck for this long is a bug.
WRITE_QUEUE_TIMEOUT_SECONDS = 120.0
# Pooled SQLite connections kept open (see make_engine).
SQLITE_POOL_SIZE = 40


@dataclass
class PendingEvent:
    realm_id: int
    event: Event
    user_ids: list[int]


def lock_row(session: Session, obj: Any) -> None:
    """Re-read a row and hold it until commit, so a state change is decided on current data.

    Call inside a write transaction. PostgreSQL takes a row lock (``FOR UPDATE``): a
    concurrent transaction changing the same row waits here, then sees the committed result.
    SQLite writers already run one at a time (``BEGIN IMMEDIATE``), so the re-read is enough.
    """
    session.refresh(obj, with_for_update=True)


def lock_rows(session: Session, model: Any, ids: Iterable[int]) -> list[int]:
    """Lock rows by primary key (PostgreSQL ``FOR UPDATE``), in ID order so that two
    transactions locking overlapping sets cannot deadlock; returns the IDs that exist.

    For a decision that depends on rows other than the ones locked (who is subscribed to a
    channel), lock the parent row: concurrent writers of that decision then take turns.
    IDs from clients must be bounded first (``lib.ids.storable_ids``): PostgreSQL fails the
    whole statement on an ID past the column's range.
    """
    wanted = sorted(set(ids))
    if not wanted:
        return []
    query = select(model.id).where(model.id.in_(wanted)).order_by(model.id).with_for_update()
    return list(session.scalars(query))


@dataclass
class Tx:
    """One write transaction. Events queued here reach the bus only if it commits."""

    session: Session
    events: list[PendingEvent] = field(default_factory=list)

    def lock(self, obj: Any) -> None:
        lock_row(self.session, obj)

    def send_event(self, realm_id: int, event: Event, user_ids: Iterable[int]) -> None:
        ids = sorted(set(user_ids))
        if ids:
            self.events.append(PendingEvent(realm_id, event, ids))


def _sqlite_pragmas(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers proceed during a write; busy_timeout makes writers from several
    # threads or processes wait for the lock instead of failing at once.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    write = conn.get_execution_options().get(_WRITE_OPTION, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(settings: Settings) -> Engine:
    if settings.is_sqlite:
        path = settings.database_url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            settings.database_url,
            connect_args={"check_same_thread": False},
            # As many kept connections as the worker threads that use them (anyio's default
            # limit is 40): with fewer, busy periods open and close overflow connections,
            # each paying for its PRAGMAs. An idle SQLite connection costs little.
            pool_size=SQLITE_POOL_SIZE,
            max_overflow=8,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        # Take BEGIN away from pysqlite: a write transaction must take the write lock at
        # its start (BEGIN IMMEDIATE), or two writers that both read first deadlock on
        # upgrade and one fails at once instead of waiting out busy_timeout.
        event.listen(engine, "connect", lambda conn, _rec: setattr(conn, "isolation_level", None))
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(settings.database_url, pool_size=10, max_overflow=20, pool_pre_ping=True)


class Database:
    def __init__(self, settings: Settings, bus: EventBus) -> None:
        self.engine = make_engine(settings)
        # Readers that only hold a session (avatar URLs follow the `gravatar` setting) find it here.
        self.settings = settings
        self.bus = bus
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # SQLite has one write lock per database, and its busy handler waits for it by
        # sleeping and retrying: with many writer threads that is unfair, and under load
        # some writers lose every retry until busy_timeout fails them ("database is
        # locked"). Writers of one process therefore queue on this lock instead, and only
        # one at a time competes with other processes in SQLite.
        self._write_lock: threading.Lock | None = threading.Lock() if settings.is_sqlite else None

    def session(self) -> Session:
        session = self._sessions()
        session.info["db"] = self
        return session

    @contextmanager
    def transaction(self, session: Session) -> Iterator[Tx]:
        """Run a write atomically; nested calls join the outermost transaction.

        A read transaction the session began implicitly (authentication, access checks) is
        committed first: it wrote nothing, and committing keeps the loaded objects usable.
        """
        outer: Tx | None = session.info.get(_TX_KEY)
        if outer is not None:
            yield outer
            return
        if session.in_transaction():
            session.commit()
        queued = self._write_lock is not None and self._write_lock.acquire(
            timeout=WRITE_QUEUE_TIMEOUT_SECONDS
        )
        tx = Tx(session)
        session.info[_TX_KEY] = tx
        try:
            with session.begin():
                session.connection(execution_options={_WRITE_OPTION: True})
                # Objects loaded before this point may be stale: another request can have
                # changed or deleted them since. Expired, they re-read on first use, inside
                # the write transaction (the SQLite write lock, or ``Tx.lock`` for a row lock).
                session.expire_all()
                yield tx
        finally:
            del session.info[_TX_KEY]
            if queued:
                assert self._write_lock is not None
                self._write_lock.release()
        self._publish(tx.events)

    def _publish(self, events: list[PendingEvent]) -> None:
        # The write has committed: a failure to deliver one event must neither turn the
        # request into an error nor keep the other events from their clients.
        for pending in events:
            try:
                self.bus.publish(pending.realm_id, pending.event.to_dict(), pending.user_ids)
            except Exception:
                logger.exception(
                    "Could not publish a committed %s event to %d users of realm %d",
                    type(pending.event).__name__,
                    len(pending.user_ids),
                    pending.realm_id,
                )

    def dispose(self) -> None:
        self.engine.dispose()


def in_write_transaction(session: Session) -> bool:
    """Whether ``transaction`` is open on this session (a nested call would join it)."""
    return _TX_KEY in session.info


def transaction(session: Session) -> AbstractContextManager[Tx]:
    """The write transaction for a session made by ``Database.session``."""
    db: Database = session.info["db"]
    return db.transaction(session)


def rowcount(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE matched: a conditional claim took the row when 1."""
    # Session.execute is typed as returning Result; DML statements return a CursorResult.
    return cast("CursorResult[Any]", result).rowcount
