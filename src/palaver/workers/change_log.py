"""Applies what one-off processes committed (``cache/change_log.py``), a few times a second.

Runs in the serving process when there is no Redis: a command run beside the server writes
its changes into the change log, and this worker drops what they changed from the cache and
delivers their events into the queues here. Idle, a round is one indexed read finding no row.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from palaver.cache.change_log import FOLLOW_INTERVAL_SECONDS, PAGE, ChangeLogFollower
from palaver.workers.loop import BackgroundWorker

if TYPE_CHECKING:
    from palaver.services import Services

logger = logging.getLogger(__name__)


# In the data directory: the last row applied before a clean stop.
POSITION_FILE = "change_log_position"


def _take_position(path: Path) -> int | None:
    """The saved position, read once (a crash after this start must not replay it again)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError:
        logger.warning("Could not read the change log position in %s", path, exc_info=True)
        return None
    path.unlink(missing_ok=True)
    try:
        return int(text.strip())
    except ValueError:
        logger.warning("Ignoring an unreadable change log position in %s", path)
        return None


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
        # committed before is in whatever the requests will load. After a clean stop, the
        # events of what was committed meanwhile are delivered to the restored queues.
        try:
            self.follower.start(_take_position(self._position_file))
        except Exception as error:
            # The database is unreachable: the first round that reaches it starts there.
            if not self._outage(error):
                raise
        await super().start()

    @property
    def _position_file(self) -> Path:
        return self.services.settings.data_dir / POSITION_FILE

    def on_stop(self) -> None:
        # Saved beside the event queues (saved at the same stop), for the next start.
        position = self.follower.position
        if position is None:
            return
        path = self._position_file
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".partial")
            partial.write_text(f"{position}\n")
            partial.replace(path)
        except OSError:
            logger.warning("Could not save the change log position to %s", path, exc_info=True)

    def run_round(self) -> float | None:
        # A full page: more are waiting.
        return 0.0 if self.follower.poll() >= PAGE else None
