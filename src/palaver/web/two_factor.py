"""Two-factor pages: the code asked after a right password (``/accounts/login/2fa/``), and
setting up or turning off one's authenticator (``/accounts/2fa/``, signed in)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from palaver.actions.passkeys import do_remove_passkey
from palaver.actions.two_factor import (
    do_confirm_two_factor_enrolment,
    do_disable_two_factor,
    do_finish_pending_login,
    do_start_two_factor_enrolment,
    do_trust_browser,
    do_use_second_factor,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.i18n import N_, gettext
from palaver.lib.passkeys import passkeys_of
from palaver.lib.two_factor import (
    TRUSTED_COOKIE,
    confirmed_device,
    pending_login,
    provisioning_uri,
    qr_code_data_uri,
)
from palaver.lib.web_sessions import CSRF_COOKIE, CSRF_FORM_FIELD, SESSION_COOKIE, tokens_match
from palaver.models import UserProfile
from palaver.web.pages import (
    NO_STORE,
    Pages,
    finish_login,
    form_data,
    no_realm,
    realm_for,
    second_factor_challenge,
)
from palaver.web.sessions import session_user

WRONG_CODE = N_("That code is not right, or was already used. Try again.")


def _field(form: FormData, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def verify(pages: Pages, request: Request, form: FormData, client_ip: str) -> Response:
    services = pages.services
    now = services.clock()
    token = _field(form, "pending")
    with services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        pending = pending_login(session, token, now)
        user = session.get(UserProfile, pending.user_id) if pending is not None else None
        if pending is None or user is None or user.realm_id != realm.id or not user.is_active:
            return RedirectResponse("/", status_code=302, headers=NO_STORE)
        if not tokens_match(request.cookies.get(CSRF_COOKIE, ""), _field(form, CSRF_FORM_FIELD) or None):
            return RedirectResponse("/", status_code=302, headers=NO_STORE)

        def again(error: str) -> Response:
            page = second_factor_challenge(
                pages,
                request,
                session,
                user,
                pending.method,
                pending.next_path,
                pending.mobile_flow_otp,
                error=error,
                pending=token,
            )
            assert page is not None
            return page

        # Six digits are a million guesses: the account's own limit counts every try.
        settings = services.settings
        limit = services.rate_limiter.hit(f"2fa:{user.id}", settings.auth_rate_limit_per_username)
        if not limit.allowed:
            return again(gettext("Too many attempts. Please wait a while and try again."))
        if not do_use_second_factor(session, user, _field(form, "code"), now):
            return again(gettext(WRONG_CODE))
        do_finish_pending_login(session, token)
        response = finish_login(
            pages,
            session,
            realm,
            user,
            method=pending.method,
            client_ip=client_ip,
            user_agent=request.headers.get("user-agent", ""),
            next_path=pending.next_path,
            app_flow=pending.mobile_flow_otp,
        )
        if _field(form, "remember") and pending.mobile_flow_otp is None:
            remember_browser(pages, session, user, response)
    return response


def remember_browser(pages: Pages, session: Session, user: UserProfile, response: Response) -> None:
    """Skip the second factor on this browser for ``two_factor_remember_days`` (its owner asked)."""
    days = pages.services.settings.two_factor_remember_days
    trusted = do_trust_browser(session, user, now=pages.services.clock(), days=days)
    response.set_cookie(
        TRUSTED_COOKIE,
        trusted,
        max_age=days * 86400,
        httponly=True,
        samesite="lax",
        secure=pages.secure,
        path="/accounts/login/",
    )


def setup(pages: Pages, request: Request, form: FormData | None) -> Response:
    services = pages.services
    with services.db.session() as session:
        found = session_user(
            session, services, request.headers.get("host", ""), request.cookies.get(SESSION_COOKIE)
        )
        if found is None or not found[1].is_active:
            return RedirectResponse("/?next=/accounts/2fa/", status_code=302, headers=NO_STORE)
        row, user = found
        realm = user.realm
        context: dict[str, Any] = {
            "realm_name": realm.name,
            "csrf_token": row.csrf_token,
            "required": realm.require_two_factor,
            "error": None,
            "recovery_codes": None,
            "enabled": confirmed_device(session, user.id) is not None,
            "passkeys": passkeys_of(session, user.id),
        }
        if form is not None:
            if not tokens_match(row.csrf_token, _field(form, CSRF_FORM_FIELD) or None):
                return pages.html("<!doctype html><title>Forbidden</title><p>CSRF error: try again.</p>", 403)
            action = _field(form, "action")
            try:
                if action == "confirm":
                    codes = do_confirm_two_factor_enrolment(
                        session, user, _field(form, "code"), services.clock()
                    )
                    context.update(recovery_codes=codes, enabled=True)
                    return pages.render("two_factor_setup.html", **context)
                if action == "remove_passkey" and _field(form, "passkey_id").isdigit():
                    do_remove_passkey(session, user, int(_field(form, "passkey_id")))
                    return RedirectResponse("/accounts/2fa/", status_code=302, headers=NO_STORE)
                if action == "disable" and not realm.require_two_factor:
                    do_disable_two_factor(session, user)
                    return RedirectResponse("/accounts/2fa/", status_code=302, headers=NO_STORE)
            except JsonableError as e:
                context["error"] = e.msg
        if context["enabled"]:
            return pages.render("two_factor_setup.html", 400 if context["error"] else 200, **context)
        secret = do_start_two_factor_enrolment(session, user)
        uri = provisioning_uri(secret, user.delivery_email, realm.name)
        context.update(secret=secret, qr_code=qr_code_data_uri(uri))
        return pages.render("two_factor_setup.html", 400 if context["error"] else 200, **context)


def two_factor_routes(pages: Pages) -> list[Route]:
    async def login_code(request: Request) -> Response:
        form = await form_data(request)
        ip = request.client.host if request.client else ""
        return await run_in_threadpool(verify, pages, request, form, ip)

    async def settings_page(request: Request) -> Response:
        form = await form_data(request) if request.method == "POST" else None
        return await run_in_threadpool(setup, pages, request, form)

    return [
        Route("/accounts/login/2fa/", login_code, methods=["POST"]),
        Route("/accounts/2fa/", settings_page, methods=["GET", "POST"]),
    ]
