"""Whether a user has muted a channel conversation: the channel's mute and the topic's policy.

A topic is muted when its own policy says so, or when its channel is muted and the topic
is neither unmuted nor followed (those two bring a topic back in a muted channel).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.models.channels import Subscription
from palaver.models.user_topics import UserTopic, VisibilityPolicy

_SHOWN_IN_MUTED_CHANNEL = frozenset({VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED})


@dataclass(frozen=True)
class ConversationMuting:
    muted_recipient_ids: frozenset[int]
    # (stream id, lower-cased topic) → visibility policy, for topics with one set.
    topic_policies: dict[tuple[int, str], int]

    def is_muted(self, stream_id: int, recipient_id: int, topic: str) -> bool:
        policy = self.topic_policies.get((stream_id, topic.lower()), VisibilityPolicy.INHERIT)
        return is_muted_conversation(recipient_id in self.muted_recipient_ids, policy)


def is_muted_conversation(channel_muted: bool, topic_policy: int) -> bool:
    """The rule above, for one topic whose channel's mute and own policy are known."""
    if topic_policy == VisibilityPolicy.MUTED:
        return True
    return channel_muted and topic_policy not in _SHOWN_IN_MUTED_CHANNEL


def conversation_muting(session: Session, user_id: int) -> ConversationMuting:
    muted = session.scalars(
        select(Subscription.recipient_id).where(
            Subscription.user_profile_id == user_id,
            Subscription.active.is_(True),
            Subscription.is_muted.is_(True),
        )
    )
    policies = session.execute(
        select(UserTopic.stream_id, UserTopic.topic_name, UserTopic.visibility_policy).where(
            UserTopic.user_profile_id == user_id,
            UserTopic.visibility_policy != VisibilityPolicy.INHERIT,
        )
    )
    return ConversationMuting(
        frozenset(muted), {(sid, name.lower()): policy for sid, name, policy in policies}
    )
