"""The desktop app's one-time login tokens: issued when a desktop-flow sign-in succeeds in
the browser, taken (once, within a minute) by the app's own window."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.lib.app_flow import DESKTOP_TOKEN_LIFETIME, new_desktop_token
from palaver.lib.web_sessions import hash_token
from palaver.models import UserProfile
from palaver.models.auth import DesktopLoginToken


def do_issue_desktop_token(session: Session, user: UserProfile, *, now: datetime) -> str:
    """A new token for ``user``; stored only hashed."""
    token = new_desktop_token()
    with transaction(session):
        session.execute(
            delete(DesktopLoginToken).where(DesktopLoginToken.created <= now - DESKTOP_TOKEN_LIFETIME)
        )
        session.add(DesktopLoginToken(token_hash=hash_token(token), user_profile_id=user.id, created=now))
    return token


def do_take_desktop_token(session: Session, token: str, *, now: datetime) -> int | None:
    """The user ID a token names, if it is recent; used up either way."""
    with transaction(session):
        row = session.scalars(
            select(DesktopLoginToken).where(DesktopLoginToken.token_hash == hash_token(token))
        ).one_or_none()
        if row is None:
            return None
        session.delete(row)
        if row.created <= now - DESKTOP_TOKEN_LIFETIME:
            return None
        return row.user_profile_id
