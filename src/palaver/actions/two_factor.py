"""Two-factor sign-in writes: enrolment, recovery codes, using a factor, remembering a
browser, and the sign-ins waiting for their second factor."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.db.transaction import rowcount, transaction
from palaver.lib.exceptions import (
    JsonableError,
    OrganizationAdministratorRequiredError,
    OrganizationOwnerRequiredError,
)
from palaver.lib.two_factor import PENDING_LIFETIME, TWO_FACTOR_RESET, matching_step
from palaver.lib.web_sessions import hash_token, new_token
from palaver.models import UserProfile
from palaver.models.auth import LoginRecord, PendingLogin, RecoveryCode, TrustedBrowser, TwoFactorDevice
from palaver.models.requester import Requester

RECOVERY_CODES = 10
_CODE_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"


def _new_recovery_code() -> str:
    # 12 characters of a 31-letter alphabet: about 59 bits, shown as xxxx-xxxx-xxxx.
    raw = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(12))
    return f"{raw[:4]}-{raw[4:8]}-{raw[8:]}"


def _normal_code(code: str) -> str:
    return code.strip().lower().replace(" ", "")


def do_start_two_factor_enrolment(session: Session, user: UserProfile) -> str:
    """A new secret for ``user``'s authenticator; the old one stays until a code confirms it."""
    with transaction(session):
        device = session.scalars(
            select(TwoFactorDevice).where(TwoFactorDevice.user_profile_id == user.id)
        ).first()
        if device is not None and device.confirmed:
            raise JsonableError("Two-factor authentication is already on; turn it off first.")
        import pyotp  # noqa: PLC0415  (loaded with the first enrolment, lib/two_factor.py)

        secret = pyotp.random_base32()
        if device is None:
            session.add(TwoFactorDevice(user_profile_id=user.id, secret=secret, confirmed=False))
        else:
            device.secret, device.last_used_step = secret, 0
    return secret


def do_confirm_two_factor_enrolment(
    session: Session, user: UserProfile, code: str, now: datetime
) -> list[str]:
    """Turn two-factor on with a code from the new authenticator; the recovery codes, shown once."""
    with transaction(session):
        device = session.scalars(
            select(TwoFactorDevice).where(TwoFactorDevice.user_profile_id == user.id)
        ).first()
        if device is None or device.confirmed:
            raise JsonableError("Start setting up two-factor authentication first.")
        step = matching_step(device.secret, code, device.last_used_step, now)
        if step is None:
            raise JsonableError("That code is not right. Check the time on your phone and try again.")
        device.confirmed, device.last_used_step = True, step
        codes = [_new_recovery_code() for _ in range(RECOVERY_CODES)]
        session.execute(delete(RecoveryCode).where(RecoveryCode.user_profile_id == user.id))
        session.add_all(
            RecoveryCode(user_profile_id=user.id, code_hash=hash_token(c.replace("-", ""))) for c in codes
        )
    return codes


def do_disable_two_factor(session: Session, user: UserProfile) -> bool:
    """Forget ``user``'s authenticator, recovery codes and remembered browsers (also an
    administrator's reset, for someone who lost their phone); whether there was one."""
    with transaction(session):
        had = rowcount(
            session.execute(delete(TwoFactorDevice).where(TwoFactorDevice.user_profile_id == user.id))
        )
        session.execute(delete(RecoveryCode).where(RecoveryCode.user_profile_id == user.id))
        session.execute(delete(TrustedBrowser).where(TrustedBrowser.user_profile_id == user.id))
        session.execute(delete(PendingLogin).where(PendingLogin.user_profile_id == user.id))
    return bool(had)


def do_use_second_factor(session: Session, user: UserProfile, code: str, now: datetime) -> bool:
    """Whether ``code`` (an authenticator's, or an unused recovery code, which is then spent) is good."""
    with transaction(session):
        device = session.scalars(
            select(TwoFactorDevice).where(TwoFactorDevice.user_profile_id == user.id)
        ).first()
        if device is None or not device.confirmed:
            return False
        step = matching_step(device.secret, code, device.last_used_step, now)
        if step is not None:
            device.last_used_step = step
            return True
        wanted = hash_token(_normal_code(code).replace("-", ""))
        mine = RecoveryCode.user_profile_id == user.id
        spent = rowcount(session.execute(delete(RecoveryCode).where(mine, RecoveryCode.code_hash == wanted)))
        return bool(spent)


def do_trust_browser(session: Session, user: UserProfile, *, now: datetime, days: int) -> str:
    token = new_token()
    with transaction(session):
        session.execute(
            delete(TrustedBrowser).where(
                TrustedBrowser.user_profile_id == user.id, TrustedBrowser.expires <= now
            )
        )
        session.add(
            TrustedBrowser(
                user_profile_id=user.id, token_hash=hash_token(token), expires=now + timedelta(days=days)
            )
        )
    return token


def do_begin_pending_login(
    session: Session,
    user: UserProfile,
    *,
    method: str,
    next_path: str,
    mobile_flow_otp: str | None,
    now: datetime,
) -> str:
    token = new_token()
    with transaction(session):
        session.execute(delete(PendingLogin).where(PendingLogin.created <= now - PENDING_LIFETIME))
        session.add(
            PendingLogin(
                token_hash=hash_token(token),
                user_profile_id=user.id,
                method=method,
                next_path=next_path,
                mobile_flow_otp=mobile_flow_otp,
                created=now,
            )
        )
    return token


def do_finish_pending_login(session: Session, token: str) -> None:
    with transaction(session):
        session.execute(delete(PendingLogin).where(PendingLogin.token_hash == hash_token(token)))


def do_reset_two_factor(
    session: Session, acting_user: Requester, user: UserProfile, *, ip_address: str, client: str
) -> bool:
    """An administrator turns off someone's authenticator (a lost phone): what
    ``palaver reset-2fa`` does, recorded in the sign-in audit log with who did it. Only an
    owner resets an owner's. Whether there was one to turn off."""
    if not acting_user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    if user.is_realm_owner and not acting_user.is_realm_owner:
        raise OrganizationOwnerRequiredError()
    with transaction(session):
        had = do_disable_two_factor(session, user)
        session.add(
            LoginRecord(
                realm_id=user.realm_id,
                user_profile_id=user.id,
                method=TWO_FACTOR_RESET,
                channel="admin",
                ip_address=ip_address[:64],
                user_agent=client[:255],
                acting_user_id=acting_user.user_id,
            )
        )
    return had
