"""Message retention, daily in each server process and on demand (``palaver retention run``).

A round archives, realm by realm and in batches, every message older than its channel's
or realm's retention period (``lib/retention.py``), then purges archives older than
``archive_retention_days``. Several processes may run rounds at once: PostgreSQL rows are
claimed with SKIP LOCKED, SQLite serializes writers. The clock is injectable for tests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from palaver.actions.retention import archive_cutoff, do_archive_batch, do_purge_archive
from palaver.lib.realm import get_realm_by_string_id
from palaver.lib.retention import expired_condition, realms_with_retention
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers.loop import BackgroundWorker

logger = logging.getLogger(__name__)

ROUND_INTERVAL = timedelta(days=1)


@dataclass
class RetentionReport:
    archived: dict[str, int] = field(default_factory=dict)  # realm string ID -> messages
    purged_batches: int = 0

    @property
    def total(self) -> int:
        return sum(self.archived.values())


def run_retention(
    services: Services,
    now: datetime,
    *,
    realm_string_id: str | None = None,
    batch_size: int = 1_000,
    purge: bool = True,
) -> RetentionReport:
    report = RetentionReport()
    with services.db.session() as session:
        if realm_string_id is not None:
            realm = get_realm_by_string_id(session, realm_string_id)
            realms = [realm] if realm is not None else []
        else:
            realms = realms_with_retention(session)
        for realm in realms:
            expired = expired_condition(session, realm, now)
            session.rollback()
            count = 0
            while True:
                moved = do_archive_batch(
                    session, realm, expired, now, batch_size, is_sqlite=services.settings.is_sqlite
                )
                count += moved
                if moved < batch_size:
                    break
            report.archived[realm.string_id] = count
            if count:
                logger.info("retention: archived %d messages of %r", count, realm.string_id)
        if purge:
            cutoff = archive_cutoff(now, services.settings.archive_retention_days)
            report.purged_batches = do_purge_archive(session, cutoff)
    return report


class RetentionWorker(BackgroundWorker):
    name = "palaver-retention"
    label = "retention"
    logger = logger
    daemon_thread = True

    def __init__(
        self,
        services: Services,
        *,
        clock: Callable[[], datetime] = utcnow,
        interval: timedelta = ROUND_INTERVAL,
        first_delay_seconds: float = 60.0,
    ) -> None:
        super().__init__(services)
        self.clock = clock
        self.interval = interval
        # Not at once: a restart should serve first, and rolling restarts should not all
        # start a round together.
        self.first_delay_seconds = first_delay_seconds

    def run_once(self) -> RetentionReport:
        return run_retention(self.services, self.clock())

    def run_round(self) -> None:
        self.run_once()

    def default_delay(self) -> float:
        return self.interval.total_seconds()

    def first_delay(self) -> float:
        return self.first_delay_seconds
