"""Sign-ins begun at a provider: stored when the browser leaves, taken (once) when it returns."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.lib.web_sessions import hash_token
from palaver.models.auth import SsoAttempt

# Long enough to type a password and approve at the provider; short enough that a leaked
# state is soon worthless.
ATTEMPT_LIFETIME = timedelta(minutes=10)


@dataclass(frozen=True)
class PendingSignIn:
    realm_id: int
    provider: str
    nonce: str
    code_verifier: str
    next_path: str
    mobile_flow_otp: str | None


def do_begin_sso_attempt(
    session: Session,
    *,
    realm_id: int,
    provider: str,
    state: str,
    browser_token: str,
    nonce: str,
    code_verifier: str,
    next_path: str,
    mobile_flow_otp: str | None,
    now: datetime,
) -> None:
    with transaction(session):
        session.execute(delete(SsoAttempt).where(SsoAttempt.created <= now - ATTEMPT_LIFETIME))
        session.add(
            SsoAttempt(
                state_hash=hash_token(state),
                browser_hash=hash_token(browser_token),
                realm_id=realm_id,
                provider=provider,
                nonce=nonce,
                code_verifier=code_verifier,
                next_path=next_path,
                mobile_flow_otp=mobile_flow_otp,
                created=now,
            )
        )


def do_take_sso_attempt(
    session: Session, *, state: str, browser_token: str, now: datetime
) -> PendingSignIn | None:
    """The sign-in ``state`` names, if this browser began it and it is recent; used up either way.

    A state brought by another browser (a login-CSRF attempt, a link passed on) consumes
    nothing of the real browser's: only the state's own row goes, and only with its cookie.
    """
    if not state:
        return None
    with transaction(session):
        row = session.scalars(
            select(SsoAttempt).where(SsoAttempt.state_hash == hash_token(state))
        ).one_or_none()
        if row is None or row.browser_hash != hash_token(browser_token or ""):
            return None
        session.delete(row)
        if row.created <= now - ATTEMPT_LIFETIME:
            return None
        return PendingSignIn(
            row.realm_id, row.provider, row.nonce, row.code_verifier, row.next_path, row.mobile_flow_otp
        )
