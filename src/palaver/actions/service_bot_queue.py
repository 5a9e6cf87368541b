"""The service-bot work queue: rows left by sending a message, claimed by the worker.

``queue_service_bot_events`` runs inside the sending transaction of a message, so the work
exists exactly when the message does. The worker (``workers/outgoing_webhooks.py``) claims
each row with a conditional UPDATE (so several processes never run one twice), does the
network or bot work outside any transaction, then finishes or reschedules the row.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from palaver.db.transaction import rowcount, transaction
from palaver.models.requester import Requester
from palaver.models.service_bots import ServiceBotEvent
from palaver.models.users import BotType, UserProfile

SERVICE_BOT_TYPES = (BotType.OUTGOING_WEBHOOK, BotType.EMBEDDED)
MAX_ATTEMPTS = 3
# How long a claimed row stays with its worker; past it another worker may take it over.
CLAIM_SECONDS = 300


def _is_service_bot(user: UserProfile) -> bool:
    return user.is_bot and user.is_active and user.bot_type in SERVICE_BOT_TYPES


def direct_service_bot_ids(sender: Requester, dm_members: Iterable[UserProfile]) -> list[int]:
    """The service bots a direct message from ``sender`` goes to (read with the checks of
    sending, before its write transaction).

    Messages from bots trigger nothing, so two bots cannot answer each other for ever.
    """
    if sender.is_bot:
        return []
    return [m.id for m in dm_members if m.id != sender.user_id and _is_service_bot(m)]


def queue_service_bot_events(
    session: Session,
    realm_id: int,
    message_id: int,
    mentioned_user_ids: Collection[int],
    direct_bot_ids: Collection[int] = (),
) -> None:
    """Leave work for each service bot a message (from a person, never a bot) mentions or
    is a direct message to (``direct_service_bot_ids``)."""
    triggers = dict.fromkeys(direct_bot_ids, "direct_message")
    others = set(mentioned_user_ids) - triggers.keys()
    if others:
        for bot_id in session.scalars(
            select(UserProfile.id).where(
                UserProfile.id.in_(sorted(others)),
                UserProfile.realm_id == realm_id,
                UserProfile.is_bot,
                UserProfile.bot_type.in_([int(t) for t in SERVICE_BOT_TYPES]),
                UserProfile.is_active,
            )
        ):
            triggers[bot_id] = "mention"
    for bot_id, trigger in sorted(triggers.items()):
        session.add(ServiceBotEvent(bot_profile_id=bot_id, message_id=message_id, trigger=trigger))


def due_event_ids(session: Session, now: datetime, limit: int) -> list[int]:
    return list(
        session.scalars(
            select(ServiceBotEvent.id)
            .where(
                ServiceBotEvent.next_attempt_at <= now,
                or_(ServiceBotEvent.claimed_until.is_(None), ServiceBotEvent.claimed_until < now),
            )
            .order_by(ServiceBotEvent.id)
            .limit(limit)
        )
    )


def next_attempt_time(session: Session) -> datetime | None:
    return session.scalar(select(ServiceBotEvent.next_attempt_at).order_by(ServiceBotEvent.next_attempt_at))


def do_claim_service_bot_event(session: Session, event_id: int, now: datetime) -> ServiceBotEvent | None:
    """Take the row for this worker, or None if another has it (or it is gone or not due)."""
    with transaction(session):
        claimed = session.execute(
            update(ServiceBotEvent)
            .where(
                ServiceBotEvent.id == event_id,
                ServiceBotEvent.next_attempt_at <= now,
                or_(ServiceBotEvent.claimed_until.is_(None), ServiceBotEvent.claimed_until < now),
            )
            .values(
                claimed_until=now + timedelta(seconds=CLAIM_SECONDS), attempts=ServiceBotEvent.attempts + 1
            )
            .execution_options(synchronize_session=False)
        )
        if rowcount(claimed) != 1:
            return None
        return session.get(ServiceBotEvent, event_id, populate_existing=True)


def do_finish_service_bot_event(session: Session, event_id: int) -> None:
    with transaction(session):
        session.execute(delete(ServiceBotEvent).where(ServiceBotEvent.id == event_id))


def do_retry_service_bot_event(session: Session, event_id: int, at: datetime) -> None:
    with transaction(session):
        session.execute(
            update(ServiceBotEvent)
            .where(ServiceBotEvent.id == event_id)
            .values(next_attempt_at=at, claimed_until=None)
            .execution_options(synchronize_session=False)
        )
