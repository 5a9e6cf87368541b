"""``Database``: a process's engines, sessions and write transactions, with what each commit
sets off (the cache's invalidation, the read fence, the events' publication)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

from palaver.cache.change_log import Delivery
from palaver.cache.realm_cache import RealmCache
from palaver.cache.store import RealmStateStore
from palaver.cache.writes import CACHE_KEY, recording_writes
from palaver.config import Settings
from palaver.db.engine import WRITE_OPTION, make_engine, make_load_engine, make_replica_engine
from palaver.db.group_commit import GroupCommit, Work
from palaver.db.locks import WriterQueue
from palaver.db.read_fence import WriteFence, fence_key_prefix
from palaver.db.transaction import (
    ACTOR_KEY,
    REPLICA_KEY,
    TX_KEY,
    ParallelWrites,
    PendingEvent,
    Tx,
    WriteStrategy,
    expire_changeable,
    in_write_transaction,
    is_replica_session,
    write_transaction,
)
from palaver.events.bus import EventBus

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
        # How writes run on this kind of database (transaction.WriteStrategy): on SQLite this
        # process's writers take turns and concurrent sends share one commit (group_commit.py).
        self.writes: WriteStrategy = (
            GroupCommit(self.transaction, WriterQueue())
            if settings.is_sqlite
            else ParallelWrites(self.transaction)
        )
        # The realm-state cache and how its invalidations reach the other processes
        # (cache/realm_cache.py): writes are recorded on this engine and its sessions.
        self.cache = RealmCache(
            settings,
            self.load_engine,
            self.deliver,
            one_off=one_off,
            write_engine=self.engine,
            write_options={WRITE_OPTION: True},
        )
        self.cache.attach(self.engine, self._sessions)
        # SQLite's WAL is copied back into the database file by a background thread while
        # the server runs (workers/wal_checkpoint.py), not by whichever commit crosses 1,000
        # pages: that commit waited for the copy and its fsyncs.
        self.wal_checkpoints_in_background = False
        if settings.is_sqlite:
            event.listen(self.engine, "connect", self._sqlite_autocheckpoint)

    def _sqlite_autocheckpoint(self, dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        if self.wal_checkpoints_in_background:
            dbapi_connection.execute("PRAGMA wal_autocheckpoint=0")

    @property
    def realm_state(self) -> RealmStateStore:
        """The realm-state cache's store (``self.cache.store``)."""
        return self.cache.store

    def session(self) -> Session:
        session = self._sessions()
        session.info["db"] = self
        session.info[CACHE_KEY] = self.cache
        return session

    @contextmanager
    def read_session(self, session: Session, user_id: int) -> Iterator[Session]:
        """The session for a read that tolerates the replica's lag, for ``user_id``.

        A session on the read replica when one is configured, unless the read must see
        the primary: inside a write transaction, or when the user's own write committed
        less than ``database_replica_fence_seconds`` ago (read-your-writes). Otherwise
        ``session`` itself. Realm-state cache loads read the primary whichever it is
        (``cache/reads.py``: a replica's lag must never be cached as current).
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
        replica.info[CACHE_KEY] = self.cache
        replica.info[REPLICA_KEY] = True
        try:
            yield replica
        finally:
            replica.close()

    @contextmanager
    def transaction(self, session: Session) -> Iterator[Tx]:
        """Run a write atomically; nested calls join the outermost transaction.

        A read transaction the session began implicitly (authentication, access checks)
        becomes the write's or is committed first (it wrote nothing), as the database's
        ``WriteStrategy`` says; the write runs in the strategy's ``turn``.
        """
        outer: Tx | None = session.info.get(TX_KEY)
        if outer is not None:
            yield outer
            return
        if is_replica_session(session):
            raise RuntimeError("a write through a read-replica session (use the primary's)")
        continues_reads = session.in_transaction() and self.writes.continues_reads
        if session.in_transaction() and not continues_reads:
            session.commit()
        tx = Tx(session)
        session.info[TX_KEY] = tx
        try:
            with self.writes.turn(), write_transaction(session, continues_reads):
                # The SQLite BEGIN hook reads the write option; PostgreSQL needs none.
                options = None if continues_reads else {WRITE_OPTION: True}
                conn = session.connection(execution_options=options)
                with recording_writes(session, conn.info, tx.written):
                    # Objects loaded before this point may be stale: another request can have
                    # changed or deleted them since. Expired, they re-read on first use, inside
                    # the write transaction (the SQLite write lock, or ``Tx.lock`` for a row lock).
                    expire_changeable(session)
                    yield tx
                    if self.cache.records_changes:
                        session.flush()
                        self.cache.record_change(conn, tx.written, _deliveries(tx.events))
            # Committed. This process's cache forgets what changed before the next writer
            # of this process (queued on the SQLite write lock) can read it.
            wrote = bool(tx.written)
            realms = self.cache.committed(tx.written, {pending.realm_id for pending in tx.events})
        finally:
            del session.info[TX_KEY]
        actor: int | None = session.info.get(ACTOR_KEY)
        if actor is not None and self.fence is not None and wrote:
            # Before any event goes out: a client told of its own write may read at once.
            self.fence.mark(actor)
        self.cache.publish(realms, tx.written)
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
            with recording_writes(session, session.connection().info, tx.written):
                yield tx
        finally:
            del session.info[TX_KEY]
        if tx.written:
            raise RuntimeError(
                f"a write in a notification ({', '.join(sorted(tx.written))}): use transaction()"
            )
        if self.cache.records_changes:
            self.cache.record_change_alone(set(), _deliveries(tx.events))
        self._publish(tx.events)

    def grouped_write(self, session: Session, work: Work[Tx, T]) -> T:
        """``work(tx, session)`` in a write transaction, committed together with the writes of
        other threads queued meanwhile where the strategy groups them (SQLite: see
        group_commit.py). Inside an open transaction it joins that one."""
        if TX_KEY in session.info:
            with self.transaction(session) as tx:
                return work(tx, session)
        return self.writes.grouped_write(session, work)

    def invalidate(self, realm_ids: Iterable[int] | None, tables: Iterable[str]) -> None:
        """``RealmCache.invalidate``: for writes made outside ``transaction()`` (bulk tools)."""
        self.cache.invalidate(realm_ids, tables)

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
        self.cache.close()
        if self.fence is not None:
            self.fence.close()
        self.engine.dispose()
        if self.load_engine is not self.engine:
            self.load_engine.dispose()
        if self.replica_engine is not None:
            self.replica_engine.dispose()


def _deliveries(events: list[PendingEvent]) -> list[Delivery]:
    return [(p.realm_id, p.event.to_dict(), p.user_ids) for p in events]
