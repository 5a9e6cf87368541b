"""GET /server_settings: what a client learns before logging in."""

from __future__ import annotations

import uuid

from palaver import FEATURE_LEVEL, SERVICE_VERSION
from palaver.models import Realm
from palaver.services import Services
from tests.client import TestClient
from tests.helpers import Api, SeededRealm, assert_json_success, seed_realm

AUTH_METHOD_KEYS = {
    "password",
    "dev",
    "email",
    "ldap",
    "remoteuser",
    "github",
    "azuread",
    "gitlab",
    "apple",
    "google",
    "saml",
    "openid connect",
    "discord",
}
SERVER_FIELDS = {
    "authentication_methods",
    "external_authentication_methods",
    "service_feature_level",
    "service_version",
    "service_merge_base",
    "zulip_feature_level",
    "zulip_version",
    "zulip_merge_base",
    "push_notifications_enabled",
    "is_incompatible",
    "email_auth_enabled",
    "require_email_format_usernames",
}
REALM_FIELDS = {
    "realm_url",
    "realm_uri",
    "realm_name",
    "realm_icon",
    "realm_description",
    "realm_web_public_access_enabled",
}
ENVELOPE = {"result", "msg"}


def update_realm(services: Services, realm_id: int, **values: object) -> None:
    with services.db.session() as session, session.begin():
        realm = session.get(Realm, realm_id)
        assert realm is not None
        for name, value in values.items():
            setattr(realm, name, value)


def test_fields_for_a_realm(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(None, "server_settings"))
    assert set(body) == ENVELOPE | SERVER_FIELDS | REALM_FIELDS

    assert body["service_feature_level"] == 496
    assert body["service_feature_level"] == FEATURE_LEVEL
    assert body["zulip_feature_level"] == body["service_feature_level"]
    assert body["service_version"] == SERVICE_VERSION
    assert body["zulip_version"] == body["service_version"]
    assert body["service_merge_base"] == ""
    assert body["zulip_merge_base"] == body["service_merge_base"]

    assert set(body["authentication_methods"]) == AUTH_METHOD_KEYS
    enabled = {name for name, on in body["authentication_methods"].items() if on}
    assert enabled == {"password", "email"}
    assert all(isinstance(v, bool) for v in body["authentication_methods"].values())
    assert body["external_authentication_methods"] == []
    assert body["email_auth_enabled"] is True
    assert body["require_email_format_usernames"] is True
    assert body["is_incompatible"] is False
    assert body["push_notifications_enabled"] is False

    url = f"http://{realm.string_id}.palaver.test"
    assert body["realm_url"] == url
    assert body["realm_uri"] == url
    assert body["realm_name"] == "Test Organization"
    assert body["realm_icon"].startswith("https://")
    assert body["realm_description"] == ""
    assert body["realm_web_public_access_enabled"] is False


def test_realm_fields_follow_the_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    update_realm(services, realm.id, name="Renamed Org", description="We **ship** things.")
    body = assert_json_success(api.get(None, "server_settings"))
    assert body["realm_name"] == "Renamed Org"
    # The description is sent as rendered HTML, not the Markdown source.
    assert body["realm_description"] == "<p>We <strong>ship</strong> things.</p>"


def test_realm_icon_changes_with_its_version(api: Api, realm: SeededRealm, services: Services) -> None:
    before = assert_json_success(api.get(None, "server_settings"))["realm_icon"]
    update_realm(services, realm.id, icon_version=2)
    after = assert_json_success(api.get(None, "server_settings"))["realm_icon"]
    assert before != after


def test_each_realm_reports_its_own_fields(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services, name="Other Org")
    mine = assert_json_success(api.get(None, "server_settings"))
    theirs = assert_json_success(Api(api.client, other).get(None, "server_settings"))
    assert theirs["realm_name"] == "Other Org"
    assert theirs["realm_url"] == f"http://{other.string_id}.palaver.test"
    assert mine["realm_url"] != theirs["realm_url"]
    assert mine["realm_icon"] != theirs["realm_icon"]


def test_unknown_subdomain_has_no_realm_fields(client: TestClient) -> None:
    host = f"no-such-realm-{uuid.uuid4().hex[:8]}.palaver.test"
    body = assert_json_success(client.get("/api/v1/server_settings", headers={"host": host}))
    assert set(body) == ENVELOPE | SERVER_FIELDS
    assert body["service_feature_level"] == FEATURE_LEVEL


def test_host_port_is_ignored(api: Api, realm: SeededRealm, client: TestClient) -> None:
    body = assert_json_success(client.get("/api/v1/server_settings", headers={"host": f"{realm.host}:9991"}))
    assert body["realm_name"] == "Test Organization"


def test_needs_no_credentials_and_ignores_bad_ones(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(None, "server_settings", headers={"authorization": "Basic !!!"}))
    assert body["realm_name"] == "Test Organization"
    # Valid credentials change nothing either.
    assert assert_json_success(api.get(realm.hamlet, "server_settings")) == body


def test_unknown_parameters_are_reported(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(None, "server_settings", {"bogus": "1"}))
    assert body["ignored_parameters_unsupported"] == ["bogus"]


def test_other_methods_are_not_allowed(api: Api, realm: SeededRealm) -> None:
    response = api.post(None, "server_settings")
    assert response.status_code == 405
    assert response.json()["result"] == "error"


def test_web_public_access(api: Api, realm: SeededRealm, services: Services) -> None:
    def enabled() -> bool:
        value: bool = assert_json_success(api.get(None, "server_settings"))["realm_web_public_access_enabled"]
        return value

    update_realm(services, realm.id, enable_spectator_access=True)
    # Spectator access alone offers nothing to browse.
    assert enabled() is False
    params = {"name": "Town square", "subscribers": [realm.hamlet.id], "is_web_public": True}
    stream_id = assert_json_success(api.post(realm.desdemona, "channels/create", params))["id"]
    assert enabled() is True
    # Turning spectator access off closes it again.
    update_realm(services, realm.id, enable_spectator_access=False)
    assert enabled() is False
    update_realm(services, realm.id, enable_spectator_access=True)
    assert_json_success(api.delete(realm.desdemona, f"streams/{stream_id}"))
    # An archived channel is not browsable.
    assert enabled() is False


def test_private_channels_do_not_enable_web_public_access(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    update_realm(services, realm.id, enable_spectator_access=True)
    for name, invite_only in (("Public", False), ("Private", True)):
        params = {"name": name, "subscribers": [realm.hamlet.id], "invite_only": invite_only}
        assert_json_success(api.post(realm.desdemona, "channels/create", params))
    body = assert_json_success(api.get(None, "server_settings"))
    assert body["realm_web_public_access_enabled"] is False
