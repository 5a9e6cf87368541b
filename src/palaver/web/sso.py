"""Signing in through an OpenID Connect or OAuth provider: the "Sign in with …" buttons.

``/accounts/login/social/<provider>`` (and ``/accounts/register/social/<provider>``, the
sign-up button: the same flow, since a first sign-in may make the account) sends the
browser to the provider; the provider sends it back to ``/complete/<provider>/``. The
``state`` travels through the provider; a random cookie, set on the way out and needed on
the way back, binds it to this browser, and the pair works once (actions/sso_attempts.py).
Apps open the login URL with ``mobile_flow_otp`` or ``desktop_flow_otp`` (lib/app_flow.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from palaver.actions.external_logins import do_external_sign_in
from palaver.actions.sso_attempts import ATTEMPT_LIFETIME, do_begin_sso_attempt, do_take_sso_attempt
from palaver.auth_config import OAuthProvider
from palaver.lib import app_flow as flows
from palaver.lib.auth_methods import method_enabled
from palaver.lib.exceptions import JsonableError, UserDeactivatedError
from palaver.lib.i18n import gettext
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.storage import make_storage
from palaver.lib.web_sessions import new_token
from palaver.models import Realm
from palaver.web.desktop_flow import desktop_app_page
from palaver.web.pages import Pages, finish_login, no_realm, realm_for, safe_next

SSO_COOKIE = "palaver_sso"
_COOKIE_PATH = "/complete/"


# A provider's configuration: an OAuth/OIDC provider or a SAML identity provider.
P = TypeVar("P")


def error_page(pages: Pages, realm: Realm | None, heading: str, text: str, status: int) -> HTMLResponse:
    return pages.render(
        "sso_error.html",
        status,
        realm_name=realm.name if realm is not None else "Palaver",
        heading=heading,
        text=text,
    )


def _redirect_uri(pages: Pages, realm: Realm, provider: OAuthProvider) -> str:
    return f"{realm_url(pages.services.settings, realm)}/complete/{provider.path}/"


def ip_allowed(pages: Pages, client_ip: str) -> bool:
    settings = pages.services.settings
    return pages.services.rate_limiter.hit(f"auth-ip:{client_ip}", settings.auth_rate_limit_per_ip).allowed


def _provider_for(pages: Pages, realm: Realm, path: str) -> OAuthProvider | None:
    provider = pages.services.settings.auth.provider(path)
    if provider is None or not method_enabled(pages.services.settings, realm, provider.zulip_method):
        return None
    return provider


def unavailable_page(pages: Pages, realm: Realm) -> Response:
    """The page for a provider this server or organization does not offer."""
    return error_page(
        pages,
        realm,
        gettext("Sign-in method not available"),
        gettext("This organization does not use it."),
        404,
    )


def too_many_page(pages: Pages, realm: Realm) -> Response:
    """The page for a client over the sign-in rate limit."""
    return error_page(
        pages, realm, gettext("Too many attempts"), gettext("Please wait a while and try again."), 429
    )


def open_sign_in(
    pages: Pages,
    session: Session,
    request: Request,
    params: dict[str, str],
    client_ip: str,
    find: Callable[[Realm], P | None],
) -> tuple[Realm, P, flows.AppFlow | None] | Response:
    """The checks every provider's sign-in starts with, in this order: the organization at
    this address and open, the provider (``find``) offered by it, the client under the rate
    limit, the desktop app's hand-off page, a well-formed app-flow pad. Returns the realm,
    the provider and the app flow, or the page that ends the attempt."""
    realm = realm_for(session, pages, request.headers.get("host", ""))
    if realm is None:
        return no_realm(pages)
    if realm.deactivated:
        return error_page(
            pages,
            realm,
            gettext("Organization deactivated"),
            gettext("This organization has been deactivated."),
            403,
        )
    provider = find(realm)
    if provider is None:
        return unavailable_page(pages, realm)
    if not ip_allowed(pages, client_ip):
        return too_many_page(pages, realm)
    desktop_app = desktop_app_page(pages, request, realm.name)
    if desktop_app is not None:
        return desktop_app
    try:
        flow = flows.from_params(params)
    except flows.InvalidAppFlowError as e:
        return error_page(pages, realm, gettext("Bad request"), str(e), 400)
    return realm, provider, flow


def begin(pages: Pages, request: Request, path: str, params: dict[str, str], client_ip: str) -> Response:
    services = pages.services
    with services.db.session() as session:
        opened = open_sign_in(
            pages, session, request, params, client_ip, lambda realm: _provider_for(pages, realm, path)
        )
        if isinstance(opened, Response):
            return opened
        realm, provider, flow = opened
        # httpx, authlib and joserfc load with the first sign-in through a provider.
        from palaver.lib import oidc  # noqa: PLC0415

        try:
            authorization = oidc.begin(provider, _redirect_uri(pages, realm, provider))
        except JsonableError as e:
            return error_page(
                pages,
                realm,
                gettext("%(provider)s is unavailable", provider=provider.display_name),
                e.msg,
                502,
            )
        browser = new_token()
        do_begin_sso_attempt(
            session,
            realm_id=realm.id,
            provider=provider.path,
            state=authorization.state,
            browser_token=browser,
            nonce=authorization.nonce,
            code_verifier=authorization.code_verifier,
            next_path=safe_next(params.get("next")),
            mobile_flow_otp=flow.stored() if flow is not None else None,
            now=services.clock(),
        )
    response = RedirectResponse(authorization.url, status_code=302, headers={"Cache-Control": "no-store"})
    response.set_cookie(
        SSO_COOKIE,
        browser,
        max_age=int(ATTEMPT_LIFETIME.total_seconds()),
        httponly=True,
        # Lax: sent on the provider's top-level redirect back, never on a cross-site subrequest.
        samesite="lax",
        secure=pages.secure,
        path=_COOKIE_PATH,
    )
    return response


def complete(pages: Pages, request: Request, path: str, client_ip: str) -> Response:
    services = pages.services
    params = request.query_params
    with services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        provider = _provider_for(pages, realm, path)
        if provider is None:
            return error_page(
                pages,
                realm,
                gettext("Sign-in method not available"),
                gettext("This organization does not use it."),
                404,
            )
        if not ip_allowed(pages, client_ip):
            return error_page(
                pages, realm, gettext("Too many attempts"), gettext("Please wait a while and try again."), 429
            )
        pending = do_take_sso_attempt(
            session,
            state=params.get("state", ""),
            browser_token=request.cookies.get(SSO_COOKIE, ""),
            now=services.clock(),
        )
        if pending is None or pending.provider != provider.path or pending.realm_id != realm.id:
            text = gettext(
                "This sign-in has expired, was already used, or was started in another browser. Try again."
            )
            return _clear_cookie(pages, error_page(pages, realm, gettext("Sign-in expired"), text, 400))
        if "error" in params or "code" not in params:
            reason = params.get("error_description") or params.get("error") or "no authorization code"
            text = gettext(
                "%(provider)s did not sign you in: %(reason)s", provider=provider.display_name, reason=reason
            )
            return _clear_cookie(pages, error_page(pages, realm, gettext("Sign-in cancelled"), text, 403))
        from palaver.lib import oidc  # noqa: PLC0415  (loaded with the first sign-in)

        try:
            account = oidc.complete(
                provider,
                _redirect_uri(pages, realm, provider),
                params["code"],
                pending.code_verifier,
                pending.nonce,
            )
            user = do_external_sign_in(
                session,
                realm,
                account,
                email_host=realm_email_host(services.settings, realm),
                storage=make_storage(services.settings),
                provider=provider,
            )
        except UserDeactivatedError:
            text = gettext("Your account has been deactivated. Ask an administrator of the organization.")
            return _clear_cookie(pages, error_page(pages, realm, gettext("Account deactivated"), text, 403))
        except JsonableError as e:
            session.rollback()
            return _clear_cookie(
                pages, error_page(pages, realm, gettext("Sign-in refused"), e.msg, e.http_status)
            )
        response = finish_login(
            pages,
            session,
            realm,
            user,
            method=provider.button_name,
            client_ip=client_ip,
            user_agent=request.headers.get("user-agent", ""),
            next_path=pending.next_path,
            app_flow=pending.mobile_flow_otp,
        )
    return _clear_cookie(pages, response)


def _clear_cookie(pages: Pages, response: Response) -> Response:
    response.delete_cookie(SSO_COOKIE, path=_COOKIE_PATH, secure=pages.secure, httponly=True, samesite="lax")
    return response


def sso_routes(pages: Pages) -> list[Route]:
    async def start(request: Request) -> Response:
        params = dict(request.query_params)
        if request.method == "POST":
            form = await request.form()
            params |= {k: v for k, v in form.items() if isinstance(v, str)}
        ip = request.client.host if request.client else ""
        return await run_in_threadpool(
            begin, pages, request, str(request.path_params["provider"]), params, ip
        )

    async def callback(request: Request) -> Response:
        ip = request.client.host if request.client else ""
        return await run_in_threadpool(complete, pages, request, str(request.path_params["provider"]), ip)

    return [
        Route("/accounts/login/social/{provider:path}", start, methods=["GET", "POST"]),
        Route("/accounts/register/social/{provider:path}", start, methods=["GET", "POST"]),
        Route("/complete/{provider:path}/", callback, methods=["GET"]),
    ]
