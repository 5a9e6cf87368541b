"""Weekly digests: what happened in the user's channels while they were away.

A user is due a digest when ``enable_digest_emails`` is on and their last one (or, before
the first, their sign-up) is a week old. The worker checks a bounded batch of due users per
round: away users (no presence for ``AWAY_FOR``) with something to report get an email of
the week's busiest topics in their channels and the people who joined; everyone checked is
marked, so each user is considered once a week. Time comes from the worker's clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.db.transaction import transaction
from palaver.lib.email.outbox import queue_email
from palaver.lib.notification_bot import topic_narrow_path
from palaver.models import UserProfile
from palaver.models.channels import Stream, Subscription
from palaver.models.email_outbox import EmailDigestState
from palaver.models.messages import Message
from palaver.models.presence import UserPresence

DIGEST_INTERVAL = timedelta(days=7)
AWAY_FOR = timedelta(days=5)
MAX_TOPICS = 10
BATCH = 200


def _due_users(session: Session, now: datetime, realm_id: int | None) -> list[UserProfile]:
    cutoff = now - DIGEST_INTERVAL
    query = select(UserProfile)
    if realm_id is not None:
        query = query.where(UserProfile.realm_id == realm_id)
    return list(
        session.scalars(
            query.outerjoin(EmailDigestState, EmailDigestState.user_profile_id == UserProfile.id)
            .where(
                UserProfile.is_active,
                UserProfile.is_bot.is_(False),
                UserProfile.enable_digest_emails,
                UserProfile.date_joined <= cutoff,
                or_(EmailDigestState.last_sent.is_(None), EmailDigestState.last_sent <= cutoff),
            )
            .order_by(UserProfile.id)
            .limit(BATCH)
        )
    )


def _is_away(session: Session, user: UserProfile, now: datetime) -> bool:
    seen = session.scalar(
        select(UserPresence.last_connected_time).where(UserPresence.user_profile_id == user.id)
    )
    return seen is None or seen < now - AWAY_FOR


def digest_context(session: Session, user: UserProfile, since: datetime) -> dict[str, Any]:
    counts = session.execute(
        select(Message.recipient_id, Message.subject, func.count())
        .join(
            Subscription,
            and_(
                Subscription.recipient_id == Message.recipient_id,
                Subscription.user_profile_id == user.id,
                Subscription.active,
            ),
        )
        .where(Message.is_channel_message, Message.date_sent > since, Message.realm_id == user.realm_id)
        .group_by(Message.recipient_id, Message.subject)
        .order_by(func.count().desc(), Message.subject)
        .limit(MAX_TOPICS)
    ).all()
    streams = {
        s.recipient_id: s
        for s in session.scalars(select(Stream).where(Stream.recipient_id.in_({r for r, _, _ in counts})))
    }
    topics = [
        {
            "stream": streams[r].name,
            "topic": topic,
            "count": count,
            "path": "/" + topic_narrow_path(streams[r], topic),
        }
        for r, topic, count in counts
        if r in streams
    ]
    new_users = list(
        session.scalars(
            select(UserProfile.full_name)
            .where(
                UserProfile.realm_id == user.realm_id,
                UserProfile.is_active,
                UserProfile.is_bot.is_(False),
                UserProfile.date_joined > since,
                UserProfile.id != user.id,
            )
            .order_by(UserProfile.id)
            .limit(20)
        )
    )
    return {"topics": topics, "new_users": new_users}


def queue_due_digests(
    session: Session, settings: Settings, now: datetime, *, realm_id: int | None = None
) -> int:
    """Queue the digests due at ``now`` (of one realm's users, with ``realm_id``)."""
    queued = 0
    for user in _due_users(session, now, realm_id):
        try:
            queued += _digest_for(session, user, now)
        except IntegrityError:
            # Another process recorded this user's digest first.
            session.rollback()
    return queued


def _digest_for(session: Session, user: UserProfile, now: datetime) -> int:
    with transaction(session):
        state = session.get(EmailDigestState, user.id)
        if state is not None and state.last_sent > now - DIGEST_INTERVAL:
            return 0  # another process did this user meanwhile
        since = max(now - DIGEST_INTERVAL, state.last_sent if state is not None else user.date_joined)
        if state is None:
            session.add(EmailDigestState(user_profile_id=user.id, last_sent=now))
        else:
            state.last_sent = now
        if not _is_away(session, user, now):
            return 0
        context = digest_context(session, user, since)
        if not context["topics"] and not context["new_users"]:
            return 0
        queue_email(
            session,
            realm_id=user.realm_id,
            to=user.delivery_email,
            template="digest",
            context={**context, "full_name": user.full_name, "since": f"{since:%Y-%m-%d}"},
        )
    return 1
