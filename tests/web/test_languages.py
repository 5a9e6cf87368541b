"""Server-rendered pages in the browser's language, and the app page in the user's."""

from __future__ import annotations

import json
import re

from palaver.lib.i18n_catalogs import languages
from tests.client import TestClient
from tests.helpers import SeededRealm
from tests.web.web_helpers import form_token, log_in


def test_login_page_in_the_browsers_language(web: TestClient) -> None:
    page = web.get("/", headers={"accept-language": "pt-BR, de;q=0.9, en;q=0.5"})
    assert '<html lang="de" dir="ltr">' in page.text
    assert "Bei Test Organization anmelden" in page.text
    arabic = web.get("/", headers={"accept-language": "ar"})
    assert '<html lang="ar" dir="rtl">' in arabic.text
    # No header, or only languages not shipped: English.
    assert '<html lang="en" dir="ltr">' in web.get("/", headers={"accept-language": "pt"}).text


def test_login_error_in_the_browsers_language(web: TestClient, realm: SeededRealm) -> None:
    data = {"username": realm.hamlet.email, "password": "wrong", "csrfmiddlewaretoken": form_token(web)}
    response = web.post("/accounts/login/", data=data, headers={"accept-language": "fr"})
    assert response.status_code == 401
    assert "E-mail ou mot de passe incorrect." in response.text


def test_password_reset_page_in_the_browsers_language(web: TestClient) -> None:
    page = web.get("/accounts/password/reset/", headers={"accept-language": "ja"})
    assert '<html lang="ja" dir="ltr">' in page.text and "パスワードの再設定" in page.text


def test_app_page_carries_the_users_language(web: TestClient, realm: SeededRealm) -> None:
    log_in(web, realm.hamlet)
    csrf = web.cookies["csrftoken"]
    web.patch(
        "/json/settings", data={"default_language": "ar"}, headers={"x-csrftoken": csrf}
    ).raise_for_status()
    # The user's choice wins over the browser's.
    page = web.get("/", headers={"accept-language": "de"}).text
    assert 'lang="ar" dir="rtl"' in page
    match = re.search(r'<script type="application/json" id="i18n-catalog">(.*?)</script>', page)
    assert match
    catalog = json.loads(match.group(1))
    assert catalog["language"] == "ar" and catalog["dir"] == "rtl"
    assert catalog["messages"]["Log out"] == "تسجيل الخروج"
    assert catalog["messages"]["{option}: {n} vote"]["two"] == "{option}: صوتان"
    # Only the client's messages travel with the page.
    assert "Log in to %(realm_name)s" not in catalog["messages"]
    assert "تسجيل الخروج" in page  # the shell's own text
    # The language picker lists every catalog the server has.
    listed = re.search(r'data-languages="([^"]*)"', page)
    assert listed and set(listed.group(1).split()) == {"en", *languages()}
