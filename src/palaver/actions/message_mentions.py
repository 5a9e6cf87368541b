"""Mentions in a message: whether the sender may mention a group or everyone, and who is mentioned."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.cache import ChannelFacts, realm_settings
from palaver.lib.channels import subscriber_counts
from palaver.lib.exceptions import JsonableError
from palaver.lib.markdown.contract import RenderResult
from palaver.lib.message_send import WILDCARD_MENTION_THRESHOLD
from palaver.lib.user_groups import recursive_member_ids
from palaver.models import UserGroup
from palaver.models.requester import Requester

# Mentions -----------------------------------------------------------------------------------


def check_mentions(
    session: Session,
    sender: Requester,
    rendered: RenderResult,
    stream: ChannelFacts | None,
    topic_participants: set[int],
    groups: set[int],
) -> None:
    """Refuse wildcard and group mentions the sender (in ``groups``) may not make."""
    if stream is not None:
        many = realm_settings(session, sender.realm_id).can_mention_many_users_group
        may_mention_many = many is not None and many in groups
        if rendered.stream_wildcard and not may_mention_many:
            count = subscriber_counts(session, [stream.id]).get(stream.id, 0)
            if count > WILDCARD_MENTION_THRESHOLD:
                raise JsonableError(
                    "You do not have permission to use channel wildcard mentions in this channel.",
                    code="STREAM_WILDCARD_MENTION_NOT_ALLOWED",
                )
        if (
            rendered.topic_wildcard
            and not may_mention_many
            and len(topic_participants) > WILDCARD_MENTION_THRESHOLD
        ):
            raise JsonableError(
                "You do not have permission to use topic wildcard mentions in this topic.",
                code="TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
            )
    for group_id in sorted(rendered.mentioned_group_ids):
        group = session.get(UserGroup, group_id)
        if group is None or group.can_mention_group is None:
            continue
        if group.can_mention_group not in groups:
            raise JsonableError(f"You are not allowed to mention user group '{group.name}'.")


def mentioned_users(session: Session, rendered: RenderResult) -> set[int]:
    """Who a rendered message mentions: users by name, and the members of mentioned groups."""
    mentioned = set(rendered.mentioned_user_ids)
    for group_id in rendered.mentioned_group_ids:
        mentioned |= recursive_member_ids(session, group_id)
    return mentioned
