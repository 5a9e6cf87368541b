"""Applies what one-off processes committed (``events/change_log.py``), a few times a second.

Runs in the serving process when there is no Redis: a command run beside the server writes
its changes into the change log, and this worker drops what they changed from the cache and
delivers their events into the queues here. Idle, a round is one indexed read finding no row.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar

from palaver.events.change_log import FOLLOW_INTERVAL_SECONDS, PAGE, ChangeLogFollower
from palaver.workers.loop import BackgroundWorker

if TYPE_CHECKING:
    from palaver.services import Services

logger = logging.getLogger(__name__)


class ChangeLogWorker(BackgroundWorker):
    name = "palaver-change-log"
    label = "Change log"
    logger: ClassVar[logging.Logger] = logger

    def __init__(self, services: Services, follower: ChangeLogFollower) -> None:
        super().__init__(services)
        self.follower = follower

    def first_delay(self) -> float | None:
        return FOLLOW_INTERVAL_SECONDS

    def default_delay(self) -> float | None:
        return FOLLOW_INTERVAL_SECONDS

    async def start(self) -> None:
        # Before the first request: a change committed after this point is applied, one
        # committed before is in whatever the requests will load.
        try:
            self.follower.start()
        except Exception as error:
            # The database is unreachable: the first round that reaches it starts there.
            if not self._outage(error):
                raise
        await super().start()

    def run_round(self) -> float | None:
        # A full page: more are waiting.
        return 0.0 if self.follower.poll() >= PAGE else None
