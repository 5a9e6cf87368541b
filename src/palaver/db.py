"""Engine, sessions and the write transaction that carries events to the bus after commit."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, CursorResult, Engine, Result, create_engine, event, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Mapper, Session, sessionmaker
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql import visitors
from sqlalchemy.sql.dml import Delete, Update, UpdateBase
from sqlalchemy.sql.elements import BindParameter, TextClause

from palaver.config import Settings
from palaver.events import change_log
from palaver.events.bus import EventBus
from palaver.events.change_log import ChangeLogFollower
from palaver.events.invalidation import (
    InvalidationChannel,
    LocalInvalidation,
    RedisInvalidation,
    channel_name,
)
from palaver.events.realm_state import (
    ALL_REALMS,
    ANY_TABLE,
    CASCADING_PARENTS,
    NOT_REALM_STATE,
    RealmStateStore,
    concerns_cache,
)
from palaver.events.types import Event
from palaver.group_commit import GroupCommit, Work
from palaver.read_fence import WriteFence, fence_key_prefix

logger = logging.getLogger(__name__)
T = TypeVar("T")
_TX_KEY = "palaver_tx"
# On a session's info: the user on whose behalf it writes (their reads are fenced after it).
_ACTOR_KEY = "palaver_actor"
# On a session's info: it reads from the replica, so it must never write.
_REPLICA_KEY = "palaver_replica"
_WRITE_OPTION = "palaver_write"
# On a connection's info: the set collecting the tables its write transaction changes.
_WRITTEN_KEY = "palaver_written"
# Textual statements starting with these write nothing.
_READ_VERBS = frozenset(
    {"SELECT", "WITH", "PRAGMA", "SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT", "SET", "SHOW"}
)

# How long SQLite itself lets a writer wait for another process's write lock.
SQLITE_BUSY_TIMEOUT_MS = 10_000
# How long a writer waits for the other writers of its own process before it goes on to
# SQLite (and its busy timeout) anyway: only a transaction stuck for this long is a bug.
WRITE_QUEUE_TIMEOUT_SECONDS = 120.0
# Pooled SQLite connections kept open (see make_engine).
SQLITE_POOL_SIZE = 40
# SQLite: connections opened past the pool's size when every kept one is in use (a
# request's session plus the realm-state cache's own load connection). PostgreSQL: how
# many more than database_pool_size a process may open (and keeps); beyond, requests wait.
POOL_OVERFLOW = 8


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
    statement = "BEGIN IMMEDIATE" if write else "BEGIN"
    # On the driver's connection: through SQLAlchemy's execution path (an execution context,
    # its events, a result) BEGIN cost as much as a small query, and every request begins.
    try:
        conn.connection.driver_connection.execute(statement)  # type: ignore[union-attr]
    except sqlite3.Error as error:
        # As SQLAlchemy would raise it ("database is locked" is an OperationalError: 503).
        raise DBAPIError.instance(statement, None, error, sqlite3.Error) from error


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
            max_overflow=POOL_OVERFLOW,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        # Take BEGIN away from pysqlite: a write transaction must take the write lock at
        # its start (BEGIN IMMEDIATE), or two writers that both read first deadlock on
        # upgrade and one fails at once instead of waiting out busy_timeout.
        event.listen(engine, "connect", lambda conn, _rec: setattr(conn, "isolation_level", None))
        event.listen(engine, "begin", _sqlite_begin)
    else:
        engine = _postgresql_engine(settings.database_url, settings)
    return engine


def _postgresql_engine(url: str, settings: Settings) -> Engine:
    # Every connection the pool opens stays open: with an overflow, one returned while the
    # pool's kept share is full is closed, and the next one starts a PostgreSQL backend (a
    # fork and a catalog warm-up, ~10 ms of CPU). Load that hovers around the kept share
    # does that constantly: two workers with 16 senders each opened a backend per 14
    # messages (bench/workers.py). Past the limit, requests wait for a connection (two
    # cores gain nothing from more than ~18), and connections are opened only when
    # concurrent requests need them: PostgreSQL's max_connections is shared by every process.
    return create_engine(
        url, pool_size=settings.database_pool_size + POOL_OVERFLOW, max_overflow=0, pool_pre_ping=True
    )


def _load_engine(settings: Settings) -> Engine:
    # Kept open for the same reason as the request pool's connections.
    return create_engine(settings.database_url, pool_size=8, max_overflow=0, pool_pre_ping=True)


def make_replica_engine(settings: Settings) -> Engine | None:
    """The read replica's engine, when one is configured (PostgreSQL only; see config.py)."""
    if not settings.database_replica_url:
        return None
    return _postgresql_engine(settings.database_replica_url, settings)


def set_actor(session: Session, user_id: int) -> None:
    """Name the user a request acts for: when its write commits, their reads are fenced."""
    session.info[_ACTOR_KEY] = user_id


def is_replica_session(session: Session) -> bool:
    return bool(session.info.get(_REPLICA_KEY))


class Database:
    def __init__(self, settings: Settings, bus: EventBus, *, one_off: bool = False) -> None:
        self.engine = make_engine(settings)
        # Readers that only hold a session (avatar URLs follow the `gravatar` setting) find it here.
        self.settings = settings
        self.bus = bus
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # Realm-state cache loads take a connection while their request holds one. From the
        # request pool, a burst of misses after an invalidation could take every connection
        # and wait for one more forever (PostgreSQL's pool makes requests wait past its
        # overflow); a small pool of their own cannot be held by requests. SQLite's pool
        # has a connection per request thread and room beyond it.
        self.load_engine = self.engine if settings.is_sqlite else _load_engine(settings)
        # The read replica (read_session) and who must not read from it yet (read_fence.py).
        self.replica_engine = make_replica_engine(settings)
        self._replica_sessions = (
            None if self.replica_engine is None else sessionmaker(self.replica_engine, expire_on_commit=False)
        )
        self.fence: WriteFence | None = None
        if self.replica_engine is not None:
            self.fence = WriteFence(
                settings.database_replica_fence_seconds,
                settings.redis_url,
                fence_key_prefix(settings.database_url),
            )
        # SQLite has one write lock per database, and its busy handler waits for it by
        # sleeping and retrying: with many writer threads that is unfair, and under load
        # some writers lose every retry until busy_timeout fails them ("database is
        # locked"). Writers of one process therefore queue on this lock instead, and only
        # one at a time competes with other processes in SQLite.
        self._write_lock: threading.Lock | None = threading.Lock() if settings.is_sqlite else None
        # Concurrent sends share one SQLite commit (group_commit.py).
        self._group_commit: GroupCommit[Tx] | None = (
            GroupCommit(self.transaction) if settings.is_sqlite else None
        )
        # The realm-state cache (lib/realm_cache.py) and how its invalidations reach the
        # other processes: through Redis when there are several, else nowhere further.
        self.realm_state = RealmStateStore(settings.realm_cache_max_realms)
        # Without Redis only the serving process holds event queues and a cache that
        # matters: a one-off process (a CLI command) writes each change it commits into the
        # change log, in the same transaction, for the serving process to apply
        # (events/change_log.py). With Redis it publishes like any worker. Nothing tells such
        # a process of the server's changes, so it caches nothing (the email gateway may
        # run for days); its reads load current state.
        self.records_changes = one_off and not settings.redis_url
        # The serving process's reader of that log (driven by workers/change_log.py).
        self.change_log: ChangeLogFollower | None = (
            None
            if settings.redis_url or one_off
            else ChangeLogFollower(self.engine, self.realm_state, self.deliver)
        )
        self.invalidation: InvalidationChannel
        if settings.redis_url and settings.realm_cache:
            self.invalidation = RedisInvalidation(
                settings.redis_url, channel_name(settings.database_url), self.realm_state
            )
        else:
            self.invalidation = LocalInvalidation(self.realm_state)
            self.realm_state.accepting = settings.realm_cache and not self.records_changes
        # Which tables each write changes, for the cache: ORM flushes and Core DML both pass
        # here, so no action has to declare what it wrote.
        self._untracked = threading.local()
        # SQLite's WAL is copied back into the database file by a background thread while
        # the server runs (workers/wal_checkpoint.py), not by whichever commit crosses 1,000
        # pages: that commit waited for the copy and its fsyncs.
        self.wal_checkpoints_in_background = False
        if settings.is_sqlite:
            event.listen(self.engine, "connect", self._sqlite_autocheckpoint)
        event.listen(self.engine, "before_execute", self._record_written)
        event.listen(self._sessions, "after_commit", self._after_session_commit)
        event.listen(self._sessions, "after_rollback", self._after_session_rollback)

    def _sqlite_autocheckpoint(self, dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        if self.wal_checkpoints_in_background:
            dbapi_connection.execute("PRAGMA wal_autocheckpoint=0")

    def _record_written(
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
        written: set[str] | None = conn.info.get(_WRITTEN_KEY)
        if written is None:
            # A write outside ``transaction()`` (a test's fixture, a bulk tool): dropped
            # from the cache everywhere when its session commits, in this thread.
            written = self._untracked.__dict__.setdefault("tables", set())
        written.update(tables)

    def untracked_writes(self) -> set[str] | None:
        """Tables written outside ``transaction()`` in this thread, not yet committed."""
        tables: set[str] | None = self._untracked.__dict__.get("tables")
        return tables or None

    def _after_session_rollback(self, _session: Session) -> None:
        self._untracked.__dict__.pop("tables", None)

    def _after_session_commit(self, _session: Session) -> None:
        tables: set[str] | None = self._untracked.__dict__.pop("tables", None)
        if tables:
            self.invalidate(ALL_REALMS, tables)

    def session(self) -> Session:
        session = self._sessions()
        session.info["db"] = self
        return session

    @contextmanager
    def read_session(self, session: Session, user_id: int) -> Iterator[Session]:
        """The session for a read that tolerates the replica's lag, for ``user_id``.

        A session on the read replica when one is configured, unless the read must see
        the primary: inside a write transaction, or when the user's own write committed
        less than ``database_replica_fence_seconds`` ago (read-your-writes). Otherwise
        ``session`` itself. Realm-state cache loads read the primary whichever it is
        (``lib/realm_cache``: a replica's lag must never be cached as current).
        """
        if (
            self._replica_sessions is None
            or self.fence is None
            or in_write_transaction(session)
            or self.fence.holds(user_id)
        ):
            yield session
            return
        replica = self._replica_sessions()
        replica.info["db"] = self
        replica.info[_REPLICA_KEY] = True
        try:
            yield replica
        finally:
            replica.close()

    @contextmanager
    def transaction(self, session: Session) -> Iterator[Tx]:
        """Run a write atomically; nested calls join the outermost transaction.

        A read transaction the session began implicitly (authentication, access checks)
        becomes the write's on PostgreSQL: at READ COMMITTED every statement sees every
        commit, so a new transaction would read nothing newer, and keeping it saves a
        pool checkout (with its ping), a BEGIN and a COMMIT per write. On SQLite it is
        committed first (it wrote nothing), since the write lock is taken at BEGIN.
        """
        outer: Tx | None = session.info.get(_TX_KEY)
        if outer is not None:
            yield outer
            return
        if is_replica_session(session):
            raise RuntimeError("a write through a read-replica session (use the primary's)")
        continues_reads = session.in_transaction() and not self.settings.is_sqlite
        if session.in_transaction() and not continues_reads:
            session.commit()
        queued = self._write_lock is not None and self._write_lock.acquire(
            timeout=WRITE_QUEUE_TIMEOUT_SECONDS
        )
        tx = Tx(session)
        session.info[_TX_KEY] = tx
        try:
            with _write_transaction(session, continues_reads):
                # The SQLite BEGIN hook reads the write option; PostgreSQL needs none.
                options = None if continues_reads else {_WRITE_OPTION: True}
                conn = session.connection(execution_options=options)
                with _recording_writes(session, conn.info, tx):
                    # Objects loaded before this point may be stale: another request can have
                    # changed or deleted them since. Expired, they re-read on first use, inside
                    # the write transaction (the SQLite write lock, or ``Tx.lock`` for a row lock).
                    expire_changeable(session)
                    yield tx
                    if self.records_changes:
                        session.flush()
                        self._record_change(conn, tx.written, tx.events)
            # Committed. This process's cache forgets what changed before the next writer
            # of this process (queued on the SQLite write lock) can read it.
            wrote = bool(tx.written)
            realms = self._invalidate_locally(tx)
        finally:
            del session.info[_TX_KEY]
            if queued:
                assert self._write_lock is not None
                self._write_lock.release()
        actor: int | None = session.info.get(_ACTOR_KEY)
        if actor is not None and self.fence is not None and wrote:
            # Before any event goes out: a client told of its own write may read at once.
            self.fence.mark(actor)
        if tx.written:
            self.invalidation.publish(realms, tx.written)
        self._publish(tx.events)

    @contextmanager
    def notification(self, session: Session) -> Iterator[Tx]:
        """A ``Tx`` for an action that writes nothing and only notifies (typing): its events
        go out when the block completes, with no write lock and no write transaction (on
        SQLite each typing notification used to queue for the lock behind every send).
        Inside ``transaction()`` it is that transaction. A write here would never be
        committed, so one raises."""
        outer: Tx | None = session.info.get(_TX_KEY)
        if outer is not None:
            yield outer
            return
        tx = Tx(session)
        session.info[_TX_KEY] = tx
        try:
            with _recording_writes(session, session.connection().info, tx):
                yield tx
        finally:
            del session.info[_TX_KEY]
        if tx.written:
            raise RuntimeError(
                f"a write in a notification ({', '.join(sorted(tx.written))}): use transaction()"
            )
        if self.records_changes:
            self._record_change_alone(set(), tx.events)
        self._publish(tx.events)

    def grouped_write(self, session: Session, work: Work[Tx, T]) -> T:
        """``work(tx, session)`` in a write transaction, committed together with the writes of
        other threads queued meanwhile (SQLite; see group_commit.py). Inside an open
        transaction, or on PostgreSQL, it is simply ``transaction()``."""
        if self._group_commit is None or _TX_KEY in session.info:
            with self.transaction(session) as tx:
                return work(tx, session)
        return self._group_commit.run(session, work)

    def _invalidate_locally(self, tx: Tx) -> set[int] | None:
        if not concerns_cache(tx.written):
            # Most writes (messages, flags, presence) touch nothing cached: nothing to tell.
            tx.written.clear()
            return set()
        # The realms whose clients hear of the write are the realms it changed; a write
        # that tells no one (rare: maintenance) drops its tables in every realm.
        realms = {pending.realm_id for pending in tx.events} or ALL_REALMS
        self.realm_state.invalidate(realms, tx.written)
        return realms

    def invalidate(self, realm_ids: Iterable[int] | None, tables: Iterable[str]) -> None:
        """Drop cached realm state read from ``tables``, here and in every other process.

        For writes made outside ``transaction()``, which are not tracked: bulk tools
        (seeding, import) call it after they commit. None means every realm.
        """
        realms = None if realm_ids is None else set(realm_ids)
        names = set(tables)
        if not concerns_cache(names):
            return
        self.realm_state.invalidate(realms, names)
        if self.records_changes:
            self._record_change_alone(names, [], realms)
        self.invalidation.publish(realms, names)

    def _record_change(
        self,
        conn: Connection,
        written: set[str],
        events: list[PendingEvent],
        realms: set[int] | None = ALL_REALMS,
    ) -> None:
        # As ``_invalidate_locally`` decides: the realms the events go to, else every realm.
        cached = set(written) if concerns_cache(written) else set()
        if cached and events:
            realms = {pending.realm_id for pending in events}
        if not cached and not events:
            return
        deliveries = [(p.realm_id, p.event.to_dict(), p.user_ids) for p in events]
        change_log.record(conn, realms, cached, deliveries)

    def _record_change_alone(
        self, written: set[str], events: list[PendingEvent], realms: set[int] | None = ALL_REALMS
    ) -> None:
        """``_record_change`` in a write transaction of its own (a notification, ``invalidate``)."""
        if not events and not concerns_cache(written):
            return
        with self.engine.connect() as conn:
            conn.execution_options(**{_WRITE_OPTION: True})
            with conn.begin():
                self._record_change(conn, written, events, realms)

    def deliver(
        self, realm_id: int, event: dict[str, Any], user_ids: list[int], kind: str | None = None
    ) -> None:
        """Publish one committed event (of model ``kind``) to the bus. A failure to deliver
        one must neither turn the request into an error nor keep the other events from
        their clients."""
        try:
            self.bus.publish(realm_id, event, user_ids)
        except Exception:
            logger.exception(
                "Could not publish a committed %s event to %d users of realm %d",
                kind or event.get("type"),
                len(user_ids),
                realm_id,
            )

    def _publish(self, events: list[PendingEvent]) -> None:
        for p in events:
            self.deliver(p.realm_id, p.event.to_dict(), p.user_ids, type(p.event).__name__)

    def dispose(self) -> None:
        self.invalidation.close()
        if self.fence is not None:
            self.fence.close()
        self.engine.dispose()
        if self.load_engine is not self.engine:
            self.load_engine.dispose()
        if self.replica_engine is not None:
            self.replica_engine.dispose()


@contextmanager
def _write_transaction(session: Session, continues_reads: bool) -> Iterator[None]:
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
    return _TX_KEY in session.info


def driver_executemany(tx: Tx, conn: Connection, table: str, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert or update ``rows`` of ``table`` through the driver's own executemany (``sql`` in
    its parameter style): for many small rows, SQLAlchemy's per-row parameter processing of
    a Core statement costs a third as much again as SQLite's own work. SQLAlchemy fires no
    ``before_execute`` for driver SQL, so the table is recorded as written here."""
    conn.exec_driver_sql(sql, rows)
    tx.written.add(table)


@contextmanager
def _recording_writes(session: Session, conn_info: dict[Any, Any], tx: Tx) -> Iterator[None]:
    """Record in ``tx.written`` the tables the block's statements write on the connection
    whose ``info`` this is; the session is flushed at the end, so its pending ORM writes are
    recorded too. ``conn_info`` is taken before the block, not read back from the connection
    at the end: a connection the database dropped mid-write refuses every use, and the
    error to report is the drop."""
    conn_info[_WRITTEN_KEY] = tx.written
    try:
        yield
        session.flush()
    finally:
        conn_info.pop(_WRITTEN_KEY, None)


def transaction(session: Session) -> AbstractContextManager[Tx]:
    """The write transaction for a session made by ``Database.session``."""
    db: Database = session.info["db"]
    return db.transaction(session)


def notification(session: Session) -> AbstractContextManager[Tx]:
    """``Database.notification`` for a session made by ``Database.session``."""
    db: Database = session.info["db"]
    return db.notification(session)


def grouped_write(session: Session, work: Work[Tx, T]) -> T:
    """``Database.grouped_write`` for a session made by ``Database.session``."""
    db: Database = session.info["db"]
    return db.grouped_write(session, work)


def written_tables(session: Session) -> set[str] | None:
    """The tables the session's open transaction has written so far; None when it wrote none.

    Inside ``transaction()`` those of the transaction; outside, those written (uncommitted)
    in this thread. Pending ORM changes are flushed first, so the answer includes them.
    """
    # A clean session's flush returns at once; building ``session.dirty`` to ask first cost
    # more, on every read from the realm cache.
    session.flush()
    tx: Tx | None = session.info.get(_TX_KEY)
    if tx is not None:
        return tx.written
    db: Database | None = session.info.get("db")
    return None if db is None else db.untracked_writes()


def rowcount(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE matched: a conditional claim took the row when 1."""
    # Session.execute is typed as returning Result; DML statements return a CursorResult.
    return cast("CursorResult[Any]", result).rowcount
