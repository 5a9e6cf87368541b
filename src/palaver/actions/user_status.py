"""Setting one's status; only the parts a request names change, and only those are in
the user_status event.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.users import do_change_user_setting
from palaver.db import transaction
from palaver.events import types as ev
from palaver.lib.emoji import (
    REALM_EMOJI,
    UNICODE_EMOJI,
    ZULIP_EXTRA_EMOJI,
    ZULIP_EXTRA_EMOJI_NAMES,
    emoji_code_for_name,
    is_valid_emoji_code,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.realm_emoji import active_realm_emoji_by_name, realm_emoji_for_reaction
from palaver.lib.users import user_ids_who_can_access
from palaver.models import UserProfile
from palaver.models.user_status import UserStatus
from palaver.timeutil import utcnow


def emoji_for_status_name(session: Session, realm_id: int, emoji_name: str) -> tuple[str, str]:
    """(emoji_code, reaction_type) for an emoji named alone; custom emoji win, as in Zulip."""
    custom = active_realm_emoji_by_name(session, realm_id, emoji_name)
    if custom is not None:
        return str(custom.id), REALM_EMOJI
    code = emoji_code_for_name(emoji_name)
    if code is not None:
        return code, UNICODE_EMOJI
    if emoji_name in ZULIP_EXTRA_EMOJI_NAMES:
        return emoji_name, ZULIP_EXTRA_EMOJI
    raise JsonableError(f"Emoji '{emoji_name}' does not exist")


def check_status_emoji(
    session: Session, realm_id: int, emoji_name: str, emoji_code: str, reaction_type: str
) -> None:
    if reaction_type == UNICODE_EMOJI:
        if not is_valid_emoji_code(emoji_code):
            raise JsonableError("Invalid emoji code.")
        if emoji_code_for_name(emoji_name) != emoji_code:
            raise JsonableError("Invalid emoji name.")
    elif reaction_type == ZULIP_EXTRA_EMOJI:
        if emoji_code not in ZULIP_EXTRA_EMOJI_NAMES:
            raise JsonableError("Invalid emoji code.")
        if emoji_name != emoji_code:
            raise JsonableError("Invalid emoji name.")
    elif reaction_type == REALM_EMOJI:
        emoji = realm_emoji_for_reaction(
            session, realm_id, emoji_name=None, emoji_code=emoji_code, adding=True
        )
        if emoji is None or emoji.deactivated:
            raise JsonableError("Invalid custom emoji.")
        if emoji.name != emoji_name:
            raise JsonableError("Invalid custom emoji name.")
    else:
        raise JsonableError("Invalid emoji type.")


def do_update_user_status(
    session: Session,
    user: UserProfile,
    *,
    away: bool | None = None,
    status_text: str | None = None,
    emoji: tuple[str, str, str] | None = None,
) -> None:
    """``emoji`` is (name, code, reaction_type); an empty name clears it."""
    with transaction(session) as tx:
        if away is not None:
            # Since Zulip 6.0 "away" is only another way to set presence_enabled.
            do_change_user_setting(session, user, "presence_enabled", not away)
        if status_text is not None or emoji is not None:
            status = session.get(UserStatus, user.id)
            if status is None:
                status = UserStatus(user_profile_id=user.id, status_text="", emoji_name="", emoji_code="")
                status.reaction_type = UNICODE_EMOJI
                session.add(status)
            if status_text is not None:
                status.status_text = status_text
            if emoji is not None:
                status.emoji_name, status.emoji_code, status.reaction_type = emoji
            status.timestamp = utcnow()
            session.flush()
        event = ev.UserStatusEvent(
            user_id=user.id,
            away=away,
            status_text=status_text,
            emoji_name=emoji[0] if emoji is not None else None,
            emoji_code=emoji[1] if emoji is not None else None,
            reaction_type=emoji[2] if emoji is not None else None,
        )
        tx.send_event(user.realm_id, event, user_ids_who_can_access(session, user))
