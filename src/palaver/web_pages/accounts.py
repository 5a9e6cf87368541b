"""Password reset (``/accounts/password/reset/`` and its link) and confirming a new email
address (``/accounts/confirm_new_email/<key>/``)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.actions.account_emails import (
    do_confirm_email_change,
    do_request_password_reset,
    do_reset_password,
    live_confirmation,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.i18n import N_, gettext
from palaver.lib.realm import realm_email_host
from palaver.lib.users import check_email
from palaver.models import UserProfile
from palaver.models.invites import ConfirmationKind
from palaver.services import Services
from palaver.web_pages.render import (
    MIN_PASSWORD_LENGTH,
    login_link,
    message_page,
    page,
    posted_fields,
    realm_or_page,
)

_LINK_EXPIRED = N_("This link has expired or has already been used.")


def _request_reset(services: Services, host: str, client_ip: str, form: dict[str, str] | None) -> Response:
    settings = services.settings
    with services.db.session() as session:
        realm = realm_or_page(session, settings, host)
        if isinstance(realm, Response):
            return realm
        if form is None:
            return page("password_reset_request", realm_name=realm.name, error=None)
        limit = services.rate_limiter.hit(f"password-reset:{client_ip}", settings.auth_rate_limit_per_ip)
        if not limit.allowed:
            return page(
                "password_reset_request",
                429,
                realm_name=realm.name,
                error=gettext("Too many requests; try again later."),
            )
        try:
            email = check_email(form.get("email", ""))
        except JsonableError as e:
            return page("password_reset_request", 400, realm_name=realm.name, error=e.msg)
        do_request_password_reset(session, realm, email)
        return message_page(
            realm.name,
            gettext("Check your email"),
            gettext(
                "If %(email)s has an account here, we have sent it a link to choose a new password.",
                email=email,
            ),
        )


def _reset(services: Services, host: str, key: str, form: dict[str, str] | None) -> Response:
    settings = services.settings
    with services.db.session() as session:
        realm = realm_or_page(session, settings, host)
        if isinstance(realm, Response):
            return realm
        confirmation = live_confirmation(session, key, ConfirmationKind.PASSWORD_RESET)
        user = None
        if confirmation is not None:
            user = session.get(UserProfile, confirmation.user_profile_id)
        if confirmation is None or user is None or user.realm_id != realm.id:
            return message_page(
                realm.name, gettext("Link expired"), gettext(_LINK_EXPIRED), status=404, is_error=True
            )
        action = f"/accounts/password/reset/{key}/"
        context: dict[str, object] = {
            "realm_name": realm.name,
            "email": user.delivery_email,
            "action": action,
        }
        if form is None:
            return page("password_reset_form", 200, error=None, **context)
        password = form.get("new_password", "")
        if len(password) < MIN_PASSWORD_LENGTH:
            error = gettext(
                "The password must be at least %(length)s characters long.", length=MIN_PASSWORD_LENGTH
            )
            return page("password_reset_form", 400, error=error, **context)
        if password != form.get("new_password_again", ""):
            return page("password_reset_form", 400, error=gettext("The passwords do not match."), **context)
        do_reset_password(session, confirmation, services.passwords.hash(password))
        return message_page(
            realm.name,
            gettext("Password changed"),
            gettext("Your password has been changed. You can now log in with it."),
            link_url=login_link(settings, realm),
            link_text=gettext("Log in to %(realm_name)s", realm_name=realm.name),
        )


def _confirm_email(services: Services, host: str, key: str) -> Response:
    settings = services.settings
    with services.db.session() as session:
        realm = realm_or_page(session, settings, host)
        if isinstance(realm, Response):
            return realm
        confirmation = live_confirmation(session, key, ConfirmationKind.EMAIL_CHANGE)
        owner = session.get(UserProfile, confirmation.user_profile_id) if confirmation is not None else None
        # A link answers only on the host of the organization whose account it changes.
        if confirmation is None or owner is None or owner.realm_id != realm.id:
            return message_page(
                realm.name, gettext("Link expired"), gettext(_LINK_EXPIRED), status=404, is_error=True
            )
        try:
            user = do_confirm_email_change(session, confirmation, realm_email_host(settings, realm))
        except JsonableError as e:
            session.rollback()
            return message_page(realm.name, gettext("Email not changed"), e.msg, status=400, is_error=True)
        return message_page(
            realm.name,
            gettext("Email address changed"),
            gettext(
                "Your %(realm_name)s account now uses %(email)s.",
                realm_name=realm.name,
                email=user.delivery_email,
            ),
            link_url=login_link(settings, realm),
            link_text=gettext("Go to %(realm_name)s", realm_name=realm.name),
        )


def account_routes(services: Services) -> list[Route]:
    async def request_reset(request: Request) -> Response:
        form = await posted_fields(request)
        ip = request.client.host if request.client else ""
        return await run_in_threadpool(_request_reset, services, request.headers.get("host", ""), ip, form)

    async def reset(request: Request) -> Response:
        form = await posted_fields(request)
        key = str(request.path_params["key"])
        return await run_in_threadpool(_reset, services, request.headers.get("host", ""), key, form)

    async def confirm_email(request: Request) -> Response:
        key = str(request.path_params["key"])
        return await run_in_threadpool(_confirm_email, services, request.headers.get("host", ""), key)

    return [
        Route("/accounts/password/reset/", request_reset, methods=["GET", "POST"]),
        Route("/accounts/password/reset/{key}/", reset, methods=["GET", "POST"]),
        Route("/accounts/confirm_new_email/{key}/", confirm_email, methods=["GET"]),
    ]
