"""Locks: rows held until commit, and the queue of one process's SQLite writers."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

# How long a writer waits for the other writers of its own process before it goes on to
# SQLite (and its busy timeout) anyway: only a transaction stuck for this long is a bug.
WRITE_QUEUE_TIMEOUT_SECONDS = 120.0


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


class WriterQueue:
    """The writers of one process, one at a time (SQLite).

    SQLite has one write lock per database, and its busy handler waits for it by sleeping
    and retrying: with many writer threads that is unfair, and under load some writers lose
    every retry until busy_timeout fails them ("database is locked"). Writers of one process
    therefore queue here instead, and only one at a time competes with other processes in
    SQLite.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self) -> bool:
        """Wait for this process's other writers; False after ``WRITE_QUEUE_TIMEOUT_SECONDS``
        (the writer goes on to SQLite's own lock, and must not release this one)."""
        return self._lock.acquire(timeout=WRITE_QUEUE_TIMEOUT_SECONDS)

    def release(self) -> None:
        self._lock.release()
