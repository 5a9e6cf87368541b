"""Sign-up: ``/join/<key>/`` (an invitation or a reusable link) and ``/register/`` (open
sign-up, where the realm does not require an invitation)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.actions.invites import do_accept_invite
from palaver.lib.exceptions import JsonableError
from palaver.lib.i18n import N_, gettext
from palaver.lib.invites import live_invite_by_key
from palaver.lib.realm import realm_email_host
from palaver.lib.users import check_email, check_full_name
from palaver.models import UserProfile
from palaver.models.invites import Invitation
from palaver.services import Services
from palaver.web_pages.render import (
    MIN_PASSWORD_LENGTH,
    login_link,
    message_page,
    page,
    posted_fields,
    realm_or_page,
)

_EXPIRED = N_("This invitation link has expired or has been revoked. Ask for a new one.")


def _form_page(
    invite: Invitation | None,
    referrer: UserProfile | None,
    realm_name: str,
    action: str,
    *,
    status: int = 200,
    error: str | None = None,
    email: str = "",
    full_name: str = "",
) -> Response:
    fixed = invite is not None and not invite.is_multiuse
    return page(
        "signup",
        status,
        realm_name=realm_name,
        referrer_name=referrer.full_name if referrer is not None else None,
        action=action,
        fixed_email=fixed,
        email=invite.email if fixed and invite is not None else email,
        full_name=full_name,
        error=error,
    )


def _handle(services: Services, host: str, key: str | None, form: dict[str, str] | None) -> Response:
    settings = services.settings
    with services.db.session() as session:
        realm = realm_or_page(session, settings, host)
        if isinstance(realm, Response):
            return realm
        invite: Invitation | None = None
        action = "/register/"
        if key is not None:
            invite = live_invite_by_key(session, realm, key)
            if invite is None:
                return message_page(
                    realm.name, gettext("Invitation expired"), gettext(_EXPIRED), status=404, is_error=True
                )
            action = f"/join/{key}/"
        elif realm.invite_required:
            return message_page(
                realm.name,
                gettext("Invitation required"),
                gettext("You need an invitation to join this organization."),
                status=403,
                is_error=True,
            )
        referrer = session.get(UserProfile, invite.referred_by_id) if invite is not None else None
        if form is None:
            return _form_page(invite, referrer, realm.name, action)
        email = form.get("email", "").strip()
        full_name = form.get("full_name", "")
        if invite is not None and not invite.is_multiuse:
            email = invite.email or ""
        password = form.get("password", "")
        try:
            email = check_email(email)
            full_name = check_full_name(full_name)
            if len(password) < MIN_PASSWORD_LENGTH:
                raise JsonableError(
                    gettext(
                        "The password must be at least %(length)s characters long.",
                        length=MIN_PASSWORD_LENGTH,
                    )
                )
            user = do_accept_invite(
                session,
                realm,
                invite,
                email=email,
                full_name=full_name,
                password_hash=services.passwords.hash(password),
                email_host=realm_email_host(settings, realm),
            )
        except JsonableError as e:
            session.rollback()
            return _form_page(
                invite,
                referrer,
                realm.name,
                action,
                status=400,
                error=e.msg,
                email=email,
                full_name=full_name,
            )
        return message_page(
            realm.name,
            gettext(
                "Welcome to %(realm_name)s, %(full_name)s!", realm_name=realm.name, full_name=user.full_name
            ),
            gettext("Your account %(email)s is ready. You can now log in.", email=user.delivery_email),
            link_url=login_link(settings, realm),
            link_text=gettext("Log in to %(realm_name)s", realm_name=realm.name),
        )


def signup_routes(services: Services) -> list[Route]:
    async def join(request: Request) -> Response:
        form = await posted_fields(request)
        key = str(request.path_params["key"])
        return await run_in_threadpool(_handle, services, request.headers.get("host", ""), key, form)

    async def register(request: Request) -> Response:
        form = await posted_fields(request)
        return await run_in_threadpool(_handle, services, request.headers.get("host", ""), None, form)

    return [
        Route("/join/{key}/", join, methods=["GET", "POST"]),
        Route("/register/", register, methods=["GET", "POST"]),
    ]
