"""Typing notifications: nothing is stored, so events leave through ``db.notification``:
the same path to the queues as every other event, without the write lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from palaver.db.transaction import notification
from palaver.events import types as ev
from palaver.lib.channels import subscriber_ids
from palaver.lib.conversations import stream_for_message
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_access import access_message
from palaver.lib.users import get_users
from palaver.models import UserProfile
from palaver.models.channels import Stream
from palaver.models.messages import UserMessage
from palaver.models.requester import Requester

TypingOp = Literal["start", "stop"]

# Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS: in bigger channels, a notification
# would fan out to many clients for little value, so none is sent.
MAX_CHANNEL_SIZE_FOR_TYPING = 100


# Built once, on the table: a statement made and ORM-compiled on every call cost several
# times what running it does.
_USERS = UserProfile.__table__.c
_LISTENING = select(_USERS.id).where(
    _USERS.id.in_(bindparam("ids", expanding=True)), _USERS.is_active, _USERS.receives_typing_notifications
)


def _listening(session: Session, user_ids: Iterable[int]) -> list[int]:
    """Those of the users who are active and want typing notifications."""
    ids = list(set(user_ids))
    if not ids:
        return []
    return list(session.scalars(_LISTENING, {"ids": ids}))


def _check_direct_allowed(sender: Requester) -> None:
    if not sender.send_private_typing_notifications:
        raise JsonableError("User has disabled typing notifications for direct messages")


def _check_channel_allowed(sender: Requester) -> None:
    if not sender.send_stream_typing_notifications:
        raise JsonableError("User has disabled typing notifications for channel messages")


def do_send_direct_typing(session: Session, sender: Requester, to: Sequence[int], op: TypingOp) -> None:
    """Notify the members of a direct-message conversation (the sender is one of them).

    A single unknown ID rejects the whole request: notifying part of a group would show
    the typing in a different conversation.
    """
    _check_direct_allowed(sender)
    wanted = set(to) | {sender.user_id}
    found = {u.id: u for u in get_users(session, sender.realm_id, sender, wanted)}
    for user_id in to:
        if user_id not in found:
            raise JsonableError(f"Invalid user ID {user_id}")
    members = [found[i] for i in sorted(wanted)]
    with notification(session) as tx:
        event_class = ev.TypingStart if op == "start" else ev.TypingStop
        event = event_class(
            message_type="direct",
            sender=ev.TypingUser(user_id=sender.user_id, email=sender.email),
            recipients=[ev.TypingUser(user_id=u.id, email=u.email) for u in members],
        )
        tx.send_event(sender.realm_id, event, _listening(session, found))


def do_send_channel_typing(
    session: Session, sender: Requester, stream: Stream, topic: str, op: TypingOp
) -> None:
    _check_channel_allowed(sender)
    subscribers = subscriber_ids(session, stream)
    if len(subscribers) > MAX_CHANNEL_SIZE_FOR_TYPING:
        return
    with notification(session) as tx:
        event_class = ev.TypingStart if op == "start" else ev.TypingStop
        event = event_class(
            message_type="stream",
            sender=ev.TypingUser(user_id=sender.user_id, email=sender.email),
            stream_id=stream.id,
            topic=topic,
        )
        tx.send_event(sender.realm_id, event, _listening(session, subscribers))


def do_send_message_edit_typing(session: Session, sender: Requester, message_id: int, op: TypingOp) -> None:
    """Notify whoever would see the edit: the message's recipients, or the channel's
    subscribers.
    """
    message, _ = access_message(session, sender, message_id)
    event_class = ev.TypingEditMessageStart if op == "start" else ev.TypingEditMessageStop
    if message.is_channel_message:
        _check_channel_allowed(sender)
        stream = stream_for_message(session, message)
        audience = subscriber_ids(session, stream)
        if len(audience) > MAX_CHANNEL_SIZE_FOR_TYPING:
            return
        recipient = ev.TypingEditRecipient(type="channel", channel_id=stream.id, topic=message.subject)
    else:
        _check_direct_allowed(sender)
        audience = set(
            session.scalars(select(UserMessage.user_profile_id).where(UserMessage.message_id == message.id))
        )
        recipient = ev.TypingEditRecipient(type="direct", user_ids=sorted(audience))
    with notification(session) as tx:
        event = event_class(sender_id=sender.user_id, message_id=message.id, recipient=recipient)
        tx.send_event(sender.realm_id, event, _listening(session, audience))
