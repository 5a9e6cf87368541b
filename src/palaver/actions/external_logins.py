"""Signing in through a provider (a directory, OpenID Connect, GitHub...): finding or making
the account it vouches for, and keeping its name and email in step with the provider."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from palaver.actions.invites import do_accept_invite
from palaver.actions.user_email import do_change_user_delivery_email
from palaver.actions.users import do_change_full_name, do_deactivate_user
from palaver.db import transaction
from palaver.lib.exceptions import JsonableError, RealmDeactivatedError, UserDeactivatedError
from palaver.lib.external_auth import ExternalAccount, NoAccountError, find_identity, identities_of_provider
from palaver.lib.invites import email_domain_error, live_invite_for_email
from palaver.lib.users import check_full_name, get_user_by_delivery_email
from palaver.models import Realm, UserProfile
from palaver.models.auth import ExternalIdentity


def _new_account(session: Session, realm: Realm, account: ExternalAccount, email_host: str) -> UserProfile:
    """The account a first sign-in makes, under the rules open sign-up follows."""
    if not realm.external_signup:
        raise NoAccountError(
            f"There is no account for {account.email} in this organization. Ask an administrator to "
            "create one for you."
        )
    invite = live_invite_for_email(session, realm, account.email)
    if invite is None and realm.invite_required:
        raise NoAccountError(
            f"There is no account for {account.email} in this organization, which is invitation-only. "
            "Ask an administrator for an invitation."
        )
    reason = email_domain_error(session, realm, account.email)
    if reason is not None:
        raise NoAccountError(reason)
    try:
        full_name = check_full_name(account.full_name or account.email.partition("@")[0])
    except JsonableError:
        full_name = account.email.partition("@")[0]
    # No password: this person signs in through the provider (or sets one by password reset).
    return do_accept_invite(
        session,
        realm,
        invite,
        email=account.email,
        full_name=full_name,
        password_hash=None,
        email_host=email_host,
    )


def do_external_sign_in(
    session: Session, realm: Realm, account: ExternalAccount, *, email_host: str
) -> UserProfile:
    """The active user ``account`` signs in as; links it on first use.

    A deactivated user stays out whatever the provider says, and a bot never signs in this way.
    """
    if realm.deactivated:
        raise RealmDeactivatedError()
    with transaction(session):
        identity = find_identity(session, realm.id, account.provider, account.subject)
        user = session.get(UserProfile, identity.user_profile_id) if identity is not None else None
        if user is None:
            user = get_user_by_delivery_email(session, realm.id, account.email)
        if user is not None and user.is_bot:
            raise NoAccountError("Bots cannot sign in.")
        if user is not None and not user.is_active:
            raise UserDeactivatedError()
        if user is None:
            user = _new_account(session, realm, account, email_host)
        if identity is None:
            session.add(
                ExternalIdentity(
                    realm_id=realm.id,
                    user_profile_id=user.id,
                    provider=account.provider,
                    subject=account.subject,
                )
            )
        do_sync_external_account(session, user, account, email_host=email_host)
    return user


def do_sync_external_account(
    session: Session, user: UserProfile, account: ExternalAccount, *, email_host: str
) -> None:
    """Take the name and email the provider holds now (the provider is their source of truth)."""
    with transaction(session):
        if account.email and account.email.lower() != user.delivery_email.lower():
            do_change_user_delivery_email(session, user, account.email, email_host)
        if account.full_name:
            try:
                name = check_full_name(account.full_name)
            except JsonableError:
                return
            if name != user.full_name:
                do_change_full_name(session, user, name)


@dataclass
class DirectorySyncReport:
    updated: int = 0
    linked: int = 0
    deactivated: list[str] = field(default_factory=list)


def do_sync_directory(
    session: Session, realm: Realm, people: list[ExternalAccount], *, provider: str, email_host: str
) -> DirectorySyncReport:
    """Bring the organization's accounts in line with the directory's entries.

    Accounts linked to an entry (or with an entry's email) take its name and email; accounts
    linked to an entry that is gone are deactivated. Accounts the directory never knew (made
    here, with a Palaver password) are left alone.
    """
    report = DirectorySyncReport()
    present = {person.subject: person for person in people}
    linked = {identity.subject: identity for identity in identities_of_provider(session, realm.id, provider)}
    with transaction(session):
        for subject, identity in linked.items():
            user = session.get(UserProfile, identity.user_profile_id)
            if user is None or not user.is_active:
                continue
            if subject not in present:
                do_deactivate_user(session, user, acting_user=None)
                report.deactivated.append(user.delivery_email)
                continue
            before = (user.delivery_email, user.full_name)
            do_sync_external_account(session, user, present[subject], email_host=email_host)
            report.updated += (user.delivery_email, user.full_name) != before
        for subject, person in present.items():
            if subject in linked:
                continue
            user = get_user_by_delivery_email(session, realm.id, person.email)
            if user is None or user.is_bot:
                continue
            session.add(
                ExternalIdentity(
                    realm_id=realm.id, user_profile_id=user.id, provider=provider, subject=subject
                )
            )
            report.linked += 1
            if user.is_active:
                before = (user.delivery_email, user.full_name)
                do_sync_external_account(session, user, person, email_host=email_host)
                report.updated += (user.delivery_email, user.full_name) != before
    return report
