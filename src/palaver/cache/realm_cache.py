"""``RealmCache``: one process's realm-state cache, and how its invalidations travel.

The store (``store.py``) holds what readers load (``reads.py``); the write recorder
(``writes.py``) names what each write transaction wrote; after commit the store drops what
those names concern (``table_map.py``) and the transport carries the same invalidation to
every other process. One mechanism, chosen by configuration:

- Redis: every process publishes and subscribes (``transport.RedisInvalidation``).
- No Redis: one serving process holds the cache that matters. A one-off process (a CLI
  command, an import) writes each change it commits into the change log, in the same
  transaction, and the serving process follows the log (``change_log.py``). Nothing tells
  such a process of the server's changes, so it caches nothing (the email gateway may run
  for days); its reads load current state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.orm import sessionmaker

from palaver.cache import change_log
from palaver.cache.change_log import ChangeLogFollower, Deliver, Delivery
from palaver.cache.store import RealmStateStore
from palaver.cache.table_map import ALL_REALMS, concerns_cache
from palaver.cache.transport import InvalidationChannel, LocalInvalidation, RedisInvalidation, channel_name
from palaver.cache.writes import WriteRecorder
from palaver.config import Settings


class RealmCache:
    """Per process (on ``Database``). ``write_connection`` opens a connection that begins a
    write transaction (SQLite's ``BEGIN IMMEDIATE``), for a change-log row of its own."""

    def __init__(
        self,
        settings: Settings,
        load_engine: Engine,
        deliver: Deliver,
        *,
        one_off: bool,
        write_engine: Engine,
        write_options: dict[str, Any],
    ) -> None:
        self.store = RealmStateStore(settings.realm_cache_max_realms)
        # Loads take a connection of their own (engine.make_load_engine).
        self.load_engine = load_engine
        self._write_engine = write_engine
        self._write_options = write_options
        self.writes = WriteRecorder(lambda tables: self.invalidate(ALL_REALMS, tables))
        # A one-off process without Redis: its changes go through the change log.
        self.records_changes = one_off and not settings.redis_url
        # The serving process's reader of that log (driven by workers/change_log.py).
        self.change_log: ChangeLogFollower | None = (
            None if settings.redis_url or one_off else ChangeLogFollower(write_engine, self.store, deliver)
        )
        self.transport: InvalidationChannel
        if settings.redis_url and settings.realm_cache:
            self.transport = RedisInvalidation(
                settings.redis_url, channel_name(settings.database_url), self.store
            )
        else:
            self.transport = LocalInvalidation(self.store)
            self.store.accepting = settings.realm_cache and not self.records_changes

    def attach(self, engine: Engine, sessions: sessionmaker[Any]) -> None:
        """Record the writes of ``engine``'s connections and ``sessions``' commits."""
        self.writes.attach(engine, sessions)

    def committed(self, written: set[str], realm_ids: set[int]) -> set[int] | None:
        """A write transaction that wrote ``written`` and told ``realm_ids`` committed: this
        process's store forgets what it changed. Returns the realms to tell the others (an
        empty set: nothing cached changed). Called before the next writer of this process
        can read."""
        if not concerns_cache(written):
            # Most writes (messages, flags, presence) touch nothing cached: nothing to tell.
            written.clear()
            return set()
        # The realms whose clients hear of the write are the realms it changed; a write
        # that tells no one (rare: maintenance) drops its tables in every realm.
        realms = realm_ids or ALL_REALMS
        self.store.invalidate(realms, written)
        return realms

    def publish(self, realm_ids: set[int] | None, written: set[str]) -> None:
        """Tell the other processes what ``committed`` dropped here."""
        if written:
            self.transport.publish(realm_ids, written)

    def invalidate(self, realm_ids: Iterable[int] | None, tables: Iterable[str]) -> None:
        """Drop cached realm state read from ``tables``, here and in every other process.

        For writes made outside ``transaction()``, which are not tracked: bulk tools
        (seeding, import) call it after they commit. None means every realm.
        """
        realms = None if realm_ids is None else set(realm_ids)
        names = set(tables)
        if not concerns_cache(names):
            return
        self.store.invalidate(realms, names)
        if self.records_changes:
            self.record_change_alone(names, [], realms)
        self.transport.publish(realms, names)

    def record_change(
        self,
        conn: Connection,
        written: set[str],
        deliveries: Sequence[Delivery],
        realms: set[int] | None = ALL_REALMS,
    ) -> None:
        """Write a change into the change log, in ``conn``'s transaction (a one-off process)."""
        # As ``committed`` decides: the realms the events go to, else every realm.
        cached = set(written) if concerns_cache(written) else set()
        if cached and deliveries:
            realms = {realm_id for realm_id, _event, _users in deliveries}
        if not cached and not deliveries:
            return
        change_log.record(conn, realms, cached, deliveries)

    def record_change_alone(
        self, written: set[str], deliveries: Sequence[Delivery], realms: set[int] | None = ALL_REALMS
    ) -> None:
        """``record_change`` in a write transaction of its own (a notification, ``invalidate``)."""
        if not deliveries and not concerns_cache(written):
            return
        with self._write_engine.connect() as conn:
            conn.execution_options(**self._write_options)
            with conn.begin():
                self.record_change(conn, written, deliveries, realms)

    def close(self) -> None:
        self.transport.close()
