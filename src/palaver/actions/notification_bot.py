"""The realm's Notification Bot: creating it, and posting its notices to channels.

Notices bypass the posting rules ordinary senders follow (the bot need not be subscribed
to a private channel it reports a move into); they reuse the message layer's flag and
event code so they reach clients exactly like other messages.
"""

from __future__ import annotations

from sqlalchemy import insert
from sqlalchemy.orm import Session

from palaver.actions.message_mentions import mentioned_users
from palaver.actions.messages import (
    MessageRecipients,
    SendContext,
    note_messages_arrived,
    recipient_flags,
    send_written_message_events,
)
from palaver.actions.user_creation import create_user, get_or_create_bot
from palaver.db.transaction import transaction
from palaver.lib.channels import subscriber_ids
from palaver.lib.message_render import render_content
from palaver.lib.message_send import normalize_content
from palaver.lib.notification_bot import (
    NOTIFICATION_BOT_NAME,
    NOTIFICATION_BOT_TYPE,
    get_notification_bot,
    notification_bot_email,
)
from palaver.models import Realm, UserProfile
from palaver.models.channels import Stream
from palaver.models.messages import Message, MessageFlag, UserMessage
from palaver.models.requester import Requester
from palaver.timeutil import utcnow


def get_or_create_notification_bot(session: Session, realm: Realm, email_host: str) -> UserProfile:
    """The realm's Notification Bot, created on first use (``get_or_create_bot``)."""
    return get_or_create_bot(
        session,
        lambda: get_notification_bot(session, realm.id, email_host),
        lambda: create_user(
            session,
            realm,
            email=notification_bot_email(email_host),
            full_name=NOTIFICATION_BOT_NAME,
            password_hash=None,
            email_host=email_host,
            bot_type=NOTIFICATION_BOT_TYPE,
        ),
    )


def internal_send_stream_message(
    session: Session,
    sender: UserProfile,
    stream: Stream,
    topic: str,
    content: str,
    context: SendContext,
    *,
    read_by_user_id: int | None = None,
) -> int:
    """Post a notice; ``read_by_user_id`` (the user whose action it reports) has it read."""
    content = normalize_content(content)
    with transaction(session) as tx:
        assert stream.recipient_id is not None
        rendered = render_content(session, Requester.of(sender), content, context.realm_url)
        message = Message(
            realm_id=sender.realm_id,
            sender_id=sender.id,
            recipient_id=stream.recipient_id,
            subject=topic,
            content=content,
            rendered_content=rendered.html,
            rendered_content_version=1,
            date_sent=utcnow(),
            has_attachment=rendered.has_attachment,
            has_image=rendered.has_image,
            has_link=rendered.has_link,
            is_channel_message=True,
            sending_client=context.client[:30],
        )
        session.add(message)
        session.flush()
        recipients = MessageRecipients(stream.recipient_id, subscriber_ids(session, stream), stream, topic)
        flags = recipient_flags(
            sender.id, recipients, rendered, mentioned_users(session, rendered), set(), context
        )
        if read_by_user_id in flags:
            flags[read_by_user_id] |= int(MessageFlag.READ)
        session.execute(
            insert(UserMessage),
            [
                {"user_profile_id": uid, "message_id": message.id, "flags": bits}
                for uid, bits in flags.items()
            ],
        )
        note_messages_arrived(tx, session, stream, message.id)
        send_written_message_events(tx, session, sender, message, stream, flags, context)
    return message.id
