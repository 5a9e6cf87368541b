"""The write transaction (``Tx``): what a write is, and the events it carries to the bus
only after it commits.

``transaction(session)`` opens one (nested calls join the outermost), ``notification``
is the same for an action that writes nothing, and ``grouped_write`` commits with the
writes other threads queued meanwhile. The transaction itself is run by the session's
``Database`` (``database.py``), through the ``WriteStrategy`` of its kind of database:
``ParallelWrites`` here for PostgreSQL, ``group_commit.GroupCommit`` for SQLite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol, TypeVar, cast

from sqlalchemy import CursorResult, Result
from sqlalchemy.orm import Mapper, Session
from sqlalchemy.orm.attributes import set_committed_value

from palaver.db.group_commit import Work
from palaver.db.locks import lock_row
from palaver.events.types import Event

T = TypeVar("T")
# On a session's info: its open ``Tx``.
TX_KEY = "palaver_tx"
# On a session's info: the user on whose behalf it writes (their reads are fenced after it).
ACTOR_KEY = "palaver_actor"
# On a session's info: it reads from the replica, so it must never write.
REPLICA_KEY = "palaver_replica"


@dataclass
class PendingEvent:
    realm_id: int
    event: Event
    user_ids: list[int]


@dataclass
class Tx:
    """One write transaction. Events queued here reach the bus only if it commits."""

    session: Session
    events: list[PendingEvent] = field(default_factory=list)
    # Tables this transaction has written so far (filled by the engine's statement hook):
    # after commit, the realm-state cache drops what was read from them.
    written: set[str] = field(default_factory=set)

    def lock(self, obj: Any) -> None:
        lock_row(self.session, obj)

    def send_event(self, realm_id: int, event: Event, user_ids: Iterable[int]) -> None:
        ids = sorted(set(user_ids))
        if ids:
            self.events.append(PendingEvent(realm_id, event, ids))


class Runner(Protocol):
    """What runs a session's transactions: its ``Database`` (on ``session.info["db"]``)."""

    def transaction(self, session: Session) -> AbstractContextManager[Tx]: ...

    def notification(self, session: Session) -> AbstractContextManager[Tx]: ...

    def grouped_write(self, session: Session, work: Work[Tx, T]) -> T: ...


class WriteStrategy(Protocol):
    """How one kind of database runs a process's write transactions; ``Database`` takes the
    one of its database when it is made, and runs every write through it."""

    #: Whether a read transaction the session began implicitly becomes the write's (else
    #: it is committed first, and the write begins its own).
    continues_reads: bool

    def turn(self) -> AbstractContextManager[None]:
        """Held from before the write transaction begins until it ends."""
        ...

    def grouped_write(self, session: Session, work: Work[Tx, T]) -> T:
        """``work(tx, session)`` in a write transaction, perhaps with other threads' writes."""
        ...


class ParallelWrites:
    """PostgreSQL: concurrent transactions lock rows, not the database, and commit in
    parallel, so writers neither take turns nor share commits. At READ COMMITTED every
    statement sees every commit, so a read transaction carried on into the write reads
    nothing older than a new one would, and saves a pool checkout (with its ping), a BEGIN
    and a COMMIT per write."""

    continues_reads = True

    def __init__(self, transaction: Callable[[Session], AbstractContextManager[Tx]]) -> None:
        self._transaction = transaction

    def turn(self) -> AbstractContextManager[None]:
        return nullcontext()

    def grouped_write(self, session: Session, work: Work[Tx, T]) -> T:
        with self._transaction(session) as tx:
            return work(tx, session)


# Columns no row ever changes once inserted: the primary key, and the organization a row
# belongs to (nothing moves between realms).
_UNCHANGING_COLUMNS = frozenset({"realm_id"})


@cache
def _unchanging_attributes(mapper: Mapper[Any]) -> tuple[str, ...]:
    keys = {mapper.get_property_by_column(column).key for column in mapper.primary_key}
    keys.update(prop.key for prop in mapper.column_attrs if prop.key in _UNCHANGING_COLUMNS)
    return tuple(sorted(keys))


def expire_changeable(session: Session) -> None:
    """``Session.expire_all``, except for the attributes a row never changes.

    Most writes use only the IDs of what authentication and the access checks loaded
    (``user.id``, ``user.realm_id``): with every attribute expired, reading one of those
    re-loaded the whole row through the ORM inside the write transaction (a user has 80
    columns; its realm, then joined, 56 more). Any other attribute still re-reads the row on
    first use.
    """
    kept = []
    for state in session.identity_map.all_states():
        obj, loaded = state.obj(), state.dict
        if obj is not None:
            kept.append(
                (obj, [(key, loaded[key]) for key in _unchanging_attributes(state.mapper) if key in loaded])
            )
    session.expire_all()
    for obj, values in kept:
        for key, value in values:
            set_committed_value(obj, key, value)


@contextmanager
def write_transaction(session: Session, continues_reads: bool) -> Iterator[None]:
    """``session.begin()``, or the session's open transaction carried on to the same end:
    committed when the block completes, rolled back when it raises."""
    if not continues_reads:
        with session.begin():
            yield
        return
    try:
        yield
        session.commit()
    except BaseException:
        session.rollback()
        raise


def in_write_transaction(session: Session) -> bool:
    """Whether ``transaction`` is open on this session (a nested call would join it)."""
    return TX_KEY in session.info


def open_tx(session: Session) -> Tx | None:
    """The session's open write transaction, if any."""
    return session.info.get(TX_KEY)


def set_actor(session: Session, user_id: int) -> None:
    """Name the user a request acts for: when its write commits, their reads are fenced."""
    session.info[ACTOR_KEY] = user_id


def is_replica_session(session: Session) -> bool:
    return bool(session.info.get(REPLICA_KEY))


def transaction(session: Session) -> AbstractContextManager[Tx]:
    """The write transaction for a session made by ``Database.session``."""
    db: Runner = session.info["db"]
    return db.transaction(session)


def notification(session: Session) -> AbstractContextManager[Tx]:
    """``Database.notification`` for a session made by ``Database.session``."""
    db: Runner = session.info["db"]
    return db.notification(session)


def grouped_write(session: Session, work: Work[Tx, T]) -> T:
    """``Database.grouped_write`` for a session made by ``Database.session``."""
    db: Runner = session.info["db"]
    return db.grouped_write(session, work)


def rowcount(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE matched: a conditional claim took the row when 1."""
    # Session.execute is typed as returning Result; DML statements return a CursorResult.
    return cast("CursorResult[Any]", result).rowcount
