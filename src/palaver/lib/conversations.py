"""Conversations: direct-message groups and their members, and channels by recipient.

Direct-message conversations are ``DirectMessageGroup`` recipients whose members are the
users subscribed to them; a channel's messages have the channel's recipient.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.cache import realm_channels
from palaver.cache.snapshots import StreamInfo
from palaver.models.channels import Stream, Subscription
from palaver.models.messages import DirectMessageGroup, Message


def dm_group_hash(user_ids: Iterable[int]) -> str:
    joined = ",".join(str(i) for i in sorted(set(user_ids)))
    return hashlib.sha1(joined.encode(), usedforsecurity=False).hexdigest()


def get_dm_group(session: Session, user_ids: Iterable[int]) -> DirectMessageGroup | None:
    return session.scalars(
        select(DirectMessageGroup).where(DirectMessageGroup.huddle_hash == dm_group_hash(user_ids))
    ).one_or_none()


def conversation_member_ids(session: Session, recipient_ids: Iterable[int]) -> dict[int, list[int]]:
    """Members of direct-message conversations by recipient ID, in ID order."""
    ids = set(recipient_ids)
    members: dict[int, list[int]] = {i: [] for i in ids}
    if not ids:
        return members
    rows = session.execute(
        select(Subscription.recipient_id, Subscription.user_profile_id)
        .where(Subscription.recipient_id.in_(ids))
        .order_by(Subscription.user_profile_id)
    )
    for recipient_id, user_id in rows:
        members[recipient_id].append(user_id)
    return members


def streams_by_recipient(
    session: Session, realm_id: int, recipient_ids: Iterable[int]
) -> dict[int, StreamInfo]:
    """The realm's channels among these recipients, by recipient ID (from the realm's cache)."""
    by_recipient = realm_channels(session, realm_id).by_recipient
    return {r: stream for r in set(recipient_ids) if (stream := by_recipient.get(r)) is not None}


def stream_for_message(session: Session, message: Message) -> Stream:
    stream = session.scalars(select(Stream).where(Stream.recipient_id == message.recipient_id)).one()
    return stream


def user_ids_sharing_conversations(session: Session, viewer_id: int) -> list[int]:
    """Users the viewer shares a channel subscription or a direct-message conversation with."""
    mine = select(Subscription.recipient_id).where(
        Subscription.user_profile_id == viewer_id, Subscription.active
    )
    shared = session.scalars(
        select(Subscription.user_profile_id)
        .where(Subscription.recipient_id.in_(mine), Subscription.active)
        .distinct()
    )
    return sorted(set(shared) - {viewer_id})
