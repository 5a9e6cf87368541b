"""Who hears of a change to a message (a reaction, a submessage): everyone who has it in
their history, plus, for a channel whose history subscribers may read, its subscribers."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.channels import subscriber_ids
from palaver.lib.conversations import stream_for_message
from palaver.models.messages import Message, UserMessage


def message_audience(session: Session, message: Message) -> set[int]:
    user_ids = set(
        session.scalars(select(UserMessage.user_profile_id).where(UserMessage.message_id == message.id))
    )
    if message.is_channel_message:
        stream = stream_for_message(session, message)
        if stream.history_public_to_subscribers:
            user_ids |= subscriber_ids(session, stream)
    return user_ids
