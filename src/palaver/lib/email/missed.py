"""Missed-message emails: direct messages, mentions and followed topics for offline users.

Sending a message notes, in its own transaction, each recipient who may need an email
(``schedule_missed_message_emails``): a direct message, a mention, or a message in a topic
they follow, while they are offline, within their notification settings and mutes. The
row falls due after the recipient's ``email_notifications_batching_period_seconds``. When
the earliest of a user's rows is due, the email worker takes all of them at once and sends
one email per conversation, leaving out what the user has read since
(``queue_due_missed_message_emails``). Taking the rows is a conditional DELETE in the same
transaction that queues the emails, so two processes never send the same batch.
"""

from __future__ import annotations

import re
import secrets
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.db.transaction import rowcount, transaction
from palaver.lib.conversation_muting import is_muted_conversation
from palaver.lib.email.outbox import queue_email
from palaver.lib.notification_bot import topic_narrow_path
from palaver.lib.presence import OFFLINE_THRESHOLD_SECONDS
from palaver.lib.realm import realm_url
from palaver.lib.user_topics import topic_visibility_policies
from palaver.models import Realm, UserProfile
from palaver.models.channels import Recipient, Stream, Subscription
from palaver.models.email_outbox import MissedMessageAddress, MissedMessageEmail
from palaver.models.messages import Message, MessageFlag, UserMessage
from palaver.models.presence import UserPresence
from palaver.models.user_topics import VisibilityPolicy
from palaver.timeutil import utcnow

# A user whose clients have not reported presence for this long is offline (as in Zulip).
OFFLINE_THRESHOLD = timedelta(seconds=OFFLINE_THRESHOLD_SECONDS)

_MISSED_TABLE = MissedMessageEmail.metadata.tables[MissedMessageEmail.__tablename__]
_READ = int(MessageFlag.READ)
_MENTIONED = int(MessageFlag.MENTIONED)
_STREAM_WILDCARD = int(MessageFlag.STREAM_WILDCARD_MENTIONED)
_TOPIC_WILDCARD = int(MessageFlag.TOPIC_WILDCARD_MENTIONED)
# A channel message notifies by email only through these flags (or a followed topic).
_NOTIFYING = _MENTIONED | _STREAM_WILDCARD | _TOPIC_WILDCARD

_REASONS = {
    "private_message": "",
    "mentioned": "mentioned you",
    "stream_wildcard_mentioned": "mentioned everyone",
    "topic_wildcard_mentioned": "mentioned the topic's participants",
    "followed_topic": "in a topic you follow",
}


def gateway_domain(settings: Settings) -> str | None:
    """The email gateway's domain; None when the operator has not set one up, so that no
    email invites replies nobody would receive."""
    return settings.email_gateway_domain or None


def _triggers(message: Message, flags: Mapping[int, int]) -> dict[int, str]:
    triggers: dict[int, str] = {}
    # Read once: an ORM attribute costs a descriptor call, and a send holds the write lock
    # while this runs over every recipient.
    sender_id, direct = message.sender_id, not message.is_channel_message
    for user_id, bits in flags.items():
        if bits & _READ or user_id == sender_id:
            continue
        if direct:
            triggers[user_id] = "private_message"
        elif not bits & _NOTIFYING:
            continue
        elif bits & _MENTIONED:
            triggers[user_id] = "mentioned"
        elif bits & _STREAM_WILDCARD:
            triggers[user_id] = "stream_wildcard_mentioned"
        else:
            triggers[user_id] = "topic_wildcard_mentioned"
    return triggers


def schedule_missed_message_emails(
    session: Session, message: Message, stream_id: int | None, flags: Mapping[int, int]
) -> None:
    """Note recipients who may need an email about ``message``; inside the send's transaction."""
    triggers = _triggers(message, flags)
    policies: dict[int, int] = {}
    if stream_id is not None:
        policies = topic_visibility_policies(session, stream_id, message.subject)
        for user_id, policy in policies.items():
            if user_id == message.sender_id or user_id not in flags:
                continue
            if policy == VisibilityPolicy.FOLLOWED and not flags[user_id] & _READ:
                triggers.setdefault(user_id, "followed_topic")
    if not triggers:
        return
    now = utcnow()
    users = {
        u.id: u
        for u in session.scalars(
            select(UserProfile).where(
                UserProfile.id.in_(triggers), UserProfile.is_active, UserProfile.is_bot.is_(False)
            )
        )
    }
    online = set(
        session.scalars(
            select(UserPresence.user_profile_id).where(
                UserPresence.user_profile_id.in_(users),
                UserPresence.last_connected_time >= now - OFFLINE_THRESHOLD,
            )
        )
    )
    channel_muted: set[int] = set()
    if stream_id is not None:
        channel_muted = set(
            session.scalars(
                select(Subscription.user_profile_id).where(
                    Subscription.recipient_id == message.recipient_id,
                    Subscription.user_profile_id.in_(users),
                    Subscription.is_muted,
                )
            )
        )
    rows = []
    for user_id, trigger in triggers.items():
        user = users.get(user_id)
        if user is None or user_id in online:
            continue
        policy = policies.get(user_id, VisibilityPolicy.INHERIT)
        muted = is_muted_conversation(user_id in channel_muted, policy)
        if trigger in ("private_message", "mentioned"):
            wanted = user.enable_offline_email_notifications
        elif trigger == "followed_topic":
            wanted = user.enable_followed_topic_email_notifications
        else:
            # Wildcard mentions follow the user's wildcard setting, and mutes silence them.
            wanted = user.enable_offline_email_notifications and user.wildcard_mentions_notify and not muted
        if wanted:
            delay = timedelta(seconds=max(user.email_notifications_batching_period_seconds, 0))
            rows.append(
                {
                    "user_profile_id": user_id,
                    "message_id": message.id,
                    "trigger": trigger,
                    "scheduled_at": now + delay,
                }
            )
    if rows:
        session.execute(insert(_MISSED_TABLE), rows)


# The worker's side ---------------------------------------------------------------------------


_DUE_USERS_PER_READ = 500


def _due_user_ids(session: Session, now: datetime, limit: int) -> list[int]:
    return list(
        session.scalars(
            select(MissedMessageEmail.user_profile_id)
            .where(MissedMessageEmail.scheduled_at <= now)
            .group_by(MissedMessageEmail.user_profile_id)
            .order_by(func.min(MissedMessageEmail.scheduled_at))
            .limit(limit)
        )
    )


def queue_due_missed_message_emails(session: Session, settings: Settings, now: datetime) -> int:
    """Turn every due batch into emails; returns how many emails were queued.

    Users are read 500 at a time until none is left, as the outbox is drained: with more
    due users than one read, the rest would otherwise wait a whole round of the worker.
    Users already tried (taken by another process) are skipped, so the loop ends.
    """
    queued = 0
    tried: set[int] = set()
    while True:
        user_ids = [
            u for u in _due_user_ids(session, now, _DUE_USERS_PER_READ + len(tried)) if u not in tried
        ]
        if not user_ids:
            return queued
        for user_id in user_ids:
            tried.add(user_id)
            try:
                with transaction(session):
                    queued += _queue_user_batch(session, settings, user_id)
            except _Taken:
                continue


def _queue_user_batch(session: Session, settings: Settings, user_id: int) -> int:
    rows = list(
        session.scalars(select(MissedMessageEmail).where(MissedMessageEmail.user_profile_id == user_id))
    )
    if not rows:
        return 0
    taken = session.execute(
        delete(MissedMessageEmail)
        .where(MissedMessageEmail.id.in_([r.id for r in rows]))
        .execution_options(synchronize_session=False)
    )
    if rowcount(taken) != len(rows):
        # Another process took (some of) this batch first; it sends them.
        raise _Taken()
    user = session.get(UserProfile, user_id)
    if user is None or not user.is_active:
        return 0
    triggers = {r.message_id: r.trigger for r in rows}
    unread = dict(
        session.execute(
            select(UserMessage.message_id, UserMessage.flags).where(
                UserMessage.user_profile_id == user_id, UserMessage.message_id.in_(triggers)
            )
        ).all()
    )
    message_ids = [mid for mid, bits in unread.items() if not bits & MessageFlag.READ]
    if not message_ids:
        return 0
    messages = list(session.scalars(select(Message).where(Message.id.in_(message_ids)).order_by(Message.id)))
    conversations: dict[tuple[Any, ...], list[Message]] = defaultdict(list)
    participants: dict[int, tuple[int, ...]] = {}
    for m in messages:
        if m.is_channel_message:
            conversations[("stream", m.recipient_id, m.subject.lower())].append(m)
        else:
            people = tuple(
                sorted(
                    session.scalars(select(UserMessage.user_profile_id).where(UserMessage.message_id == m.id))
                )
            )
            participants[m.id] = people
            conversations[("dm", people)].append(m)
    for batch in conversations.values():
        _queue_conversation_email(session, settings, user, batch, triggers, participants)
    return len(conversations)


def absolute_links(html: str, base: str) -> str:
    """Rendered messages link within the realm (/user_uploads/..., #narrow/...); a mail client
    needs the full URL."""
    html = re.sub(r'(href|src)="/', rf'\1="{base}/', html)
    return re.sub(r'href="#', f'href="{base}/#', html)


class _Taken(Exception):
    pass


def _queue_conversation_email(
    session: Session,
    settings: Settings,
    user: UserProfile,
    batch: list[Message],
    triggers: dict[int, str],
    participants: dict[int, tuple[int, ...]],
) -> None:
    realm = session.get(Realm, user.realm_id)
    assert realm is not None
    base = realm_url(settings, realm)
    senders = {
        u.id: u
        for u in session.scalars(select(UserProfile).where(UserProfile.id.in_({m.sender_id for m in batch})))
    }
    first = batch[0]
    context: dict[str, Any] = {
        "show_content": user.message_content_in_email_notifications,
        "messages": [
            {
                "sender": senders[m.sender_id].full_name if m.sender_id in senders else "Someone",
                "time": f"{m.date_sent:%Y-%m-%d %H:%M} UTC",
                "reason": _REASONS.get(triggers.get(m.id, ""), ""),
                "text": m.content,
                "html": absolute_links(m.rendered_content or "", base),
            }
            for m in batch
        ],
        "is_private": not first.is_channel_message,
        "senders": list(
            dict.fromkeys(senders[m.sender_id].full_name for m in batch if m.sender_id in senders)
        ),
    }
    if first.is_channel_message:
        recipient = session.get(Recipient, first.recipient_id)
        stream = session.get(Stream, recipient.type_id) if recipient is not None else None
        context.update(
            stream_name=stream.name if stream is not None else "",
            topic=first.subject,
            group_names="",
            narrow_path="/" + (topic_narrow_path(stream, first.subject) if stream is not None else ""),
        )
    else:
        people = participants[first.id]
        others = [p for p in people if p != user.id]
        names = list(
            session.scalars(
                select(UserProfile.full_name).where(UserProfile.id.in_(others)).order_by(UserProfile.id)
            )
        )
        context.update(
            stream_name="",
            topic="",
            group_names=", ".join(names) if len(others) > 1 else "",
            narrow_path="/#narrow/dm/" + ",".join(str(p) for p in others),
        )
    reply_to = None
    domain = gateway_domain(settings)
    if domain is not None:
        token = secrets.token_hex(16)
        session.add(MissedMessageAddress(token=token, user_profile_id=user.id, message_id=batch[-1].id))
        reply_to = f"mm{token}@{domain}"
    context["reply_to"] = reply_to
    from_name = ", ".join(context["senders"]) if context["is_private"] else realm.name
    queue_email(
        session,
        realm_id=realm.id,
        to=user.delivery_email,
        template="missed_message",
        context=context,
        from_name=from_name[:100],
        reply_to=reply_to,
    )
