"""``Database``: a process's engines, sessions and write transactions, with what each commit
sets off (the cache's invalidation, the read fence, the events' publication)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import Connection, event
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

from palaver.config import Settings
from palaver.db.engine import WRITE_OPTION, make_engine, make_load_engine, make_replica_engine
from palaver.db.group_commit import GroupCommit, Work
from palaver.db.locks import WriterQueue
from palaver.db.read_fence import WriteFence, fence_key_prefix
from palaver.db.transaction import (
    ACTOR_KEY,
    REPLICA_KEY,
    TX_KEY,
    PendingEvent,
    Tx,
    expire_changeable,
    in_write_transaction,
    is_replica_session,
    write_transaction,
)
from palaver.db.written import WRITTEN_KEY, recording_writes, statement_tables
from palaver.events import change_log
from palaver.events.bus import EventBus
from palaver.events.change_log import ChangeLogFollower
from palaver.events.invalidation import (
    InvalidationChannel,
    LocalInvalidation,
    RedisInvalidation,
    channel_name,
)
from palaver.events.realm_state import ALL_REALMS, RealmStateStore, concerns_cache

logger = logging.getLogger("palaver.db")
T = TypeVar("T")


class Database:
    def __init__(self, settings: Settings, bus: EventBus, *, one_off: bool = False) -> None:
        self.engine = make_engine(settings)
        # Readers that only hold a session (avatar URLs follow the `gravatar` setting) find it here.
        self.settings = settings
        self.bus = bus
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.load_engine = make_load_engine(settings, self.engine)
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
        # SQLite: this process's writers take turns before they compete for its lock (locks.py).
        self._writers: WriterQueue | None = WriterQueue() if settings.is_sqlite else None
        # Concurrent sends share one SQLite commit (group_commit.py).
        self._group_commit: GroupCommit[Tx] | None = (
            GroupCommit(self.transaction) if settings.is_sqlite else None
        )
        # The realm-state cache (lib/realm_cache/) and how its invalidations reach the
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
        written: set[str] | None = conn.info.get(WRITTEN_KEY)
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
        replica.info[REPLICA_KEY] = True
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
        outer: Tx | None = session.info.get(TX_KEY)
        if outer is not None:
            yield outer
            return
        if is_replica_session(session):
            raise RuntimeError("a write through a read-replica session (use the primary's)")
        continues_reads = session.in_transaction() and not self.settings.is_sqlite
        if session.in_transaction() and not continues_reads:
            session.commit()
        queued = self._writers is not None and self._writers.acquire()
        tx = Tx(session)
        session.info[TX_KEY] = tx
        try:
            with write_transaction(session, continues_reads):
                # The SQLite BEGIN hook reads the write option; PostgreSQL needs none.
                options = None if continues_reads else {WRITE_OPTION: True}
                conn = session.connection(execution_options=options)
                with recording_writes(session, conn.info, tx):
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
            del session.info[TX_KEY]
            if queued:
                assert self._writers is not None
                self._writers.release()
        actor: int | None = session.info.get(ACTOR_KEY)
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
        outer: Tx | None = session.info.get(TX_KEY)
        if outer is not None:
            yield outer
            return
        tx = Tx(session)
        session.info[TX_KEY] = tx
        try:
            with recording_writes(session, session.connection().info, tx):
                yield tx
        finally:
            del session.info[TX_KEY]
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
        if self._group_commit is None or TX_KEY in session.info:
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
            conn.execution_options(**{WRITE_OPTION: True})
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
