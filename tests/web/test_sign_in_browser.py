"""Signing in with OpenID Connect in a real Chromium, against npm's oidc-provider (a certified
provider, tests/oidc_server.py) and a real ``palaver serve``; and the apps' OTP flow."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pyotp
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tests.oidc_server import CLIENT_ID, CLIENT_SECRET, Provider, running_provider
from tests.servers import clean_environment, free_port
from tests.web.conftest import PASSWORD, LiveServer, start_live_server, wait_for_app

ACCOUNTS: dict[str, dict[str, Any]] = {
    "ada": {"email": "ada@corp.example", "email_verified": True, "name": "Ada Lovelace"},
    "hamlet": {"email": "hamlet@example.com", "email_verified": True, "name": "Hamlet of Denmark"},
    "eve": {"email": "eve@corp.example", "email_verified": False, "name": "Eve Unverified"},
    "iago": {"email": "iago@example.com", "email_verified": True, "name": "Iago"},
}
# Changed or deactivated on the way (the provider is restarted with the change).
ACCOUNTS["mover"] = {"email": "mover@corp.example", "email_verified": True, "name": "Mover"}
ACCOUNTS["leaver"] = {"email": "leaver@corp.example", "email_verified": True, "name": "Leaver"}
for n in range(8):
    ACCOUNTS[f"temp{n}"] = {"email": f"temp{n}@corp.example", "email_verified": True, "name": f"Temp {n}"}


@pytest.fixture(scope="module")
def server_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory, server_port: int) -> Iterator[Provider]:
    redirect = f"http://127.0.0.1:{server_port}/complete/oidc/corp/"
    with running_provider(tmp_path_factory.mktemp("oidc"), [redirect], ACCOUNTS) as running:
        yield running


@pytest.fixture(scope="module")
def sso_server(
    tmp_path_factory: pytest.TempPathFactory, server_port: int, provider: Provider
) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("sso-server")
    secret = tmp / "client-secret"
    secret.write_text(CLIENT_SECRET + "\n")
    config = tmp / "palaver.toml"
    config.write_text(
        f"""[auth.oidc.corp]
display_name = "Corp SSO"
issuer = "{provider.issuer}"
client_id = "{CLIENT_ID}"
client_secret_file = "{secret}"
"""
    )
    server = start_live_server(tmp, port=server_port, config=config, open_signup=True)
    try:
        yield server
    finally:
        server.stop()


def _through_provider(page: Any, login: str) -> None:
    """The provider's own login and consent pages, as a person goes through them."""
    page.wait_for_selector("input[name=login]")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any-password")
    page.click("button[type=submit]")
    page.wait_for_selector("button[type=submit]")
    page.click("button[type=submit]")  # consent: "Continue"


def test_server_settings_lists_the_button(sso_server: LiveServer) -> None:
    body = httpx.get(f"{sso_server.url}/api/v1/server_settings").json()
    assert body["external_authentication_methods"] == [
        {
            "name": "oidc:corp",
            "display_name": "Corp SSO",
            "display_icon": None,
            "login_url": "/accounts/login/social/oidc/corp",
            "signup_url": "/accounts/register/social/oidc/corp",
        }
    ]
    assert body["authentication_methods"]["openid connect"] is True


def test_sign_in_with_the_provider_makes_the_account(
    sso_server: LiveServer, provider: Provider, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(sso_server.url + "/")
    page.click("a[data-provider='oidc:corp']")
    page.wait_for_url(provider.issuer + "/**")
    _through_provider(page, "ada")
    wait_for_app(page)
    me = page.evaluate("fetch('/json/users/me').then(r => r.json())")
    assert me["full_name"] == "Ada Lovelace"
    user = sso_server.user_by_email("ada@corp.example")
    assert user is not None and user.password is None
    # The state cookie was used up.
    assert "palaver_sso" not in {c["name"] for c in page.context.cookies()}


def test_existing_account_signs_in_by_its_verified_email(
    sso_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(sso_server.url + "/")
    page.click("a[data-provider='oidc:corp']")
    _through_provider(page, "hamlet")
    wait_for_app(page)
    me = page.evaluate("fetch('/json/users/me').then(r => r.json())")
    assert me["user_id"] == sso_server.user_by_email("hamlet@example.com").id  # type: ignore[union-attr]
    # The provider's name is the one Palaver shows from now on.
    assert me["full_name"] == "Hamlet of Denmark"


def _sign_in(server: LiveServer, page: Any, login: str) -> None:
    page.goto(server.url + "/")
    page.click("a[data-provider='oidc:corp']")
    _through_provider(page, login)


def test_an_email_changed_at_the_provider_changes_in_palaver(
    sso_server: LiveServer, provider: Provider, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    _sign_in(sso_server, page, "mover")
    wait_for_app(page)
    before = sso_server.user_by_email("mover@corp.example")
    assert before is not None
    # The same person (the same ``sub``) under a new, verified address.
    provider.accounts["mover"] = {**provider.accounts["mover"], "email": "moved@corp.example"}
    provider.restart()
    page = new_page()
    _sign_in(sso_server, page, "mover")
    wait_for_app(page)
    me = page.evaluate("fetch('/json/users/me').then(r => r.json())")
    assert me["user_id"] == before.id
    assert sso_server.user_by_email("mover@corp.example") is None
    after = sso_server.user_by_email("moved@corp.example")
    assert after is not None and after.id == before.id


def test_a_deactivated_user_cannot_come_back_through_the_provider(
    sso_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    _sign_in(sso_server, page, "leaver")
    wait_for_app(page)
    user = sso_server.user_by_email("leaver@corp.example")
    assert user is not None
    with sso_server.api("iago") as iago:
        response = iago.delete(f"/users/{user.id}")
        assert response.status_code == 200, response.text
    page = new_page()
    _sign_in(sso_server, page, "leaver")
    page.wait_for_selector("#sso-error")
    assert "Your account has been deactivated" in page.inner_text("#sso-error")
    assert "palaver_session" not in {c["name"] for c in page.context.cookies()}
    still = sso_server.user_by_email("leaver@corp.example")
    assert still is not None and not still.is_active


@pytest.mark.parametrize(
    ("tamper", "login", "message"),
    [
        ("signature", "temp0", "has no valid signature"),
        ("nonce", "temp1", "belongs to another sign-in"),
        ("expired", "temp2", "has expired"),
        (None, "eve", "has not verified your email address eve@corp.example"),
    ],
)
def test_refused_sign_ins_show_a_clear_page_and_make_no_account(
    sso_server: LiveServer,
    provider: Provider,
    new_page: Callable[..., Any],
    tamper: str | None,
    login: str,
    message: str,
) -> None:
    provider.tamper = tamper
    try:
        page = new_page()
        page.goto(sso_server.url + "/")
        page.click("a[data-provider='oidc:corp']")
        _through_provider(page, login)
        page.wait_for_selector("#sso-error")
        assert message in page.inner_text("#sso-error")
    finally:
        provider.tamper = None
    assert sso_server.user_by_email(str(ACCOUNTS[login]["email"])) is None
    assert "palaver_session" not in {c["name"] for c in page.context.cookies()}


def test_a_replayed_or_foreign_callback_is_refused(
    sso_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(sso_server.url + "/")
    with page.expect_response(lambda r: "/complete/oidc/corp/" in r.url) as completed:
        page.click("a[data-provider='oidc:corp']")
        _through_provider(page, "temp3")
    callback = completed.value.url
    wait_for_app(page)
    # The same callback again (its state is spent), and in another browser (no state cookie).
    for attempt in (page, new_page()):
        attempt.goto(callback)
        assert "has expired, was already used, or was started in another browser" in attempt.inner_text(
            "#sso-error"
        )


def test_provider_key_rotation(
    sso_server: LiveServer, provider: Provider, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(sso_server.url + "/")
    page.click("a[data-provider='oidc:corp']")
    _through_provider(page, "temp4")
    wait_for_app(page)
    provider.rotate_key()
    page = new_page()
    page.goto(sso_server.url + "/")
    page.click("a[data-provider='oidc:corp']")
    _through_provider(page, "temp5")
    wait_for_app(page)


def _decrypt(encrypted: str, otp: str) -> str:
    return bytes.fromhex(
        "".join(f"{int(a, 16) ^ int(b, 16):x}" for a, b in zip(encrypted, otp, strict=True))
    ).decode()


def _app_redirect(response: Any) -> dict[str, str]:
    location = response.headers["location"]
    assert location.startswith("zulip://login?"), location
    return dict(httpx.QueryParams(location.split("?", 1)[1]))


@pytest.mark.parametrize("method", ["oidc", "password"])
def test_the_apps_flow_hands_over_an_encrypted_key(
    sso_server: LiveServer, new_page: Callable[..., Any], method: str
) -> None:
    otp = secrets.token_hex(32)
    page = new_page()
    if method == "oidc":
        url = f"{sso_server.url}/accounts/login/social/oidc/corp?mobile_flow_otp={otp}"
        with page.expect_response(lambda r: "/complete/oidc/corp/" in r.url) as done:
            page.goto(url, wait_until="commit")
            _through_provider(page, "iago")
    else:
        page.goto(f"{sso_server.url}/?mobile_flow_otp={otp}")
        page.fill("#id_username", "iago@example.com")
        page.fill("#id_password", PASSWORD)
        with page.expect_response(lambda r: "/accounts/login/" in r.url) as done:
            page.click("#login-form button[type=submit]")
    params = _app_redirect(done.value)
    assert params["email"] == "iago@example.com" and params["realm"] == sso_server.url
    api_key = _decrypt(params["otp_encrypted_api_key"], otp)
    me = httpx.get(f"{sso_server.url}/api/v1/users/me", auth=("iago@example.com", api_key)).json()
    assert me["user_id"] == int(params["user_id"])
    # The app's sign-in makes no browser session.
    assert "palaver_session" not in {c["name"] for c in page.context.cookies()}


def test_the_desktop_flow_through_the_provider(sso_server: LiveServer, new_page: Callable[..., Any]) -> None:
    """desktop_flow_otp through OpenID Connect: the browser's last page holds the token
    encrypted with the pad (AES-256-GCM), which the app's window then signs in with."""
    key = secrets.token_bytes(32)
    page = new_page()
    page.goto(f"{sso_server.url}/accounts/login/social/oidc/corp?desktop_flow_otp={key.hex()}")
    _through_provider(page, "temp6")
    page.wait_for_url("**/accounts/login/desktop/done/**")
    data = bytes.fromhex(page.input_value("#desktop-data"))
    token = AESGCM(key).decrypt(data[:12], data[12:], b"").decode()
    app = new_page()
    app.goto(f"{sso_server.url}/accounts/login/subdomain/{token}")
    wait_for_app(app)
    assert app.evaluate("fetch('/json/users/me').then(r => r.json())")["email"] == "temp6@corp.example"


def test_invalid_otp_is_refused(sso_server: LiveServer) -> None:
    response = httpx.get(f"{sso_server.url}/accounts/login/social/oidc/corp?mobile_flow_otp=xyz")
    assert response.status_code == 400
    assert httpx.get(f"{sso_server.url}/?mobile_flow_otp=xyz").status_code == 400


# Two-factor authentication ---------------------------------------------------------------


def _sign_out(page: Any) -> None:
    """Ends the browser's session with the app closed first: an open app that loses its session
    navigates to the login page by itself, which would abort the test's own next navigation."""
    page.goto("about:blank")
    page.context.clear_cookies(name="palaver_session")


def _password_login(page: Any, server: LiveServer, email: str) -> None:
    page.goto(server.url + "/")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.click("#login-form button[type=submit]")


def _code(secret: str, ahead: int = 0) -> str:
    return str(pyotp.TOTP(secret).at(int(time.time()) + ahead))


def test_two_factor_enrolment_recovery_codes_and_remembered_browser(
    sso_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    email = "othello@example.com"
    page = new_page()
    _password_login(page, sso_server, email)
    wait_for_app(page)
    page.goto(sso_server.url + "/accounts/2fa/")
    assert page.get_attribute("#tf-qr", "src").startswith("data:image/svg+xml")
    secret = page.inner_text("#tf-secret").strip()
    page.fill("#id_code", _code(secret))
    page.click("#two-factor-setup button[type=submit]")
    codes = [c.strip() for c in page.locator("#recovery-codes code").all_inner_texts()]
    assert len(codes) == 10 and len(set(codes)) == 10

    # The password alone no longer fetches an API key.
    response = httpx.post(
        f"{sso_server.url}/api/v1/fetch_api_key", data={"username": email, "password": PASSWORD}
    )
    assert response.status_code == 401 and response.json()["code"] == "TWO_FACTOR_REQUIRED"

    # A recovery code works once.
    page = new_page()
    _password_login(page, sso_server, email)
    page.wait_for_selector("#two-factor-form")
    page.fill("#id_code", "000000")
    page.click("#two-factor-form button[type=submit]")
    assert "not right" in page.inner_text("#tf-error")
    page.fill("#id_code", codes[0])
    page.click("#two-factor-form button[type=submit]")
    wait_for_app(page)

    page = new_page()
    _password_login(page, sso_server, email)
    page.fill("#id_code", codes[0])
    page.click("#two-factor-form button[type=submit]")
    assert "not right" in page.inner_text("#tf-error")
    # The authenticator's next code (the enrolment used the current one), and remember me.
    page.fill("#id_code", _code(secret, ahead=30))
    page.check("#id_remember")
    page.click("#two-factor-form button[type=submit]")
    wait_for_app(page)
    # Signed out and in again: this browser is not asked again.
    _sign_out(page)
    _password_login(page, sso_server, email)
    wait_for_app(page)

    # An administrator resets it (a lost phone): the password alone works again.
    database_url = f"sqlite:///{sso_server.data_dir.parent / 'palaver.db'}"
    where = ["--database-url", database_url, "--data-dir", str(sso_server.data_dir)]
    result = subprocess.run(
        [sys.executable, "-m", "palaver.cli", *where, "reset-2fa", "--email", email],
        check=False, capture_output=True, text=True, env=clean_environment(), timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Two-factor authentication turned off" in result.stdout
    response = httpx.post(
        f"{sso_server.url}/api/v1/fetch_api_key", data={"username": email, "password": PASSWORD}
    )
    assert response.status_code == 200, response.text


def test_organization_can_require_two_factor(sso_server: LiveServer, new_page: Callable[..., Any]) -> None:
    owner = sso_server.users["desdemona"]
    api = httpx.Client(base_url=f"{sso_server.url}/api/v1", auth=(owner[0], owner[2]))
    assert api.patch("realm", data={"require_two_factor": "true"}).status_code == 200
    try:
        page = new_page()
        _password_login(page, sso_server, "hamlet@example.com")
        page.wait_for_selector("#tf-required")
        assert page.url.endswith("/accounts/2fa/")
        # No way around it: the app's page sends back here.
        page.goto(sso_server.url + "/")
        assert page.url.endswith("/accounts/2fa/")
    finally:
        assert api.patch("realm", data={"require_two_factor": "false"}).status_code == 200
        api.close()


# Passkeys ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def localhost_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose URL is http://localhost:PORT: WebAuthn takes host names, not IP addresses."""
    server = start_live_server(tmp_path_factory.mktemp("passkey-server"), host="localhost")
    try:
        yield server
    finally:
        server.stop()


def test_register_a_passkey_and_sign_in_with_it(
    localhost_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    server = localhost_server
    page = new_page()
    # Chromium's virtual authenticator (the CDP WebAuthn domain): a platform authenticator
    # with user verification, that answers at once.
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    _password_login(page, server, "hamlet@example.com")
    wait_for_app(page)
    page.goto(server.url + "/accounts/2fa/")
    page.fill("#passkey-name", "Laptop")
    page.click("#passkey-add")
    page.wait_for_selector("#passkey-list li")
    assert page.inner_text("#passkey-list .passkey-name") == "Laptop"

    # Signed out, the passkey alone signs in (no password, no code).
    _sign_out(page)
    page.goto(server.url + "/")
    page.click("#passkey-link")
    page.click("#passkey-login")
    # The page's script navigates; wait for the app (polling a page under a strict CSP would
    # evaluate a string there).
    page.wait_for_url(server.url + "/")
    page.wait_for_load_state()
    assert page.title().endswith(" - Palaver")
    me = page.evaluate("fetch('/json/users/me').then(r => r.json())")
    assert me["email"] == "hamlet@example.com"

    # The apps' flow, with the passkey.
    otp = secrets.token_hex(32)
    _sign_out(page)
    page.goto(f"{server.url}/accounts/login/passkey/?mobile_flow_otp={otp}")
    with page.expect_response(lambda r: r.url.endswith("/accounts/login/passkey/verify")) as done:
        page.click("#passkey-login")
    location = done.value.json()["redirect"]
    params = dict(httpx.QueryParams(location.split("?", 1)[1]))
    api_key = _decrypt(params["otp_encrypted_api_key"], otp)
    assert httpx.get(f"{server.url}/api/v1/users/me", auth=("hamlet@example.com", api_key)).status_code == 200

    # Removed on the security page, the passkey signs in no more.
    _password_login(page, server, "hamlet@example.com")
    page.wait_for_url(server.url + "/")
    page.goto(server.url + "/accounts/2fa/")
    page.click(".passkey-remove button")
    page.wait_for_url(server.url + "/accounts/2fa/")
    assert page.locator("#passkey-list li").count() == 0
    _sign_out(page)
    page.goto(server.url + "/accounts/login/passkey/")
    page.click("#passkey-login")
    page.wait_for_selector("#passkey-error:not([hidden])")
    assert "not registered here" in page.inner_text("#passkey-error")


def _virtual_authenticator(page: Any) -> None:
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )


def test_a_passkey_as_the_second_factor_after_the_password(
    localhost_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    server = localhost_server
    email = "othello@example.com"
    page = new_page()
    _virtual_authenticator(page)
    _password_login(page, server, email)
    wait_for_app(page)
    page.goto(server.url + "/accounts/2fa/")
    page.fill("#passkey-name", "Phone")
    page.click("#passkey-add")
    page.wait_for_selector("#passkey-list li")

    owner = server.api("desdemona")
    assert owner.patch("realm", data={"require_two_factor": "true"}).status_code == 200
    try:
        # The organization requires a second factor: the passkey is one, asked after the password.
        _sign_out(page)
        _password_login(page, server, email)
        page.wait_for_selector("#tf-passkey")
        assert page.locator("#two-factor-form").count() == 0
        page.click("#tf-passkey")
        page.wait_for_url(server.url + "/")
        page.wait_for_load_state()
        assert page.title().endswith(" - Palaver")
        me = page.evaluate("fetch('/json/users/me').then(r => r.json())")
        assert me["email"] == email
        # The password alone fetches no API key any more.
        response = httpx.post(
            f"{server.url}/api/v1/fetch_api_key", data={"username": email, "password": PASSWORD}
        )
        assert response.status_code == 401 and response.json()["code"] == "TWO_FACTOR_REQUIRED"
    finally:
        assert owner.patch("realm", data={"require_two_factor": "false"}).status_code == 200

    # With an authenticator too, the step offers both; the passkey, with "don't ask again".
    page.goto(server.url + "/accounts/2fa/")
    secret = page.inner_text("#tf-secret").strip()
    page.fill("#id_code", _code(secret))
    page.click("#two-factor-setup button[type=submit]")
    page.wait_for_selector("#recovery-codes")
    _sign_out(page)
    _password_login(page, server, email)
    page.wait_for_selector("#two-factor-form")
    assert page.is_visible("#tf-passkey")
    page.check("#id_remember")
    page.click("#tf-passkey")
    page.wait_for_url(server.url + "/")
    page.wait_for_load_state()
    assert page.title().endswith(" - Palaver")
    _sign_out(page)
    _password_login(page, server, email)
    page.wait_for_url(server.url + "/")
    page.wait_for_load_state()
    assert page.title().endswith(" - Palaver")
    owner.close()
