"""Passkey writes: the challenges of registration and sign-in, and the credentials."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.lib.exceptions import JsonableError
from palaver.lib.web_sessions import hash_token, new_token
from palaver.models import UserProfile
from palaver.models.auth import Passkey, WebAuthnChallenge

CHALLENGE_LIFETIME = timedelta(minutes=5)
MAX_PASSKEYS = 20


@dataclass(frozen=True)
class Challenge:
    challenge: str
    user_id: int | None


def do_store_webauthn_challenge(
    session: Session, *, realm_id: int, user_id: int | None, purpose: str, challenge: str, now: datetime
) -> str:
    """Remember ``challenge`` for this browser; the cookie token that names it."""
    token = new_token()
    with transaction(session):
        session.execute(
            delete(WebAuthnChallenge).where(WebAuthnChallenge.created <= now - CHALLENGE_LIFETIME)
        )
        session.add(
            WebAuthnChallenge(
                token_hash=hash_token(token),
                realm_id=realm_id,
                user_profile_id=user_id,
                purpose=purpose,
                challenge=challenge,
                created=now,
            )
        )
    return token


def do_take_webauthn_challenge(
    session: Session, *, token: str, realm_id: int, purpose: str, now: datetime
) -> Challenge | None:
    """The challenge this browser was sent, used up (a challenge answers one ceremony)."""
    with transaction(session):
        row = session.scalars(
            select(WebAuthnChallenge).where(WebAuthnChallenge.token_hash == hash_token(token or ""))
        ).first()
        if row is None:
            return None
        session.delete(row)
        if row.purpose != purpose or row.realm_id != realm_id or row.created <= now - CHALLENGE_LIFETIME:
            return None
        return Challenge(row.challenge, row.user_profile_id)


def do_add_passkey(
    session: Session, user: UserProfile, *, credential_id: str, public_key: str, sign_count: int, name: str
) -> Passkey:
    with transaction(session):
        count = len(session.scalars(select(Passkey.id).where(Passkey.user_profile_id == user.id)).all())
        if count >= MAX_PASSKEYS:
            raise JsonableError(f"You already have {MAX_PASSKEYS} passkeys; remove one first.")
        if (
            session.scalars(select(Passkey.id).where(Passkey.credential_id == credential_id)).first()
            is not None
        ):
            raise JsonableError("This passkey is already registered.")
        passkey = Passkey(
            user_profile_id=user.id,
            credential_id=credential_id,
            public_key=public_key,
            sign_count=sign_count,
            name=(name.strip() or "Passkey")[:100],
        )
        session.add(passkey)
    return passkey


def do_record_passkey_use(session: Session, passkey: Passkey, *, sign_count: int, now: datetime) -> None:
    with transaction(session):
        passkey.sign_count = sign_count
        passkey.last_used = now


def do_remove_passkey(session: Session, user: UserProfile, passkey_id: int) -> None:
    with transaction(session):
        session.execute(delete(Passkey).where(Passkey.id == passkey_id, Passkey.user_profile_id == user.id))
