"""Deleting a message: who may, and the ``delete_message`` event."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.db.locks import lock_rows
from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.channels import subscriber_ids
from palaver.lib.conversations import stream_for_message
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import groups_containing_user
from palaver.lib.ids import storable_ids
from palaver.lib.message_access import access_message
from palaver.models import UserProfile
from palaver.models.channels import Stream
from palaver.models.messages import Message, Reaction, UserMessage
from palaver.models.requester import Requester
from palaver.timeutil import utcnow

NOT_AUTHORIZED_TO_DELETE = "You don't have permission to delete this message"


# Deleting -----------------------------------------------------------------------------------


def _check_can_delete(session: Session, user: Requester, message: Message, stream: Stream | None) -> None:
    groups = groups_containing_user(session, user.user_id)
    realm = realm_settings(session, user.realm_id)
    if realm.can_delete_any_message_group in groups:
        return
    if stream is not None and stream.can_delete_any_message_group in groups:
        return
    if message.sender_id != user.user_id:
        sender = session.get(UserProfile, message.sender_id)
        # People may delete what their bots sent.
        if sender is None or sender.bot_owner_id != user.user_id:
            raise JsonableError(NOT_AUTHORIZED_TO_DELETE)
    may_delete_own = realm.can_delete_own_message_group in groups or (
        stream is not None and stream.can_delete_own_message_group in groups
    )
    if not may_delete_own:
        raise JsonableError(NOT_AUTHORIZED_TO_DELETE)
    limit = realm.message_content_delete_limit_seconds
    if limit is not None and utcnow() - message.date_sent > timedelta(seconds=limit):
        raise JsonableError("The time limit for deleting this message has passed")


def do_delete_message(session: Session, user: Requester, message_id: int) -> None:
    with transaction(session) as tx:
        # A concurrent delete of the same message waits here, then finds it gone.
        lock_rows(session, Message, storable_ids([message_id]))
        message, _ = access_message(session, user, message_id)
        stream = stream_for_message(session, message) if message.is_channel_message else None
        _check_can_delete(session, user, message, stream)
        audience = set(
            session.scalars(select(UserMessage.user_profile_id).where(UserMessage.message_id == message.id))
        )
        if stream is not None:
            audience |= subscriber_ids(session, stream)
        event = ev.DeleteMessage(
            message_type="stream" if stream is not None else "private",
            message_ids=[message.id],
            message_id=message.id,
            stream_id=stream.id if stream is not None else None,
            topic=message.subject if stream is not None else None,
        )
        session.execute(delete(Reaction).where(Reaction.message_id == message.id))
        session.execute(delete(UserMessage).where(UserMessage.message_id == message.id))
        session.execute(delete(Message).where(Message.id == message.id))
        tx.send_event(message.realm_id, event, audience)
