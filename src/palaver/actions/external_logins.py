"""Signing in through a provider (a directory, OpenID Connect, GitHub...): finding or making
the account it vouches for, and keeping it in step with the provider (name, email, picture,
profile fields, whether it is active)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from palaver.actions.avatars import do_upload_avatar
from palaver.actions.invites import do_accept_invite
from palaver.actions.provider_groups import do_apply_provider_groups
from palaver.actions.user_email import do_change_user_delivery_email
from palaver.actions.users import (
    ProfileDataChange,
    do_change_full_name,
    do_deactivate_user,
    do_reactivate_user,
    do_update_user_custom_profile_data,
    validate_profile_value,
)
from palaver.auth_config import OAuthProvider, SamlIdp
from palaver.db.transaction import transaction
from palaver.lib.exceptions import JsonableError, RealmDeactivatedError, UserDeactivatedError
from palaver.lib.external_auth import (
    ExternalAccount,
    NoAccountError,
    find_identity,
    identities_of_provider,
    identity_of_user,
)
from palaver.lib.images import BadImageError
from palaver.lib.invites import email_domain_error, live_invite_for_email
from palaver.lib.profile_fields import get_profile_fields
from palaver.lib.storage import FileStorage
from palaver.lib.users import check_full_name, get_user_by_delivery_email, is_last_owner
from palaver.models import Realm, UserProfile
from palaver.models.auth import ExternalIdentity

logger = logging.getLogger(__name__)


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
    session: Session,
    realm: Realm,
    account: ExternalAccount,
    *,
    email_host: str,
    storage: FileStorage,
    provider: OAuthProvider | SamlIdp | None = None,
) -> UserProfile:
    """The active user ``account`` signs in as; links it on first use, and takes what the
    provider says about them (name, email, picture, profile fields; with ``provider``'s
    ``role_map`` / ``group_map``, role and groups).

    A deactivated user stays out whatever the provider says, unless the provider itself
    deactivated them and now vouches for them again; a bot never signs in this way.
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
        if identity is None and user is not None:
            # Known to this provider under another ID (a directory entry deleted and made
            # again): the link moves to the new one, keeping what it remembers.
            identity = identity_of_user(session, user.id, account.provider)
            if identity is not None:
                identity.subject = account.subject
        if account.disabled:
            raise UserDeactivatedError()
        if user is not None and not user.is_active:
            if identity is None or not identity.deactivated_by_provider:
                raise UserDeactivatedError()
            do_reactivate_user(session, user)
        if user is None:
            user = _new_account(session, realm, account, email_host)
        if identity is None:
            identity = ExternalIdentity(
                realm_id=realm.id,
                user_profile_id=user.id,
                provider=account.provider,
                subject=account.subject,
            )
            session.add(identity)
            session.flush()
        do_sync_external_account(session, user, account, email_host=email_host)
        if provider is not None and account.groups is not None:
            do_apply_provider_groups(session, user, provider, account.groups)
        identity_id = identity.id
    do_sync_provider_avatar(session, storage, user, identity_id, account.avatar)
    return user


def do_sync_external_account(
    session: Session, user: UserProfile, account: ExternalAccount, *, email_host: str
) -> None:
    """Take the name, email and profile fields the provider holds now (the provider is their
    source of truth)."""
    with transaction(session):
        if account.email and account.email.lower() != user.delivery_email.lower():
            do_change_user_delivery_email(session, user, account.email, email_host)
        if account.full_name:
            try:
                name = check_full_name(account.full_name)
            except JsonableError:
                name = user.full_name
            if name != user.full_name:
                do_change_full_name(session, user, name)
        if account.profile:
            _sync_profile_fields(session, user, account.profile)


def _field_key(name: str) -> str:
    # "Phone number", "phone_number" and Zulip's custom_profile_field__phone_number name one field.
    return name.removeprefix("custom_profile_field__").replace("_", " ").casefold().strip()


def _sync_profile_fields(session: Session, user: UserProfile, profile: tuple[tuple[str, str], ...]) -> None:
    fields = {_field_key(f.name): f for f in get_profile_fields(session, user.realm_id)}
    changes: list[ProfileDataChange] = []
    for name, value in profile:
        field = fields.get(_field_key(name))
        if field is None:
            logger.warning("provider profile field %r: no such custom profile field", name)
            continue
        if value:
            try:
                validate_profile_value(session, field, value)
            except JsonableError as error:
                # One attribute the field cannot hold must not stop the rest of the sync.
                logger.warning("provider profile field %r for user %d: %s", name, user.id, error.msg)
                continue
        changes.append(ProfileDataChange(field.id, value or None))
    if changes:
        do_update_user_custom_profile_data(session, user, changes)


def do_sync_provider_avatar(
    session: Session, storage: FileStorage, user: UserProfile, identity_id: int, photo: bytes | None
) -> None:
    """Make the provider's picture the user's avatar, through the upload pipeline, when it
    changed since last time. Runs as its own transaction, after the sign-in's or sync's:
    a picture that does not decode is logged and leaves everything else done."""
    if not photo:
        return
    digest = hashlib.sha256(photo).hexdigest()
    identity = session.get(ExternalIdentity, identity_id)
    if identity is None or identity.avatar_digest == digest:
        return
    try:
        with transaction(session):
            identity.avatar_digest = digest
            do_upload_avatar(session, storage, user, photo)
    except BadImageError:
        logger.warning("provider picture for user %d is not an image we can read", user.id)


@dataclass
class DirectorySyncReport:
    updated: int = 0
    linked: int = 0
    deactivated: list[str] = field(default_factory=list)
    # Those of ``deactivated`` still in the directory, disabled there.
    disabled: list[str] = field(default_factory=list)
    reactivated: list[str] = field(default_factory=list)
    # The directory answered with no entries while accounts are linked to it: taken as a
    # wrong search base or filter, not as everyone leaving, so nothing was changed.
    empty_directory: bool = False


def _sync_present(
    session: Session, user: UserProfile, identity: ExternalIdentity, person: ExternalAccount,
    report: DirectorySyncReport, email_host: str,
) -> None:  # fmt: skip
    if person.disabled:
        _deactivate_departed(session, user, identity, report, disabled=True)
        return
    if not user.is_active:
        if not identity.deactivated_by_provider:
            return
        do_reactivate_user(session, user)
        report.reactivated.append(user.delivery_email)
    before = (user.delivery_email, user.full_name)
    do_sync_external_account(session, user, person, email_host=email_host)
    report.updated += (user.delivery_email, user.full_name) != before


def _deactivate_departed(
    session: Session,
    user: UserProfile,
    identity: ExternalIdentity,
    report: DirectorySyncReport,
    *,
    disabled: bool = False,
) -> None:
    if not user.is_active:
        return
    if is_last_owner(session, user):
        # An organization is never left without an owner; an administrator decides instead.
        logger.warning("directory sync: %s left the directory but is the only owner", user.delivery_email)
        return
    do_deactivate_user(session, user, acting_user=None)
    identity.deactivated_by_provider = True
    report.deactivated.append(user.delivery_email)
    if disabled:
        report.disabled.append(user.delivery_email)


def do_sync_directory(
    session: Session,
    realm: Realm,
    people: list[ExternalAccount],
    *,
    provider: str,
    email_host: str,
    storage: FileStorage,
) -> DirectorySyncReport:
    """Bring the organization's accounts in line with the directory's entries.

    Accounts linked to an entry (or with an entry's email) take its name, email, profile
    fields and picture; accounts whose entry is gone or disabled are deactivated, and
    reactivated when it is back (only those the directory deactivated). Accounts the
    directory never knew (made here, with a Palaver password) are left alone. An empty
    answer while accounts are linked changes nothing (``report.empty_directory``).
    """
    report = DirectorySyncReport()
    present = {person.subject: person for person in people}
    linked = {identity.subject: identity for identity in identities_of_provider(session, realm.id, provider)}
    if not present and linked:
        logger.warning(
            "directory sync: the directory returned no entries for %r; nobody deactivated", realm.string_id
        )
        report.empty_directory = True
        return report
    unlinked = {p.email.lower(): p for subject, p in present.items() if subject not in linked}
    pictures: list[tuple[UserProfile, int, bytes]] = []
    with transaction(session):
        for subject, identity in linked.items():
            user = session.get(UserProfile, identity.user_profile_id)
            if user is None:
                continue
            person = present.get(subject)
            if person is None:
                # An entry deleted and made again has a new ID: the same person by email.
                person = unlinked.pop(user.delivery_email.lower(), None)
                if person is not None:
                    identity.subject = person.subject
            if person is None:
                _deactivate_departed(session, user, identity, report)
                continue
            _sync_present(session, user, identity, person, report, email_host)
            if user.is_active and person.avatar:
                pictures.append((user, identity.id, person.avatar))
        for person in unlinked.values():
            subject = person.subject
            user = get_user_by_delivery_email(session, realm.id, person.email)
            if user is None or user.is_bot:
                continue
            identity = ExternalIdentity(
                realm_id=realm.id, user_profile_id=user.id, provider=provider, subject=subject
            )
            session.add(identity)
            session.flush()
            report.linked += 1
            if not user.is_active:
                continue
            if person.disabled:
                _deactivate_departed(session, user, identity, report, disabled=True)
                continue
            before = (user.delivery_email, user.full_name)
            do_sync_external_account(session, user, person, email_host=email_host)
            report.updated += (user.delivery_email, user.full_name) != before
            if person.avatar:
                pictures.append((user, identity.id, person.avatar))
    for user, identity_id, photo in pictures:
        do_sync_provider_avatar(session, storage, user, identity_id, photo)
    return report
