"""What a provider says about the person signing in, and the identities already linked."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.models.auth import ExternalIdentity


@dataclass(frozen=True)
class ExternalAccount:
    """A person as a provider vouches for them (after the provider's checks have passed)."""

    # "ldap", "oidc:NAME", "github"...: ExternalIdentity.provider.
    provider: str
    # What never changes for them at the provider (entryUUID, the ID token's ``sub``).
    subject: str
    # Verified by the provider (OpenID Connect ``email_verified``, the directory's own record).
    email: str
    full_name: str
    # The picture the provider holds for them (a directory's jpegPhoto), when it gives one.
    avatar: bytes | None = None
    # Custom profile fields the provider fills: (field name, value); "" clears the field.
    profile: tuple[tuple[str, str], ...] = ()
    # The provider still knows them but has disabled them (an Active Directory account turned off).
    disabled: bool = False
    # The groups the provider puts them in (an OpenID Connect groups claim); None when it says nothing.
    groups: frozenset[str] | None = None


class NoAccountError(JsonableError):
    """A provider vouched for someone with no account here, and none may be made."""

    code = "NO_ACCOUNT"
    http_status = 403


def find_identity(session: Session, realm_id: int, provider: str, subject: str) -> ExternalIdentity | None:
    return session.scalars(
        select(ExternalIdentity).where(
            ExternalIdentity.realm_id == realm_id,
            ExternalIdentity.provider == provider,
            ExternalIdentity.subject == subject,
        )
    ).one_or_none()


def identities_of_provider(session: Session, realm_id: int, provider: str) -> list[ExternalIdentity]:
    return list(
        session.scalars(
            select(ExternalIdentity).where(
                ExternalIdentity.realm_id == realm_id, ExternalIdentity.provider == provider
            )
        )
    )


def identity_of_user(session: Session, user_id: int, provider: str) -> ExternalIdentity | None:
    """The user's link to ``provider`` (one per provider: a re-created entry takes it over)."""
    return session.scalars(
        select(ExternalIdentity)
        .where(ExternalIdentity.user_profile_id == user_id, ExternalIdentity.provider == provider)
        .order_by(ExternalIdentity.id)
        .limit(1)
    ).one_or_none()
