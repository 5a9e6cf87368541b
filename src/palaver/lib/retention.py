"""Which messages message retention removes: the policy of each channel and realm.

As in Zulip, a channel's ``message_retention_days`` is ``None`` for "the realm's
policy", ``-1`` for "forever" or a number of days; the realm's is ``None`` (shown to
clients as -1) for forever or a number of days, and also governs direct messages.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, false, or_, select
from sqlalchemy.orm import Session

from palaver.models import Realm
from palaver.models.channels import Stream
from palaver.models.messages import Message

FOREVER = -1


def effective_days(stream_days: int | None, realm_days: int | None) -> int | None:
    """Days a channel's messages are kept, or None for forever."""
    days = realm_days if stream_days is None else stream_days
    return None if days is None or days == FOREVER or days <= 0 else days


def expired_condition(session: Session, realm: Realm, now: datetime) -> ColumnElement[bool]:
    """Messages of the realm older than their channel's (or the realm's) retention period."""
    by_days: dict[int, list[int]] = defaultdict(list)
    streams = session.execute(
        select(Stream.recipient_id, Stream.message_retention_days).where(
            Stream.realm_id == realm.id, Stream.recipient_id.is_not(None)
        )
    )
    for recipient_id, stream_days in streams:
        days = effective_days(stream_days, realm.message_retention_days)
        if days is not None and recipient_id is not None:
            by_days[days].append(recipient_id)
    parts = [
        and_(Message.recipient_id.in_(recipients), Message.date_sent < now - timedelta(days=days))
        for days, recipients in sorted(by_days.items())
    ]
    realm_days = effective_days(None, realm.message_retention_days)
    if realm_days is not None:
        parts.append(
            and_(Message.is_channel_message.is_(False), Message.date_sent < now - timedelta(days=realm_days))
        )
    if not parts:
        return false()
    return and_(Message.realm_id == realm.id, or_(*parts))


def realms_with_retention(session: Session) -> list[Realm]:
    """Realms where anything may expire (a realm policy, or a channel with its own)."""
    with_channel_policy = select(Stream.realm_id).where(
        Stream.message_retention_days.is_not(None), Stream.message_retention_days > 0
    )
    return list(
        session.scalars(
            select(Realm)
            .where(
                Realm.deactivated.is_(False),
                or_(Realm.message_retention_days > 0, Realm.id.in_(with_channel_policy)),
            )
            .order_by(Realm.id)
        )
    )
