"""Events committed while the queue store is unreachable, held until it answers again.

An action's write is committed before its events are delivered; if Redis is down at that
moment, failing the request would misreport a write that happened, and dropping the
events would leave every client silently out of date. So they wait here, in order, and
one thread retries them until the store is back. Once anything waits, later events queue
behind it, so clients still see events in commit order. Bounded: past ``max_events`` the
oldest are dropped (logged), as the process must not grow without limit in a long outage.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence

from palaver.events.bus import EventDict

logger = logging.getLogger("palaver.events")

Deliver = Callable[[int, EventDict, Sequence[int]], None]


class DeliveryBacklog:
    RETRY_SECONDS = 0.5

    def __init__(
        self, deliver: Deliver, errors: tuple[type[BaseException], ...], max_events: int = 100_000
    ) -> None:
        self._deliver = deliver
        self._errors = errors
        self._max_events = max_events
        self._pending: deque[tuple[int, EventDict, Sequence[int]]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._dropped = 0

    def __len__(self) -> int:
        return len(self._pending)

    def deliver(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        """Deliver now, or hold the event if the store is failing (or others already wait)."""
        reason: BaseException | None = None
        if not self._pending:
            # The common case takes no lock: deliveries from many threads run side by side.
            try:
                self._deliver(realm_id, event, user_ids)
                return
            except self._errors as error:
                reason = error
        with self._lock:
            if not self._pending:
                # One line per outage: the first event held.
                logger.error("Event queue store unreachable (%s); holding events until it returns", reason)
            self._hold(realm_id, event, user_ids)
            self._start_retrying()

    def _hold(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        if len(self._pending) >= self._max_events:
            self._pending.popleft()
            self._dropped += 1
        self._pending.append((realm_id, event, user_ids))

    def _start_retrying(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._retry, name="palaver-event-backlog", daemon=True)
            self._thread.start()

    def _retry(self) -> None:
        while not self._closed:
            self._wake.wait(self.RETRY_SECONDS)
            self._wake.clear()
            with self._lock:
                try:
                    while self._pending:
                        try:
                            self._deliver(*self._pending[0])
                        except self._errors:
                            raise
                        except Exception:
                            # Not an outage but this event (a script error): it would fail
                            # for ever, so it goes, and the rest are delivered.
                            logger.exception("Dropped an undeliverable held event")
                        self._pending.popleft()
                except self._errors:
                    continue
                if self._dropped:
                    logger.error("Dropped %d event(s) held too long during the outage", self._dropped)
                    self._dropped = 0
                logger.warning("Event queue store reachable again; held events delivered")
                return

    def close(self) -> None:
        self._closed = True
        self._wake.set()
