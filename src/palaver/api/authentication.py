"""Who an API request comes from: HTTP Basic credentials (an email and an API key)."""

from __future__ import annotations

import base64
import binascii

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from palaver.api.routing import AuthPolicy
from palaver.cache import realm_settings
from palaver.lib.exceptions import RealmDeactivatedError, UnauthorizedError, UserDeactivatedError
from palaver.lib.passwords import has_api_key_format
from palaver.lib.realm import get_realm_by_string_id, subdomain_for_host
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.services import Services


def _credentials(header: str) -> tuple[str, str]:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        raise UnauthorizedError("This endpoint requires HTTP basic authentication.")
    try:
        email, sep, api_key = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise UnauthorizedError("Invalid authorization header for basic auth") from None
    if not sep:
        raise UnauthorizedError("Invalid authorization header for basic auth")
    return email, api_key


# Built once: constructing the statement costs more per request than running its cached
# compiled form does.
_USER_BY_API_KEY = select(UserProfile).where(UserProfile.api_key == bindparam("api_key"))


def authenticate(
    session: Session, services: Services, auth: AuthPolicy, host: str, header: str | None
) -> tuple[Requester | None, int | None]:
    """Who sends the request (None: anonymous) and the ID of the organization it is for
    (None: the host names none, which only ``auth="none"``/``"optional"`` allow)."""
    string_id = subdomain_for_host(services.settings, host)
    if auth == "none":
        # Views that need no login (server settings, fetching a key) judge the realm's state.
        realm = get_realm_by_string_id(session, string_id)
        return None, None if realm is None else realm.id
    if auth == "optional" and not header:
        realm = get_realm_by_string_id(session, string_id)
        if realm is not None and realm.deactivated:
            # Anonymous (spectator) access must not outlive the organization.
            raise RealmDeactivatedError()
        return None, None if realm is None else realm.id
    if not header:
        raise UnauthorizedError()
    email, api_key = _credentials(header)
    # As Zulip's server answers HTTP Basic credentials: 401 UNAUTHORIZED, "Malformed API
    # key" for what cannot be a key (checked before any query: PostgreSQL refuses even to
    # compare with a NUL), "Invalid API key" for a key that opens no account or another's.
    api_key = api_key.strip()
    if not has_api_key_format(api_key):
        raise UnauthorizedError("Malformed API key")
    # One indexed lookup by key; the email must then name the same account. The row stays
    # in the session, so a view's ``ctx.me`` loads nothing more.
    user = session.scalars(_USER_BY_API_KEY, {"api_key": api_key}).one_or_none()
    if user is None or email.strip().lower() not in (user.email.lower(), user.delivery_email.lower()):
        raise UnauthorizedError("Invalid API key")
    # The realm's row from this process's cache (every change to it drops the cached one).
    cached = realm_settings(session, user.realm_id)
    if cached.string_id != string_id:
        raise UnauthorizedError("Account is not associated with this subdomain")
    if cached.deactivated:
        raise RealmDeactivatedError()
    if not user.is_active:
        raise UserDeactivatedError()
    return Requester.of(user), user.realm_id
