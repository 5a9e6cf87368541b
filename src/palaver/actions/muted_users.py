"""Muting and unmuting users; the muting user's clients get the whole new list."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.message_flags import mark_read
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.muted_users import get_mute, muted_users_list
from palaver.models import UserProfile
from palaver.models.messages import Message
from palaver.models.muted_users import MutedUser
from palaver.models.requester import Requester
from palaver.timeutil import utcnow


def _send_muted_users(tx: Tx, session: Session, user: Requester) -> None:
    entries = [ev.MutedUserEntry(**entry) for entry in muted_users_list(session, user.user_id)]
    tx.send_event(user.realm_id, ev.MutedUsers(muted_users=entries), [user.user_id])


def do_mute_user(session: Session, user: Requester, muted: UserProfile) -> None:
    with transaction(session) as tx:
        if get_mute(session, user.user_id, muted.id) is not None:
            raise JsonableError("User already muted")
        session.add(MutedUser(user_profile_id=user.user_id, muted_user_id=muted.id, date_muted=utcnow()))
        session.flush()
        # What a muted user sent is hidden, so it should not wait as unread (or notify).
        mark_read(tx, session, user.realm_id, user.user_id, [Message.sender_id == muted.id])
        _send_muted_users(tx, session, user)


def do_unmute_user(session: Session, user: Requester, muted: UserProfile) -> None:
    with transaction(session) as tx:
        mute = get_mute(session, user.user_id, muted.id)
        if mute is None:
            raise JsonableError("User is not muted")
        session.delete(mute)
        session.flush()
        _send_muted_users(tx, session, user)
