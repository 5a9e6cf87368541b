"""Reads and rules for editing and moving messages: who may, which messages move, history.

The write itself is ``actions/message_edit.py`` (with ``message_edit_plan``, ``message_moves`` and
``message_edit_notices``); everything here only reads.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import func, literal, select
from sqlalchemy.orm import Session

from palaver.cache import ChannelFacts, RealmRow, realm_settings
from palaver.lib.channels import Viewer
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_access import access_message, can_access_stream_history
from palaver.models import Role
from palaver.models.channels import Stream
from palaver.models.messages import Message, UserMessage
from palaver.models.requester import Requester
from palaver.models.topic_names import EMPTY_TOPIC_DISPLAY_NAME, RESOLVED_TOPIC_PREFIX, display_topic
from palaver.timeutil import to_timestamp, utcnow

if TYPE_CHECKING:
    pass

# Clients allow an edit a few seconds past the limit they show (Zulip's 20-second grace).
EDIT_LIMIT_BUFFER_SECONDS = 20
PROPAGATE_MODES = ("change_one", "change_later", "change_all")

NO_PERMISSION_TO_EDIT = "You don't have permission to edit this message"


class MoveTimeLimitError(JsonableError):
    code = "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED"

    def __init__(self, first_allowed: int | None, total: int, allowed: int) -> None:
        super().__init__(
            f"You only have permission to move the {allowed}/{total} most recent messages in this topic.",
            first_message_id_allowed_to_move=first_allowed,
            total_messages_in_topic=total,
            total_messages_allowed_to_move=allowed,
        )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def is_exempt_from_move_limits(user: Requester) -> bool:
    return user.role <= Role.MODERATOR


def effective_topics_policy(realm: RealmRow, stream: ChannelFacts) -> str:
    if stream.topics_policy != "inherit":
        return stream.topics_policy
    return "disable_empty_topic" if realm.mandatory_topics else realm.topics_policy


def check_topic_allowed(realm: RealmRow, stream: ChannelFacts, topic: str) -> None:
    """The channel's topics policy, for a message arriving in ``topic`` (sent or moved)."""
    policy = effective_topics_policy(realm, stream)
    if policy == "disable_empty_topic" and topic == "":
        raise JsonableError(
            f"Sending messages to the {EMPTY_TOPIC_DISPLAY_NAME} is not allowed in this channel."
        )
    if policy == "empty_topic_only" and topic != "":
        raise JsonableError(f"Only the {EMPTY_TOPIC_DISPLAY_NAME} topic is allowed in this channel.")


def is_resolve_toggle(old: str, new: str) -> tuple[bool, bool]:
    """(resolved, unresolved): whether renaming ``old`` to ``new`` only toggles the mark."""
    resolved = (
        new.startswith(RESOLVED_TOPIC_PREFIX)
        and not old.startswith(RESOLVED_TOPIC_PREFIX)
        and new[len(RESOLVED_TOPIC_PREFIX) :] == old
    )
    unresolved = (
        old.startswith(RESOLVED_TOPIC_PREFIX)
        and not new.startswith(RESOLVED_TOPIC_PREFIX)
        and old.lstrip(RESOLVED_TOPIC_PREFIX) == new
    )
    return resolved, unresolved


def marks_empty_topic_resolved(topic: str) -> bool:
    return topic.rstrip() == RESOLVED_TOPIC_PREFIX.strip() or topic in (
        RESOLVED_TOPIC_PREFIX + EMPTY_TOPIC_DISPLAY_NAME,
        RESOLVED_TOPIC_PREFIX + "(no topic)",
    )


# Permissions ----------------------------------------------------------------------------------


def check_content_edit_allowed(viewer: Viewer, message: Message) -> None:
    realm = viewer.realm
    if not realm.allow_message_editing:
        raise JsonableError("Your organization has turned off message editing")
    if message.sender_id != viewer.user.user_id:
        raise JsonableError(NO_PERMISSION_TO_EDIT)
    limit = realm.message_content_edit_limit_seconds
    if limit is not None and utcnow() - message.date_sent > timedelta(
        seconds=limit + EDIT_LIMIT_BUFFER_SECONDS
    ):
        raise JsonableError("The time limit for editing this message has passed")


def can_resolve_topics(viewer: Viewer, stream: Stream) -> bool:
    realm_group = viewer.realm.can_resolve_topics_group
    return realm_group in viewer.groups or stream.can_resolve_topics_group in viewer.groups


def can_move_within_channel(viewer: Viewer, stream: Stream) -> bool:
    realm_group = viewer.realm.can_move_messages_between_topics_group
    return realm_group in viewer.groups or stream.can_move_messages_within_channel_group in viewer.groups


def can_move_out_of_channel(viewer: Viewer, stream: Stream) -> bool:
    realm_group = viewer.realm.can_move_messages_between_channels_group
    return realm_group in viewer.groups or stream.can_move_messages_out_of_channel_group in viewer.groups


def move_deadline(realm: RealmRow, *, topic_changed: bool, stream_changed: bool) -> datetime | None:
    """The oldest send time a non-exempt user may still move, or None for no limit.

    When both topic and channel change, the stricter limit applies.
    """
    limits = []
    if topic_changed and realm.move_messages_within_stream_limit_seconds is not None:
        limits.append(realm.move_messages_within_stream_limit_seconds)
    if stream_changed and realm.move_messages_between_streams_limit_seconds is not None:
        limits.append(realm.move_messages_between_streams_limit_seconds)
    if not limits:
        return None
    return utcnow() - timedelta(seconds=min(limits) + EDIT_LIMIT_BUFFER_SECONDS)


# Which messages move --------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicMessage:
    id: int
    date_sent: datetime


def topic_messages_for_user(
    session: Session, viewer: Viewer, stream: Stream, topic: str, *, from_id: int | None = None
) -> list[TopicMessage]:
    """The topic's messages the user may access, oldest first (from ``from_id`` on).

    With protected history that is only what the user received: the rest of the topic is
    invisible to them, so it is neither moved nor counted.
    """
    query = select(Message.id, Message.date_sent).where(
        Message.recipient_id == stream.recipient_id,
        func.lower(Message.subject) == func.lower(literal(topic)),
    )
    if from_id is not None:
        query = query.where(Message.id >= from_id)
    if not can_access_stream_history(viewer, stream):
        query = query.join(UserMessage, UserMessage.message_id == Message.id).where(
            UserMessage.user_profile_id == viewer.user.user_id
        )
    return [TopicMessage(r.id, r.date_sent) for r in session.execute(query.order_by(Message.id))]


def check_move_time_limit(
    target: Message, to_move: list[TopicMessage], topic_messages: list[TopicMessage], deadline: datetime
) -> None:
    """Refuse a move that includes messages sent before the deadline.

    The error tells the client how much of the topic it may move: the most recent
    messages, from ``first_message_id_allowed_to_move`` on (None when none).
    """
    if target.date_sent >= deadline and all(m.date_sent >= deadline for m in to_move):
        return
    allowed = [m for m in topic_messages if m.date_sent >= deadline]
    raise MoveTimeLimitError(allowed[0].id if allowed else None, len(topic_messages), len(allowed))


# Edit history ---------------------------------------------------------------------------------


def edit_history_entries(message: Message) -> list[dict[str, Any]]:
    """The stored history, newest first."""
    if message.edit_history is None:
        return []
    entries: list[dict[str, Any]] = orjson.loads(message.edit_history)
    return entries


_HTML_TOKEN = re.compile(r"<[^>]*>|[^<\s]+|\s+")


def html_diff(old: str, new: str) -> str:
    """A word-level diff of two renderings: inserted and deleted text marked with spans."""
    a, b = _HTML_TOKEN.findall(old), _HTML_TOKEN.findall(new)
    out: list[str] = []

    def marked(tokens: list[str], css: str, keep_tags: bool) -> None:
        for token in tokens:
            if token.startswith("<"):
                if keep_tags:
                    out.append(token)
            elif token.isspace():
                out.append(token)
            else:
                out.append(f'<span class="{css}">{token}</span>')

    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(b[j1:j2])
            continue
        if op in ("replace", "insert"):
            marked(b[j1:j2], "highlight_text_inserted", keep_tags=True)
        if op in ("replace", "delete"):
            # Only the words: the old markup's tags would unbalance the new structure.
            marked(a[i1:i2], "highlight_text_deleted", keep_tags=False)
    return f"<div>{''.join(out)}</div>"


def message_history(
    session: Session, user: Requester, message_id: int, *, allow_empty_topic_name: bool
) -> list[dict[str, Any]]:
    """GET /messages/{id}/history: snapshots after each edit, oldest (the original) first."""
    if not realm_settings(session, user.realm_id).allow_edit_history:
        raise JsonableError("Message edit history is disabled in this organization")
    message, _ = access_message(session, user, message_id)
    content = message.content
    rendered = message.rendered_content or ""
    topic = message.subject

    def shown(name: str) -> str:
        return display_topic(name, allow_empty_topic_name) if message.is_channel_message else name

    snapshots: list[dict[str, Any]] = []
    for entry in edit_history_entries(message):
        snapshot: dict[str, Any] = {
            "content": content,
            "rendered_content": rendered,
            "timestamp": entry["timestamp"],
            "topic": shown(topic),
            "user_id": entry.get("user_id"),
        }
        if "prev_topic" in entry:
            topic = entry["prev_topic"]
            snapshot["prev_topic"] = shown(topic)
        if "prev_content" in entry:
            content = entry["prev_content"]
            snapshot["prev_content"] = content
            previous_rendered = entry.get("prev_rendered_content") or ""
            snapshot["prev_rendered_content"] = previous_rendered
            snapshot["content_html_diff"] = html_diff(previous_rendered, rendered)
            rendered = previous_rendered
        if "prev_stream" in entry:
            snapshot["prev_stream"] = entry["prev_stream"]
            snapshot["stream"] = entry["stream"]
        snapshots.append(snapshot)
    snapshots.append(
        {
            "content": content,
            "rendered_content": rendered,
            "timestamp": to_timestamp(message.date_sent),
            "topic": shown(topic),
            "user_id": message.sender_id,
        }
    )
    snapshots.reverse()
    return snapshots


# Per-client events ----------------------------------------------------------------------------
