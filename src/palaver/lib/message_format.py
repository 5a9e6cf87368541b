"""Message objects as the API returns them.

Message objects are built in two steps: a wide message dict gathers everything about a
message once (rendered and raw content, sender, recipients, reactions), and
``finalize_message`` cuts one client's view out of it (``apply_markdown``,
``client_gravatar``, empty-topic display, flags). Message events carry the wide form's
extra parts in ``internal`` and are finalized per client queue by
``events/queues.message_event_for_client``.

A batch of messages is formatted from plain rows: the message's columns (an ORM ``Message``
or a row of the same names) and what ``lib/message_batch.py`` looks up once around them,
so GET /messages loads no ORM objects at all.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from sqlalchemy.orm import Session

from palaver.cache import ChannelFacts, realm_settings
from palaver.lib.markdown.urls import topic_links
from palaver.lib.message_batch import (
    MessageColumns,
    Surroundings,
    UserFacts,
    format_reactions,
    surroundings,
    user_facts,
    user_facts_by_id,
)
from palaver.lib.message_flags import DEFAULT_HISTORICAL_FLAGS, flag_names
from palaver.models import UserProfile
from palaver.models.messages import Message, Reaction
from palaver.models.requester import Requester
from palaver.models.topic_names import display_topic
from palaver.timeutil import to_timestamp


@dataclass(frozen=True)
class FormatOptions:
    apply_markdown: bool = True
    client_gravatar: bool = True
    allow_empty_topic_name: bool = False


def wide_message_dicts(
    session: Session, messages: Sequence[MessageColumns], *, allow_edit_history: bool = True
) -> dict[int, dict[str, Any]]:
    """Everything any client may need about these messages, fetched in a few queries."""
    if not messages:
        return {}
    around = surroundings(session, messages)
    return {message.id: _wide_dict(message, around, allow_edit_history) for message in messages}


def new_message_wide_dict(
    session: Session,
    message: Message,
    sender: Requester,
    stream: ChannelFacts | None,
    dm_members: Iterable[UserProfile] = (),
) -> dict[str, Any]:
    """``wide_message_dicts`` of a message being sent, from what sending already loaded.

    A new message has no reactions or edits yet; ``dm_members`` are the conversation's
    members (sender included) for a direct message. A channel message's sender has their
    facts read as any message's are (``user_facts_by_id``, from the realm cache).
    """
    realm_str = realm_settings(session, message.realm_id).string_id
    facts = {u.id: user_facts(u, realm_str) for u in dm_members}
    if sender.user_id not in facts:
        facts.update(user_facts_by_id(session, message.realm_id, [sender.user_id]))
    streams: dict[int, ChannelFacts] = {}
    members: dict[int, list[int]] = {}
    if stream is not None:
        streams[message.recipient_id] = stream
    else:
        members[message.recipient_id] = sorted(facts)
    return _wide_message_dict(message, facts, streams, members, [], True)


def _wide_message_dict(
    message: Message,
    facts: Mapping[int, UserFacts],
    streams: Mapping[int, ChannelFacts],
    members: Mapping[int, list[int]],
    reactions: Iterable[Reaction],
    allow_edit_history: bool,
) -> dict[str, Any]:
    """A wide message dict from loaded objects (``new_message_wide_dict``)."""
    around = Surroundings(
        dict(facts),
        {recipient_id: (stream.id, stream.name) for recipient_id, stream in streams.items()},
        members,
        {message.id: format_reactions(reactions)},
        {},
    )
    return _wide_dict(message, around, allow_edit_history)


def _add_recipient(item: dict[str, Any], around: Surroundings, recipient_id: int, is_channel: bool) -> None:
    """A message's type, display_recipient and (channel messages) stream_id."""
    if is_channel:
        stream_id, name = around.channels[recipient_id]
        item["type"] = "stream"
        item["display_recipient"] = name
        item["stream_id"] = stream_id
    else:
        item["type"] = "private"
        item["display_recipient"] = [
            around.users[uid].display_recipient() for uid in around.members.get(recipient_id, [])
        ]


def _wide_dict(message: MessageColumns, around: Surroundings, allow_edit_history: bool) -> dict[str, Any]:
    sender = around.users[message.sender_id]
    subject = message.subject
    content = message.content
    item: dict[str, Any] = {
        "id": message.id,
        "sender_id": sender.id,
        "content": message.rendered_content or "",
        "content_type": "text/html",
        "recipient_id": message.recipient_id,
        "timestamp": to_timestamp(message.date_sent),
        "client": message.sending_client,
        "subject": subject,
        # Topic links are bare URLs here (no linkifiers), so a topic without "://" has none.
        "topic_links": topic_links(subject, ()) if message.is_channel_message and "://" in subject else [],
        "is_me_message": content.startswith("/me ") and "\n" not in content,
        "reactions": around.reactions.get(message.id, []),
        "submessages": around.submessages.get(message.id, []),
        "sender_full_name": sender.full_name,
        "sender_email": sender.email,
        "sender_realm_str": sender.realm_str,
        "avatar_url": sender.avatar_url,
        "raw_content": content,
        "avatar_computable": sender.avatar_computable,
    }
    _add_recipient(item, around, message.recipient_id, message.is_channel_message)
    if message.edit_history is not None and allow_edit_history:
        item["edit_history"] = orjson.loads(message.edit_history)
    if message.last_edit_time is not None:
        item["last_edit_timestamp"] = to_timestamp(message.last_edit_time)
    if message.last_moved_time is not None:
        item["last_moved_timestamp"] = to_timestamp(message.last_moved_time)
    return item


def finalize_message(
    wide: Mapping[str, Any],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    allow_empty_topic_name: bool,
    flags: list[str] | None = None,
) -> dict[str, Any]:
    """One client's view of a wide message dict (which stays as it was)."""
    return _finalize(
        dict(wide),
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        allow_empty_topic_name=allow_empty_topic_name,
        flags=flags,
    )


def _finalize(
    message: dict[str, Any],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    allow_empty_topic_name: bool,
    flags: list[str] | None,
) -> dict[str, Any]:
    """``finalize_message`` in place, for a wide dict nobody else holds."""
    raw_content = message.pop("raw_content")
    message.pop("rendered_content", None)
    avatar_computable = message.pop("avatar_computable", False)
    if not apply_markdown:
        message["content"] = raw_content
        message["content_type"] = "text/x-markdown"
    if client_gravatar and avatar_computable:
        message["avatar_url"] = None
    if message["type"] == "stream":
        message["subject"] = display_topic(message["subject"], allow_empty_topic_name)
    if "edit_history" in message and not allow_empty_topic_name:
        message["edit_history"] = [
            {k: display_topic(v, False) if k in ("topic", "prev_topic") else v for k, v in entry.items()}
            for entry in message["edit_history"]
        ]
    if flags is not None:
        message["flags"] = flags
    return message


class MessageRow(MessageColumns, Protocol):
    """A message's columns with the user's flags on it (None: a message they never received)."""

    @property
    def flags(self) -> int | None: ...


def format_message_rows(
    session: Session,
    rows: Sequence[MessageRow],
    options: FormatOptions,
    *,
    allow_edit_history: bool,
    extras_of: Collection[int] | None = None,
) -> list[dict[str, Any]]:
    """Message objects, with flags, for rows of message columns and the user's flags.

    ``extras_of``: the rows' messages that may have reactions or widget data (None: any).
    """
    if not rows:
        return []
    around = surroundings(session, rows, extras_of)
    return [_message_object(row, around, options, allow_edit_history) for row in rows]


def _message_object(
    row: MessageRow, around: Surroundings, options: FormatOptions, allow_edit_history: bool
) -> dict[str, Any]:
    """``_finalize(_wide_dict(row, ...))`` in one step, the same dict with the same keys in
    the same order: a page builds fifty, and the wide form's extra keys were only popped."""
    sender = around.users[row.sender_id]
    subject = row.subject
    content = row.content
    is_channel_message = row.is_channel_message
    apply_markdown = options.apply_markdown
    item: dict[str, Any] = {
        "id": row.id,
        "sender_id": sender.id,
        "content": (row.rendered_content or "") if apply_markdown else content,
        "content_type": "text/html" if apply_markdown else "text/x-markdown",
        "recipient_id": row.recipient_id,
        "timestamp": to_timestamp(row.date_sent),
        "client": row.sending_client,
        "subject": display_topic(subject, options.allow_empty_topic_name) if is_channel_message else subject,
        # Topic links are bare URLs here (no linkifiers), so a topic without "://" has none.
        "topic_links": topic_links(subject, ()) if is_channel_message and "://" in subject else [],
        "is_me_message": content.startswith("/me ") and "\n" not in content,
        "reactions": around.reactions.get(row.id, []),
        "submessages": around.submessages.get(row.id, []),
        "sender_full_name": sender.full_name,
        "sender_email": sender.email,
        "sender_realm_str": sender.realm_str,
        "avatar_url": None if options.client_gravatar and sender.avatar_computable else sender.avatar_url,
    }
    _add_recipient(item, around, row.recipient_id, is_channel_message)
    if row.edit_history is not None and allow_edit_history:
        history = orjson.loads(row.edit_history)
        if not options.allow_empty_topic_name:
            history = [
                {k: display_topic(v, False) if k in ("topic", "prev_topic") else v for k, v in entry.items()}
                for entry in history
            ]
        item["edit_history"] = history
    if row.last_edit_time is not None:
        item["last_edit_timestamp"] = to_timestamp(row.last_edit_time)
    if row.last_moved_time is not None:
        item["last_moved_timestamp"] = to_timestamp(row.last_moved_time)
    item["flags"] = flag_names(DEFAULT_HISTORICAL_FLAGS if row.flags is None else row.flags)
    return item
