"""Account emails: password reset, confirming a new email address, and new-login notices.

Each request writes its one-time ``Confirmation`` and its outbox row in one transaction.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.actions.users import do_change_password
from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.email.outbox import queue_email
from palaver.lib.exceptions import JsonableError
from palaver.lib.invites import email_domain_error
from palaver.lib.users import (
    api_email_for,
    can_view_delivery_email,
    check_email,
    get_user_by_delivery_email,
    user_ids_who_can_access,
)
from palaver.models import Realm, UserProfile
from palaver.models.invites import Confirmation, ConfirmationKind
from palaver.models.requester import Requester
from palaver.timeutil import utcnow

CONFIRMATION_VALID_HOURS = 24


def _new_confirmation(
    session: Session, user: UserProfile, kind: ConfirmationKind, new_email: str | None
) -> str:
    now = utcnow()
    key = secrets.token_hex(16)
    session.add(
        Confirmation(
            key=key,
            kind=kind,
            user_profile_id=user.id,
            new_email=new_email,
            created=now,
            expires=now + timedelta(hours=CONFIRMATION_VALID_HOURS),
        )
    )
    session.flush()
    return key


def live_confirmation(session: Session, key: str, kind: ConfirmationKind) -> Confirmation | None:
    row = session.scalars(select(Confirmation).where(Confirmation.key == key)).one_or_none()
    if row is None or row.kind != kind or row.used or row.expires <= utcnow():
        return None
    return row


# Password reset -----------------------------------------------------------------------------


def do_request_password_reset(session: Session, realm: Realm, email: str) -> None:
    """Email a reset link; an address with no account gets a note saying so, so the page never
    reveals whether an account exists."""
    with transaction(session):
        user = get_user_by_delivery_email(session, realm.id, email)
        if user is None or not user.is_active or user.is_bot:
            queue_email(
                session,
                realm_id=realm.id,
                to=email,
                template="password_reset_unknown",
                context={"email": email},
            )
            return
        key = _new_confirmation(session, user, ConfirmationKind.PASSWORD_RESET, None)
        queue_email(
            session,
            realm_id=realm.id,
            to=user.delivery_email,
            template="password_reset",
            context={
                "full_name": user.full_name,
                "email": user.delivery_email,
                "path": f"/accounts/password/reset/{key}/",
                "valid_hours": CONFIRMATION_VALID_HOURS,
            },
        )


def do_reset_password(session: Session, confirmation: Confirmation, password_hash: str) -> UserProfile:
    with transaction(session):
        user = session.get(UserProfile, confirmation.user_profile_id)
        if user is None or not user.is_active:
            raise JsonableError("This account is deactivated.")
        confirmation.used = True
        do_change_password(session, user, password_hash)
    return user


# Changing the email address ----------------------------------------------------------------


def check_email_change(session: Session, user: UserProfile, new_email: str) -> str:
    """The new address, if the user may move to it (raises otherwise); writes nothing."""
    new_email = check_email(new_email)
    if user.is_bot:
        raise JsonableError("Bots cannot change their email address this way")
    if get_user_by_delivery_email(session, user.realm_id, new_email) is not None:
        raise JsonableError("Email is already in use.")
    reason = email_domain_error(session, user.realm, new_email)
    if reason is not None:
        raise JsonableError(reason)
    return new_email


def do_request_email_change(session: Session, user: UserProfile, new_email: str) -> None:
    """Send a confirmation link to the new address; the change applies when it is opened."""
    with transaction(session):
        new_email = check_email_change(session, user, new_email)
        key = _new_confirmation(session, user, ConfirmationKind.EMAIL_CHANGE, new_email)
        queue_email(
            session,
            realm_id=user.realm_id,
            to=new_email,
            template="email_change",
            context={
                "full_name": user.full_name,
                "old_email": user.delivery_email,
                "new_email": new_email,
                "path": f"/accounts/confirm_new_email/{key}/",
                "valid_hours": CONFIRMATION_VALID_HOURS,
            },
        )


def do_confirm_email_change(session: Session, confirmation: Confirmation, email_host: str) -> UserProfile:
    with transaction(session) as tx:
        user = session.get(UserProfile, confirmation.user_profile_id)
        new_email = confirmation.new_email
        if user is None or not user.is_active or new_email is None:
            raise JsonableError("This account is deactivated.")
        if get_user_by_delivery_email(session, user.realm_id, new_email) is not None:
            raise JsonableError("Email is already in use.")
        confirmation.used = True
        user.delivery_email = new_email
        audience = user_ids_who_can_access(session, user)
        viewers = session.scalars(select(UserProfile).where(UserProfile.id.in_(audience)))
        for viewer in viewers:
            if can_view_delivery_email(Requester.of(viewer), user):
                person = ev.PersonDeliveryEmail(user_id=user.id, delivery_email=new_email)
                tx.send_event(user.realm_id, ev.RealmUserUpdate(person=person), [viewer.id])
        api_email = api_email_for(email_host, user)
        if api_email != user.email:
            user.email = api_email
            tx.send_event(
                user.realm_id,
                ev.RealmUserUpdate(person=ev.PersonNewEmail(user_id=user.id, new_email=api_email)),
                audience,
            )
    return user


# New-login notices --------------------------------------------------------------------------


def queue_login_notice(session: Session, user: UserProfile, *, client: str = "", first_login: bool) -> None:
    """The new-login email (``enable_login_emails``), in the caller's transaction.

    The first login after sign-up is expected, so it sends nothing.
    """
    if first_login or user.is_bot or not user.enable_login_emails:
        return
    queue_email(
        session,
        realm_id=user.realm_id,
        to=user.delivery_email,
        template="login_notice",
        context={
            "full_name": user.full_name,
            "email": user.delivery_email,
            "when": f"{utcnow():%Y-%m-%d %H:%M}",
            "client": client,
        },
    )
