"""The desktop app's side of the apps' sign-in (``desktop_flow_otp``, lib/app_flow.py).

- Zulip's desktop app (its user agent says ``ZulipElectron``) opening a provider's login URL
  gets a page of its own instead (``desktop_app_page``): it makes the pad (the app's
  ``electron_bridge.decrypt_clipboard``, or one in the page when the app is older), opens the
  same URL with ``desktop_flow_otp`` in the person's browser, and waits for the token.
- The browser, once signed in, shows the encrypted token to copy (``DESKTOP_DONE_PATH``).
- ``/accounts/login/subdomain/<token>`` (Zulip's URL) turns the token into a session in the
  app's window, once and within a minute.
"""

from __future__ import annotations

import re

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from palaver.actions.app_flow import do_take_desktop_token
from palaver.actions.web_sessions import do_create_web_session
from palaver.lib.i18n import gettext
from palaver.models import UserProfile
from palaver.web.pages import DESKTOP_DONE_PATH, NO_STORE, Pages, no_realm, realm_for, set_session_cookies
from palaver.web.sessions import lifetime

# 12 bytes of IV, a 32-character token and 16 bytes of tag, as hex; a little room besides.
_DESKTOP_DATA = re.compile(r"^(?:[0-9a-f]{2}){28,128}$")
_TOKEN = re.compile(r"^[A-Za-z0-9]{32}$")
DESKTOP_APP = "ZulipElectron"


def desktop_app_page(pages: Pages, request: Request, realm_name: str) -> Response | None:
    """The desktop app's own page, when the desktop app (not yet in its flow) asks to sign in."""
    query = request.query_params
    if DESKTOP_APP not in request.headers.get("user-agent", "") or "desktop_flow_otp" in query:
        return None
    return pages.render("desktop_login.html", realm_name=realm_name)


def show_token(pages: Pages, request: Request) -> Response:
    with pages.services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        data = request.query_params.get("desktop_data", "")
        if not _DESKTOP_DATA.match(data):
            return pages.render(
                "sso_error.html",
                400,
                realm_name=realm.name,
                heading=gettext("Bad request"),
                text=gettext("This page needs the desktop app's sign-in code."),
            )
        return pages.render("desktop_redirect.html", realm_name=realm.name, desktop_data=data)


def log_into_app(pages: Pages, request: Request, token: str) -> Response:
    services = pages.services
    with services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        user_id = do_take_desktop_token(session, token, now=services.clock()) if _TOKEN.match(token) else None
        user = session.get(UserProfile, user_id) if user_id is not None else None
        if user is None or user.realm_id != realm.id or not user.is_active or realm.deactivated:
            return pages.render(
                "sso_error.html",
                400,
                realm_name=realm.name,
                heading=gettext("Sign-in expired"),
                text=gettext(
                    "This sign-in code has expired or was already used. Sign in again from the app."
                ),
            )
        session_token, row = do_create_web_session(
            session, user, now=services.clock(), lifetime=lifetime(services)
        )
        response = RedirectResponse("/", status_code=302, headers=NO_STORE)
        set_session_cookies(pages, response, session_token, row.csrf_token)
    return response


def desktop_flow_routes(pages: Pages) -> list[Route]:
    async def done(request: Request) -> Response:
        return await run_in_threadpool(show_token, pages, request)

    async def subdomain(request: Request) -> Response:
        return await run_in_threadpool(log_into_app, pages, request, str(request.path_params["token"]))

    return [
        Route(DESKTOP_DONE_PATH, done, methods=["GET"]),
        Route("/accounts/login/subdomain/{token}", subdomain, methods=["GET"]),
    ]
