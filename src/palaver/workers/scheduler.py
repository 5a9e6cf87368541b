"""The scheduler: a background task of each server process that sends due scheduled
messages and reminders.

Its state is the database alone, so it survives restarts and sends what fell due while
the server was down. Several processes may run one each: every item is claimed by a
conditional UPDATE in its delivery's transaction (``do_deliver_scheduled_message``), so
each is sent once. It wakes at the next due time (at most every ``max_sleep_seconds``,
to notice items other processes scheduled), and at once when this process schedules one.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime

from palaver.actions.scheduled_messages import Delivery, do_deliver_scheduled_message
from palaver.lib.scheduled_messages import due_item_ids, next_due_time
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers.loop import BackgroundWorker

logger = logging.getLogger(__name__)


class Scheduler(BackgroundWorker):
    name = "palaver-scheduler"
    label = "scheduler"
    logger = logger
    # A new or moved item may be due sooner.
    waking_events = frozenset({"scheduled_messages", "reminders"})

    def __init__(
        self,
        services: Services,
        *,
        max_sleep_seconds: float = 15.0,
        batch_size: int = 100,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        super().__init__(services)
        self.max_sleep_seconds = max_sleep_seconds
        self.batch_size = batch_size
        self.clock = clock

    def deliver_due(self, now: datetime | None = None) -> Counter[Delivery]:
        """Deliver every item due at ``now`` (the clock's time by default), oldest first."""
        now = now if now is not None else self.clock()
        outcomes: Counter[Delivery] = Counter()
        settings = self.services.settings
        with self.services.db.session() as session:
            seen: set[int] = set()
            while True:
                # Items another process holds stay in the scan until it commits; ``seen``
                # keeps this loop from spinning on them.
                ids = [i for i in due_item_ids(session, now, self.batch_size + len(seen)) if i not in seen]
                session.rollback()
                if not ids:
                    return outcomes
                for item_id in ids:
                    seen.add(item_id)
                    try:
                        outcomes[do_deliver_scheduled_message(session, settings, item_id)] += 1
                    except Exception:
                        # E.g. the database went away; the item stays due for the next round.
                        logger.exception("scheduled message %s: delivery attempt failed", item_id)
                        session.rollback()

    def seconds_until_next(self) -> float:
        with self.services.db.session() as session:
            due = next_due_time(session)
        if due is None:
            return self.max_sleep_seconds
        wait = (due - self.clock()).total_seconds()
        return min(max(wait, 0.0), self.max_sleep_seconds)

    def run_round(self) -> float:
        self.deliver_due()
        return self.seconds_until_next()

    def default_delay(self) -> float:
        return self.max_sleep_seconds
