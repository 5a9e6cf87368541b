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

_MESSAGES = Message.__table__.c
_USER_MESSAGES = UserMessage.__table__.c
# Statements are built once, on the tables (an ORM statement per call costs more than
# running it). Each reads (id, recipient, topic, is channel message, the user's flags).
_USERS_MESSAGES = (
    select(
        _MESSAGES.id,
        _MESSAGES.recipient_id,
        _MESSAGES.subject,
        _MESSAGES.is_channel_message,
        _USER_MESSAGES.flags,
    )
    .join(UserMessage.__table__, _USER_MESSAGES.message_id == _MESSAGES.id)
    .where(_USER_MESSAGES.user_profile_id == bindparam("user_id"))
)
# These messages.
_MESSAGES_WITH_FLAGS = _USERS_MESSAGES.where(_MESSAGES.id.in_(bindparam("message_ids", expanding=True)))
# The user's newest unread messages, newest first, in the order of the unread index
# (user, message): the database stops at the bound instead of sorting every unread row.
_NEWEST_UNREAD = (
    _USERS_MESSAGES.where(_USER_MESSAGES.flags.op("&")(int(MessageFlag.READ)) == 0)
    .order_by(_USER_MESSAGES.message_id.desc())
    .limit(MAX_UNREAD_MESSAGES + 1)
)


def unread_msgs_state(session: Session, user: UserProfile, *, allow_empty_topic_name: bool) -> dict[str, Any]:
    """The ``unread_msgs`` object of POST /register."""
    rows = list(session.execute(_NEWEST_UNREAD, {"user_id": user.id}))
    old_unreads_missing = len(rows) > MAX_UNREAD_MESSAGES
    del rows[MAX_UNREAD_MESSAGES:]
    # Oldest first: every list below is then in ID order as it is built.
    rows.reverse()
    # Grouped by recipient first; channels and conversation members are looked up once
    # per group, not per message.
    by_recipient_topic: dict[tuple[int, str], list[int]] = defaultdict(list)
    by_conversation: dict[int, list[int]] = defaultdict(list)
    mentions = []
    # Wildcard mentions in channels, with their topic: they count only where not muted.
    wildcards: list[tuple[int, tuple[int, str]]] = []
    direct, any_mention = int(MessageFlag.MENTIONED), int(ANY_MENTION_FLAGS)
    for message_id, recipient_id, subject, is_channel_message, flags in rows:
        if is_channel_message:
            key = (recipient_id, subject)
            by_recipient_topic[key].append(message_id)
            if flags & direct:
                mentions.append(message_id)
            elif flags & any_mention:
                wildcards.append((message_id, key))
        else:
            by_conversation[recipient_id].append(message_id)
            if flags & any_mention:
                mentions.append(message_id)
    streams = streams_by_recipient(session, user.realm_id, {recipient for recipient, _ in by_recipient_topic})
    members = conversation_member_ids(session, by_conversation)
    by_person: dict[int, list[int]] = defaultdict(list)
    by_group: dict[str, list[int]] = defaultdict(list)
    for recipient_id, ids in by_conversation.items():
        people = members.get(recipient_id, [])
        others = [uid for uid in people if uid != user.id]
        if len(others) <= 1:
            # One-on-one, or with oneself.
            by_person[others[0] if others else user.id].extend(ids)
        else:
            by_group[",".join(str(uid) for uid in people)].extend(ids)
    # Two conversations may share a key (the same people): their messages interleave.
    for merged in (*by_person.values(), *by_group.values()):
        merged.sort()
    # Muted conversations stay listed (clients show them) but count for nothing, and only
    # direct mentions in them, not wildcards, are mentions. Decided once per topic.
    muting = conversation_muting(session, user.id)
    by_topic: dict[tuple[int, str], list[int]] = {}
    muted: set[tuple[int, str]] = set()
    for (recipient_id, subject), ids in by_recipient_topic.items():
        stream_id = streams[recipient_id].id
        by_topic[(stream_id, subject)] = ids
        if muting.is_muted(stream_id, recipient_id, subject):
            muted.add((recipient_id, subject))
    direct_messages = sum(len(ids) for ids in by_conversation.values())
    count = direct_messages + sum(len(ids) for key, ids in by_recipient_topic.items() if key not in muted)
    mentions.extend(message_id for message_id, key in wildcards if key not in muted)
    mentions.sort()
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
