"""Two-factor sign-in reads: a user's authenticator, its codes, remembered browsers.

Codes are TOTP (RFC 6238, pyotp): six digits, 30-second steps, one step either way for a
phone's clock. A code is accepted once (its step must be newer than the last accepted).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.web_sessions import hash_token
from palaver.models import UserProfile
from palaver.models.auth import Passkey, PendingLogin, TrustedBrowser, TwoFactorDevice

STEP_SECONDS = 30
TRUSTED_COOKIE = "palaver_2fa_trusted"
# Password-like methods the second factor guards; a provider's sign-in has its own.
GUARDED_METHODS = frozenset({"password", "ldap"})
PENDING_LIFETIME = timedelta(minutes=10)
# The audit log's method for an administrator's reset of someone's second factor.
TWO_FACTOR_RESET = "two_factor_reset"


def confirmed_device(session: Session, user_id: int) -> TwoFactorDevice | None:
    device = session.scalars(
        select(TwoFactorDevice).where(TwoFactorDevice.user_profile_id == user_id)
    ).first()
    return device if device is not None and device.confirmed else None


def has_passkey(session: Session, user_id: int) -> bool:
    return session.scalar(select(Passkey.id).where(Passkey.user_profile_id == user_id).limit(1)) is not None


@dataclass(frozen=True)
class SecondFactors:
    """The ways a password sign-in that owes a second factor may finish."""

    totp: bool
    passkey: bool


def second_factors_owed(session: Session, user: UserProfile) -> SecondFactors | None:
    """What a password sign-in must finish with, or None when it owes no second factor.

    An authenticator, once set up, is always asked for; a passkey is offered beside it. A
    passkey alone is asked for when the organization requires a second factor (elsewhere a
    passkey is a sign-in of its own, not a step after the password).
    """
    totp = confirmed_device(session, user.id) is not None
    passkey = has_passkey(session, user.id)
    if totp or (passkey and user.realm.require_two_factor):
        return SecondFactors(totp=totp, passkey=passkey)
    return None


def has_second_factor(session: Session, user_id: int) -> bool:
    """Whether the user meets an organization's two-factor requirement (an authenticator or a passkey)."""
    return confirmed_device(session, user_id) is not None or has_passkey(session, user_id)


# pyotp and segno are imported where a code is made or checked: only accounts with an
# authenticator need them, so a server that never sees one does not hold them.


def provisioning_uri(secret: str, email: str, issuer: str) -> str:
    import pyotp  # noqa: PLC0415

    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=issuer)


def qr_code_data_uri(uri: str) -> str:
    """The enrolment QR code as an SVG data: URI, made here (no outside service sees the secret)."""
    import segno  # noqa: PLC0415

    return str(segno.make(uri, error="m").svg_data_uri(scale=5))


def matching_step(secret: str, code: str, last_used_step: int, now: datetime) -> int | None:
    """The time step ``code`` belongs to, if it is current (±1 step) and not used yet."""
    code = code.strip().replace(" ", "")
    if not (code.isdigit() and len(code) == 6):
        return None
    import pyotp  # noqa: PLC0415

    totp = pyotp.TOTP(secret)
    current = int(now.timestamp()) // STEP_SECONDS
    for step in (current - 1, current, current + 1):
        if step > last_used_step and totp.verify(code, for_time=step * STEP_SECONDS):
            return step
    return None


def is_trusted_browser(session: Session, user_id: int, token: str | None, now: datetime) -> bool:
    if not token:
        return False
    row = session.scalars(
        select(TrustedBrowser).where(TrustedBrowser.token_hash == hash_token(token))
    ).first()
    return row is not None and row.user_profile_id == user_id and row.expires > now


@dataclass(frozen=True)
class Pending:
    """A sign-in whose password was right, waiting for its second factor."""

    user_id: int
    method: str
    next_path: str
    mobile_flow_otp: str | None


def pending_login(session: Session, token: str, now: datetime) -> Pending | None:
    row = session.scalars(
        select(PendingLogin).where(PendingLogin.token_hash == hash_token(token or ""))
    ).first()
    if row is None or row.created <= now - PENDING_LIFETIME:
        return None
    return Pending(row.user_profile_id, row.method, row.next_path, row.mobile_flow_otp)
