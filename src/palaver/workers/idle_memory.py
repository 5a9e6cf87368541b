"""What a burst of requests leaves in memory, given back once the server is quiet.

SQLite's pool keeps every connection a burst opened (up to 40, one per worker thread, each
~0.4 MiB of page cache and parsed schema): while requests come, reopening them would cost
each a connect, its PRAGMAs and a schema parse (1-5 ms). So they stay open under load and
close after a quiet window: one in which requests held at most one connection at any
moment (a lone client's). The background workers' rounds (the change log followed four
times a second, the WAL checkpoint every second) do not count: they overlap each other and
a lone request at random, so counting them would leave a quiet server's windows busy.
What the connections, the expired worker threads (``workers/loop.py``) and the requests
freed stays in malloc's heap until ``malloc_trim`` returns the free pages to the system; so
that runs too, once per quiet window that follows activity. The first requests after it
reopen a connection or two.

PostgreSQL's pool keeps its connections by design (``db/engine.py``): there only the heap
is trimmed.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import event
from sqlalchemy.pool import ConnectionPoolEntry

from palaver.workers.loop import BackgroundWorker, in_background_round

if TYPE_CHECKING:
    from palaver.services import Services

logger = logging.getLogger(__name__)

# Seconds of a window. anyio's threads expire after 10 s idle, so a window that follows a
# burst ends after they have.
QUIET_SECONDS = 15.0
# Connections requests hold at once that still count as quiet.
QUIET_IN_USE = 1
# Marks, in a pool entry's ``info``, a connection a background round checked out.
ROUND_CONNECTION = "palaver_round_connection"


def _malloc_trim() -> bool:
    """Return glibc malloc's free pages to the system; False under another C library."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        glibc = None
    if not glibc:
        return False
    ctypes.CDLL(None).malloc_trim(0)
    return True


class IdleMemoryWorker(BackgroundWorker):
    name = "palaver-idle-memory"
    label = "idle memory"
    logger: ClassVar[logging.Logger] = logger

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self._engine = services.db.engine
        # Connections checked out now, and the most at once this window (under the lock:
        # requests' threads check out and in concurrently).
        self._lock = threading.Lock()
        self._in_use = 0
        self._peak = 0
        # Whether the last quiet window has been given back (the start-up's too).
        self._given_back = False

    def first_delay(self) -> float | None:
        return QUIET_SECONDS

    def default_delay(self) -> float | None:
        return QUIET_SECONDS

    def _checked_out(self, _dbapi: Any, entry: ConnectionPoolEntry, _proxy: Any) -> None:
        if in_background_round():
            entry.info[ROUND_CONNECTION] = True
            return
        with self._lock:
            self._in_use += 1
            self._peak = max(self._peak, self._in_use)

    def _checked_in(self, _dbapi: Any, entry: ConnectionPoolEntry) -> None:
        if entry.info.pop(ROUND_CONNECTION, False):
            return
        with self._lock:
            # Not below zero: connections checked out before the worker started come back too.
            self._in_use = max(self._in_use - 1, 0)

    async def start(self) -> None:
        for name, listener in (("checkout", self._checked_out), ("checkin", self._checked_in)):
            if not event.contains(self._engine, name, listener):
                event.listen(self._engine, name, listener)
        await super().start()

    def on_stop(self) -> None:
        for name, listener in (("checkout", self._checked_out), ("checkin", self._checked_in)):
            if event.contains(self._engine, name, listener):
                event.remove(self._engine, name, listener)

    def run_round(self) -> float | None:
        with self._lock:
            peak, self._peak = self._peak, self._in_use
            in_use = self._in_use
        # Which windows counted as busy, for a give-back that did not come (log level debug).
        logger.debug("idle window: at most %d connections held at once, %d now", peak, in_use)
        if peak > QUIET_IN_USE:
            self._given_back = False
        elif not self._given_back:
            self.give_back()
            self._given_back = True
        return None

    def give_back(self) -> None:
        """Close the pool's idle SQLite connections and trim malloc's heap."""
        if self.services.settings.is_sqlite:
            # Closes the connections checked in; one in use returns to the pool as usual
            # (the pool then counts it as one it may still open: SQLite needs no exact cap).
            self._engine.pool.dispose()
        _malloc_trim()
