"""The persistent outbox: rows written in an action's transaction, claimed and delivered
by the email worker.

Claiming is a conditional UPDATE that only one process can win (the row must be unsent,
due and unclaimed, or claimed by a worker whose lease has run out), committed before the
SMTP conversation starts: the network never runs inside a transaction. A worker that dies
mid-send leaves its claim to expire, and the mail goes again (at least once, never lost).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.db.transaction import transaction
from palaver.models.email_outbox import EmailOutbox

# Retries wait 1, 2, 4 ... minutes, at most an hour; after MAX_ATTEMPTS the row is abandoned.
MAX_ATTEMPTS = 10
FIRST_RETRY_SECONDS = 60
MAX_RETRY_SECONDS = 3600


def queue_email(
    session: Session,
    *,
    realm_id: int | None,
    to: str,
    template: str,
    context: dict[str, Any],
    from_name: str | None = None,
    reply_to: str | None = None,
    send_at: datetime | None = None,
) -> EmailOutbox:
    """Add an email to the outbox; call inside the transaction of the write that causes it."""
    row = EmailOutbox(
        realm_id=realm_id,
        to_address=to,
        template=template,
        context=orjson.dumps(context).decode(),
        from_name=from_name,
        reply_to=reply_to,
    )
    if send_at is not None:
        row.next_attempt_at = send_at
    session.add(row)
    session.flush()
    return row


def due_email_ids(session: Session, now: datetime, limit: int) -> list[int]:
    return list(
        session.scalars(
            select(EmailOutbox.id)
            .where(
                EmailOutbox.sent_at.is_(None),
                EmailOutbox.failed.is_(False),
                EmailOutbox.next_attempt_at <= now,
                or_(EmailOutbox.claimed_until.is_(None), EmailOutbox.claimed_until < now),
            )
            .order_by(EmailOutbox.next_attempt_at, EmailOutbox.id)
            .limit(limit)
        )
    )


def claim_email(session: Session, email_id: int, now: datetime, lease_seconds: float) -> bool:
    """Take the row for one delivery attempt; False when another worker has it or it is done."""
    result = session.execute(
        update(EmailOutbox)
        .where(
            EmailOutbox.id == email_id,
            EmailOutbox.sent_at.is_(None),
            EmailOutbox.failed.is_(False),
            EmailOutbox.next_attempt_at <= now,
            or_(EmailOutbox.claimed_until.is_(None), EmailOutbox.claimed_until < now),
        )
        .values(claimed_until=now + timedelta(seconds=lease_seconds), attempts=EmailOutbox.attempts + 1)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0) == 1)


def mark_sent(session: Session, email_id: int, now: datetime, message_id_header: str) -> None:
    session.execute(
        update(EmailOutbox)
        .where(EmailOutbox.id == email_id)
        .values(sent_at=now, claimed_until=None, message_id_header=message_id_header, last_error=None)
        .execution_options(synchronize_session=False)
    )


def retry_delay_seconds(attempts: int) -> int:
    return int(min(FIRST_RETRY_SECONDS * 2 ** max(attempts - 1, 0), MAX_RETRY_SECONDS))


def mark_failed_attempt(session: Session, email_id: int, attempts: int, now: datetime, error: str) -> bool:
    """Schedule the next attempt with backoff, or give up after MAX_ATTEMPTS (returns True)."""
    give_up = attempts >= MAX_ATTEMPTS
    session.execute(
        update(EmailOutbox)
        .where(EmailOutbox.id == email_id)
        .values(
            claimed_until=None,
            last_error=error[:2000],
            failed=give_up,
            next_attempt_at=now + timedelta(seconds=retry_delay_seconds(attempts)),
        )
        .execution_options(synchronize_session=False)
    )
    return give_up


def recent_emails(session: Session, limit: int = 50) -> list[EmailOutbox]:
    return list(session.scalars(select(EmailOutbox).order_by(EmailOutbox.id.desc()).limit(limit)))


# Sent and abandoned rows are kept this long, for `palaver outbox --queue`, then deleted.
KEEP_DONE = timedelta(days=30)


def prune_done_emails(session: Session, settings: Settings, now: datetime) -> int:
    """A worker job: forget emails sent or abandoned more than KEEP_DONE ago."""
    cutoff = now - KEEP_DONE
    done = or_(EmailOutbox.sent_at < cutoff, and_(EmailOutbox.failed.is_(True), EmailOutbox.created < cutoff))
    # Read first: most rounds find nothing, and should not take SQLite's write lock for it.
    if session.scalar(select(EmailOutbox.id).where(done).limit(1)) is None:
        return 0
    with transaction(session):
        session.execute(delete(EmailOutbox).where(done).execution_options(synchronize_session=False))
    return 0
