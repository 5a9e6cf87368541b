"""Changes made by one-off processes, carried to the serving process through the database.

Without Redis, the event queues and the realm-state cache that matter live in the one
serving process, and a command run beside it (``palaver deactivate-user``, an import, the
email gateway) can reach neither. So such a process writes each committed change as a row
of ``change_log`` *in the same transaction as the change* (``record``): the realms and
tables the serving process must drop from its cache, and the events it must deliver. The
serving process follows the table (``ChangeLogFollower.poll``, a few times a second: one
indexed range read that finds nothing when nobody else wrote) and applies each row as if
its own transaction had committed it: cache first (known credentials rest on its snapshots,
``api/known_credentials.py``, so a deactivated user's or realm's or a replaced key's next
request is authenticated in full), then the events into its queues. With Redis every
process reaches the shared queues and the invalidation channel itself
(``cache/transport.py``), and nothing is written here.

A follower's position must never pass a row that commits later. SQLite has one writer at a
time. On PostgreSQL a sequence hands out IDs at insert, not at commit, so writers of the log
take one transaction-scoped advisory lock first: the next writer gets its ID only after the
previous one committed. A follower starts at the newest row (a starting server has nothing
cached); rows older than ``RETENTION`` are deleted by the writers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, delete, func, insert, select

from palaver.cache.store import RealmStateStore
from palaver.cache.table_map import NOT_REALM_STATE
from palaver.models.change_log import ChangeLogEntry
from palaver.timeutil import utcnow

logger = logging.getLogger("palaver.events")

# How long a row is kept: a follower that has not read it by then was not running.
RETENTION = timedelta(hours=1)
# Seconds between a follower's reads (the bound on how late a change is applied).
FOLLOW_INTERVAL_SECONDS = 0.25
# Rows applied per read; a full page is followed at once by the next.
PAGE = 200
# pg_advisory_xact_lock key serializing writers of the log ("palaver" in ASCII).
_POSTGRESQL_LOCK = 0x70616C61766572


# (realm ID, event as a dict, recipients)
Delivery = tuple[int, dict[str, Any], list[int]]
Deliver = Callable[[int, dict[str, Any], list[int]], None]


def record(
    conn: Connection, realm_ids: Iterable[int] | None, written: Iterable[str], events: Sequence[Delivery]
) -> None:
    """Write a change into the log, inside the transaction that makes it (``conn``'s)."""
    payload = {
        "realms": None if realm_ids is None else sorted(realm_ids),
        "written": sorted(written),
        "events": [list(delivery) for delivery in events],
    }
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(_POSTGRESQL_LOCK)))
    now = utcnow()
    untracked = {NOT_REALM_STATE: True}
    conn.execute(
        delete(ChangeLogEntry).where(ChangeLogEntry.created < now - RETENTION).execution_options(**untracked)
    )
    row = insert(ChangeLogEntry).values(payload=orjson.dumps(payload).decode(), created=now)
    conn.execute(row.execution_options(**untracked))


class ChangeLogFollower:
    """The serving process's reader of the log: applies what other processes committed."""

    def __init__(self, engine: Engine, store: RealmStateStore, deliver: Deliver) -> None:
        self._engine = engine
        self._store = store
        self._deliver = deliver
        self.position: int | None = None
        # One reader at a time (two apps may share one Database): each row is applied once.
        self._lock = threading.Lock()

    def start(self, after: int | None = None) -> None:
        """From the newest row on: what came before predates everything this process holds;
        or from ``after``, where this server stopped (its saved queues are restored, and must
        hear what was committed meanwhile). Once started, a follower keeps its position (a
        second app on the same database)."""
        if self.position is not None:
            return
        with self._engine.connect() as conn:
            newest = conn.execute(select(func.max(ChangeLogEntry.id))).scalar() or 0
        self.position = newest if after is None else min(after, newest)

    def poll(self) -> int:
        """Apply the rows committed since the last call; how many there were."""
        with self._lock:
            if self.position is None:
                self.start()
            with self._engine.connect() as conn:
                rows = conn.execute(
                    select(ChangeLogEntry.id, ChangeLogEntry.payload)
                    .where(ChangeLogEntry.id > self.position)
                    .order_by(ChangeLogEntry.id)
                    .limit(PAGE)
                ).all()
            for row_id, payload in rows:
                self._apply(row_id, payload)
                self.position = row_id
            return len(rows)

    def _apply(self, row_id: int, payload: str) -> None:
        try:
            change = orjson.loads(payload)
            realms, written, events = change["realms"], change["written"], change["events"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            logger.warning("Ignored malformed change log row %d", row_id)
            # Whatever it meant to drop, dropping everything is safe.
            self._store.clear()
            return
        if written:
            self._store.invalidate(None if realms is None else set(realms), written)
        for realm_id, event, user_ids in events:
            self._deliver(realm_id, event, user_ids)
