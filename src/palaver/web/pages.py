"""The browser's pages: ``/`` (the app, or the login form), login and logout.

The login form is protected against login CSRF (a hostile page logging the victim into
the attacker's account) by a double-submitted token: ``GET`` sets a ``csrftoken`` cookie
and puts the same value in a hidden field, and ``POST`` requires the two to agree, which a
page on another site cannot arrange. Once signed in, ``csrftoken`` holds the session's own
token, which the app sends in ``X-CSRFToken`` with every write to /json.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from palaver.actions.app_flow import do_issue_desktop_token
from palaver.actions.logins import do_record_login
from palaver.actions.two_factor import do_begin_pending_login
from palaver.actions.web_sessions import do_create_web_session, do_delete_web_session, do_touch_web_session
from palaver.api.auth import check_login
from palaver.api.context import Ctx
from palaver.config import Settings
from palaver.lib import app_flow as flows
from palaver.lib.auth_methods import EMAIL, LDAP, enabled_methods, enabled_providers, usernames_are_emails
from palaver.lib.exceptions import (
    AuthenticationFailedError,
    JsonableError,
    RateLimitedError,
    RealmDeactivatedError,
    UserDeactivatedError,
)
from palaver.lib.i18n import (
    N_,
    client_catalog_json,
    gettext,
    install,
    set_request_language,
    shipped_languages,
)
from palaver.lib.realm import get_realm_by_string_id, realm_url, subdomain_for_host
from palaver.lib.saml_sessions import saml_logout_url
from palaver.lib.two_factor import (
    GUARDED_METHODS,
    TRUSTED_COOKIE,
    has_second_factor,
    is_trusted_browser,
    second_factors_owed,
)
from palaver.lib.web_sessions import (
    CSRF_COOKIE,
    CSRF_FORM_FIELD,
    CSRF_HEADER,
    SESSION_COOKIE,
    new_token,
    tokens_match,
)
from palaver.models import Realm, UserProfile
from palaver.models.web_sessions import WebSession
from palaver.services import Services
from palaver.web.sessions import lifetime, session_user
from palaver.web.static import StaticTree, load_static_tree, static_routes

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATE_DIR = Path(__file__).parent / "templates"


def content_security_policy(user_content_url: str | None = None) -> str:
    """The pages' policy. With a user-content origin, uploads' pictures and media reach the
    page through redirects to it, so it is allowed as their source (and only as that)."""
    media = f" {user_content_url}" if user_content_url else ""
    return (
        f"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https:{media}; "
        + (f"media-src 'self'{media}; " if media else "")
        + "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'; form-action 'self'"
    )


def page_headers(settings: Settings) -> dict[str, str]:
    return {
        "Content-Security-Policy": content_security_policy(settings.user_content_url),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


NO_STORE = {"Cache-Control": "no-store"}
# Where a desktop-flow sign-in ends in the browser: the page showing the encrypted token.
DESKTOP_DONE_PATH = "/accounts/login/desktop/done/"
INCORRECT_LOGIN = N_("Incorrect email or password.")
# Until the web client's own template exists, a signed-in user still gets a working page.
_FALLBACK_APP = (
    "<!doctype html><html lang=en><head><meta charset=utf-8><title>{{ realm_name }} - Palaver</title>"
    "</head><body><div id=app data-user-id='{{ user_id }}'></div></body></html>"
)


@dataclass
class Pages:
    services: Services
    static: StaticTree

    @cached_property
    def templates(self) -> Environment:
        # Jinja2 (~2 MB) loads with the first page rendered, not at start-up.
        from jinja2 import Environment, FileSystemLoader, select_autoescape  # noqa: PLC0415

        templates = Environment(
            loader=FileSystemLoader(TEMPLATE_DIR),
            autoescape=select_autoescape(default=True),
            auto_reload=False,
        )
        install(templates)
        templates.globals["static_url"] = self.static.url
        templates.globals["static_exists"] = self.static.exists
        return templates

    @property
    def secure(self) -> bool:
        return self.services.settings.external_scheme == "https"

    def html(self, body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(body, status_code=status, headers=page_headers(self.services.settings))

    def render(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return self.html(self.templates.get_template(name).render(**context), status)


def email_configured(services: Services) -> bool:
    """Whether mail reaches people: with no ``smtp_url`` it is only written to the outbox
    folder, where nobody resetting a password would find it."""
    return services.settings.smtp_url is not None


def safe_next(value: str | None) -> str:
    """A local path to go to after login; anything that could leave the site becomes ``/``."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or any(ord(c) < 0x20 for c in value):
        return "/"
    return value


def realm_for(session: Session, pages: Pages, host: str) -> Realm | None:
    """The organization at ``host``; the page is rendered in its language until the user is known."""
    realm = get_realm_by_string_id(session, subdomain_for_host(pages.services.settings, host))
    if realm is not None:
        set_request_language(realm_language=realm.default_language)
    return realm


def no_realm(pages: Pages) -> HTMLResponse:
    return pages.render("no_realm.html", 404)


def _login_page(
    pages: Pages,
    realm: Realm,
    csrf: str,
    *,
    error: str | None = None,
    status: int = 200,
    username: str = "",
    next_path: str = "/",
    app_flow: str | None = None,
) -> HTMLResponse:
    set_request_language(realm_language=realm.default_language)
    flow = flows.from_stored(app_flow)
    settings = pages.services.settings
    enabled = enabled_methods(settings, realm)
    response = pages.render(
        "login.html",
        status,
        password_form=bool({EMAIL, LDAP} & enabled),
        email_usernames=usernames_are_emails(settings, realm),
        providers=[
            {"name": p.button_name, "display_name": p.display_name, "icon": p.icon_url, "path": p.path}
            for p in enabled_providers(settings, realm)
        ],
        # The app's pad, passed on to every way of signing in the page offers.
        app_params={flow.param: flow.otp} if flow is not None else {},
        realm_name=realm.name,
        realm_url=realm_url(pages.services.settings, realm),
        realm_deactivated=realm.deactivated,
        invite_required=realm.invite_required,
        forgot_password=email_configured(pages.services),
        csrf_token=csrf,
        error=error,
        username=username,
        next=next_path,
    )
    response.set_cookie(CSRF_COOKIE, csrf, httponly=False, samesite="lax", secure=pages.secure, path="/")
    if flow is not None and flow.kind == "mobile":
        # The form's answer redirects to the app (zulip://); form-action also governs redirects.
        response.headers["Content-Security-Policy"] = response.headers["Content-Security-Policy"].replace(
            "form-action 'self'", "form-action 'self' zulip:"
        )
    return response


def _app_page(pages: Pages, realm: Realm, user: UserProfile, csrf: str) -> HTMLResponse:
    language = set_request_language(user.default_language, realm.default_language)
    context = {
        "catalog": client_catalog_json(language),
        "static_url": pages.static.url,
        "csrf_token": csrf,
        "realm_name": realm.name,
        "realm_url": realm_url(pages.services.settings, realm),
        "user_id": user.id,
        "user_email": user.email,
        "full_name": user.full_name,
        "color_scheme": user.color_scheme,
        # The language picker offers the catalogs this server has (and English).
        "languages": " ".join(shipped_languages()),
    }
    from jinja2 import TemplateNotFound  # noqa: PLC0415

    try:
        template = pages.templates.get_template("app.html")
    except TemplateNotFound:
        template = pages.templates.from_string(_FALLBACK_APP)
    return pages.html(template.render(**context))


def login_token(request: Request) -> str:
    """The pre-session CSRF token of this browser, made if it has none."""
    token = request.cookies.get(CSRF_COOKIE, "")
    well_formed = 20 <= len(token) <= 64 and token.replace("-", "").replace("_", "").isalnum()
    return token if well_formed else new_token()


def show_root(pages: Pages, request: Request) -> Response:
    with pages.services.db.session() as session:
        realm = realm_for(session, pages, request.headers.get("host", ""))
        if realm is None:
            return no_realm(pages)
        try:
            flow = flows.from_params(request.query_params)
        except flows.InvalidAppFlowError as e:
            return pages.html(f"<!doctype html><title>Bad request</title><p>{e}</p>", 400)
        if flow is not None:
            # An app asks for its key: it gets one only through a sign-in made for it.
            return _login_page(pages, realm, login_token(request), app_flow=flow.stored())
        found = session_user(
            session, pages.services, request.headers.get("host", ""), request.cookies.get(SESSION_COOKIE)
        )
        if found is not None and found[1].is_active and not realm.deactivated:
            row, user = found
            if realm.require_two_factor and not has_second_factor(session, user.id):
                # The organization requires a second factor: set one up before anything else.
                return RedirectResponse(
                    "/accounts/2fa/", status_code=302, headers={"Cache-Control": "no-store"}
                )
            now, days = pages.services.clock(), lifetime(pages.services)
            do_touch_web_session(session, row, now=now, lifetime=days)
            response = _app_page(pages, realm, user, row.csrf_token)
            # The cookie slides with the session, or it would lapse while the session lives.
            set_session_cookies(pages, response, request.cookies[SESSION_COOKIE], row.csrf_token)
            return response
        next_path = safe_next(request.query_params.get("next"))
        return _login_page(pages, realm, login_token(request), next_path=next_path)


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        # Browsers send Origin on cross-site form posts; the token check covers the rest.
        return origin is None
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


def _login_error(error: JsonableError) -> tuple[str, int]:
    if isinstance(error, AuthenticationFailedError):
        return gettext(INCORRECT_LOGIN), 401
    if isinstance(error, RateLimitedError):
        return gettext("Too many login attempts. Please wait a while and try again."), 429
    if isinstance(error, RealmDeactivatedError):
        return gettext("This organization has been deactivated."), 401
    if isinstance(error, UserDeactivatedError):
        return gettext("Your account has been deactivated. Ask an administrator of the organization."), 401
    return error.msg, error.http_status


def log_in(pages: Pages, request: Request, form: FormData, client_ip: str) -> Response:
    services = pages.services
    host = request.headers.get("host", "")
    username = str(form.get("username") or "").strip()
    password = str(form.get("password") or "")
    next_path = safe_next(str(form.get("next") or "/"))
    try:
        flow = flows.from_params(form)
    except flows.InvalidAppFlowError:
        flow = None
    otp = flow.stored() if flow is not None else None
    with services.db.session() as session:
        realm = realm_for(session, pages, host)
        if realm is None:
            return no_realm(pages)
        given = form.get(CSRF_FORM_FIELD)
        if not _same_origin(request) or not tokens_match(
            request.cookies.get(CSRF_COOKIE, ""), given if isinstance(given, str) else None
        ):
            message = gettext("Your login form had expired. Please try again.")
            return _login_page(
                pages,
                realm,
                new_token(),
                error=message,
                status=403,
                username=username,
                next_path=next_path,
                app_flow=otp,
            )
        if not username or not password:
            return _login_page(
                pages,
                realm,
                login_token(request),
                error=gettext(INCORRECT_LOGIN),
                status=401,
                username=username,
                app_flow=otp,
            )
        ctx = Ctx(services, session, None, realm.id, client_ip, request.headers.get("user-agent", ""))
        try:
            user, method = check_login(ctx, username, password)
        except JsonableError as error:
            message, status = _login_error(error)
            return _login_page(
                pages,
                realm,
                login_token(request),
                error=message,
                status=status,
                username=username,
                next_path=next_path,
                app_flow=otp,
            )
        challenge = second_factor_challenge(pages, request, session, user, method, next_path, otp)
        if challenge is not None:
            return challenge
        return finish_login(
            pages, session, realm, user, method=method, client_ip=client_ip, user_agent=ctx.user_agent,
            next_path=next_path, app_flow=otp,
        )  # fmt: skip


def second_factor_challenge(
    pages: Pages,
    request: Request,
    session: Session,
    user: UserProfile,
    method: str,
    next_path: str,
    app_flow: str | None,
    *,
    error: str | None = None,
    pending: str | None = None,
) -> HTMLResponse | None:
    """The second-factor page (a code, or a passkey), when a password sign-in owes one (none
    for a browser its owner asked to remember, and none for the methods with their own:
    providers, passkeys)."""
    services = pages.services
    now = services.clock()
    factors = second_factors_owed(session, user) if method in GUARDED_METHODS else None
    if factors is None:
        return None
    if app_flow is None and is_trusted_browser(session, user.id, request.cookies.get(TRUSTED_COOKIE), now):
        return None
    if pending is None:
        pending = do_begin_pending_login(
            session, user, method=method, next_path=next_path, mobile_flow_otp=app_flow, now=now
        )
    realm = user.realm
    csrf = login_token(request)
    response = pages.render(
        "two_factor.html",
        401 if error else 200,
        realm_name=realm.name,
        csrf_token=csrf,
        pending=pending,
        error=error,
        remember_days=services.settings.two_factor_remember_days,
        totp=factors.totp,
        passkey=factors.passkey,
    )
    response.set_cookie(CSRF_COOKIE, csrf, httponly=False, samesite="lax", secure=pages.secure, path="/")
    if app_flow is not None:
        response.headers["Content-Security-Policy"] = response.headers["Content-Security-Policy"].replace(
            "form-action 'self'", "form-action 'self' zulip:"
        )
    return response


def finish_login(
    pages: Pages,
    session: Session,
    realm: Realm,
    user: UserProfile,
    *,
    method: str,
    client_ip: str,
    user_agent: str,
    next_path: str,
    app_flow: str | None,
    on_session: Callable[[WebSession], None] | None = None,
) -> Response:
    """The answer to a successful sign-in by any method, always a redirect: for the apps'
    flow (``app_flow``, lib/app_flow.py) the mobile app's ``zulip://`` URL with its encrypted
    key, or the page that hands the desktop app its encrypted one-time token; otherwise a
    browser session and the page it was going to (``on_session`` is told of the session, as
    single logout needs)."""
    services = pages.services
    flow = flows.from_stored(app_flow)
    channel = "app" if flow is not None else "web"
    do_record_login(session, user, client=user_agent, method=method, channel=channel, ip_address=client_ip)
    if flow is not None and flow.kind == "desktop":
        token = do_issue_desktop_token(session, user, now=services.clock())
        data = flows.desktop_encrypt(token, flow.otp)
        return RedirectResponse(
            f"{DESKTOP_DONE_PATH}?{urlencode({'desktop_data': data})}", status_code=302, headers=NO_STORE
        )
    if flow is not None:
        location = flows.app_redirect_url(
            api_key=user.api_key,
            otp=flow.otp,
            email=user.delivery_email,
            user_id=user.id,
            realm_url=realm_url(services.settings, realm),
        )
        # Starlette's RedirectResponse would quote the custom scheme; the URL is ours, built above.
        return Response(status_code=302, headers={"Location": location, "Cache-Control": "no-store"})
    token, row = do_create_web_session(session, user, now=services.clock(), lifetime=lifetime(services))
    if on_session is not None:
        on_session(row)
    response = RedirectResponse(next_path, status_code=302, headers={"Cache-Control": "no-store"})
    set_session_cookies(pages, response, token, row.csrf_token)
    return response


def set_session_cookies(pages: Pages, response: Response, token: str, csrf: str) -> None:
    max_age = int(lifetime(pages.services).total_seconds())
    secure = pages.secure
    response.set_cookie(
        SESSION_COOKIE, token, max_age=max_age, httponly=True, samesite="lax", secure=secure, path="/"
    )
    # Readable by the page's script, which echoes it in X-CSRFToken.
    response.set_cookie(
        CSRF_COOKIE, csrf, max_age=max_age, httponly=False, samesite="lax", secure=secure, path="/"
    )


def log_out(pages: Pages, request: Request, form: FormData) -> Response:
    services = pages.services
    idp_logout: str | None = None
    realm_name = "Palaver"
    with services.db.session() as session:
        found = session_user(
            session, services, request.headers.get("host", ""), request.cookies.get(SESSION_COOKIE)
        )
        if found is not None:
            row, user = found
            given = form.get(CSRF_FORM_FIELD) or request.headers.get(CSRF_HEADER)
            if not tokens_match(row.csrf_token, given if isinstance(given, str) else None):
                return pages.html("<!doctype html><title>Forbidden</title><p>CSRF error: try again.</p>", 403)
            realm_name = user.realm.name
            idp_logout = saml_logout_url(
                services.settings, session, row, realm_url(services.settings, user.realm)
            )
            # Palaver's session ends here, whatever the IdP answers to the logout.
            do_delete_web_session(session, row)
    if idp_logout is not None:
        # A page, not a redirect: the logout form's form-action 'self' would stop a redirect
        # to the IdP, while a navigation the page starts itself is not a form's.
        response: Response = pages.render(
            "signed_out.html",
            200,
            realm_name=realm_name,
            heading=gettext("You are signed out"),
            text=gettext("Signing you out of your identity provider too…"),
            continue_url=idp_logout,
        )
    else:
        response = RedirectResponse("/", status_code=302, headers={"Cache-Control": "no-store"})
    response.delete_cookie(SESSION_COOKIE, path="/", secure=pages.secure, httponly=True, samesite="lax")
    response.delete_cookie(CSRF_COOKIE, path="/", secure=pages.secure, samesite="lax")
    return response


def build_pages(services: Services) -> Pages:
    return Pages(services, load_static_tree())


async def form_data(request: Request) -> FormData:
    try:
        return await request.form()
    except Exception:
        # A malformed body is a failed login, not a server error.
        return FormData()


def web_routes(services: Services, pages: Pages | None = None) -> list[Route]:
    """The pages' routes; ``pages`` is shared with the single sign-on routes (web/sso.py)."""
    pages = pages if pages is not None else build_pages(services)

    async def root(request: Request) -> Response:
        return await run_in_threadpool(show_root, pages, request)

    async def login(request: Request) -> Response:
        if request.method == "GET":
            # The form lives at /; keep where the user was going.
            query = request.url.query
            return RedirectResponse("/" + (f"?{query}" if query else ""), status_code=302)
        form = await form_data(request)
        client_ip = request.client.host if request.client else ""
        return await run_in_threadpool(log_in, pages, request, form, client_ip)

    async def logout(request: Request) -> Response:
        form = await form_data(request)
        return await run_in_threadpool(log_out, pages, request, form)

    return [
        Route("/", root, methods=["GET"]),
        Route("/accounts/login/", login, methods=["GET", "POST"]),
        Route("/accounts/logout/", logout, methods=["POST"]),
        *static_routes(pages.static),
    ]
