"""Who may read a message.

A message is stored once; each user who has it in their history has a ``UserMessage`` row
with their flags. Channel messages sent before a user subscribed have no row for them, yet
the user may read them when the channel's history is shared ("historical" messages, shown
as read). A message the user may not read and one that does not exist get the same error.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.cache import ChannelFacts
from palaver.lib.channels import Viewer, has_content_access, viewer_for
from palaver.lib.conversations import stream_for_message, streams_by_recipient
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import get_row, storable_ids
from palaver.models.messages import Message, UserMessage
from palaver.models.requester import Requester

INVALID_MESSAGE = "Invalid message(s)"


def invalid_message() -> JsonableError:
    return JsonableError(INVALID_MESSAGE)


def can_access_stream_history(viewer: Viewer, stream: ChannelFacts) -> bool:
    """Whether the user may read the channel's messages from before they subscribed."""
    if stream.is_web_public:
        return True
    return stream.history_public_to_subscribers and has_content_access(viewer, stream)


def bulk_access_message_ids(session: Session, user: Requester, message_ids: Collection[int]) -> set[int]:
    """The messages among these the user may read: received ones, or shared channel history."""
    ids = set(storable_ids(message_ids))
    if not ids:
        return set()
    received = set(
        session.scalars(
            select(UserMessage.message_id).where(
                UserMessage.user_profile_id == user.user_id, UserMessage.message_id.in_(ids)
            )
        )
    )
    rest = ids - received
    if not rest:
        return received
    rows = session.execute(
        select(Message.id, Message.recipient_id).where(
            Message.id.in_(rest), Message.realm_id == user.realm_id, Message.is_channel_message
        )
    ).all()
    streams = streams_by_recipient(session, user.realm_id, {r for _, r in rows})
    viewer = viewer_for(session, user)
    allowed = {recipient_id for recipient_id, s in streams.items() if can_access_stream_history(viewer, s)}
    return received | {message_id for message_id, recipient_id in rows if recipient_id in allowed}


def access_message(session: Session, user: Requester, message_id: int) -> tuple[Message, UserMessage | None]:
    """A message the user may read, with their row for it; missing and hidden look the same."""
    message = get_row(session, Message, message_id)
    if message is None or message.realm_id != user.realm_id:
        raise invalid_message()
    user_message = session.scalars(
        select(UserMessage).where(
            UserMessage.user_profile_id == user.user_id, UserMessage.message_id == message_id
        )
    ).one_or_none()
    if user_message is not None:
        return message, user_message
    if message.is_channel_message and can_access_stream_history(
        viewer_for(session, user), stream_for_message(session, message)
    ):
        return message, None
    raise invalid_message()


def messages_by_id(session: Session, message_ids: Iterable[int]) -> dict[int, Message]:
    ids = list(set(message_ids))
    if not ids:
        return {}
    return {m.id: m for m in session.scalars(select(Message).where(Message.id.in_(ids)))}
