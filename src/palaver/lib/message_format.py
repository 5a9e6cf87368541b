"""Message objects as the API returns them.

Message objects are built in two steps: ``wide_message_dicts`` gathers everything about
a batch of messages once (rendered and raw content, sender, recipients, reactions), and
``finalize_message`` cuts one client's view out of it (``apply_markdown``,
``client_gravatar``, empty-topic display, flags). Message events carry the wide form's
extra parts in ``internal`` and are finalized per client queue by
``events/queues.message_event_for_client``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.avatars import avatar_url, hosted_by_gravatar
from palaver.lib.conversations import conversation_member_ids, streams_by_recipient
from palaver.lib.markdown.urls import topic_links
from palaver.lib.message_access import messages_by_id
from palaver.lib.message_flags import DEFAULT_HISTORICAL_FLAGS, flag_names
from palaver.lib.widgets import submessages_by_message
from palaver.models import UserProfile
from palaver.models.channels import Stream
from palaver.models.messages import Message, Reaction
from palaver.models.topic_names import display_topic
from palaver.timeutil import to_timestamp


@dataclass(frozen=True)
class FormatOptions:
    apply_markdown: bool = True
    client_gravatar: bool = True
    allow_empty_topic_name: bool = False


# Keys of a wide message dict that are not part of the client's message object.
_WIDE_ONLY_KEYS = ("raw_content", "rendered_content", "avatar_computable")


def _display_recipient_user(user: UserProfile) -> dict[str, Any]:
    return {"id": user.id, "email": user.email, "full_name": user.full_name, "is_mirror_dummy": False}


def format_reactions(reactions: Iterable[Reaction]) -> list[dict[str, Any]]:
    return [
        {
            "emoji_name": r.emoji_name,
            "emoji_code": r.emoji_code,
            "reaction_type": r.reaction_type,
            "user_id": r.user_profile_id,
        }
        for r in reactions
    ]


def wide_message_dicts(
    session: Session, messages: Sequence[Message], *, allow_edit_history: bool = True
) -> dict[int, dict[str, Any]]:
    """Everything any client may need about these messages, fetched in a few queries."""
    if not messages:
        return {}
    user_ids = {m.sender_id for m in messages}
    dm_recipients = {m.recipient_id for m in messages if not m.is_channel_message}
    members = conversation_member_ids(session, dm_recipients)
    user_ids.update(uid for ids in members.values() for uid in ids)
    users = {u.id: u for u in session.scalars(select(UserProfile).where(UserProfile.id.in_(user_ids)))}
    streams = streams_by_recipient(session, {m.recipient_id for m in messages if m.is_channel_message})
    reactions: dict[int, list[Reaction]] = defaultdict(list)
    for reaction in session.scalars(
        select(Reaction).where(Reaction.message_id.in_([m.id for m in messages])).order_by(Reaction.id)
    ):
        reactions[reaction.message_id].append(reaction)
    result = {
        message.id: _wide_message_dict(
            message, users, streams, members, reactions.get(message.id, []), allow_edit_history
        )
        for message in messages
    }
    # Widgets' data (lib/widgets.py).
    for message_id, submessages in submessages_by_message(session, result).items():
        result[message_id]["submessages"] = submessages
    return result


def new_message_wide_dict(
    message: Message, sender: UserProfile, stream: Stream | None, dm_members: Iterable[UserProfile] = ()
) -> dict[str, Any]:
    """``wide_message_dicts`` of a message being sent, from what sending already loaded.

    A new message has no reactions or edits yet; ``dm_members`` are the conversation's
    members (sender included) for a direct message.
    """
    users = {sender.id: sender, **{u.id: u for u in dm_members}}
    streams: dict[int, Stream] = {}
    members: dict[int, list[int]] = {}
    if stream is not None:
        streams[message.recipient_id] = stream
    else:
        members[message.recipient_id] = sorted(users)
    return _wide_message_dict(message, users, streams, members, [], True)


def _wide_message_dict(
    message: Message,
    users: Mapping[int, UserProfile],
    streams: Mapping[int, Stream],
    members: Mapping[int, list[int]],
    reactions: Iterable[Reaction],
    allow_edit_history: bool,
) -> dict[str, Any]:
    sender = users[message.sender_id]
    item: dict[str, Any] = {
        "id": message.id,
        "sender_id": sender.id,
        "content": message.rendered_content or "",
        "content_type": "text/html",
        "recipient_id": message.recipient_id,
        "timestamp": to_timestamp(message.date_sent),
        "client": message.sending_client,
        "subject": message.subject,
        "topic_links": topic_links(message.subject, ()) if message.is_channel_message else [],
        "is_me_message": _is_me_message(message.content),
        "reactions": format_reactions(reactions),
        "submessages": [],
        "sender_full_name": sender.full_name,
        "sender_email": sender.email,
        "sender_realm_str": sender.realm.string_id,
        "avatar_url": avatar_url(sender),
        "raw_content": message.content,
        # Clients computing Gravatar URLs need the real address, shown as sender_email.
        "avatar_computable": hosted_by_gravatar(sender) and sender.email == sender.delivery_email,
    }
    if message.is_channel_message:
        stream = streams[message.recipient_id]
        item["type"] = "stream"
        item["display_recipient"] = stream.name
        item["stream_id"] = stream.id
    else:
        item["type"] = "private"
        item["display_recipient"] = [
            _display_recipient_user(users[uid]) for uid in members.get(message.recipient_id, [])
        ]
    if message.edit_history is not None and allow_edit_history:
        item["edit_history"] = orjson.loads(message.edit_history)
    if message.last_edit_time is not None:
        item["last_edit_timestamp"] = to_timestamp(message.last_edit_time)
    if message.last_moved_time is not None:
        item["last_moved_timestamp"] = to_timestamp(message.last_moved_time)
    return item


def _is_me_message(content: str) -> bool:
    return content.startswith("/me ") and "\n" not in content


def finalize_message(
    wide: Mapping[str, Any],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    allow_empty_topic_name: bool,
    flags: list[str] | None = None,
) -> dict[str, Any]:
    """One client's view of a wide message dict."""
    message = {k: v for k, v in wide.items() if k not in _WIDE_ONLY_KEYS}
    if not apply_markdown:
        message["content"] = wide["raw_content"]
        message["content_type"] = "text/x-markdown"
    if client_gravatar and wide.get("avatar_computable"):
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


def format_messages(
    session: Session,
    rows: Sequence[tuple[int, int | None]],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    allow_empty_topic_name: bool,
    allow_edit_history: bool,
    messages: Mapping[int, Message] | None = None,
) -> list[dict[str, Any]]:
    """Message objects with flags for (message ID, flags or None if historical) rows."""
    if messages is None:
        messages = messages_by_id(session, [message_id for message_id, _ in rows])
    ordered = [messages[message_id] for message_id, _ in rows if message_id in messages]
    wide = wide_message_dicts(session, ordered, allow_edit_history=allow_edit_history)
    result = []
    for message_id, bits in rows:
        if message_id not in wide:
            continue
        flags = flag_names(DEFAULT_HISTORICAL_FLAGS if bits is None else bits)
        result.append(
            finalize_message(
                wide[message_id],
                apply_markdown=apply_markdown,
                client_gravatar=client_gravatar,
                allow_empty_topic_name=allow_empty_topic_name,
                flags=flags,
            )
        )
    return result
