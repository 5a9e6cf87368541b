"""The email worker: an asyncio task in each server process that turns due work into mail.

Each round it (1) batches due missed-message notifications into emails, (2) queues weekly
digests when due, and (3) delivers due rows of the outbox, each claimed with a conditional
UPDATE so that several processes send every email once. A failed delivery is retried with
backoff (lib/email/outbox.py). Its state is the database alone, like the scheduler's, so
it survives restarts and an SMTP outage only delays mail. The clock is injectable: tests
call ``run_once`` with the time they want.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.db.transaction import transaction
from palaver.lib.email.build import build_email
from palaver.lib.email.digest import queue_due_digests
from palaver.lib.email.missed import queue_due_missed_message_emails
from palaver.lib.email.outbox import (
    claim_email,
    due_email_ids,
    mark_failed_attempt,
    mark_sent,
    prune_done_emails,
)
from palaver.lib.email.transport import EmailTransport, make_transport
from palaver.lib.i18n import use_language
from palaver.lib.realm import realm_url
from palaver.lib.users import get_user_by_delivery_email
from palaver.models import Realm
from palaver.models.email_outbox import EmailOutbox
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers.loop import BackgroundWorker

logger = logging.getLogger(__name__)

# A job turns due work into outbox rows: (session, settings, now) -> emails queued.
Job = Callable[[Session, Settings, datetime], int]


def default_jobs() -> list[Job]:
    return [queue_due_missed_message_emails, queue_due_digests, prune_done_emails]


def template_context(session: Session, settings: Settings, row: EmailOutbox) -> dict[str, Any]:
    context: dict[str, Any] = orjson.loads(row.context)
    context["external_url"] = settings.external_url
    realm = session.get(Realm, row.realm_id) if row.realm_id is not None else None
    context["realm_name"] = realm.name if realm is not None else "Palaver"
    context["realm_url"] = realm_url(settings, realm) if realm is not None else settings.external_url
    return context


def recipient_language(session: Session, row: EmailOutbox) -> str:
    """The language an email is written in: its recipient's, else its organization's."""
    if row.realm_id is None:
        return "en"
    user = get_user_by_delivery_email(session, row.realm_id, row.to_address)
    if user is not None:
        return user.default_language
    realm = session.get(Realm, row.realm_id)
    return realm.default_language if realm is not None else "en"


class EmailWorker(BackgroundWorker):
    name = "palaver-email-worker"
    label = "email worker"
    logger = logger

    def __init__(
        self,
        services: Services,
        *,
        transport: EmailTransport | None = None,
        clock: Callable[[], datetime] = utcnow,
        jobs: list[Job] | None = None,
        max_sleep_seconds: float = 5.0,
        lease_seconds: float = 300.0,
        batch_size: int = 50,
    ) -> None:
        super().__init__(services)
        self.transport = transport or make_transport(services.settings)
        self.clock = clock
        self.jobs = default_jobs() if jobs is None else jobs
        self.max_sleep_seconds = max_sleep_seconds
        self.lease_seconds = lease_seconds
        self.batch_size = batch_size

    # One round ---------------------------------------------------------------------------

    def run_jobs(self, now: datetime | None = None) -> int:
        now = now if now is not None else self.clock()
        queued = 0
        for job in self.jobs:
            with self.services.db.session() as session:
                try:
                    queued += job(session, self.services.settings, now)
                except Exception:
                    logger.exception("email job %s failed", getattr(job, "__name__", job))
                    session.rollback()
        return queued

    def deliver_due(self, now: datetime | None = None) -> Counter[str]:
        """Try every outbox row due at ``now``; counts of "sent", "retry", "failed", "skipped"."""
        now = now if now is not None else self.clock()
        outcomes: Counter[str] = Counter()
        settings = self.services.settings
        with self.services.db.session() as session:
            seen: set[int] = set()
            while True:
                ids = [i for i in due_email_ids(session, now, self.batch_size + len(seen)) if i not in seen]
                session.rollback()
                if not ids:
                    return outcomes
                for email_id in ids:
                    seen.add(email_id)
                    outcomes[self._deliver_one(session, settings, email_id, now)] += 1

    def _deliver_one(self, session: Session, settings: Settings, email_id: int, now: datetime) -> str:
        with transaction(session):
            won = claim_email(session, email_id, now, self.lease_seconds)
        if not won:
            return "skipped"
        row = session.get(EmailOutbox, email_id, populate_existing=True)
        assert row is not None
        attempts, to_address = row.attempts, row.to_address
        try:
            with use_language(recipient_language(session, row)):
                message = build_email(
                    settings,
                    to=to_address,
                    template=row.template,
                    context=template_context(session, settings, row),
                    now=now,
                    from_name=row.from_name,
                    reply_to=row.reply_to,
                )
            session.rollback()
            # Outside any transaction: the SMTP conversation may take seconds.
            self.transport.send(message, f"{now:%Y%m%dT%H%M%S}-{email_id}")
        except Exception as e:
            session.rollback()
            logger.warning("email %d to %s not sent: %s", email_id, to_address, e)
            with transaction(session):
                gave_up = mark_failed_attempt(session, email_id, attempts, now, f"{type(e).__name__}: {e}")
            return "failed" if gave_up else "retry"
        with transaction(session):
            mark_sent(session, email_id, now, str(message["Message-ID"]))
        return "sent"

    def run_once(self, now: datetime | None = None) -> Counter[str]:
        now = now if now is not None else self.clock()
        self.run_jobs(now)
        return self.deliver_due(now)

    # Running in the server ---------------------------------------------------------------

    def run_round(self) -> None:
        self.run_once()

    def default_delay(self) -> float:
        return self.max_sleep_seconds
