"""Signing in with SAML 2.0 in a real Chromium, against pysaml2's IdP run as its own process
(tests/saml_server.py) and a real ``palaver serve``: sign-in and first-sign-in accounts,
encrypted assertions, the refusals (a broken signature, another audience, an expired
assertion, a replayed one, an unsolicited one), single logout, and the apps' flows: the
mobile app's and the desktop app's (decrypted here as the desktop app does)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tests.saml_server import IdentityProvider, running_idp
from tests.servers import free_port
from tests.web.conftest import PASSWORD, LiveServer, start_live_server, wait_for_app

ACCOUNTS: dict[str, dict[str, Any]] = {
    "grace": {"email": "grace@corp.example", "name": "Grace Hopper"},
    "hamlet": {"email": "hamlet@example.com", "name": "Hamlet of Denmark"},
    "iago": {"email": "iago@example.com", "name": "Iago"},
}
for n in range(8):
    ACCOUNTS[f"temp{n}"] = {"email": f"temp{n}@corp.example", "name": f"Temp {n}"}
ACCOUNTS["temp7"]["groups"] = ["staff", "chat-admins"]
ACCOUNTS["ophelia"] = {"email": "ophelia@corp.example", "name": "Ophelia"}


@pytest.fixture(scope="module")
def server_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory, server_port: int) -> Iterator[IdentityProvider]:
    metadata = f"http://127.0.0.1:{server_port}/saml/metadata.xml"
    with running_idp(tmp_path_factory.mktemp("saml-idp"), metadata, ACCOUNTS) as running:
        yield running


@pytest.fixture(scope="module")
def saml_server(
    tmp_path_factory: pytest.TempPathFactory, server_port: int, idp: IdentityProvider
) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("saml-server")
    config = tmp / "palaver.toml"
    config.write_text(
        f"""[auth.saml.corp]
display_name = "Corp SAML"
idp_metadata_url = "{idp.metadata_url}"
sp_key_file = "{idp.sp_key}"
sp_cert_file = "{idp.sp_cert}"
groups_attribute = "groups"
role_map = {{ "chat-admins" = "administrator" }}
"""
    )
    server = start_live_server(tmp, port=server_port, config=config, open_signup=True)
    try:
        yield server
    finally:
        server.stop()


def _through_idp(page: Any, login: str) -> None:
    """The IdP's login form, as a person fills it; its answer posts itself to Palaver."""
    page.wait_for_selector("input[name=username]")
    page.fill("input[name=username]", login)
    page.fill("input[name=password]", "any-password")
    page.click("button[type=submit]")


def _sign_in(page: Any, server: LiveServer, login: str) -> None:
    page.goto(server.url + "/")
    page.click("a[data-provider='saml:corp']")
    _through_idp(page, login)


def _cookies(page: Any) -> set[str]:
    return {c["name"] for c in page.context.cookies()}


@pytest.fixture
def mode(idp: IdentityProvider) -> Iterator[Callable[[str | None], None]]:
    yield idp.set_mode
    idp.set_mode(None)


def test_metadata_and_server_settings(saml_server: LiveServer) -> None:
    metadata = httpx.get(f"{saml_server.url}/saml/metadata.xml")
    assert metadata.status_code == 200
    assert f'entityID="{saml_server.url}/saml/metadata.xml"' in metadata.text
    assert f'Location="{saml_server.url}/complete/saml/"' in metadata.text
    assert "X509Certificate" in metadata.text
    body = httpx.get(f"{saml_server.url}/api/v1/server_settings").json()
    assert body["external_authentication_methods"] == [
        {
            "name": "saml:corp",
            "display_name": "Corp SAML",
            "display_icon": None,
            "login_url": "/accounts/login/social/saml/corp",
            "signup_url": "/accounts/register/social/saml/corp",
        }
    ]
    assert body["authentication_methods"]["saml"] is True


@pytest.mark.parametrize("encrypted", [False, True])
def test_sign_in_makes_the_account_and_single_logout_ends_both_sessions(
    saml_server: LiveServer,
    idp: IdentityProvider,
    new_page: Callable[..., Any],
    mode: Callable[[str | None], None],
    encrypted: bool,
) -> None:
    login = "grace" if not encrypted else "temp6"
    mode("encrypt" if encrypted else None)
    page = new_page()
    _sign_in(page, saml_server, login)
    wait_for_app(page)
    me = page.evaluate("fetch('/json/users/me').then(r => r.json())")
    assert me["full_name"] == ACCOUNTS[login]["name"]
    user = saml_server.user_by_email(ACCOUNTS[login]["email"])
    assert user is not None and user.password is None
    assert "palaver_saml" not in _cookies(page)
    # The IdP saw a signed request from Palaver's entity.
    assert idp.state()["requests"][-1]["issuer"] == f"{saml_server.url}/saml/metadata.xml"

    # Logging out ends Palaver's session, then the IdP's (SP-initiated single logout).
    page.goto("about:blank")
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    page.goto(saml_server.url + "/accounts/2fa/")
    page.evaluate(
        """csrf => { const f = document.createElement('form'); f.method = 'post';
        f.action = '/accounts/logout/'; const i = document.createElement('input');
        i.type = 'hidden'; i.name = 'csrfmiddlewaretoken'; i.value = csrf; f.append(i);
        document.body.append(f); f.submit(); }""",
        csrf,
    )
    page.wait_for_selector("#signed-out-text:has-text('too.')")
    assert "Corp SAML" in page.inner_text("#signed-out-text")
    assert idp.state()["logouts"][-1]["name_id"] == f"idp-{login}"
    assert "palaver_session" not in _cookies(page)
    assert page.evaluate("fetch('/json/users/me').then(r => r.status)") == 401


def test_idp_initiated_single_logout_ends_the_session_only_when_signed(
    saml_server: LiveServer, idp: IdentityProvider, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    _sign_in(page, saml_server, "ophelia")
    wait_for_app(page)
    page.goto("about:blank")
    # An unsigned LogoutRequest ends nothing.
    page.goto(f"{idp.url}/logout_sp?name_id=idp-ophelia&unsigned=1")
    assert page.locator("#sso-error").count() == 1
    assert page.evaluate("fetch('/json/users/me').then(r => r.status)") == 200
    # The IdP's signed one ends the session, and Palaver answers the IdP.
    page.goto(f"{idp.url}/logout_sp?name_id=idp-ophelia")
    page.wait_for_selector("#idp-done")
    page.goto(saml_server.url + "/accounts/2fa/")
    assert page.evaluate("fetch('/json/users/me').then(r => r.status)") == 401


def test_existing_account_is_linked_by_its_email_then_by_name_id(
    saml_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    _sign_in(page, saml_server, "hamlet")
    wait_for_app(page)
    me = page.evaluate("fetch('/json/users/me').then(r => r.json())")
    assert me["user_id"] == saml_server.user_by_email("hamlet@example.com").id  # type: ignore[union-attr]
    assert me["full_name"] == "Hamlet of Denmark"


@pytest.mark.parametrize(
    ("misbehaviour", "login", "message"),
    [
        ("tamper", "temp0", "has no valid signature"),
        ("audience", "temp1", "was issued to another service"),
        ("expired", "temp2", "has expired"),
    ],
)
def test_refused_answers_show_a_clear_page_and_make_no_account(
    saml_server: LiveServer,
    new_page: Callable[..., Any],
    mode: Callable[[str | None], None],
    misbehaviour: str,
    login: str,
    message: str,
) -> None:
    mode(misbehaviour)
    page = new_page()
    _sign_in(page, saml_server, login)
    page.wait_for_selector("#sso-error")
    assert message in page.inner_text("#sso-error")
    for email in (ACCOUNTS[login]["email"], "mallory@evil.example"):
        assert saml_server.user_by_email(email) is None
    assert "palaver_session" not in _cookies(page)


def test_a_replayed_answer_is_refused(
    saml_server: LiveServer, new_page: Callable[..., Any], mode: Callable[[str | None], None]
) -> None:
    first = new_page()
    _sign_in(first, saml_server, "temp3")
    wait_for_app(first)
    mode("replay")
    page = new_page()
    _sign_in(page, saml_server, "temp3")
    page.wait_for_selector("#sso-error")
    assert "already used" in page.inner_text("#sso-error")
    assert "palaver_session" not in _cookies(page)


def test_an_unsolicited_answer_is_refused_when_idp_initiated_is_off(
    saml_server: LiveServer, idp: IdentityProvider, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(f"{idp.url}/unsolicited")
    _through_idp(page, "temp4")
    page.wait_for_selector("#sso-error")
    assert "was not started here" in page.inner_text("#sso-error")
    assert saml_server.user_by_email(ACCOUNTS["temp4"]["email"]) is None
    assert "palaver_session" not in _cookies(page)


def test_an_answer_brought_by_another_browser_is_refused(
    saml_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(saml_server.url + "/")
    page.click("a[data-provider='saml:corp']")
    page.wait_for_selector("input[name=username]")
    # The binding cookie is gone, as if another browser brought the IdP's answer.
    page.context.clear_cookies(name="palaver_saml")
    _through_idp(page, "temp5")
    page.wait_for_selector("#sso-error")
    assert "started in another browser" in page.inner_text("#sso-error")
    assert "palaver_session" not in _cookies(page)


def test_groups_in_the_assertion_map_to_a_role(saml_server: LiveServer, new_page: Callable[..., Any]) -> None:
    page = new_page()
    _sign_in(page, saml_server, "temp7")
    wait_for_app(page)
    user = saml_server.user_by_email("temp7@corp.example")
    assert user is not None and user.role == 200


def _decrypt(encrypted: str, otp: str) -> str:
    return bytes.fromhex(
        "".join(f"{int(a, 16) ^ int(b, 16):x}" for a, b in zip(encrypted, otp, strict=True))
    ).decode()


def test_the_apps_flow_through_saml(saml_server: LiveServer, new_page: Callable[..., Any]) -> None:
    otp = secrets.token_hex(32)
    page = new_page()
    with page.expect_response(lambda r: r.url.endswith("/complete/saml/")) as done:
        page.goto(f"{saml_server.url}/accounts/login/social/saml/corp?mobile_flow_otp={otp}")
        _through_idp(page, "iago")
    location = done.value.headers["location"]
    assert location.startswith("zulip://login?"), location
    params = dict(httpx.QueryParams(location.split("?", 1)[1]))
    assert params["email"] == "iago@example.com" and params["realm"] == saml_server.url
    api_key = _decrypt(params["otp_encrypted_api_key"], otp)
    me = httpx.get(f"{saml_server.url}/api/v1/users/me", auth=("iago@example.com", api_key)).json()
    assert me["user_id"] == int(params["user_id"])
    assert "palaver_session" not in _cookies(page)


# The desktop app's flow (desktop_flow_otp) --------------------------------------------------


def _desktop_token(page: Any, key: bytes) -> str:
    """The token on the browser's last page, decrypted as the desktop app's clipboard
    decrypter does: hex of a 12-byte IV, then AES-256-GCM ciphertext and tag."""
    page.wait_for_url("**/accounts/login/desktop/done/**")
    data = bytes.fromhex(page.input_value("#desktop-data"))
    return AESGCM(key).decrypt(data[:12], data[12:], b"").decode()


def _app_window_signs_in(server: LiveServer, app: Any, token: str, email: str) -> None:
    app.goto(f"{server.url}/accounts/login/subdomain/{token}")
    wait_for_app(app)
    me = app.evaluate("fetch('/json/users/me').then(r => r.json())")
    assert me["email"] == email


@pytest.mark.parametrize("method", ["saml", "password"])
def test_the_desktop_flow_hands_over_an_encrypted_one_time_token(
    saml_server: LiveServer, new_page: Callable[..., Any], method: str
) -> None:
    key = secrets.token_bytes(32)
    browser = new_page()
    if method == "saml":
        browser.goto(f"{saml_server.url}/accounts/login/social/saml/corp?desktop_flow_otp={key.hex()}")
        _through_idp(browser, "iago")
        email = "iago@example.com"
    else:
        browser.goto(f"{saml_server.url}/?desktop_flow_otp={key.hex()}")
        browser.fill("#id_username", "othello@example.com")
        browser.fill("#id_password", PASSWORD)
        browser.click("#login-form button[type=submit]")
        email = "othello@example.com"
    token = _desktop_token(browser, key)
    # The browser itself is not signed in: the session is the app's.
    assert "palaver_session" not in _cookies(browser)
    app = new_page()
    _app_window_signs_in(saml_server, app, token, email)
    # The token works once.
    again = new_page()
    again.goto(f"{saml_server.url}/accounts/login/subdomain/{token}")
    assert "expired or was already used" in again.inner_text("#sso-error")


def test_the_desktop_app_page_makes_the_pad_and_takes_the_token(
    saml_server: LiveServer, new_page: Callable[..., Any]
) -> None:
    """Zulip's desktop app opening a login URL: its page gets the key from the app's
    electron_bridge, opens the browser on the same URL with the pad, and signs the app's
    window in with the token the app decrypted from the clipboard (played here by the test)."""
    key = secrets.token_bytes(32)
    app = new_page(user_agent="Mozilla/5.0 ZulipElectron/5.12.0 Chrome/130")
    app.context.add_init_script(
        f"""window.electron_bridge = {{ decrypt_clipboard(version) {{
            let paste; const pasted = new Promise((resolve) => {{ paste = resolve; }});
            window.__paste = paste;
            return {{ key: new Uint8Array({list(key)}), pasted }};
        }} }};"""
    )
    with app.context.expect_page() as opened:
        app.goto(f"{saml_server.url}/accounts/login/social/saml/corp")
    # The browser went on to the IdP, carrying the pad (the token below decrypts with it).
    browser = opened.value
    _through_idp(browser, "hamlet")
    token = _desktop_token(browser, key)
    app.evaluate("token => window.__paste(token)", token)
    wait_for_app(app)
    assert app.evaluate("fetch('/json/users/me').then(r => r.json())")["email"] == "hamlet@example.com"


def test_both_pads_at_once_are_refused(saml_server: LiveServer) -> None:
    pad = secrets.token_hex(32)
    url = f"{saml_server.url}/accounts/login/social/saml/corp?mobile_flow_otp={pad}&desktop_flow_otp={pad}"
    assert httpx.get(url).status_code == 400
    assert httpx.get(f"{saml_server.url}/?desktop_flow_otp=xyz").status_code == 400
