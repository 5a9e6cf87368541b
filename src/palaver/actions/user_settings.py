"""PATCH /settings as one write: profile fields, password and personal settings together."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from palaver.actions.drafts import do_delete_all_drafts
from palaver.actions.users import (
    do_change_email_visibility,
    do_change_full_name,
    do_change_password,
    do_change_timezone,
    do_change_user_setting,
)
from palaver.db.transaction import transaction
from palaver.models import UserProfile


def do_update_personal_settings(
    session: Session,
    user: UserProfile,
    *,
    email_host: str,
    full_name: str | None = None,
    timezone: str | None = None,
    new_password_hash: str | None = None,
    settings: dict[str, Any],
) -> None:
    """Apply validated changes atomically; each changed setting sends its own event."""
    with transaction(session):
        if full_name is not None:
            do_change_full_name(session, user, full_name)
        if timezone is not None:
            do_change_timezone(session, user, timezone)
        if new_password_hash is not None:
            do_change_password(session, user, new_password_hash)
        for name, value in settings.items():
            if name == "email_address_visibility":
                do_change_email_visibility(session, user, value, email_host)
            else:
                do_change_user_setting(session, user, name, value)
            if name == "enable_drafts_synchronization" and value is False:
                # Turning synchronization off means the server stops keeping drafts: stored
                # ones are deleted, without drafts events, as clients keep their local copies.
                do_delete_all_drafts(session, user)
