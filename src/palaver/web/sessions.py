"""Authenticating /json requests with the session cookie, next to HTTP Basic on /api/v1.

A browser's cookie goes with every request to our host, including those a hostile page
makes it send, so every write through /json must also carry the session's CSRF token in
``X-CSRFToken``, which only our own pages can read (from the ``csrftoken`` cookie). As a
second, independent line, a write whose browser says it comes from elsewhere
(``Sec-Fetch-Site`` other than ``same-origin``/``none``, or an ``Origin`` that is not this
host) is refused before the token is even compared; a client that sends neither header (an
API library, an older browser) is judged by the token alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session
from starlette.requests import Request

from palaver.actions.web_sessions import do_touch_web_session
from palaver.cache import realm_settings
from palaver.lib.exceptions import (
    JsonableError,
    RealmDeactivatedError,
    UnauthorizedError,
    UserDeactivatedError,
)
from palaver.lib.realm import get_realm_by_string_id, subdomain_for_host
from palaver.lib.web_sessions import (
    CSRF_HEADER,
    SESSION_COOKIE,
    current_web_session_id,
    get_live_web_session,
    tokens_match,
)
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.models.web_sessions import WebSession
from palaver.services import Services

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class CsrfError(JsonableError):
    code = "CSRF_FAILED"
    http_status = 403

    def __init__(self, reason: str) -> None:
        super().__init__(f"CSRF error: {reason}")


# What Sec-Fetch-Site says of a request our own pages make (or a person typed).
_OWN_FETCH_SITES = frozenset({"same-origin", "none"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}


@dataclass(frozen=True)
class WebCredentials:
    """What a /json request brings instead of an Authorization header."""

    session_token: str | None
    csrf_token: str | None
    method: str
    host: str = ""
    origin: str | None = None
    fetch_site: str | None = None


def lifetime(services: Services) -> timedelta:
    return timedelta(days=services.settings.session_lifetime_days)


def _origin_host(origin: str) -> str | None:
    """``host[:port]`` of an Origin header as a Host header would spell it, or None."""
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep or not rest or "/" in rest:
        return None  # "null" (sandboxed frames, some redirects) or malformed
    host, colon, port = rest.rpartition(":")
    if colon and "]" not in port and port == _DEFAULT_PORTS.get(scheme):
        return host
    return rest


def check_same_origin(credentials: WebCredentials) -> None:
    """Refuse a cookie-authenticated write the browser reports as coming from another site.

    Another organization on the same server is another origin (its own subdomain), so
    ``same-site`` is refused too. The scheme is not compared: behind a proxy that is not in
    ``trusted_proxies`` the request's own scheme is not known.
    """
    if credentials.fetch_site is not None and credentials.fetch_site.lower() not in _OWN_FETCH_SITES:
        raise CsrfError(f"cross-site request refused (Sec-Fetch-Site: {credentials.fetch_site}).")
    if credentials.origin is not None and _origin_host(credentials.origin) != credentials.host.lower():
        raise CsrfError(f"cross-site request refused (Origin: {credentials.origin}).")


def check_csrf(row: WebSession, credentials: WebCredentials) -> None:
    if credentials.method in SAFE_METHODS:
        return
    check_same_origin(credentials)
    if not credentials.csrf_token:
        raise CsrfError("CSRF token missing.")
    if not tokens_match(row.csrf_token, credentials.csrf_token):
        raise CsrfError("CSRF token incorrect.")


def session_user(
    session: Session, services: Services, host: str, token: str | None
) -> tuple[WebSession, UserProfile] | None:
    """The live session a cookie names and its (active) user, on this host's organization."""
    row = get_live_web_session(session, token, services.clock())
    if row is None:
        return None
    user = session.get(UserProfile, row.user_profile_id)
    if user is None or realm_settings(session, user.realm_id).string_id != subdomain_for_host(
        services.settings, host
    ):
        # Cookies are per host, so this is a cookie carried to another organization's host.
        return None
    return row, user


def authenticate_web(
    session: Session, services: Services, auth: str, host: str, credentials: WebCredentials
) -> tuple[Requester | None, int | None]:
    """``routing.authenticate`` for /json: the same policies and the same ``Requester``, with
    the cookie as credential."""
    found = session_user(session, services, host, credentials.session_token)
    if found is None:
        if auth == "required":
            raise UnauthorizedError()
        realm = get_realm_by_string_id(session, subdomain_for_host(services.settings, host))
        if auth == "optional" and realm is not None and realm.deactivated:
            raise RealmDeactivatedError()
        return None, None if realm is None else realm.id
    row, user = found
    check_csrf(row, credentials)
    if auth == "none":
        # Views that need no login (fetch_api_key) judge the realm's state themselves.
        return None, user.realm_id
    if realm_settings(session, user.realm_id).deactivated:
        raise RealmDeactivatedError()
    if not user.is_active:
        raise UserDeactivatedError()
    requester = Requester.of(user)
    do_touch_web_session(session, row, now=services.clock(), lifetime=lifetime(services))
    current_web_session_id.set(row.id)
    return requester, requester.realm_id


def web_credentials(request: Request) -> WebCredentials:
    return WebCredentials(
        session_token=request.cookies.get(SESSION_COOKIE),
        csrf_token=request.headers.get(CSRF_HEADER),
        method=request.method,
        host=request.headers.get("host", ""),
        origin=request.headers.get("origin"),
        fetch_site=request.headers.get("sec-fetch-site"),
    )
