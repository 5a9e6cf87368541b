"""The reference's smaller remaining operations: bulk subscription changes, legacy muting,
PATCH /users/{email}, legacy push tokens, test notifications, BigBlueButton and dev login."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from palaver.lib.calls import sign
from palaver.services import Services
from tests.api.test_messages_send import create_channel
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.push_helpers import FakeRelay


def test_patch_subscriptions_adds_and_removes(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.iago, "Verona", [realm.iago, realm.hamlet])
    body = assert_json_success(
        api.patch(
            realm.hamlet,
            "users/me/subscriptions",
            {"add": [{"name": "Denmark", "color": "#76ce90"}], "delete": ["Verona"]},
        )
    )
    assert body["removed"] == ["Verona"]
    assert body["not_removed"] == []
    assert body["subscribed"] == {str(realm.hamlet.id): ["Denmark"]}
    assert body["already_subscribed"] == {}
    subs = assert_json_success(api.get(realm.hamlet, "users/me/subscriptions"))["subscriptions"]
    assert [(s["name"], s["color"]) for s in subs] == [("Denmark", "#76ce90")]
    # Either half failing undoes both.
    assert_json_error(
        api.patch(realm.hamlet, "users/me/subscriptions", {"add": [{"name": "Rome"}], "delete": ["Nowhere"]}),
        "Channel 'Nowhere' does not exist",
    )
    names = [
        s["name"]
        for s in assert_json_success(api.get(realm.hamlet, "users/me/subscriptions"))["subscriptions"]
    ]
    assert names == ["Denmark"]
    assert_json_success(api.patch(realm.hamlet, "users/me/subscriptions", {}))


def test_legacy_muted_topics(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    assert_json_success(
        api.patch(
            realm.hamlet,
            "users/me/subscriptions/muted_topics",
            {"stream_id": stream_id, "topic": "t", "op": "add"},
        )
    )
    [(event, _)] = events.of_type("user_topic")
    assert (event["topic_name"], event["visibility_policy"]) == ("t", 1)
    # Muting again succeeds (feature level 170) and changes nothing.
    assert_json_success(
        api.patch(
            realm.hamlet,
            "users/me/subscriptions/muted_topics",
            {"stream": "Denmark", "topic": "t", "op": "add"},
        )
    )
    assert len(events.of_type("user_topic")) == 1
    assert_json_success(
        api.patch(
            realm.hamlet,
            "users/me/subscriptions/muted_topics",
            {"stream": "Denmark", "topic": "t", "op": "remove"},
        )
    )
    assert events.of_type("user_topic")[-1][0]["visibility_policy"] == 0
    url = "users/me/subscriptions/muted_topics"
    assert_json_error(
        api.patch(realm.hamlet, url, {"topic": "t", "op": "add"}), "Please supply 'stream' or 'stream_id'."
    )
    assert_json_error(
        api.patch(realm.hamlet, url, {"stream_id": stream_id, "topic": "t", "op": "x"}), "Invalid op"
    )
    assert_json_error(
        api.patch(realm.hamlet, url, {"stream": "Nope", "topic": "t", "op": "add"}),
        "Invalid channel name 'Nope'",
    )


def test_patch_user_by_email(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.email}", {"full_name": "Prince Hamlet"}))
    me = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert me["full_name"] == "Prince Hamlet"
    assert_json_error(api.patch(realm.iago, "users/nobody@example.com", {"full_name": "X"}), "No such user")
    assert_json_error(
        api.patch(realm.hamlet, f"users/{realm.othello.email}", {"full_name": "X"}),
        "Must be an organization administrator",
    )


def test_legacy_push_tokens(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.post(realm.hamlet, "users/me/android_gcm_reg_id", {"token": "android-token"}))
    assert_json_success(api.post(realm.hamlet, "users/me/android_gcm_reg_id", {"token": "android-token"}))
    assert_json_success(api.delete(realm.hamlet, "users/me/android_gcm_reg_id", {"token": "android-token"}))
    assert_json_error(
        api.delete(realm.hamlet, "users/me/android_gcm_reg_id", {"token": "android-token"}),
        "Token does not exist",
    )
    assert_json_error(
        api.post(realm.hamlet, "users/me/android_gcm_reg_id", {"token": ""}), "Empty or invalid length token"
    )
    data = {"token": "c0ffee", "appid": "org.zulip.Zulip"}
    assert_json_success(api.post(realm.hamlet, "users/me/apns_device_token", data))
    assert_json_error(
        api.post(realm.hamlet, "users/me/apns_device_token", {"token": "c0ffee", "appid": "bad id"}),
        "appid has invalid format",
    )
    assert_json_error(
        api.post(realm.hamlet, "users/me/apns_device_token", {"token": "xyz", "appid": "org.zulip.Zulip"}),
        "Invalid APNS token",
    )
    assert_json_success(api.delete(realm.hamlet, "users/me/apns_device_token", {"token": "c0ffee"}))


def test_test_notification(
    api: Api,
    realm: SeededRealm,
    services: Services,
    relay: FakeRelay,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert_json_error(
        api.post(realm.hamlet, "mobile_push/test_notification"),
        "Server is not configured to use push notification service.",
        code="PUSH_SERVICE_NOT_CONFIGURED",
    )
    monkeypatch.setattr(
        services, "settings", services.settings.model_copy(update={"push_relay_url": relay.url})
    )
    assert_json_error(
        api.post(realm.hamlet, "mobile_push/test_notification"),
        "Device not recognized",
        code="INVALID_PUSH_DEVICE_TOKEN",
    )
    assert_json_success(api.post(realm.hamlet, "users/me/android_gcm_reg_id", {"token": "tok-1"}))
    assert_json_success(
        api.post(realm.hamlet, "users/me/apns_device_token", {"token": "abcd", "appid": "a.b"})
    )
    assert_json_success(api.post(realm.hamlet, "mobile_push/test_notification", {"token": "tok-1"}))
    [sent] = relay.wait_for(1)
    assert (sent["legacy_token_kind"], sent["token"], sent["data"]["event"]) == ("fcm", "tok-1", "test")
    # The legacy plaintext format: every value a string, as FCM data must be.
    assert sent["data"]["user_id"] == str(realm.hamlet.id)
    relay.received.clear()
    assert_json_success(api.post(realm.hamlet, "mobile_push/test_notification"))
    assert sorted(r["token"] for r in relay.wait_for(2)) == ["abcd", "tok-1"]
    assert_json_error(
        api.post(realm.hamlet, "mobile_push/test_notification", {"token": "other"}), "Device not recognized"
    )


def test_big_blue_button(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_json_error(
        api.get(realm.hamlet, "calls/bigbluebutton/create", {"meeting_name": "m"}),
        "BigBlueButton is not configured.",
    )
    settings = services.settings.model_copy(
        update={
            "big_blue_button_url": "https://bbb.example.com/bigbluebutton/",
            "big_blue_button_secret": "s3cret",
        }
    )
    monkeypatch.setattr(services, "settings", settings)
    body = assert_json_success(
        api.get(
            realm.hamlet,
            "calls/bigbluebutton/create",
            {"meeting_name": "Denmark meeting", "voice_only": True},
        )
    )
    parts = urlsplit(body["url"])
    assert parts.path == "/calls/bigbluebutton/join"
    query = parse_qs(parts.query)
    assert query["name"] == ["Denmark meeting"]
    assert query["moderator"] == [str(realm.hamlet.id)]
    assert query["lock_settings_disable_cam"] == ["true"]
    fields = [(k, query[k][0]) for k in ("meeting_id", "name", "moderator", "lock_settings_disable_cam")]
    assert query["checksum"] == [sign("s3cret", fields)]
    assert_json_error(api.get(realm.hamlet, "calls/bigbluebutton/create"), "Missing 'meeting_name' argument")


def test_dev_fetch_api_key(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    email = f"hamlet@{realm.string_id}.example.com"
    assert_json_error(api.post(None, "dev_fetch_api_key", {"username": email}), "DevAuthBackend not enabled.")
    monkeypatch.setattr(services, "settings", services.settings.model_copy(update={"development_auth": True}))
    body = assert_json_success(api.post(None, "dev_fetch_api_key", {"username": email}))
    assert (body["api_key"], body["user_id"]) == (realm.hamlet.api_key, realm.hamlet.id)
    assert_json_error(
        api.post(None, "dev_fetch_api_key", {"username": "nobody@example.com"}),
        "This user is not registered.",
        401,
    )


def test_messages_with_bad_tex_are_sent(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    for content in ("$$x^$$", "```math\n\\begin{matrix}\n```", "$$" + "{" * 3000 + "$$"):
        data = {"type": "stream", "to": "Denmark", "topic": "t", "content": content}
        message_id = assert_json_success(api.post(realm.hamlet, "messages", data))["id"]
        rendered = assert_json_success(api.get(realm.hamlet, f"messages/{message_id}"))["message"]["content"]
        assert 'class="tex-error"' in rendered
