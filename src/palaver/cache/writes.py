"""What a write transaction wrote, named as the table map names it (``table_map.py``).

Decided from what each statement declares, never from its SQL text: a Core INSERT, UPDATE
or DELETE names its table (``UpdateBase.table``); an ORM flush names, for each updated row,
the columns whose attribute history changed (and the table's ``onupdate`` columns, which
the UPDATE sets too), so a user's settings change does not drop the cached channel lists
that read only who is active. Textual SQL declares nothing and counts as writing every
table; the code issues none on the paths that write.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, Protocol

from sqlalchemy import Connection, Delete, Engine, Table, Update, event, inspect
from sqlalchemy.orm import ColumnProperty, Mapper, Session, sessionmaker
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.elements import TextClause

from palaver.cache.table_map import ANY_TABLE, CASCADING_PARENTS, NOT_REALM_STATE

# On a connection's and its session's info: the set collecting the tables its write
# transaction changes.
WRITTEN_KEY = "palaver_written"
# On a session's info: the ``RealmCache`` of its database (``Database.session``).
CACHE_KEY = "palaver_cache"


def statement_tables(statement: Any) -> tuple[str, ...]:
    """The tables a Core statement declares it may write (``ANY_TABLE``: all)."""
    if isinstance(statement, UpdateBase):
        if statement.get_execution_options().get(NOT_REALM_STATE):
            return ()
        name = getattr(statement.table, "name", None)
        if not isinstance(name, str):
            return (ANY_TABLE,)
        if isinstance(statement, Delete) and name in CASCADING_PARENTS:
            # The database deletes the cached rows that reference these itself.
            return (name, ANY_TABLE)
        return (name,)
    if isinstance(statement, (TextClause, str)):
        return (ANY_TABLE,)
    return ()


@cache
def _onupdate_columns(table: Table) -> tuple[str, ...]:
    """Columns an UPDATE of ``table`` sets whatever it was asked to set."""
    return tuple(
        f"{table.name}.{c.name}"
        for c in table.columns
        if c.onupdate is not None or c.server_onupdate is not None
    )


def updated_columns(obj: Any) -> set[str]:
    """What the flush of a modified ORM object writes: ``table.column`` for each column
    attribute whose history changed, the whole table when a relationship changed (its
    foreign keys are set during the flush, after this is read)."""
    state = inspect(obj)
    mapper: Mapper[Any] = state.mapper
    names: set[str] = set()
    tables: set[Table] = set()
    for key in set(mapper.attrs.keys()) - state.unmodified:
        if not state.attrs[key].history.has_changes():
            continue
        prop = mapper.attrs[key]
        if not isinstance(prop, ColumnProperty):
            return {table.name for table in mapper.tables}
        for column in prop.columns:
            table = getattr(column, "table", None)
            if isinstance(table, Table):
                names.add(f"{table.name}.{column.name}")
                tables.add(table)
            else:
                return {t.name for t in mapper.tables}
    for table in tables:
        names.update(_onupdate_columns(table))
    return names


@contextmanager
def recording_writes(session: Session, conn_info: dict[Any, Any], written: set[str]) -> Iterator[None]:
    """Record in ``written`` the tables the block's statements write on the connection
    whose ``info`` this is; the session is flushed at the end, so its pending ORM writes are
    recorded too. ``conn_info`` is taken before the block, not read back from the connection
    at the end: a connection the database dropped mid-write refuses every use, and the
    error to report is the drop."""
    conn_info[WRITTEN_KEY] = written
    session.info[WRITTEN_KEY] = written
    try:
        yield
        session.flush()
    finally:
        conn_info.pop(WRITTEN_KEY, None)
        session.info.pop(WRITTEN_KEY, None)


def written_tables(session: Session) -> set[str] | None:
    """The tables the session's open transaction has written so far; None when it wrote none.

    Inside ``transaction()`` those of the transaction; outside, those written (uncommitted)
    in this thread. Pending ORM changes are flushed first, so the answer includes them.
    """
    # A clean session's flush returns at once; building ``session.dirty`` to ask first cost
    # more, on every read from the realm cache.
    session.flush()
    written: set[str] | None = session.info.get(WRITTEN_KEY)
    if written is not None:
        return written
    cache: _Recording | None = session.info.get(CACHE_KEY)
    return None if cache is None else cache.writes.untracked()


class _Recording(Protocol):
    """What ``written_tables`` needs of the session's ``RealmCache``."""

    @property
    def writes(self) -> WriteRecorder: ...


class WriteRecorder:
    """Records what each write on an engine writes: Core statements by their hook on the
    engine, ORM updates by the sessions' flush, so no action has to declare what it wrote.

    Inside ``recording_writes`` the names go to the transaction's set; a write outside it
    (a test's fixture, a bulk tool) is kept per thread and handed to ``on_commit`` when its
    session commits.
    """

    def __init__(self, on_commit: Callable[[set[str]], None]) -> None:
        self._on_commit = on_commit
        self._untracked = threading.local()
        # Set in a thread while a session flushes: its UPDATE statements are named, with
        # their columns, by ``_after_flush``.
        self._flushing = threading.local()

    def attach(self, engine: Engine, sessions: sessionmaker[Any]) -> None:
        event.listen(engine, "before_execute", self._record)
        event.listen(sessions, "before_flush", self._before_flush)
        event.listen(sessions, "after_flush", self._after_flush)
        event.listen(sessions, "after_soft_rollback", self._after_soft_rollback)
        event.listen(sessions, "after_commit", self._after_session_commit)
        event.listen(sessions, "after_rollback", self._after_session_rollback)

    def _record(
        self,
        conn: Connection,
        clauseelement: Any,
        multiparams: Any,  # noqa: ARG002 (SQLAlchemy reads the listener's signature)
        params: Any,  # noqa: ARG002
        execution_options: Any,  # noqa: ARG002
    ) -> None:
        if isinstance(clauseelement, Update) and self._flushing.__dict__.get("on"):
            return
        tables = statement_tables(clauseelement)
        if tables:
            self._target(conn.info).update(tables)

    def _target(self, info: dict[Any, Any]) -> set[str]:
        written: set[str] | None = info.get(WRITTEN_KEY)
        if written is None:
            written = self._untracked.__dict__.setdefault("tables", set())
        return written

    def _before_flush(self, _session: Session, _context: Any, _instances: Any) -> None:
        self._flushing.__dict__["on"] = True

    def _after_flush(self, session: Session, _context: Any) -> None:
        self._flushing.__dict__.pop("on", None)
        names: set[str] = set()
        for obj in session.dirty:
            names.update(updated_columns(obj))
        if names:
            self._target(session.info).update(names)

    def _after_soft_rollback(self, _session: Session, _previous: Any) -> None:
        # A flush that failed ends here, without ``after_flush``.
        self._flushing.__dict__.pop("on", None)

    def untracked(self) -> set[str] | None:
        """Tables written outside ``recording_writes`` in this thread, not yet committed."""
        tables: set[str] | None = self._untracked.__dict__.get("tables")
        return tables or None

    def _after_session_rollback(self, _session: Any) -> None:
        self._untracked.__dict__.pop("tables", None)

    def _after_session_commit(self, _session: Any) -> None:
        tables: set[str] | None = self._untracked.__dict__.pop("tables", None)
        if tables:
            self._on_commit(tables)
