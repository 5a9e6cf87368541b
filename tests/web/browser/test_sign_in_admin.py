"""The sign-in administration in the web client's settings: the organization's methods and
sign-up rules, the sign-in log, and resetting someone's second factor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.web.conftest import LiveServer, wait_for

AppPage = Callable[..., Any]


def _open(page: Any, tab: str) -> None:
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("tab", name=tab).click()


def _realm(live_server: LiveServer, name: str) -> dict[str, Any]:
    with live_server.api(name) as api:
        state: dict[str, Any] = api.post("/register", data={"fetch_event_types": '["realm"]'}).json()
        return state


def test_owners_choose_the_methods_and_sign_up_rules(live_server: LiveServer, app_page: AppPage) -> None:
    page = app_page("desdemona", "#inbox")
    _open(page, "Authentication methods")
    email = page.get_by_label("Email and password")
    assert email.is_checked() and email.is_enabled()
    # The server offers no other method, and the last one cannot be turned off.
    assert page.locator(".auth-methods input").count() == 1
    email.click()  # refused by the server, so it is checked again at once
    page.locator(".toast", has_text="At least one authentication method must be enabled.").wait_for()
    wait_for(page, "() => document.getElementById('auth-method-email').checked")

    signup = page.get_by_label("A first sign-in through the directory or a provider creates the account")
    assert signup.is_checked()
    signup.uncheck()
    wait_for(page, "() => window.palaver.state.realm.realm_external_signup === false")
    assert _realm(live_server, "desdemona")["realm_external_signup"] is False
    page.get_by_label("A first sign-in through the directory or a provider creates the account").check()
    wait_for(page, "() => window.palaver.state.realm.realm_external_signup === true")

    required = page.get_by_label("Require two-factor authentication for everyone")
    assert not required.is_checked()
    try:
        required.check()
        wait_for(page, "() => window.palaver.state.realm.realm_require_two_factor === true")
        assert _realm(live_server, "desdemona")["realm_require_two_factor"] is True
        # Re-drawn from the realm event: the box says what the server holds.
        assert page.get_by_label("Require two-factor authentication for everyone").is_checked()
    finally:
        with live_server.api("desdemona") as api:
            api.patch("/realm", data={"require_two_factor": "false"}).raise_for_status()
    wait_for(page, "() => !document.getElementById('auth-require-two-factor').checked")


def test_administrators_see_the_settings_but_only_owners_change_them(
    live_server: LiveServer, app_page: AppPage
) -> None:
    page = app_page("iago", "#inbox")
    _open(page, "Authentication methods")
    page.get_by_text("Only organization owners can change these settings.").wait_for()
    assert page.get_by_label("Email and password").is_disabled()
    assert page.get_by_label("Require two-factor authentication for everyone").is_disabled()


def test_sign_in_log_and_resetting_a_second_factor(live_server: LiveServer, app_page: AppPage) -> None:
    page = app_page("iago", "#inbox")
    _open(page, "Users")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Reset two-factor authentication of King Hamlet").click()
    page.locator(".toast", has_text="King Hamlet had no two-factor authentication").wait_for()

    page.get_by_role("tab", name="Sign-in log").click()
    table = page.locator("#logins-table")
    # The people of these tests signed in through the login form.
    table.locator("tr", has_text="Iago").first.wait_for()
    assert "Password" in table.inner_text() and "Browser" in table.inner_text()
    page.get_by_label("Show").select_option(label="King Hamlet")
    reset = table.locator("tr", has_text="Two-factor authentication reset")
    reset.wait_for()
    assert "by Iago" in reset.first.inner_text()
    wait_for(
        page,
        "() => [...document.querySelectorAll('#logins-table tbody tr')]"
        ".every((r) => r.textContent.includes('King Hamlet'))",
    )

    # Members have no such tabs.
    member = app_page("othello", "#inbox")
    member.get_by_role("button", name="Settings").click()
    member.get_by_role("tablist", name="Settings sections").wait_for()
    assert member.get_by_role("tab", name="Sign-in log").count() == 0
