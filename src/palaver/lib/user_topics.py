"""Reads of per-user topic visibility (muted, unmuted, followed topics)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, func, literal, select
from sqlalchemy.orm import Session

from palaver.models.channels import Stream
from palaver.models.topic_names import display_topic
from palaver.models.user_topics import UserTopic, VisibilityPolicy
from palaver.timeutil import to_timestamp


def get_user_topic(session: Session, user_id: int, stream_id: int, topic: str) -> UserTopic | None:
    # One conversation regardless of case, as the unique index has it.
    return session.scalar(
        select(UserTopic).where(
            UserTopic.user_profile_id == user_id,
            UserTopic.stream_id == stream_id,
            func.lower(UserTopic.topic_name) == func.lower(literal(topic)),
        )
    )


# Read for every channel message (missed-message emails, pushes): built once, executed on
# the connection (no ORM).
_TOPIC_POLICIES = select(UserTopic.user_profile_id, UserTopic.visibility_policy).where(
    UserTopic.stream_id == bindparam("stream_id"),
    func.lower(UserTopic.topic_name) == func.lower(bindparam("topic")),
)


def topic_visibility_policies(session: Session, stream_id: int, topic: str) -> dict[int, int]:
    """Each user's visibility policy for one topic, by user ID (one conversation regardless
    of case, as ``get_user_topic``); few rows, whatever the channel's size."""
    rows = session.connection().execute(_TOPIC_POLICIES, {"stream_id": stream_id, "topic": topic})
    return {user_id: policy for user_id, policy in rows}


def _rows(session: Session, user_id: int) -> list[tuple[UserTopic, str]]:
    # Archived channels' topics stay stored, for if the channel returns, but are not shown.
    query = (
        select(UserTopic, Stream.name)
        .join(Stream, Stream.id == UserTopic.stream_id)
        .where(UserTopic.user_profile_id == user_id, Stream.deactivated.is_(False))
        .order_by(UserTopic.id)
    )
    return [(row, name) for row, name in session.execute(query)]


def user_topics_list(session: Session, user_id: int, *, allow_empty_topic_name: bool) -> list[dict[str, Any]]:
    return [
        {
            "stream_id": row.stream_id,
            "topic_name": display_topic(row.topic_name, allow_empty_topic_name),
            "last_updated": to_timestamp(row.last_updated),
            "visibility_policy": row.visibility_policy,
        }
        for row, _name in _rows(session, user_id)
    ]


def muted_topics_list(session: Session, user_id: int, *, allow_empty_topic_name: bool) -> list[list[Any]]:
    """The legacy form: [channel name, topic, timestamp] of each muted topic."""
    return [
        [name, display_topic(row.topic_name, allow_empty_topic_name), to_timestamp(row.last_updated)]
        for row, name in _rows(session, user_id)
        if row.visibility_policy == VisibilityPolicy.MUTED
    ]
