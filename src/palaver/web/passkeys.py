"""Passkeys (WebAuthn, py_webauthn): registering them on the security page, signing in with
one instead of a password, or using one after a password as the second factor. The page's
script (static/login/passkeys.js) runs the browser's side; these JSON endpoints make the
options and verify what the authenticator signed.

Each ceremony's challenge is stored server-side, named by an HttpOnly cookie, and used once.
Writes carry the CSRF token in ``X-CSRFToken``: the session's for registration, the login
form's double-submitted one for sign-in.

py_webauthn (and the cryptography it loads) is imported inside each ceremony, so a server
whose users never touch a passkey does not hold it.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from palaver.actions.passkeys import (
    CHALLENGE_LIFETIME,
    do_add_passkey,
    do_record_passkey_use,
    do_store_webauthn_challenge,
    do_take_webauthn_challenge,
)
from palaver.actions.two_factor import do_finish_pending_login
from palaver.lib import app_flow as flows
from palaver.lib.exceptions import JsonableError
from palaver.lib.passkeys import CHALLENGE_COOKIE, passkey_by_credential_id, passkeys_of, relying_party
from palaver.lib.two_factor import pending_login
from palaver.lib.web_sessions import CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE, tokens_match
from palaver.models import UserProfile
from palaver.web.pages import Pages, finish_login, login_token, no_realm, realm_for, safe_next
from palaver.web.sessions import session_user
from palaver.web.two_factor import remember_browser

# The challenge of a passkey used as the second factor, after a password.
SECOND_FACTOR = "second_factor"


def _error(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"result": "error", "msg": message}, status_code=status)


def _with_challenge(pages: Pages, body: str, token: str) -> Response:
    response = Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})
    response.set_cookie(
        CHALLENGE_COOKIE,
        token,
        max_age=int(CHALLENGE_LIFETIME.total_seconds()),
        httponly=True,
        samesite="strict",
        secure=pages.secure,
        path="/accounts/",
    )
    return response


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def register_options(pages: Pages, request: Request) -> Response:
    from webauthn import generate_registration_options, options_to_json  # noqa: PLC0415
    from webauthn.helpers import base64url_to_bytes, bytes_to_base64url  # noqa: PLC0415
    from webauthn.helpers.structs import (  # noqa: PLC0415
        AuthenticatorSelectionCriteria,
        PublicKeyCredentialDescriptor,
        ResidentKeyRequirement,
        UserVerificationRequirement,
    )

    services = pages.services
    with services.db.session() as session:
        host = request.headers.get("host", "")
        found = session_user(session, services, host, request.cookies.get(SESSION_COOKIE))
        if found is None or not found[1].is_active:
            return _error("Not signed in.", 401)
        row, user = found
        if not tokens_match(row.csrf_token, request.headers.get(CSRF_HEADER)):
            return _error("CSRF error: try again.", 403)
        rp_id, _ = relying_party(services.settings, user.realm)
        options = generate_registration_options(
            rp_id=rp_id,
            rp_name=user.realm.name,
            user_id=str(user.id).encode(),
            user_name=user.delivery_email,
            user_display_name=user.full_name,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.REQUIRED,
                user_verification=UserVerificationRequirement.REQUIRED,
            ),
            exclude_credentials=[
                PublicKeyCredentialDescriptor(id=base64url_to_bytes(p.credential_id))
                for p in passkeys_of(session, user.id)
            ],
        )
        token = do_store_webauthn_challenge(
            session,
            realm_id=user.realm_id,
            user_id=user.id,
            purpose="register",
            challenge=bytes_to_base64url(options.challenge),
            now=services.clock(),
        )
    return _with_challenge(pages, options_to_json(options), token)


def register_verify(pages: Pages, request: Request, raw: bytes) -> Response:
    from webauthn import verify_registration_response  # noqa: PLC0415
    from webauthn.helpers import base64url_to_bytes, bytes_to_base64url  # noqa: PLC0415
    from webauthn.helpers.exceptions import InvalidRegistrationResponse  # noqa: PLC0415

    services = pages.services
    body = _json(raw)
    with services.db.session() as session:
        host = request.headers.get("host", "")
        found = session_user(session, services, host, request.cookies.get(SESSION_COOKIE))
        if found is None or not found[1].is_active:
            return _error("Not signed in.", 401)
        row, user = found
        if not tokens_match(row.csrf_token, request.headers.get(CSRF_HEADER)):
            return _error("CSRF error: try again.", 403)
        challenge = do_take_webauthn_challenge(
            session,
            token=request.cookies.get(CHALLENGE_COOKIE, ""),
            realm_id=user.realm_id,
            purpose="register",
            now=services.clock(),
        )
        if challenge is None or challenge.user_id != user.id:
            return _error("This passkey request has expired. Try again.")
        rp_id, origin = relying_party(services.settings, user.realm)
        try:
            verified = verify_registration_response(
                credential=body.get("credential") or {},
                expected_challenge=base64url_to_bytes(challenge.challenge),
                expected_rp_id=rp_id,
                expected_origin=origin,
                require_user_verification=True,
            )
            do_add_passkey(
                session,
                user,
                credential_id=bytes_to_base64url(verified.credential_id),
                public_key=bytes_to_base64url(verified.credential_public_key),
                sign_count=verified.sign_count,
                name=str(body.get("name") or ""),
            )
        except InvalidRegistrationResponse as e:
            return _error(f"The passkey could not be registered: {e}")
        except JsonableError as e:
            return _error(e.msg)
    return JSONResponse({"result": "success", "msg": ""})


def _login_csrf_ok(request: Request) -> bool:
    return tokens_match(request.cookies.get(CSRF_COOKIE, ""), request.headers.get(CSRF_HEADER))


def login_options(pages: Pages, request: Request, client_ip: str) -> Response:
    from webauthn import generate_authentication_options, options_to_json  # noqa: PLC0415
    from webauthn.helpers import bytes_to_base64url  # noqa: PLC0415
    from webauthn.helpers.structs import UserVerificationRequirement  # noqa: PLC0415

    services = pages.services
    with services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None or realm.deactivated:
            return _error("There is no organization here.", 404)
        if not _login_csrf_ok(request):
            return _error("Your login form had expired. Please reload the page.", 403)
        limit = services.rate_limiter.hit(f"auth-ip:{client_ip}", services.settings.auth_rate_limit_per_ip)
        if not limit.allowed:
            return _error("Too many login attempts. Please wait a while and try again.", 429)
        rp_id, _ = relying_party(services.settings, realm)
        # No allowed list: the authenticator offers the passkeys it holds for this site.
        options = generate_authentication_options(
            rp_id=rp_id, user_verification=UserVerificationRequirement.REQUIRED
        )
        token = do_store_webauthn_challenge(
            session,
            realm_id=realm.id,
            user_id=None,
            purpose="authenticate",
            challenge=bytes_to_base64url(options.challenge),
            now=services.clock(),
        )
    return _with_challenge(pages, options_to_json(options), token)


def login_verify(pages: Pages, request: Request, raw: bytes, client_ip: str) -> Response:
    from webauthn import verify_authentication_response  # noqa: PLC0415
    from webauthn.helpers import base64url_to_bytes  # noqa: PLC0415
    from webauthn.helpers.exceptions import InvalidAuthenticationResponse  # noqa: PLC0415

    services = pages.services
    body = _json(raw)
    credential = body.get("credential")
    with services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None or realm.deactivated:
            return _error("There is no organization here.", 404)
        if not _login_csrf_ok(request):
            return _error("Your login form had expired. Please reload the page.", 403)
        challenge = do_take_webauthn_challenge(
            session,
            token=request.cookies.get(CHALLENGE_COOKIE, ""),
            realm_id=realm.id,
            purpose="authenticate",
            now=services.clock(),
        )
        if challenge is None or not isinstance(credential, dict):
            return _error("This sign-in has expired. Try again.")
        passkey = passkey_by_credential_id(session, str(credential.get("id") or ""))
        user = session.get(UserProfile, passkey.user_profile_id) if passkey is not None else None
        if passkey is None or user is None or user.realm_id != realm.id:
            return _error("This passkey is not registered here.", 401)
        rp_id, origin = relying_party(services.settings, realm)
        try:
            verified = verify_authentication_response(
                credential=credential,
                expected_challenge=base64url_to_bytes(challenge.challenge),
                expected_rp_id=rp_id,
                expected_origin=origin,
                credential_public_key=base64url_to_bytes(passkey.public_key),
                credential_current_sign_count=passkey.sign_count,
                require_user_verification=True,
            )
        except InvalidAuthenticationResponse as e:
            return _error(f"The passkey was not accepted: {e}", 401)
        if not user.is_active:
            return _error("Your account has been deactivated. Ask an administrator of the organization.", 401)
        do_record_passkey_use(session, passkey, sign_count=verified.new_sign_count, now=services.clock())
        stored = body.get("app_flow")
        redirect = finish_login(
            pages,
            session,
            realm,
            user,
            method="passkey",
            client_ip=client_ip,
            user_agent=request.headers.get("user-agent", ""),
            next_path=safe_next(str(body.get("next") or "/")),
            # The login page's own value of the flow, passed through the page's script.
            app_flow=stored if isinstance(stored, str) and flows.from_stored(stored) is not None else None,
        )
    return _follow(pages, redirect)


def _pending_user(pages: Pages, request: Request, session: Session, token: str) -> UserProfile | None:
    """The user a password sign-in owes a second factor for, on this organization's host."""
    realm = realm_for(session, pages, request.headers.get("host", ""))
    pending = pending_login(session, token, pages.services.clock())
    user = session.get(UserProfile, pending.user_id) if pending is not None else None
    if realm is None or user is None or user.realm_id != realm.id or not user.is_active:
        return None
    return user


def second_factor_options(pages: Pages, request: Request, raw: bytes) -> Response:
    """A challenge for one of the pending user's own passkeys (the step after a password)."""
    from webauthn import generate_authentication_options, options_to_json  # noqa: PLC0415
    from webauthn.helpers import base64url_to_bytes, bytes_to_base64url  # noqa: PLC0415
    from webauthn.helpers.structs import (  # noqa: PLC0415
        PublicKeyCredentialDescriptor,
        UserVerificationRequirement,
    )

    services = pages.services
    with services.db.session() as session:
        if not _login_csrf_ok(request):
            return _error("Your login form had expired. Please reload the page.", 403)
        user = _pending_user(pages, request, session, str(_json(raw).get("pending") or ""))
        if user is None:
            return _error("This sign-in has expired. Sign in again.", 401)
        passkeys = passkeys_of(session, user.id)
        if not passkeys:
            return _error("You have no passkey yet.")
        rp_id, _ = relying_party(services.settings, user.realm)
        options = generate_authentication_options(
            rp_id=rp_id,
            user_verification=UserVerificationRequirement.PREFERRED,
            allow_credentials=[
                PublicKeyCredentialDescriptor(id=base64url_to_bytes(p.credential_id)) for p in passkeys
            ],
        )
        token = do_store_webauthn_challenge(
            session,
            realm_id=user.realm_id,
            user_id=user.id,
            purpose=SECOND_FACTOR,
            challenge=bytes_to_base64url(options.challenge),
            now=services.clock(),
        )
    return _with_challenge(pages, options_to_json(options), token)


def second_factor_verify(pages: Pages, request: Request, raw: bytes, client_ip: str) -> Response:
    """The pending sign-in finished by one of the user's passkeys, in place of a code."""
    from webauthn import verify_authentication_response  # noqa: PLC0415
    from webauthn.helpers import base64url_to_bytes  # noqa: PLC0415
    from webauthn.helpers.exceptions import InvalidAuthenticationResponse  # noqa: PLC0415

    services = pages.services
    body = _json(raw)
    credential = body.get("credential")
    token = str(body.get("pending") or "")
    with services.db.session() as session:
        if not _login_csrf_ok(request):
            return _error("Your login form had expired. Please reload the page.", 403)
        user = _pending_user(pages, request, session, token)
        pending = pending_login(session, token, services.clock())
        if user is None or pending is None:
            return _error("This sign-in has expired. Sign in again.", 401)
        # Counted with the codes: one limit on every way of finishing this sign-in.
        limit = services.rate_limiter.hit(f"2fa:{user.id}", services.settings.auth_rate_limit_per_username)
        if not limit.allowed:
            return _error("Too many attempts. Please wait a while and try again.", 429)
        challenge = do_take_webauthn_challenge(
            session,
            token=request.cookies.get(CHALLENGE_COOKIE, ""),
            realm_id=user.realm_id,
            purpose=SECOND_FACTOR,
            now=services.clock(),
        )
        if challenge is None or challenge.user_id != user.id or not isinstance(credential, dict):
            return _error("This passkey request has expired. Try again.")
        passkey = passkey_by_credential_id(session, str(credential.get("id") or ""))
        if passkey is None or passkey.user_profile_id != user.id:
            return _error("This passkey is not one of yours.", 401)
        rp_id, origin = relying_party(services.settings, user.realm)
        try:
            verified = verify_authentication_response(
                credential=credential,
                expected_challenge=base64url_to_bytes(challenge.challenge),
                expected_rp_id=rp_id,
                expected_origin=origin,
                credential_public_key=base64url_to_bytes(passkey.public_key),
                credential_current_sign_count=passkey.sign_count,
            )
        except InvalidAuthenticationResponse as e:
            return _error(f"The passkey was not accepted: {e}", 401)
        do_record_passkey_use(session, passkey, sign_count=verified.new_sign_count, now=services.clock())
        do_finish_pending_login(session, token)
        redirect = finish_login(
            pages,
            session,
            user.realm,
            user,
            method=pending.method,
            client_ip=client_ip,
            user_agent=request.headers.get("user-agent", ""),
            next_path=pending.next_path,
            app_flow=pending.mobile_flow_otp,
        )
        if body.get("remember") is True and pending.mobile_flow_otp is None:
            remember_browser(pages, session, user, redirect)
    return _follow(pages, redirect)


def _follow(pages: Pages, redirect: Response) -> Response:
    """The sign-in's redirect as JSON, for the page's script to follow (it may be the app's
    zulip:// URL), with the redirect's cookies."""
    response = JSONResponse({"result": "success", "msg": "", "redirect": redirect.headers["location"]})
    response.raw_headers.extend((k, v) for k, v in redirect.raw_headers if k == b"set-cookie")
    response.delete_cookie(CHALLENGE_COOKIE, path="/accounts/", secure=pages.secure, httponly=True)
    return response


def login_page(pages: Pages, request: Request) -> Response:
    with pages.services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        try:
            flow = flows.from_params(request.query_params)
        except flows.InvalidAppFlowError:
            flow = None
        csrf = login_token(request)
        response = pages.render(
            "passkey_login.html",
            realm_name=realm.name,
            next=safe_next(request.query_params.get("next")),
            app_flow=flow.stored() if flow is not None else None,
        )
    response.set_cookie(CSRF_COOKIE, csrf, httponly=False, samesite="lax", secure=pages.secure, path="/")
    return response


def passkey_routes(pages: Pages) -> list[Route]:
    def ip(request: Request) -> str:
        return request.client.host if request.client else ""

    async def page(request: Request) -> Response:
        return await run_in_threadpool(login_page, pages, request)

    async def reg_options(request: Request) -> Response:
        return await run_in_threadpool(register_options, pages, request)

    async def reg_verify(request: Request) -> Response:
        raw = await request.body()
        return await run_in_threadpool(register_verify, pages, request, raw)

    async def auth_options(request: Request) -> Response:
        return await run_in_threadpool(login_options, pages, request, ip(request))

    async def auth_verify(request: Request) -> Response:
        raw = await request.body()
        return await run_in_threadpool(login_verify, pages, request, raw, ip(request))

    async def second_options(request: Request) -> Response:
        raw = await request.body()
        return await run_in_threadpool(second_factor_options, pages, request, raw)

    async def second_verify(request: Request) -> Response:
        raw = await request.body()
        return await run_in_threadpool(second_factor_verify, pages, request, raw, ip(request))

    return [
        Route("/accounts/login/passkey/", page, methods=["GET"]),
        Route("/accounts/passkeys/register/options", reg_options, methods=["POST"]),
        Route("/accounts/passkeys/register/verify", reg_verify, methods=["POST"]),
        Route("/accounts/login/passkey/options", auth_options, methods=["POST"]),
        Route("/accounts/login/passkey/verify", auth_verify, methods=["POST"]),
        Route("/accounts/login/2fa/passkey/options", second_options, methods=["POST"]),
        Route("/accounts/login/2fa/passkey/verify", second_verify, methods=["POST"]),
    ]
