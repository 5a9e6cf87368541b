"""The login page, the session cookie and logout, through the real app (TestClient)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from palaver.app import create_app
from palaver.services import Services, build_services
from palaver.timeutil import utcnow
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, SeededRealm, seed_realm
from tests.web.web_helpers import HIDDEN_CSRF, form_token, log_in, post_login


def test_root_shows_login_form_for_the_realm(web: TestClient, realm: SeededRealm) -> None:
    page = web.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "Log in to Test Organization" in page.text
    assert 'name="username"' in page.text and 'name="password"' in page.text
    # The pre-session token of the form is also the csrftoken cookie (double submit).
    assert HIDDEN_CSRF.search(page.text).group(1) == web.cookies["csrftoken"]  # type: ignore[union-attr]
    assert "invite-only" in page.text  # realms need invitations by default
    assert "Forgot your password" not in page.text  # no email configured
    assert "<script" not in page.text


def test_html_pages_have_security_headers(web: TestClient) -> None:
    headers = web.get("/").headers
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "object-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    assert headers["cache-control"] == "no-store"


def test_unknown_realm_is_a_plain_404_page(client: TestClient) -> None:
    page = client.get("/", headers={"host": "nosuchrealm.palaver.test"})
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "There is no organization at this URL" in page.text


def test_wrong_password_shows_a_clear_message(web: TestClient, realm: SeededRealm) -> None:
    response = post_login(web, realm.hamlet.email, "not-the-password")
    assert response.status_code == 401
    assert "Incorrect email or password." in response.text
    assert "palaver_session" not in response.cookies
    # The email stays filled in.
    assert f'value="{realm.hamlet.email}"' in response.text
    unknown = post_login(web, "nobody@example.com")
    assert "Incorrect email or password." in unknown.text


def test_login_sets_session_and_csrf_cookies(web: TestClient, realm: SeededRealm) -> None:
    response = post_login(web, realm.hamlet.email)
    assert response.status_code == 302
    assert response.headers["location"] == "/"
    cookies = response.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("palaver_session="))
    csrf = next(c for c in cookies if c.startswith("csrftoken="))
    assert "HttpOnly" in session and "SameSite=lax" in session and "Path=/" in session
    assert "Secure" not in session  # external_url is http
    assert "HttpOnly" not in csrf and "SameSite=lax" in csrf
    # Now / is the app.
    page = web.get("/")
    assert page.status_code == 200
    assert "<title>Test Organization - Palaver</title>" in page.text
    assert "Log in to" not in page.text


def test_login_goes_to_a_safe_next_only(web: TestClient, realm: SeededRealm) -> None:
    ok = post_login(web, realm.hamlet.email, next="/#narrow/channel/1-general")
    assert ok.headers["location"] == "/#narrow/channel/1-general"
    for bad in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        web.cookies.clear()
        assert post_login(web, realm.hamlet.email, next=bad).headers["location"] == "/"


def test_login_records_the_login(web: TestClient, realm: SeededRealm, services: Services) -> None:
    from palaver.models import UserProfile

    log_in(web, realm.othello)
    with services.db.session() as session:
        user = session.get(UserProfile, realm.othello.id)
        assert user is not None and user.last_login is not None


def test_login_needs_the_form_token(web: TestClient, realm: SeededRealm) -> None:
    form_token(web)
    data = {"username": realm.hamlet.email, "password": "secret-password"}
    missing = web.post("/accounts/login/", data=data, follow_redirects=False)
    assert missing.status_code == 403
    wrong = web.post(
        "/accounts/login/", data={**data, "csrfmiddlewaretoken": "x" * 43}, follow_redirects=False
    )
    assert wrong.status_code == 403
    cross_site = web.post(
        "/accounts/login/",
        data={**data, "csrfmiddlewaretoken": web.cookies["csrftoken"]},
        headers={"origin": "https://evil.example"},
        follow_redirects=False,
    )
    assert cross_site.status_code == 403
    assert "palaver_session" not in web.cookies


def test_login_is_rate_limited_like_fetch_api_key(realm: SeededRealm, services: Services) -> None:
    limited = make_test_settings(
        services.settings.database_url, services.settings.data_dir, auth_rate_limit_per_username="2/600"
    )
    with TestClient(create_app(limited), base_url=f"http://{realm.host}") as web:
        for _ in range(2):
            assert post_login(web, realm.iago.email, "wrong").status_code == 401
        blocked = post_login(web, realm.iago.email)
        assert blocked.status_code == 429
        assert "Too many login attempts" in blocked.text
        # The same counter as /api/v1/fetch_api_key.
        api = web.post("/api/v1/fetch_api_key", data={"username": realm.iago.email, "password": "x"})
        assert api.status_code == 429


def test_deactivated_user_gets_a_clear_message(web: TestClient, realm: SeededRealm, api: Api) -> None:
    api.delete(realm.desdemona, f"/api/v1/users/{realm.cordelia.id}")
    response = post_login(web, realm.cordelia.email)
    assert response.status_code == 401
    assert "Your account has been deactivated" in response.text


def test_logout_deletes_the_session(web: TestClient, realm: SeededRealm) -> None:
    csrf = log_in(web, realm.hamlet)
    token = web.cookies["palaver_session"]
    assert web.get("/json/users/me").status_code == 200
    # Without the CSRF token, logout is refused.
    assert web.post("/accounts/logout/", follow_redirects=False).status_code == 403
    response = web.post("/accounts/logout/", data={"csrfmiddlewaretoken": csrf}, follow_redirects=False)
    assert response.status_code == 302 and response.headers["location"] == "/"
    assert "palaver_session" not in web.cookies
    # The old cookie is dead on the server too.
    web.cookies.set("palaver_session", token)
    assert web.get("/json/users/me").status_code == 401
    assert "Log in to" in web.get("/").text


def test_logout_accepts_the_header_token(web: TestClient, realm: SeededRealm) -> None:
    csrf = log_in(web, realm.hamlet)
    response = web.post("/accounts/logout/", headers={"X-CSRFToken": csrf}, follow_redirects=False)
    assert response.status_code == 302
    assert web.get("/json/users/me").status_code == 401


def test_secure_cookies_with_an_https_external_url(services: Services) -> None:
    https = make_test_settings(
        services.settings.database_url, services.settings.data_dir, external_url="https://secure.test"
    )
    built = build_services(https)
    seeded = seed_realm(built)
    try:
        with TestClient(create_app(https, built), base_url=f"https://{seeded.host}") as web:
            response = post_login(web, seeded.hamlet.email)
            assert response.status_code == 302
            for cookie in response.headers.get_list("set-cookie"):
                assert "Secure" in cookie
    finally:
        built.close()


def test_forgot_password_is_offered_once_mail_can_reach_people(services: Services) -> None:
    mailing = make_test_settings(
        services.settings.database_url, services.settings.data_dir, smtp_url="smtp://127.0.0.1:2525"
    )
    built = build_services(mailing)
    seeded = seed_realm(built)
    try:
        with TestClient(create_app(mailing, built), base_url=f"http://{seeded.host}") as web:
            page = web.get("/")
            assert '<a href="/accounts/password/reset/">Forgot your password?</a>' in page.text
            # The page it links to is served (the email feature's password reset).
            assert web.get("/accounts/password/reset/").status_code == 200
    finally:
        built.close()


# Sessions live in the database ---------------------------------------------------------------


def test_session_survives_a_new_app_on_the_same_database(web: TestClient, realm: SeededRealm) -> None:
    log_in(web, realm.hamlet)
    token = web.cookies["palaver_session"]
    current = web.app.state.services.settings  # type: ignore[attr-defined]
    settings = make_test_settings(current.database_url, current.data_dir)
    with TestClient(create_app(settings), base_url=f"http://{realm.host}") as restarted:
        restarted.cookies.set("palaver_session", token)
        me = restarted.get("/json/users/me")
        assert me.status_code == 200
        assert me.json()["user_id"] == realm.hamlet.id


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clocked(services: Services, realm: SeededRealm) -> Iterator[tuple[TestClient, Clock]]:
    clock = Clock()
    built = build_services(services.settings)
    built.clock = clock
    with TestClient(create_app(services.settings, built), base_url=f"http://{realm.host}") as web:
        yield web, clock
    built.close()


def test_session_expires_after_its_lifetime_without_use(
    clocked: tuple[TestClient, Clock], realm: SeededRealm
) -> None:
    web, clock = clocked
    log_in(web, realm.hamlet)
    clock.now += timedelta(days=13)
    assert web.get("/json/users/me").status_code == 200
    # That use slid the expiry forward: 13 more days are still fine...
    clock.now += timedelta(days=13)
    assert web.get("/json/users/me").status_code == 200
    # ...but 15 idle days are not.
    clock.now += timedelta(days=15)
    assert web.get("/json/users/me").status_code == 401
    assert "Log in to" in web.get("/").text


def test_deactivation_revokes_sessions(web: TestClient, realm: SeededRealm, api: Api) -> None:
    log_in(web, realm.cordelia)
    token = web.cookies["palaver_session"]
    api.delete(realm.desdemona, f"/api/v1/users/{realm.cordelia.id}")
    api.post(realm.desdemona, f"/api/v1/users/{realm.cordelia.id}/reactivate")
    # Reactivating does not bring the old session back.
    web.cookies.set("palaver_session", token)
    assert web.get("/json/users/me").status_code == 401


def test_password_change_signs_out_other_sessions_only(client: TestClient, realm: SeededRealm) -> None:
    here = TestClient(client.app, base_url=f"http://{realm.host}")
    there = TestClient(client.app, base_url=f"http://{realm.host}")
    csrf = log_in(here, realm.hamlet)
    log_in(there, realm.hamlet)
    changed = here.patch(
        "/json/settings",
        data={"old_password": "secret-password", "new_password": "another-password-1"},
        headers={"X-CSRFToken": csrf},
    )
    assert changed.status_code == 200, changed.text
    assert here.get("/json/users/me").status_code == 200
    assert there.get("/json/users/me").status_code == 401


def test_deactivated_realm_ends_sessions_and_says_so(
    web: TestClient, realm: SeededRealm, services: Services
) -> None:
    from palaver.actions.web_sessions import do_revoke_realm_web_sessions
    from palaver.db.transaction import transaction
    from palaver.models import Realm

    log_in(web, realm.hamlet)
    with services.db.session() as session:
        # No action deactivates an organization yet; this is what one would do.
        with transaction(session):
            session.get_one(Realm, realm.id).deactivated = True
        do_revoke_realm_web_sessions(session, realm.id)
    assert web.get("/json/users/me").status_code == 401
    page = web.get("/")
    assert "This organization has been deactivated." in page.text
    assert 'name="password"' not in page.text
