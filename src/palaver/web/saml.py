"""Signing in with a SAML 2.0 identity provider: the "Sign in with …" buttons of the
``[auth.saml.NAME]`` tables, with Zulip's URLs.

``/accounts/login/social/saml/NAME`` (and ``/accounts/register/social/saml/NAME``) sends the
browser to the IdP with a signed AuthnRequest; the IdP posts its answer to
``/complete/saml/``, which also takes the IdP's answer to a logout. Our metadata is at
``/saml/metadata.xml`` (``?idp=NAME`` when the IdPs know us by different entity IDs).

The request's ID is stored (hashed) with a random cookie set on the way out; the answer must
name that ID in ``InResponseTo`` and come back with the cookie, and the pair works once
(actions/sso_attempts.py). The cookie is ``SameSite=None`` over HTTPS, since the IdP's answer
is a cross-site POST: it is a random binding value, worth nothing without the request.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaver.actions.external_logins import do_external_sign_in
from palaver.actions.saml import do_end_saml_sessions, do_link_saml_session, do_spend_saml_assertion
from palaver.actions.sso_attempts import ATTEMPT_LIFETIME, do_begin_sso_attempt, do_take_sso_attempt
from palaver.auth_config import SamlIdp
from palaver.lib import saml
from palaver.lib.auth_methods import SAML, method_enabled
from palaver.lib.exceptions import JsonableError, UserDeactivatedError
from palaver.lib.i18n import gettext
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.storage import make_storage
from palaver.lib.web_sessions import new_token
from palaver.models import Realm
from palaver.models.web_sessions import WebSession
from palaver.web.pages import NO_STORE, Pages, finish_login, no_realm, realm_for, safe_next
from palaver.web.sso import error_page, ip_allowed, open_sign_in, too_many_page, unavailable_page

SAML_COOKIE = "palaver_saml"


def _idp(pages: Pages, realm: Realm, name: str) -> SamlIdp | None:
    idp = pages.services.settings.auth.saml.get(name)
    if idp is None or not method_enabled(pages.services.settings, realm, SAML):
        return None
    return idp


def _refused(pages: Pages, realm: Realm, text: str, status: int = 403) -> Response:
    return _clear_cookie(pages, error_page(pages, realm, gettext("Sign-in refused"), text, status))


def _cookie_samesite(pages: Pages) -> str:
    # Browsers send only SameSite=None cookies with a cross-site POST, and only Secure ones.
    return "none" if pages.secure else "lax"


def begin(pages: Pages, request: Request, name: str, params: dict[str, str], client_ip: str) -> Response:
    services = pages.services
    with services.db.session() as session:
        opened = open_sign_in(
            pages, session, request, params, client_ip, lambda realm: _idp(pages, realm, name)
        )
        if isinstance(opened, Response):
            return opened
        realm, idp, flow = opened
        try:
            request_id, location = saml.begin(idp, realm_url(services.settings, realm))
        except JsonableError as e:
            return error_page(
                pages, realm, gettext("%(provider)s is unavailable", provider=idp.display_name), e.msg, 502
            )
        browser = new_token()
        do_begin_sso_attempt(
            session,
            realm_id=realm.id,
            provider=idp.path,
            state=request_id,
            browser_token=browser,
            nonce="",
            code_verifier="",
            next_path=safe_next(params.get("next")),
            mobile_flow_otp=flow.stored() if flow is not None else None,
            now=services.clock(),
        )
    response = Response(status_code=302, headers={"Location": location, **NO_STORE})
    response.set_cookie(
        SAML_COOKIE,
        browser,
        max_age=int(ATTEMPT_LIFETIME.total_seconds()),
        httponly=True,
        samesite=_cookie_samesite(pages),  # type: ignore[arg-type]
        secure=pages.secure,
        path=saml.ACS_PATH,
    )
    return response


def _idp_by_issuer(pages: Pages, realm: Realm, issuer: str) -> SamlIdp | None:
    if not method_enabled(pages.services.settings, realm, SAML):
        return None
    url = realm_url(pages.services.settings, realm)
    for idp in pages.services.settings.auth.saml.values():
        try:
            if saml.idp_entity_id(idp, url) == issuer:
                return idp
        except JsonableError:
            continue
    return None


def assertion_consumer(pages: Pages, request: Request, form: dict[str, str], client_ip: str) -> Response:
    services = pages.services
    with services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        if not ip_allowed(pages, client_ip):
            return too_many_page(pages, realm)
        encoded = form.get("SAMLResponse", "")
        message = saml.read_message(encoded) if encoded else None
        if message is None:
            return _refused(pages, realm, gettext("The identity provider's answer is unreadable."), 400)
        if message.kind == "LogoutResponse":
            return _logout_done(pages, realm, message, encoded, saml.POST)
        return _sign_in(pages, session, request, realm, message, encoded, client_ip)


def _sign_in(
    pages: Pages,
    session: Session,
    request: Request,
    realm: Realm,
    message: saml.SamlMessage,
    encoded: str,
    client_ip: str,
) -> Response:
    services = pages.services
    idp = _idp_by_issuer(pages, realm, message.issuer)
    if message.kind != "Response" or idp is None:
        text = gettext("This answer comes from no identity provider of this organization.")
        return _refused(pages, realm, text)
    url = realm_url(services.settings, realm)
    if not message.in_response_to and not idp.idp_initiated:
        text = gettext(
            "%(provider)s sent a sign-in that was not started here. Start from the login page.",
            provider=idp.display_name,
        )
        return _refused(pages, realm, text)
    now = services.clock()
    try:
        signed_in = saml.complete(idp, url, encoded, message.in_response_to)
        do_spend_saml_assertion(
            session, assertion_key=signed_in.assertion_key, expires=signed_in.expires, now=now
        )
    except JsonableError as e:
        session.rollback()
        return _refused(pages, realm, e.msg)
    taken = _take_request(pages, session, request, realm, idp, message.in_response_to)
    if isinstance(taken, Response):
        return taken
    next_path, otp = taken
    try:
        user = do_external_sign_in(
            session,
            realm,
            signed_in.account,
            email_host=realm_email_host(services.settings, realm),
            storage=make_storage(services.settings),
            provider=idp,
        )
    except UserDeactivatedError:
        text = gettext("Your account has been deactivated. Ask an administrator of the organization.")
        return _clear_cookie(pages, error_page(pages, realm, gettext("Account deactivated"), text, 403))
    except JsonableError as e:
        session.rollback()
        return _refused(pages, realm, e.msg, e.http_status)

    def link(row: WebSession) -> None:
        do_link_saml_session(
            session,
            web_session_id=row.id,
            provider=idp.path,
            name_id_xml=signed_in.name_id_xml,
            session_index=signed_in.session_index,
        )

    response = finish_login(
        pages,
        session,
        realm,
        user,
        method=idp.button_name,
        client_ip=client_ip,
        user_agent=request.headers.get("user-agent", ""),
        next_path=next_path,
        app_flow=otp,
        on_session=link,
    )
    return _clear_cookie(pages, response)


def _take_request(
    pages: Pages, session: Session, request: Request, realm: Realm, idp: SamlIdp, request_id: str
) -> tuple[str, str | None] | Response:
    """Spend the request an answer claims to answer (it must be this browser's): where to go
    next, and the app's pad. An IdP-initiated answer (allowed) goes to the app's home."""
    if not request_id:
        return "/", None
    pending = do_take_sso_attempt(
        session,
        state=request_id,
        browser_token=request.cookies.get(SAML_COOKIE, ""),
        now=pages.services.clock(),
    )
    if pending is None or pending.provider != idp.path or pending.realm_id != realm.id:
        text = gettext(
            "This sign-in has expired, was already used, or was started in another browser. Try again."
        )
        return _clear_cookie(pages, error_page(pages, realm, gettext("Sign-in expired"), text, 400))
    return pending.next_path, pending.mobile_flow_otp


def _logout_done(
    pages: Pages, realm: Realm, message: saml.SamlMessage, encoded: str, binding: str
) -> Response:
    """The IdP's answer to our LogoutRequest: the Palaver session ended before we asked."""
    idp = _idp_by_issuer(pages, realm, message.issuer)
    url = realm_url(pages.services.settings, realm)
    confirmed = idp is not None and saml.logout_confirmed(idp, url, encoded, binding)
    if confirmed and idp is not None:
        text = gettext("You are signed out of %(provider)s too.", provider=idp.display_name)
    else:
        text = gettext("The identity provider did not confirm that it signed you out there.")
    return pages.render(
        "signed_out.html", 200, realm_name=realm.name, heading=gettext("You are signed out"), text=text
    )


def single_logout_redirect(pages: Pages, request: Request) -> Response:
    """``/complete/saml/`` by GET: the IdP's LogoutResponse by the Redirect binding."""
    with pages.services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        query = request.query_params
        if "SAMLRequest" in query:
            return _idp_logout(pages, session, realm, query)
        encoded = query.get("SAMLResponse", "")
        message = saml.read_message(encoded, deflated=True) if encoded else None
        if message is None or message.kind != "LogoutResponse":
            return _refused(pages, realm, gettext("The identity provider's answer is unreadable."), 400)
        return _logout_done(pages, realm, message, encoded, saml.REDIRECT)


def _idp_logout(pages: Pages, session: Session, realm: Realm, query: Mapping[str, str]) -> Response:
    """IdP-initiated single logout: end the sessions the IdP names, and answer it."""
    encoded = query.get("SAMLRequest", "")
    message = saml.read_message(encoded, deflated=True)
    idp = _idp_by_issuer(pages, realm, message.issuer) if message is not None else None
    url = realm_url(pages.services.settings, realm)
    logout = (
        saml.take_logout_request(
            idp, url, encoded, query.get("RelayState"), query.get("SigAlg", ""), query.get("Signature", "")
        )
        if idp is not None and message is not None and message.kind == "LogoutRequest"
        else None
    )
    if idp is None or logout is None:
        return _refused(pages, realm, gettext("The identity provider's answer is unreadable."), 400)
    do_end_saml_sessions(
        session,
        realm_id=realm.id,
        provider=idp.path,
        name_id=logout.name_id,
        session_indexes=logout.session_indexes,
    )
    return Response(status_code=302, headers={"Location": logout.answer_url, **NO_STORE})


def metadata(pages: Pages, request: Request) -> Response:
    settings = pages.services.settings
    with pages.services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        idps = settings.auth.saml
        name = request.query_params.get("idp") or next(iter(idps), "")
        idp = idps.get(name)
        if idp is None:
            return unavailable_page(pages, realm)
        document = saml.sp_metadata(idp, realm_url(settings, realm))
    return Response(document, media_type="application/samlmetadata+xml", headers=NO_STORE)


def _clear_cookie(pages: Pages, response: Response) -> Response:
    response.delete_cookie(
        SAML_COOKIE,
        path=saml.ACS_PATH,
        secure=pages.secure,
        httponly=True,
        samesite=_cookie_samesite(pages),  # type: ignore[arg-type]
    )
    return response


def saml_routes(pages: Pages) -> list[Route]:
    async def start(request: Request) -> Response:
        params = dict(request.query_params)
        ip = request.client.host if request.client else ""
        return await run_in_threadpool(begin, pages, request, str(request.path_params["name"]), params, ip)

    async def complete(request: Request) -> Response:
        if request.method == "GET":
            return await run_in_threadpool(single_logout_redirect, pages, request)
        try:
            form = await request.form()
        except Exception:
            # A malformed body is a refused sign-in, not a server error.
            form = None
        values = {k: v for k, v in form.items() if isinstance(v, str)} if form is not None else {}
        ip = request.client.host if request.client else ""
        return await run_in_threadpool(assertion_consumer, pages, request, values, ip)

    async def sp_metadata(request: Request) -> Response:
        return await run_in_threadpool(metadata, pages, request)

    return [
        Route("/accounts/login/social/saml/{name}", start, methods=["GET"]),
        Route("/accounts/register/social/saml/{name}", start, methods=["GET"]),
        Route(saml.ACS_PATH, complete, methods=["GET", "POST"]),
        Route(saml.METADATA_PATH, sp_metadata, methods=["GET"]),
    ]
