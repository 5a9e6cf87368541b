"""Setting a user's visibility policy for one topic."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.user_topics import get_user_topic, muted_topics_list
from palaver.models.channels import Stream
from palaver.models.requester import Requester
from palaver.models.user_topics import UserTopic, VisibilityPolicy
from palaver.timeutil import to_timestamp, utcnow


def do_set_user_topic_visibility_policy(
    session: Session, user: Requester, stream: Stream, topic: str, visibility_policy: int
) -> None:
    with transaction(session) as tx:
        row = get_user_topic(session, user.user_id, stream.id, topic)
        current = row.visibility_policy if row is not None else VisibilityPolicy.INHERIT
        if current == visibility_policy:
            return
        now = utcnow()
        if visibility_policy == VisibilityPolicy.INHERIT:
            assert row is not None
            session.delete(row)
        elif row is None:
            session.add(
                UserTopic(
                    user_profile_id=user.user_id,
                    stream_id=stream.id,
                    topic_name=topic,
                    visibility_policy=visibility_policy,
                    last_updated=now,
                )
            )
        else:
            row.visibility_policy, row.last_updated = visibility_policy, now
        session.flush()
        # Clients from before user_topic still follow muted topics as a whole list; the
        # queue layer gives clients that asked for user_topic only the newer event.
        muted = muted_topics_list(session, user.user_id, allow_empty_topic_name=False)
        tx.send_event(
            user.realm_id, ev.MutedTopics(muted_topics=[(m[0], m[1], m[2]) for m in muted]), [user.user_id]
        )
        event = ev.UserTopicEvent(
            stream_id=stream.id,
            topic_name=topic,
            last_updated=to_timestamp(now),
            visibility_policy=visibility_policy,
        )
        tx.send_event(user.realm_id, event, [user.user_id])
