"""Drafts: checking what clients send, reading a user's drafts, and the Draft object."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.channels import access_stream_by_id
from palaver.lib.exceptions import JsonableError, ResourceNotFoundError
from palaver.lib.ids import get_row
from palaver.lib.limits import MAX_TOPIC_LENGTH
from palaver.lib.message_send import normalize_content, truncate
from palaver.lib.users import get_users
from palaver.models.drafts import Draft
from palaver.models.requester import Requester
from palaver.models.users import UserProfile
from palaver.timeutil import to_timestamp, utcnow

# The last second a datetime can hold (9999-12-31T23:59:59Z).
MAX_TIMESTAMP = 253402300799

DraftType = Literal["", "stream", "private"]


class DraftData(BaseModel):
    """A Draft object as clients send it (POST /drafts items, PATCH /drafts/{id})."""

    model_config = ConfigDict(extra="forbid")

    type: DraftType
    to: list[int]
    topic: str
    content: str
    # Integer seconds by the interface; fractional seconds are tolerated and dropped.
    timestamp: int | float | None = None
    # Clients that send back a fetched draft include its ID; the path or a new row decides it.
    id: int | None = None


@dataclass(frozen=True)
class ValidatedDraft:
    type: DraftType
    to: list[int]
    topic: str
    content: str
    last_edit_time: datetime


def check_drafts_enabled(user: UserProfile) -> None:
    """The setting lives on the user's row only: the ``Requester`` does not carry it."""
    if not user.enable_drafts_synchronization:
        raise JsonableError("User has disabled synchronizing drafts.")


def _check_timestamp(timestamp: float | None) -> datetime:
    if timestamp is None:
        return utcnow()
    if timestamp < 0:
        raise JsonableError("Timestamp must not be negative.")
    if timestamp > MAX_TIMESTAMP:
        raise JsonableError("Timestamp is too large.")
    return datetime.fromtimestamp(timestamp, UTC).replace(tzinfo=None)


def _check_channel_target(session: Session, user: Requester, to: list[int]) -> list[int]:
    if len(to) != 1:
        raise JsonableError("Must specify exactly 1 channel ID for channel messages")
    # Content access, as sending the draft would need it; a hidden channel reads as missing.
    access_stream_by_id(session, user, to[0], require_content_access=True)
    return list(to)


def _check_direct_targets(session: Session, user: Requester, to: list[int]) -> list[int]:
    wanted = sorted(set(to))
    found = {u.id: u for u in get_users(session, user.realm_id, user, wanted)}
    for user_id in wanted:
        # Unknown, other realms', hidden and deactivated users all read the same.
        target = found.get(user_id)
        if target is None or not target.is_active:
            raise JsonableError(f"Invalid user ID {user_id}")
    return wanted


def validate_draft(session: Session, user: Requester, data: DraftData) -> ValidatedDraft:
    """Check a draft against the realm; unaddressed and direct drafts drop the topic."""
    # The same normalisation and limits a message body gets, so sending the draft cannot fail.
    content = normalize_content(data.content)
    last_edit_time = _check_timestamp(data.timestamp)
    topic = ""
    to: list[int] = []
    if data.type == "stream":
        if "\x00" in data.topic:
            raise JsonableError("Topic must not contain null bytes")
        topic = truncate(data.topic, MAX_TOPIC_LENGTH, "...")
        to = _check_channel_target(session, user, data.to)
    elif data.type == "private":
        to = _check_direct_targets(session, user, data.to)
    return ValidatedDraft(data.type, to, topic, content, last_edit_time)


def access_draft(session: Session, user: Requester, draft_id: int) -> Draft:
    """The user's own draft; another user's looks exactly like a missing one."""
    draft = get_row(session, Draft, draft_id)
    if draft is None or draft.user_profile_id != user.user_id:
        raise ResourceNotFoundError("Draft does not exist")
    return draft


def get_drafts(session: Session, user_id: int) -> list[Draft]:
    """Most recently edited first."""
    return list(
        session.scalars(
            select(Draft)
            .where(Draft.user_profile_id == user_id)
            .order_by(Draft.last_edit_time.desc(), Draft.id.desc())
        )
    )


def format_draft(draft: Draft) -> dict[str, Any]:
    return {
        "id": draft.id,
        "type": draft.type,
        "to": orjson.loads(draft.to),
        "topic": draft.topic,
        "content": draft.content,
        "timestamp": to_timestamp(draft.last_edit_time),
    }
