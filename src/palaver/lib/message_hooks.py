"""Reads that depend on messages and subscriptions, for the user layer.

``lib/users.py`` imports this module lazily, so it need not import the message layer at
start-up; the answers come from ``lib/message_flags.py`` and ``lib/conversations.py``.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.lib import conversations, message_flags
from palaver.models import UserProfile


def max_message_id(session: Session, user: UserProfile) -> int:
    """The newest message in the user's history; -1 before there is any."""
    return message_flags.max_message_id(session, user)


def user_ids_sharing_conversations(session: Session, viewer: UserProfile) -> list[int]:
    """Users who share a channel subscription or a direct-message conversation with the viewer."""
    return conversations.user_ids_sharing_conversations(session, viewer)
