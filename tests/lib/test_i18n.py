"""The translation layer: choosing the language, plural forms, interpolation, the catalogs."""

from __future__ import annotations

import json
from datetime import date

import pytest
from jinja2 import Environment

from palaver.lib import i18n
from palaver.lib.email.build import render_parts
from palaver.lib.i18n import (
    accept_language,
    choose_language,
    client_catalog,
    format_date,
    format_number,
    gettext,
    ngettext,
    plural_categories,
    shipped_languages,
    text_direction,
    use_language,
)


def test_shipped_languages() -> None:
    assert {"en", "de", "fr", "es", "ja", "ar"} <= set(shipped_languages())


def test_accept_language_orders_by_quality() -> None:
    assert accept_language("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5") == ["fr-CH", "fr", "en", "de"]
    assert accept_language("de;q=0.2, ja") == ["ja", "de"]
    assert accept_language("es;q=0, ar;q=bogus, ja") == ["ja"]
    assert accept_language(None) == []


def test_choice_user_then_organization_then_browser() -> None:
    # The user's own setting wins, English included.
    assert choose_language("ja", "de", "fr") == "ja"
    assert choose_language("en", "de", "fr") == "en"
    # A regional tag maps to the language shipped.
    assert choose_language("de-AT", None, None) == "de"
    # No user (or a language Palaver does not ship): the organization's choice.
    assert choose_language(None, "es", "fr") == "es"
    assert choose_language("zz", "es", "fr") == "es"
    # The organization's untouched English default gives way to the browser.
    assert choose_language(None, "en", "pt-BR, fr;q=0.8") == "fr"
    assert choose_language(None, "en", "pt-BR") == "en"
    assert choose_language(None, None, None) == "en"


def test_interpolation_and_fallback_to_english() -> None:
    with use_language("de"):
        assert gettext("Join %(realm_name)s", realm_name="Acme") == "Acme beitreten"
        assert gettext("A message no catalog has") == "A message no catalog has"
    assert gettext("Join %(realm_name)s", realm_name="Acme") == "Join Acme"


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "لا رسائل"),
        (1, "رسالة واحدة"),
        (2, "رسالتان"),
        (3, "3 رسائل"),
        (11, "11 رسالة"),
        (100, "100 رسالة"),
    ],
)
def test_arabic_has_six_plural_forms(n: int, expected: str) -> None:
    with use_language("ar"):
        assert ngettext("%(count)s message", "%(count)s messages", n, count=n) == expected


def test_plural_forms_of_other_languages() -> None:
    one, other = "%(count)s message", "%(count)s messages"
    with use_language("de"):
        assert [ngettext(one, other, n, count=n) for n in (1, 2)] == ["1 Nachricht", "2 Nachrichten"]
    with use_language("fr"):
        # French counts 0 as singular.
        assert [ngettext(one, other, n, count=n) for n in (0, 1, 2)] == [
            "0 message",
            "1 message",
            "2 messages",
        ]
    with use_language("ja"):
        assert {ngettext(one, other, n, count=n) for n in (1, 5)} == {"1 件のメッセージ", "5 件のメッセージ"}
    assert ngettext(one, other, 1, count=1) == "1 message"


def test_numbers_and_dates_follow_the_locale() -> None:
    assert format_number(1234567.5, "de") == "1.234.567,5"
    assert format_number(1234567.5, "en") == "1,234,567.5"
    assert format_date(date(2026, 3, 4), "long", "fr") == "4 mars 2026"
    assert format_date(date(2026, 3, 4), "long", "ja") == "2026年3月4日"


def test_direction() -> None:
    assert text_direction("ar") == "rtl"
    assert text_direction("de") == "ltr"


def test_jinja_trans_blocks_follow_the_context_language() -> None:
    env = Environment(autoescape=True)
    i18n.install(env)
    template = env.from_string(
        '<html lang="{{ current_language() }}" dir="{{ text_direction() }}">'
        "{% trans %}Join {{ realm_name }}{% endtrans %}|"
        "{% trans count=n %}{{ count }} message{% pluralize %}{{ count }} messages{% endtrans %}"
    )
    with use_language("ar"):
        assert (
            template.render(realm_name="<b>", n=2) == '<html lang="ar" dir="rtl">انضم إلى &lt;b&gt;|رسالتان'
        )
    assert template.render(realm_name="Acme", n=1) == '<html lang="en" dir="ltr">Join Acme|1 message'


def test_email_in_german() -> None:
    context = {
        "realm_name": "Acme",
        "realm_url": "https://acme.example",
        "external_url": "https://acme.example",
        "full_name": "Ana",
        "email": "ana@acme.example",
        "valid_hours": 2,
        "path": "/reset/abc",
    }
    with use_language("de"):
        subject, text, html = render_parts("password_reset", context)
    assert subject == "Setzen Sie Ihr Passwort für Acme zurück"
    assert text.startswith("Hallo Ana,\n\n")
    assert "https://acme.example/reset/abc\n" in text
    assert '<html lang="de" dir="ltr">' in html and 'href="https://acme.example/reset/abc"' in html


def test_plural_categories_map_cldr_to_gettext_forms() -> None:
    arabic = (
        "(n == 0 ? 0 : n == 1 ? 1 : n == 2 ? 2 : n % 100 >= 3 && n % 100 <= 10 ? 3 : n % 100 >= 11 ? 4 : 5)"
    )
    assert plural_categories("ar", arabic) == {"zero": 0, "one": 1, "two": 2, "few": 3, "many": 4, "other": 5}
    assert plural_categories("de", "(n != 1)") == {"one": 0, "other": 1}
    assert plural_categories("ja", "0") == {"other": 0}


def test_client_catalog_holds_only_client_messages() -> None:
    catalog = client_catalog("de")
    assert catalog["language"] == "de" and catalog["dir"] == "ltr"
    messages = catalog["messages"]
    # A server page's message stays on the server.
    assert "Log in to %(realm_name)s" not in messages
    assert client_catalog("ar")["dir"] == "rtl"
    assert client_catalog("en")["messages"] == {}
    assert client_catalog("xx")["language"] == "en"


@pytest.mark.parametrize("language", ["de", "fr", "es", "ja", "ar"])
def test_the_pages_embedded_catalog_cannot_end_its_script_element(language: str) -> None:
    text = i18n.client_catalog_json(language)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == i18n.client_catalog(language)
