"""Unread messages: the ``unread_msgs`` object of POST /register, and what clients need to
count messages as unread again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from palaver.lib.conversation_muting import conversation_muting
from palaver.lib.conversations import conversation_member_ids, streams_by_recipient
from palaver.lib.ids import storable_ids
from palaver.models import UserProfile
from palaver.models.messages import ANY_MENTION_FLAGS, Message, MessageFlag, UserMessage
from palaver.models.requester import Requester
from palaver.models.topic_names import display_topic

# Zulip's bound on the unread messages /register lists (the newest ones).
MAX_UNREAD_MESSAGES = 50_000


def unread_msgs_state(session: Session, user: UserProfile, *, allow_empty_topic_name: bool) -> dict[str, Any]:
    """The ``unread_msgs`` object of POST /register."""
    rows = session.execute(
        select(
            Message.id, Message.recipient_id, Message.subject, Message.is_channel_message, UserMessage.flags
        )
        .join(UserMessage, UserMessage.message_id == Message.id)
        .where(UserMessage.user_profile_id == user.id, UserMessage.flags.op("&")(int(MessageFlag.READ)) == 0)
        .order_by(Message.id.desc())
        .limit(MAX_UNREAD_MESSAGES + 1)
    ).all()
    old_unreads_missing = len(rows) > MAX_UNREAD_MESSAGES
    rows = sorted(rows[:MAX_UNREAD_MESSAGES], key=lambda r: r.id)
    streams = streams_by_recipient(
        session, user.realm_id, {r.recipient_id for r in rows if r.is_channel_message}
    )
    members = conversation_member_ids(session, {r.recipient_id for r in rows if not r.is_channel_message})
    by_topic: dict[tuple[int, str], list[int]] = defaultdict(list)
    by_person: dict[int, list[int]] = defaultdict(list)
    by_group: dict[str, list[int]] = defaultdict(list)
    mentions = []
    muting = conversation_muting(session, user.id)
    # Muted conversations stay listed (clients show them) but count for nothing, and only
    # direct mentions in them, not wildcards, are mentions.
    count = 0
    for row in rows:
        muted = row.is_channel_message and muting.is_muted(
            streams[row.recipient_id].id, row.recipient_id, row.subject
        )
        count += not muted
        if row.flags & MessageFlag.MENTIONED or (row.flags & ANY_MENTION_FLAGS and not muted):
            mentions.append(row.id)
        if row.is_channel_message:
            by_topic[(streams[row.recipient_id].id, row.subject)].append(row.id)
            continue
        people = members.get(row.recipient_id, [])
        others = [uid for uid in people if uid != user.id]
        if len(others) <= 1:
            # One-on-one, or with oneself.
            by_person[others[0] if others else user.id].append(row.id)
        else:
            by_group[",".join(str(uid) for uid in people)].append(row.id)
    return {
        "count": count,
        "pms": [
            {"other_user_id": other, "sender_id": other, "unread_message_ids": ids}
            for other, ids in sorted(by_person.items())
        ],
        "streams": [
            {
                "stream_id": stream_id,
                "topic": display_topic(topic, allow_empty_topic_name),
                "unread_message_ids": ids,
            }
            for (stream_id, topic), ids in sorted(by_topic.items())
        ],
        "huddles": [
            {"user_ids_string": key, "unread_message_ids": ids} for key, ids in sorted(by_group.items())
        ],
        "mentions": mentions,
        "old_unreads_missing": old_unreads_missing,
    }


_MESSAGES = Message.__table__.c
_USER_MESSAGES = UserMessage.__table__.c
# Built once, on the table (an ORM statement per call costs more than running it):
# these messages and the user's flags on them.
_MESSAGES_WITH_FLAGS = (
    select(
        _MESSAGES.id,
        _MESSAGES.recipient_id,
        _MESSAGES.subject,
        _MESSAGES.is_channel_message,
        _USER_MESSAGES.flags,
    )
    .join(UserMessage.__table__, _USER_MESSAGES.message_id == _MESSAGES.id)
    .where(
        _USER_MESSAGES.user_profile_id == bindparam("user_id"),
        _MESSAGES.id.in_(bindparam("message_ids", expanding=True)),
    )
)


def unread_message_details(
    session: Session, user: Requester, message_ids: Collection[int]
) -> dict[str, dict[str, Any]]:
    """What clients need to count these messages as unread again (flags remove events)."""
    if not message_ids:
        return {}
    # Larger numbers name no message, and PostgreSQL refuses to compare with them.
    params = {"user_id": user.user_id, "message_ids": storable_ids(message_ids)}
    rows = session.execute(_MESSAGES_WITH_FLAGS, params).all()
    streams = streams_by_recipient(
        session, user.realm_id, {r.recipient_id for r in rows if r.is_channel_message}
    )
    members = conversation_member_ids(session, {r.recipient_id for r in rows if not r.is_channel_message})
    details: dict[str, dict[str, Any]] = {}
    for row in rows:
        item: dict[str, Any]
        if row.is_channel_message:
            item = {"type": "stream", "stream_id": streams[row.recipient_id].id, "topic": row.subject}
        else:
            others = [uid for uid in members.get(row.recipient_id, []) if uid != user.user_id]
            item = {"type": "private", "user_ids": others}
        if row.flags & ANY_MENTION_FLAGS:
            item["mentioned"] = True
        details[str(row.id)] = item
    return details
