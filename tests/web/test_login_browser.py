"""Logging in with a real Chromium against a real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.web.conftest import LiveServer, wait_for_app


def test_wrong_password_then_right_password(live_server: LiveServer, new_page: Callable[..., Any]) -> None:
    page = new_page()
    page.goto(live_server.url + "/")
    assert page.title().startswith("Log in")
    email, password, _ = live_server.users["hamlet"]
    page.fill("#id_username", email)
    page.fill("#id_password", "not-" + password)
    page.click("button[type=submit]")
    page.wait_for_selector("#login-error")
    assert page.inner_text("#login-error") == "Incorrect email or password."
    assert page.input_value("#id_username") == email
    # The email is kept, so the cursor waits in the password field for the retry.
    assert page.evaluate("document.activeElement.id") == "id_password"
    assert page.input_value("#id_password") == ""

    page.fill("#id_password", password)
    page.click("button[type=submit]")
    # The app shell's title (its content is the web client's to test).
    wait_for_app(page)
    assert page.title() == "Browser Test Organization - Palaver"
    assert page.url.startswith(live_server.url + "/")
    assert "/accounts/login" not in page.url
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["palaver_session"]["httpOnly"] is True
    assert cookies["palaver_session"]["sameSite"] == "Lax"
    # The page's script can read the CSRF token it must send with writes.
    assert page.evaluate("document.cookie").count("csrftoken=") == 1
    me = page.evaluate("fetch('/json/users/me').then(r => r.json())")
    assert me["email"] == email
