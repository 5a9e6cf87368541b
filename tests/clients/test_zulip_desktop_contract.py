"""Zulip's desktop app (zulip/zulip-desktop, read at 228ac2ba) can add and watch a Palaver
organization.

What the app asks of the server, from its source: ``app/main/request.ts`` validates
``GET /api/v1/server_settings`` (``realm_name`` a string, ``realm_uri`` an absolute URL,
``realm_icon`` a string, relative or absolute; ``zulip_version`` and ``zulip_feature_level``
optional) and probes ``HEAD /api/v1/server_settings`` to tell whether the server is back
online; the organization's page then runs in its window, the unread count read from the
page title (``^\\(N\\)``, ``components/webview.ts``), which tests/web covers with the web
client's title.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.helpers import Api, SeededRealm, assert_json_success


def test_server_settings_as_the_desktop_app_validates_it(api: Api, realm: SeededRealm) -> None:
    settings = assert_json_success(api.get(None, "server_settings"))
    assert isinstance(settings["realm_name"], str) and settings["realm_name"]
    url = urlsplit(settings["realm_uri"])
    assert url.scheme in ("http", "https") and url.netloc == realm.host
    assert isinstance(settings["realm_icon"], str)
    icon = (
        settings["realm_icon"]
        if not settings["realm_icon"].startswith("/")
        else settings["realm_uri"] + settings["realm_icon"]
    )
    assert urlsplit(icon).scheme in ("http", "https")
    assert isinstance(settings["zulip_version"], str)
    assert isinstance(settings["zulip_feature_level"], int)


def test_the_online_probe(api: Api, realm: SeededRealm) -> None:
    response = api.client.head("/api/v1/server_settings", headers={"host": realm.host})
    assert 200 <= response.status_code < 300
