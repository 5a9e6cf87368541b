"""Passkey reads: a user's credentials, and the relying party an organization is."""

from __future__ import annotations

from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.lib.realm import realm_url
from palaver.models import Realm
from palaver.models.auth import Passkey

CHALLENGE_COOKIE = "palaver_webauthn"


def relying_party(settings: Settings, realm: Realm) -> tuple[str, str]:
    """(RP ID, origin): the organization's host name, and its URL, which ceremonies must match."""
    url = realm_url(settings, realm)
    return urlsplit(url).hostname or "", url


def passkeys_of(session: Session, user_id: int) -> list[Passkey]:
    return list(
        session.scalars(select(Passkey).where(Passkey.user_profile_id == user_id).order_by(Passkey.id))
    )


def passkey_by_credential_id(session: Session, credential_id: str) -> Passkey | None:
    return session.scalars(select(Passkey).where(Passkey.credential_id == credential_id)).first()
