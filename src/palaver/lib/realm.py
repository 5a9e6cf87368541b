"""Which realm a request is for, and realm-level reads."""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.lib.exceptions import JsonableError
from palaver.models import Realm, UserProfile


class NamedRealm(Protocol):
    """What a realm's URL is made of: a ``Realm``, or its row from the realm cache."""

    @property
    def string_id(self) -> str: ...


def _strip_port(host: str) -> str:
    if host.startswith("["):
        return host.split("]", maxsplit=1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


# A string ID no organization can have (they never hold a space).
NO_REALM = " no organization"


def is_user_content_host(settings: Settings, host: str) -> bool:
    """Whether a Host header names the ``user_content_url`` origin (any port, as realm hosts).
    Read as text, never parsed as a URL: a malformed header is simply some other host."""
    content = settings.user_content_host
    return content is not None and _strip_port(host.strip().lower()).strip("[]") == content


def subdomain_for_host(settings: Settings, host: str) -> str:
    """The realm string ID a Host header selects; the bare host selects the root realm.

    Ports are ignored so that the same server answers on any port it is reached at.
    """
    if is_user_content_host(settings, host):
        # The user-content origin is no organization's (config.py refuses it as a realm host).
        return NO_REALM
    host = _strip_port(host.strip().lower())
    base = _strip_port(settings.external_host)
    if host.endswith("." + base):
        return host[: -len(base) - 1]
    if base in _LOOPBACK and host.endswith(".localhost"):
        # IP addresses have no subdomains; on loopback, realms live under *.localhost.
        return host.removesuffix(".localhost")
    return settings.root_realm_string_id


# Served on loopback by address, realms are reached as <string ID>.localhost, which
# browsers and curl resolve to the loopback address by themselves.
_LOOPBACK = frozenset({"127.0.0.1", "[::1]", "localhost"})


# Built once: every unauthenticated request looks its realm up.
_REALM_BY_STRING_ID = select(Realm).where(Realm.string_id == bindparam("string_id"))


def get_realm_by_string_id(session: Session, string_id: str) -> Realm | None:
    return session.scalars(_REALM_BY_STRING_ID, {"string_id": string_id}).one_or_none()


def get_realm(session: Session, realm_id: int) -> Realm:
    """The realm of this ID through the ORM: the session's copy when the request's
    authentication loaded it, so an anonymous view's look-up costs no query."""
    realm = session.get(Realm, realm_id)
    if realm is None:
        raise JsonableError("There is no organization at this URL", status=404)
    return realm


def get_realm_for_host(session: Session, settings: Settings, host: str) -> Realm:
    realm = get_realm_by_string_id(session, subdomain_for_host(settings, host))
    if realm is None:
        raise JsonableError("There is no organization at this URL", status=404)
    return realm


def realm_url(settings: Settings, realm: NamedRealm) -> str:
    if realm.string_id == settings.root_realm_string_id:
        return settings.external_url
    host = settings.external_host
    if _strip_port(host) in _LOOPBACK:
        port = host.removeprefix(_strip_port(host))
        return f"{settings.external_scheme}://{realm.string_id}.localhost{port}"
    return f"{settings.external_scheme}://{realm.string_id}.{host}"


def realm_email_host(settings: Settings, realm: NamedRealm) -> str:
    """Domain of API-only emails for users who hide their real address."""
    return _strip_port(realm_url(settings, realm).split("://", 1)[1])


def active_user_ids(session: Session, realm_id: int) -> list[int]:
    return list(
        session.scalars(select(UserProfile.id).where(UserProfile.realm_id == realm_id, UserProfile.is_active))
    )


def deactivated_user_ids(session: Session, realm_ids: Any) -> set[int]:
    """Deactivated users of the realms (IDs, or a subquery of them).

    They are few, so readers of large membership lists (role groups, subscribers) drop
    them afterwards rather than joining every row to its user.
    """
    return set(
        session.scalars(
            select(UserProfile.id).where(
                UserProfile.realm_id.in_(realm_ids), UserProfile.is_active.is_(False)
            )
        )
    )


def active_admin_ids(session: Session, realm_id: int) -> list[int]:
    return list(
        session.scalars(
            select(UserProfile.id).where(
                UserProfile.realm_id == realm_id,
                UserProfile.is_active,
                UserProfile.role <= 200,
                UserProfile.is_bot.is_(False),
            )
        )
    )
