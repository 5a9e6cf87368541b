"""Which emoji a request names, for reactions and user statuses alike.

A request gives a name, and optionally the code and type; a name alone is resolved here
(an active custom emoji wins over a Unicode emoji of the same name, as in the emoji
picker, which lists the organization's own emoji first).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

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


def emoji_for_name(session: Session, realm_id: int, emoji_name: str) -> tuple[str, str]:
    """(emoji_code, reaction_type) of an emoji given only by name."""
    custom = active_realm_emoji_by_name(session, realm_id, emoji_name)
    if custom is not None:
        return str(custom.id), REALM_EMOJI
    if emoji_name in ZULIP_EXTRA_EMOJI_NAMES:
        return emoji_name, ZULIP_EXTRA_EMOJI
    code = emoji_code_for_name(emoji_name)
    if code is None:
        raise JsonableError(f"Emoji '{emoji_name}' does not exist")
    return code, UNICODE_EMOJI


def check_emoji(
    session: Session,
    realm_id: int,
    emoji_name: str,
    emoji_code: str,
    reaction_type: str,
    *,
    for_status: bool = False,
) -> None:
    """That a name, code and type given together name one emoji a new reaction (or, with
    ``for_status``, a status) may use.

    The two differ where the reference does: a reaction's bad code is "Invalid emoji code"
    (the reactions endpoint's documented error), a status's "Invalid emoji code."; a status
    naming a deactivated custom emoji names no emoji, while a reaction is told why.
    """
    invalid_code = "Invalid emoji code." if for_status else "Invalid emoji code"
    if reaction_type == UNICODE_EMOJI:
        if not is_valid_emoji_code(emoji_code):
            raise JsonableError(invalid_code)
        if emoji_code_for_name(emoji_name) != emoji_code:
            raise JsonableError("Invalid emoji name.")
    elif reaction_type == ZULIP_EXTRA_EMOJI:
        if emoji_code not in ZULIP_EXTRA_EMOJI_NAMES:
            raise JsonableError(invalid_code)
        if emoji_name != emoji_code:
            raise JsonableError("Invalid emoji name.")
    elif reaction_type == REALM_EMOJI:
        # Looked up by code alone (deactivated included) to tell the failures apart.
        custom = realm_emoji_for_reaction(
            session, realm_id, emoji_name=None, emoji_code=emoji_code, adding=False
        )
        if custom is None or (for_status and custom.deactivated):
            raise JsonableError("Invalid custom emoji.")
        if custom.name != emoji_name:
            raise JsonableError("Invalid custom emoji name.")
        if custom.deactivated:
            raise JsonableError("This custom emoji has been deactivated.")
    else:
        raise JsonableError("Invalid emoji type.")
