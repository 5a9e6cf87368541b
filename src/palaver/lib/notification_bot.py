"""The realm's Notification Bot, which posts automated notices (moved and resolved topics).

Zulip's notification bot is a system bot living outside every organization; Palaver keeps
one bot account per realm instead, created the first time it has something to say
(``actions/notification_bot.py``). This module finds it and writes the Markdown it posts.
"""

from __future__ import annotations

import re

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.lib.markdown.urls import encode_hash_component
from palaver.models import BotType, UserProfile
from palaver.models.channels import Stream
from palaver.models.requester import Requester

NOTIFICATION_BOT_NAME = "Notification Bot"
NOTIFICATION_BOT_LOCAL_PART = "notification-bot"
NOTIFICATION_BOT_TYPE = BotType.GENERIC


def notification_bot_email(email_host: str) -> str:
    return f"{NOTIFICATION_BOT_LOCAL_PART}@{email_host}"


def get_notification_bot(session: Session, realm_id: int, email_host: str) -> UserProfile | None:
    email = notification_bot_email(email_host).lower()
    return session.scalars(
        select(UserProfile).where(
            UserProfile.realm_id == realm_id,
            UserProfile.is_bot,
            UserProfile.bot_owner_id.is_(None),
            func.lower(UserProfile.delivery_email) == email,
        )
    ).one_or_none()


def silent_mention(user: UserProfile | Requester) -> str:
    user_id = user.user_id if isinstance(user, Requester) else user.id
    return f"@_**{user.full_name}|{user_id}**"


def _breaks_link_syntax(stream: Stream, topic: str) -> bool:
    # The #**channel>topic** syntax cannot hold these; a plain link can.
    return any(c in stream.name + topic for c in "*`>$")


def message_link_syntax(realm_url: str, stream: Stream, topic: str, message_id: int) -> str:
    """A link to a channel message as message Markdown."""
    if _breaks_link_syntax(stream, topic):
        return f"[#{stream.name} > {topic} @ 💬]({message_link(realm_url, stream, topic, message_id)})"
    return f"#**{stream.name}>{topic}@{message_id}**"


def topic_link_syntax(stream: Stream, topic: str) -> str:
    """A link to a channel's topic as message Markdown."""
    if _breaks_link_syntax(stream, topic):
        # The #**channel>topic** syntax cannot hold these; a plain link can.
        return f"[#{stream.name} > {topic}]({topic_narrow_path(stream, topic)})"
    return f"#**{stream.name}>{topic}**"


def topic_narrow_path(stream: Stream, topic: str) -> str:
    slug = encode_hash_component(stream.name.replace(" ", "-"))
    return f"#narrow/channel/{stream.id}-{slug}/topic/{encode_hash_component(topic)}"


def message_link(realm_url: str, stream: Stream, topic: str, message_id: int) -> str:
    return f"{realm_url.rstrip('/')}/{topic_narrow_path(stream, topic)}/near/{message_id}"


def dm_message_link(realm_url: str, member_ids: list[int], message_id: int) -> str:
    """A link to a direct message, in the conversation of ``member_ids`` (in ID order)."""
    suffix = "group" if len(member_ids) > 2 else "dm"
    members = ",".join(map(str, member_ids))
    return f"{realm_url.rstrip('/')}/#narrow/dm/{members}-{suffix}/near/{message_id}"


def unused_fence(content: str) -> str:
    """A code fence longer than any backtick run in ``content``, which cannot close it early."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    return "`" * max(3, longest + 1)
