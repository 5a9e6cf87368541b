"""Registering and removing legacy (unencrypted) push tokens; clients get no events for them."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.lib.exceptions import JsonableError
from palaver.lib.legacy_push import get_token
from palaver.models.legacy_push import LegacyPushToken
from palaver.models.requester import Requester
from palaver.timeutil import utcnow


def do_add_push_token(
    session: Session, user: Requester, kind: str, token: str, ios_app_id: str | None = None
) -> None:
    with transaction(session):
        row = get_token(session, user, kind, token)
        if row is None:
            session.add(
                LegacyPushToken(
                    user_profile_id=user.user_id,
                    kind=kind,
                    token=token,
                    ios_app_id=ios_app_id,
                    last_updated=utcnow(),
                )
            )
        else:
            # Registering again refreshes the token (and the app it belongs to).
            row.ios_app_id, row.last_updated = ios_app_id, utcnow()
        session.flush()


def do_remove_push_token(session: Session, user: Requester, kind: str, token: str) -> None:
    with transaction(session):
        row = get_token(session, user, kind, token)
        if row is None:
            raise JsonableError("Token does not exist")
        session.delete(row)
