"""Creating, extending and ending browser sessions.

Sessions live in the database, so they survive restarts and every worker process sees
the same ones; deactivating a user or changing their password ends theirs.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.lib.web_sessions import hash_token, new_token
from palaver.models import UserProfile
from palaver.models.web_sessions import WebSession

# Extending a session on every request would make every read a write; once an hour is
# precise enough for an expiry counted in days.
TOUCH_INTERVAL = timedelta(hours=1)


def do_create_web_session(
    session: Session, user: UserProfile, *, now: datetime, lifetime: timedelta
) -> tuple[str, WebSession]:
    """A new session for ``user``; returns the cookie's token (stored only hashed)."""
    token = new_token()
    with transaction(session):
        # Logging in is a good moment to forget this user's dead sessions.
        session.execute(
            delete(WebSession).where(WebSession.user_profile_id == user.id, WebSession.expires <= now)
        )
        row = WebSession(
            token_hash=hash_token(token),
            user_profile_id=user.id,
            csrf_token=new_token(),
            created=now,
            last_seen=now,
            expires=now + lifetime,
        )
        session.add(row)
    return token, row


def do_touch_web_session(session: Session, row: WebSession, *, now: datetime, lifetime: timedelta) -> None:
    """Slide the expiry forward for a session in use (at most once per TOUCH_INTERVAL)."""
    if now - row.last_seen < TOUCH_INTERVAL:
        return
    with transaction(session):
        row.last_seen = now
        row.expires = now + lifetime


def do_delete_web_session(session: Session, row: WebSession) -> None:
    with transaction(session):
        session.execute(delete(WebSession).where(WebSession.id == row.id))


def do_revoke_user_web_sessions(session: Session, user_id: int, *, keep_id: int | None = None) -> None:
    """End every session of a user (except ``keep_id``, the one making the change)."""
    with transaction(session):
        condition = WebSession.user_profile_id == user_id
        if keep_id is not None:
            condition = condition & (WebSession.id != keep_id)
        session.execute(delete(WebSession).where(condition))


def do_revoke_realm_web_sessions(session: Session, realm_id: int) -> None:
    """End every session in an organization (for its deactivation)."""
    with transaction(session):
        users = select(UserProfile.id).where(UserProfile.realm_id == realm_id)
        session.execute(delete(WebSession).where(WebSession.user_profile_id.in_(users)))
