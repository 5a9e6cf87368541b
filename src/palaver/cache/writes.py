"""What a write transaction wrote, named as the table map names it (``table_map.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, event
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql import visitors
from sqlalchemy.sql.dml import Delete, Update, UpdateBase
from sqlalchemy.sql.elements import BindParameter, TextClause

from palaver.cache.table_map import ANY_TABLE, CASCADING_PARENTS, NOT_REALM_STATE

if TYPE_CHECKING:
    from palaver.cache.realm_cache import RealmCache

# On a connection's and its session's info: the set collecting the tables its write
# transaction changes.
WRITTEN_KEY = "palaver_written"
# On a session's info: the ``RealmCache`` of its database (``Database.session``).
CACHE_KEY = "palaver_cache"
# Textual statements starting with these write nothing.
_READ_VERBS = frozenset(
    {"SELECT", "WITH", "PRAGMA", "SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT", "SET", "SHOW"}
)


def statement_tables(statement: Any, parameters: Sequence[Mapping[str, Any]] = ()) -> tuple[str, ...]:
    """The tables a statement (run with ``parameters``) may write, for the realm-state cache
    (``ANY_TABLE``: all)."""
    if isinstance(statement, UpdateBase):
        if statement.get_execution_options().get(NOT_REALM_STATE):
            return ()
        table = getattr(statement, "table", None)
        name = getattr(table, "name", None)
        if not isinstance(name, str):
            return (ANY_TABLE,)
        if isinstance(statement, Delete) and name in CASCADING_PARENTS:
            # The database deletes the cached rows that reference these itself.
            return (name, ANY_TABLE)
        if isinstance(statement, Update):
            set_columns = _set_columns(statement, parameters, statement.table.c)
            if set_columns:
                # Still a write (it fences its user's reads off a replica), of these columns only.
                return tuple(f"{name}.{column}" for column in sorted(set_columns))
        return (name,)
    text = statement.text if isinstance(statement, TextClause) else statement
    if isinstance(text, str):
        verb = text.lstrip().split(None, 1)[:1]
        if verb and verb[0].upper() in _READ_VERBS:
            return ()
        return (ANY_TABLE,)
    return ()


def _set_columns(
    statement: Update, parameters: Sequence[Mapping[str, Any]], table_columns: Any
) -> set[str] | None:
    """The columns (of ``table_columns``, its table's) an UPDATE sets, or None for "any".
    Known for the ORM's own flushes only: they pass the new values as parameters named after
    their columns, beside the primary key that their WHERE clause binds. Any other form
    (``values()``, no parameters) may set any."""
    # ``_values`` holds what ``values()`` set: no public accessor exists.
    if getattr(statement, "_values", None) or not parameters:
        return None
    where = statement.whereclause
    bound = (
        set() if where is None else {b.key for b in visitors.iterate(where) if isinstance(b, BindParameter)}
    )
    names = {name for row in parameters for name in row} - bound
    if not names or any(name not in table_columns for name in names):
        return None
    return {table_columns[name].name for name in names}


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
    cache: RealmCache | None = session.info.get(CACHE_KEY)
    return None if cache is None else cache.writes.untracked()


class WriteRecorder:
    """Records which tables each statement on an engine writes: ORM flushes and Core DML
    both pass its ``before_execute`` hook, so no action has to declare what it wrote.

    Inside ``recording_writes`` the names go to the transaction's set; a write outside it
    (a test's fixture, a bulk tool) is kept per thread and handed to ``on_commit`` when its
    session commits.
    """

    def __init__(self, on_commit: Callable[[set[str]], None]) -> None:
        self._on_commit = on_commit
        self._untracked = threading.local()

    def attach(self, engine: Engine, sessions: sessionmaker[Any]) -> None:
        event.listen(engine, "before_execute", self._record)
        event.listen(sessions, "after_commit", self._after_session_commit)
        event.listen(sessions, "after_rollback", self._after_session_rollback)

    def _record(
        self,
        conn: Connection,
        clauseelement: Any,
        multiparams: Any,
        params: Any,
        execution_options: Any,  # noqa: ARG002 (SQLAlchemy reads the listener's signature)
    ) -> None:
        tables = statement_tables(clauseelement, multiparams or ([params] if params else []))
        if not tables:
            return
        written: set[str] | None = conn.info.get(WRITTEN_KEY)
        if written is None:
            written = self._untracked.__dict__.setdefault("tables", set())
        written.update(tables)

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
