"""SQLite's write-ahead log, copied into the database file off the request path.

By default SQLite checkpoints inside the commit that takes the log past 1,000 pages: that
request waits while the log is written back and both files are synced (a send to 50
subscribers dirties ~100 pages, so every eighth send or so paid for it). While the server
runs, its connections turn that off (``Database.wal_checkpoints_in_background``) and this
worker checkpoints instead: often while writes come in, rarely when idle. A PASSIVE
checkpoint never waits for readers or writers; what it cannot copy yet it copies next round.
SQLite starts the log over by itself once every frame is copied. At stop, one TRUNCATE
checkpoint leaves the log empty for whoever opens the database next (a CLI command).

Several server processes on one SQLite file each run one; SQLite serializes checkpoints.
PostgreSQL does its own checkpoints: the worker does not start there.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from sqlalchemy import Engine

from palaver.workers.loop import BackgroundWorker

logger = logging.getLogger(__name__)

# Seconds between rounds while the log grows (at ~100 sends/s, ~2,000 pages a round), and
# while it does not (a round then only reads the log's header).
BUSY_INTERVAL = 0.2
IDLE_INTERVAL = 1.0


def checkpoint(engine: Engine, mode: str = "PASSIVE") -> int:
    """Run one checkpoint; returns how many frames the log has copied into the database."""
    # On the driver's connection: outside any transaction, and nothing to SQLAlchemy's events
    # (the realm-state cache's record of writes, statement counting in tests).
    connection = engine.raw_connection()
    try:
        cursor = connection.cursor()
        cursor.execute(f"PRAGMA wal_checkpoint({mode})")
        row = cursor.fetchone()
        cursor.close()
    finally:
        connection.close()
    # (busy, frames in the log, frames checkpointed); -1s when not in WAL mode.
    return max(int(row[2]), 0) if row is not None else 0


class WalCheckpointWorker(BackgroundWorker):
    name = "palaver-wal-checkpoint"
    label = "WAL checkpoint"
    logger: ClassVar[logging.Logger] = logger

    _frames = 0

    def first_delay(self) -> float | None:
        return BUSY_INTERVAL

    def default_delay(self) -> float | None:
        return BUSY_INTERVAL

    async def start(self) -> None:
        db = self.services.db
        db.wal_checkpoints_in_background = True
        # Connections opened before now checkpoint as they commit: close the idle ones (a
        # request's connection, if any, keeps doing so until it returns to the pool).
        db.engine.pool.dispose()
        await super().start()

    def run_round(self) -> float | None:
        frames = checkpoint(self.services.db.engine)
        # The log's length changes only when something was written since the last round.
        grew = frames != self._frames
        self._frames = frames
        return BUSY_INTERVAL if grew else IDLE_INTERVAL

    def on_stop(self) -> None:
        db = self.services.db
        db.wal_checkpoints_in_background = False
        try:
            checkpoint(db.engine, "TRUNCATE")
        except Exception:
            # The database may be gone at shutdown; the next opener checkpoints instead.
            logger.warning("final WAL checkpoint failed", exc_info=True)
