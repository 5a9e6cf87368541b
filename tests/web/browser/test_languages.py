"""The web client and the login page in the reader's language, German and Arabic (right to left)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.web.browser.client import log_in
from tests.web.conftest import LiveServer

NewPage = Callable[..., Any]
# The person whose language the tests change (no other browser test signs in as her).
READER = "desdemona"

PLURALS = """async () => {
  const links = [...document.querySelectorAll('link[rel=modulepreload]')];
  const i18n = await import(links.find((l) => l.href.includes('/i18n')).href);
  const vote = (n) => i18n.tn('{option}: {n} vote', '{option}: {n} votes', n, { option: 'A' });
  return [0, 1, 2, 3, 11, 100].map(vote);
}"""


def set_language(live_server: LiveServer, language: str) -> None:
    with live_server.api(READER) as api:
        api.patch("/settings", data={"default_language": language}).raise_for_status()


@pytest.fixture
def reader_language(live_server: LiveServer) -> Iterator[Callable[[str], None]]:
    yield lambda language: set_language(live_server, language)
    set_language(live_server, "en")


def test_client_in_german_for_a_user_whose_language_is_german(
    live_server: LiveServer, new_page: NewPage, reader_language: Callable[[str], None]
) -> None:
    reader_language("de")
    page = log_in(live_server, new_page(), READER)
    html = page.locator("html")
    assert html.get_attribute("lang") == "de" and html.get_attribute("dir") == "ltr"
    # The shell (server-rendered) and the modules (t()) both speak German.
    page.get_by_role("button", name="Abmelden").wait_for()
    page.get_by_role("button", name="Einstellungen").wait_for()
    page.get_by_role("navigation", name="Kanäle und Unterhaltungen").get_by_text(
        "Kanäle", exact=True
    ).wait_for()
    assert page.evaluate(PLURALS)[:3] == ["A: 0 Stimmen", "A: 1 Stimme", "A: 2 Stimmen"]
    # The settings tabs and field labels are German too (they are passed around as values).
    page.get_by_role("button", name="Einstellungen").click()
    page.get_by_role("tab", name="Profil", exact=True).wait_for()
    page.get_by_role("tab", name="Präferenzen", exact=True).wait_for()
    page.locator("#settings-panel").get_by_label("Vollständiger Name").wait_for()


def test_client_in_arabic_is_right_to_left(
    live_server: LiveServer, new_page: NewPage, reader_language: Callable[[str], None]
) -> None:
    reader_language("ar")
    page = log_in(live_server, new_page(viewport={"width": 1280, "height": 800}), READER)
    html = page.locator("html")
    assert html.get_attribute("lang") == "ar" and html.get_attribute("dir") == "rtl"
    page.get_by_role("button", name="تسجيل الخروج").wait_for()
    page.get_by_text("الرسائل المباشرة", exact=True).first.wait_for()
    # Mirrored: the channels sidebar is on the right of the messages, the people on the left.
    left = page.locator("#left-sidebar").bounding_box()
    main = page.locator("#main").bounding_box()
    right = page.locator("#right-sidebar").bounding_box()
    assert left and main and right
    assert left["x"] > main["x"] > right["x"]
    assert page.evaluate("getComputedStyle(document.querySelector('#left-sidebar')).direction") == "rtl"
    # Arabic's six plural forms, chosen by Intl.PluralRules.
    assert page.evaluate(PLURALS) == [
        "A: لا أصوات",
        "A: صوت واحد",
        "A: صوتان",
        "A: 3 أصوات",
        "A: 11 صوتًا",
        "A: 100 صوت",
    ]


@pytest.mark.parametrize(
    ("locale", "heading", "button"),
    [
        ("ja-JP", "Browser Test Organization にログイン", "ログイン"),
        ("fr-FR", "Se connecter à Browser Test Organization", "Se connecter"),
        ("ar-EG", "سجّل الدخول إلى Browser Test Organization", "تسجيل الدخول"),
    ],
)
def test_login_page_follows_accept_language(
    live_server: LiveServer, new_page: NewPage, locale: str, heading: str, button: str
) -> None:
    page = new_page(locale=locale)
    page.goto(live_server.url + "/")
    page.get_by_role("heading", name=heading).wait_for()
    page.get_by_role("button", name=button).wait_for()
    assert page.locator("html").get_attribute("lang") == locale.split("-", maxsplit=1)[0]
    assert page.locator("html").get_attribute("dir") == ("rtl" if locale.startswith("ar") else "ltr")
