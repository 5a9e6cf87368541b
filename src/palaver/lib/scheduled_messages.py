"""Scheduled messages and reminders: checking times, reading a user's items, API objects.

Both live in ``ScheduledMessage`` rows (``delivery_type`` tells them apart). Writes are in
``actions/scheduled_messages.py`` and ``actions/reminders.py``; delivery is driven by the
scheduler (``workers/scheduler.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.lib.conversations import conversation_member_ids
from palaver.lib.exceptions import JsonableError, ResourceNotFoundError
from palaver.lib.ids import get_row
from palaver.lib.message_send import ChannelTarget, DirectTarget, SendTarget
from palaver.lib.notification_bot import dm_message_link, message_link, silent_mention, unused_fence
from palaver.models.channels import Stream
from palaver.models.messages import Message
from palaver.models.requester import Requester
from palaver.models.scheduled_messages import DeliveryType, ScheduledMessage
from palaver.models.users import UserProfile
from palaver.timeutil import to_timestamp, utcnow

SCHEDULED_IN_PAST = "Scheduled delivery time must be in the future."
# Zulip's limit on a reminder's note.
MAX_REMINDER_NOTE_LENGTH = 1000
# The last second a datetime can hold (9999-12-31T23:59:59Z).
_MAX_TIMESTAMP = 253402300799


def check_delivery_time(timestamp: int) -> datetime:
    """The delivery time of a client's UNIX timestamp, which must be in the future."""
    if timestamp > _MAX_TIMESTAMP:
        # Past what a datetime holds: refused like a malformed value, not with a 500.
        raise JsonableError("Invalid scheduled_delivery_timestamp")
    now = utcnow()
    if timestamp <= to_timestamp(now):
        raise JsonableError(SCHEDULED_IN_PAST)
    return datetime.fromtimestamp(timestamp, UTC).replace(tzinfo=None)


def direct_to(sender_id: int, user_ids: list[int]) -> list[int]:
    """A direct message's ``to`` as Zulip shows it: the other users, or the sender alone."""
    others = sorted(set(user_ids) - {sender_id})
    return others or [sender_id]


def send_target(item: ScheduledMessage) -> SendTarget:
    """The address to send to at delivery, as the client gave it."""
    if item.type == "stream":
        assert item.stream_id is not None
        return ChannelTarget(topic=item.topic, stream_id=item.stream_id)
    return DirectTarget(user_ids=tuple(orjson.loads(item.to)))


def format_scheduled_message(item: ScheduledMessage) -> dict[str, Any]:
    result: dict[str, Any] = {
        "scheduled_message_id": item.id,
        "type": item.type,
        "to": item.stream_id if item.type == "stream" else orjson.loads(item.to),
    }
    if item.type == "stream":
        result["topic"] = item.topic
    result.update(
        content=item.content,
        rendered_content=item.rendered_content,
        scheduled_delivery_timestamp=to_timestamp(item.scheduled_timestamp),
        failed=item.failed,
    )
    return result


def format_reminder(item: ScheduledMessage) -> dict[str, Any]:
    # Zulip's reminder object, plus message_id and note, which the interface's Reminder
    # record names.
    return {
        "reminder_id": item.id,
        "type": "private",
        "to": [item.sender_id],
        "content": item.content,
        "rendered_content": item.rendered_content,
        "scheduled_delivery_timestamp": to_timestamp(item.scheduled_timestamp),
        "failed": item.failed,
        "reminder_target_message_id": item.reminder_target_message_id,
        "message_id": item.reminder_target_message_id,
        "note": item.reminder_note or "",
    }


def _pending(
    session: Session, user_id: int, delivery_type: DeliveryType, *, include_failed: bool
) -> list[ScheduledMessage]:
    query = select(ScheduledMessage).where(
        ScheduledMessage.sender_id == user_id,
        ScheduledMessage.delivery_type == delivery_type,
        ScheduledMessage.delivered.is_(False),
    )
    if not include_failed:
        query = query.where(ScheduledMessage.failed.is_(False))
    return list(session.scalars(query.order_by(ScheduledMessage.scheduled_timestamp, ScheduledMessage.id)))


def get_scheduled_messages(session: Session, user_id: int) -> list[ScheduledMessage]:
    """The user's undelivered scheduled messages (failed ones included), soonest first."""
    return _pending(session, user_id, DeliveryType.SEND_LATER, include_failed=True)


def get_reminders(session: Session, user_id: int) -> list[ScheduledMessage]:
    """Reminders still to come; a failed one is dropped (reminders have no update event)."""
    return _pending(session, user_id, DeliveryType.REMIND, include_failed=False)


def _access(
    session: Session, sender_id: int, item_id: int, delivery_type: DeliveryType
) -> ScheduledMessage | None:
    # Out-of-range IDs would overflow PostgreSQL's integer column; they name nothing.
    item = get_row(session, ScheduledMessage, item_id)
    if item is None or item.sender_id != sender_id or item.delivery_type != delivery_type:
        return None
    return item


def access_scheduled_message(session: Session, user: Requester, item_id: int) -> ScheduledMessage:
    item = _access(session, user.user_id, item_id, DeliveryType.SEND_LATER)
    if item is None:
        raise ResourceNotFoundError("Scheduled message does not exist")
    return item


def access_reminder(session: Session, user: Requester, item_id: int) -> ScheduledMessage:
    item = _access(session, user.user_id, item_id, DeliveryType.REMIND)
    if item is None or item.delivered or item.failed:
        raise ResourceNotFoundError("Reminder does not exist")
    return item


def check_reminder_note(note: str | None) -> str | None:
    if note is None:
        return None
    note = note.strip()
    if "\x00" in note:
        raise JsonableError("Note must not contain null bytes")
    if len(note) > MAX_REMINDER_NOTE_LENGTH:
        raise JsonableError(f"Maximum reminder note length: {MAX_REMINDER_NOTE_LENGTH} characters")
    return note or None


def reminder_content(session: Session, message: Message, note: str | None, realm_url: str) -> str:
    """The Notification Bot's reminder: a link to the message, the note, the message quoted."""
    base = realm_url.rstrip("/")
    if message.is_channel_message:
        stream = session.scalars(select(Stream).where(Stream.recipient_id == message.recipient_id)).one()
        link = message_link(realm_url, stream, message.subject, message.id)
        intro = f"You requested a reminder for [#{stream.name} > {message.subject}]({link})."
    else:
        members = conversation_member_ids(session, [message.recipient_id])[message.recipient_id]
        link = dm_message_link(base, members, message.id)
        intro = f"You requested a reminder for [the following direct message]({link})."
    if note:
        quoted_note = "\n".join(f"> {line}" for line in note.splitlines())
        intro = f"{intro[:-1]}. Note:\n{quoted_note}"
    sender = session.get(UserProfile, message.sender_id)
    assert sender is not None
    fence = unused_fence(message.content)
    return f"{intro}\n\n{silent_mention(sender)} [said]({link}):\n{fence}quote\n{message.content}\n{fence}"


def due_item_ids(session: Session, now: datetime, limit: int) -> list[int]:
    """Items to deliver now, oldest due first (late ones after downtime included)."""
    return list(
        session.scalars(
            select(ScheduledMessage.id)
            .where(
                ScheduledMessage.delivered.is_(False),
                ScheduledMessage.failed.is_(False),
                ScheduledMessage.scheduled_timestamp <= now,
            )
            .order_by(ScheduledMessage.scheduled_timestamp, ScheduledMessage.id)
            .limit(limit)
        )
    )


def next_due_time(session: Session) -> datetime | None:
    return session.scalar(
        select(func.min(ScheduledMessage.scheduled_timestamp)).where(
            ScheduledMessage.delivered.is_(False), ScheduledMessage.failed.is_(False)
        )
    )
