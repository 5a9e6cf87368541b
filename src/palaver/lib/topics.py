"""Reading a channel's topics: history (GET /users/me/{stream_id}/topics), participants, existence.

How topic names are displayed and looked up (the empty topic) is ``models/topic_names.py``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, literal, select
from sqlalchemy.orm import Session

from palaver.models.channels import Stream
from palaver.models.messages import Message, Reaction, UserMessage
from palaver.models.requester import Requester
from palaver.models.topic_names import display_topic


def get_topic_history(
    session: Session, user: Requester, stream: Stream, *, allow_empty_topic_name: bool
) -> list[dict[str, Any]]:
    """A channel's topics the user may see, newest first, each named as in its latest message."""
    lowered = func.lower(Message.subject)
    query = (
        select(func.max(Message.id))
        .where(Message.recipient_id == stream.recipient_id)
        .group_by(lowered)
        .order_by(func.max(Message.id).desc())
    )
    if not stream.history_public_to_subscribers:
        # Protected history: only topics of messages the user received.
        query = query.join(UserMessage, UserMessage.message_id == Message.id).where(
            UserMessage.user_profile_id == user.user_id
        )
    max_ids = [int(i) for i in session.scalars(query)]
    names = {
        r.id: r.subject
        for r in session.execute(select(Message.id, Message.subject).where(Message.id.in_(max_ids)))
    }
    return [
        {"max_id": max_id, "name": display_topic(names[max_id], allow_empty_topic_name)} for max_id in max_ids
    ]


def topic_participant_ids(session: Session, recipient_id: int, topic: str) -> set[int]:
    """Who sent or reacted to messages in the topic (for topic wildcard mentions)."""
    in_topic = select(Message.id).where(
        Message.recipient_id == recipient_id, func.lower(Message.subject) == func.lower(literal(topic))
    )
    senders = set(
        session.scalars(
            select(Message.sender_id)
            .where(
                Message.recipient_id == recipient_id,
                func.lower(Message.subject) == func.lower(literal(topic)),
            )
            .distinct()
        )
    )
    reactors = set(
        session.scalars(select(Reaction.user_profile_id).where(Reaction.message_id.in_(in_topic)).distinct())
    )
    return senders | reactors


def topic_exists(session: Session, recipient_id: int, topic: str) -> bool:
    found = session.scalar(
        select(Message.id)
        .where(
            Message.recipient_id == recipient_id, func.lower(Message.subject) == func.lower(literal(topic))
        )
        .limit(1)
    )
    return found is not None
