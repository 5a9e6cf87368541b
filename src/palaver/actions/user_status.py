"""Setting one's status; only the parts a request names change, and only those are in
the user_status event.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.users import do_change_user_setting
from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.emoji import (
    UNICODE_EMOJI,
)
from palaver.lib.users import requester_user, user_ids_who_can_access
from palaver.models.requester import Requester
from palaver.models.user_status import UserStatus
from palaver.timeutil import utcnow


def do_update_user_status(
    session: Session,
    user: Requester,
    *,
    away: bool | None = None,
    status_text: str | None = None,
    emoji: tuple[str, str, str] | None = None,
) -> None:
    """``emoji`` is (name, code, reaction_type); an empty name clears it."""
    with transaction(session) as tx:
        if away is not None:
            # Since Zulip 6.0 "away" is only another way to set presence_enabled, a column
            # of the user's row: only then is the row loaded, to be written.
            do_change_user_setting(session, requester_user(session, user), "presence_enabled", not away)
        if status_text is not None or emoji is not None:
            status = session.get(UserStatus, user.user_id)
            if status is None:
                status = UserStatus(
                    user_profile_id=user.user_id, status_text="", emoji_name="", emoji_code=""
                )
                status.reaction_type = UNICODE_EMOJI
                session.add(status)
            if status_text is not None:
                status.status_text = status_text
            if emoji is not None:
                status.emoji_name, status.emoji_code, status.reaction_type = emoji
            status.timestamp = utcnow()
            session.flush()
        event = ev.UserStatusEvent(
            user_id=user.user_id,
            away=away,
            status_text=status_text,
            emoji_name=emoji[0] if emoji is not None else None,
            emoji_code=emoji[1] if emoji is not None else None,
            reaction_type=emoji[2] if emoji is not None else None,
        )
        tx.send_event(user.realm_id, event, user_ids_who_can_access(session, user))
