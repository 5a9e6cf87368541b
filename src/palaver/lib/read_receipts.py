"""Who has read a message, as far as the asking user may know.

Readers are users with the read flag on the message, active, sharing read receipts
(``send_read_receipts``); never the sender, nor anyone the asker muted or who muted the
asker. Bots that marked the message read through the API count like anyone else.
"""

from __future__ import annotations

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_access import access_message
from palaver.models.messages import MessageFlag, UserMessage
from palaver.models.muted_users import MutedUser
from palaver.models.requester import Requester
from palaver.models.users import UserProfile


def read_receipt_user_ids(session: Session, user: Requester, message_id: int) -> list[int]:
    if not realm_settings(session, user.realm_id).enable_read_receipts:
        raise JsonableError("Read receipts are disabled in this organization.")
    message, _ = access_message(session, user, message_id)
    muted = select(MutedUser.muted_user_id).where(MutedUser.user_profile_id == user.user_id)
    muting = select(MutedUser.user_profile_id).where(MutedUser.muted_user_id == user.user_id)
    query = (
        select(UserMessage.user_profile_id)
        .join(UserProfile, UserProfile.id == UserMessage.user_profile_id)
        .where(
            UserMessage.message_id == message.id,
            UserMessage.flags.op("&")(int(MessageFlag.READ)) != 0,
            UserProfile.is_active,
            UserProfile.send_read_receipts,
            UserProfile.id != message.sender_id,
            ~or_(UserProfile.id.in_(muted), UserProfile.id.in_(muting)),
        )
        .order_by(UserMessage.user_profile_id)
    )
    return list(session.scalars(query))
