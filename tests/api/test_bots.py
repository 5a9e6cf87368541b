"""Bots: POST/GET /bots, PATCH/DELETE /bots/{id}, POST /bots/{id}/api_key/regenerate."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.images import image_bytes


def create(api: Api, user: helpers.TestUser, **data: Any) -> dict[str, Any]:
    body: dict[str, Any] = assert_json_success(
        api.post(user, "bots", {"full_name": "Bot", "short_name": "bot", **data})
    )
    return body


def as_bot(realm: SeededRealm, body: dict[str, Any], short_name: str) -> helpers.TestUser:
    return helpers.TestUser(body["user_id"], f"{short_name}-bot@{realm.host}", body["api_key"], "", 400, True)


def test_create_and_list(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    admins = sorted([realm.desdemona.id, realm.iago.id])
    body = create(api, realm.cordelia, full_name="Weather Bot", short_name="weather")
    assert body["default_sending_stream"] is None
    assert body["default_events_register_stream"] is None
    assert body["default_all_public_streams"] is False
    assert body["avatar_url"].startswith("https://")
    # The new bot authenticates with its own key.
    bot = as_bot(realm, body, "weather")
    me = assert_json_success(api.get(bot, "users/me"))
    assert me["email"] == f"weather-bot@{realm.host}"
    assert me["is_bot"] is True

    [(event, users)] = events.of_type("realm_bot", "add")
    assert event["bot"]["user_id"] == body["user_id"]
    assert event["bot"]["owner_id"] == realm.cordelia.id
    assert users == sorted([*admins, realm.cordelia.id])

    bots = assert_json_success(api.get(realm.cordelia, "bots"))["bots"]
    assert bots == [
        {
            "user_id": body["user_id"],
            "username": f"weather-bot@{realm.host}",
            "full_name": "Weather Bot",
            "api_key": body["api_key"],
            "avatar_url": body["avatar_url"],
            "bot_type": 1,
            "default_sending_stream": None,
            "default_events_register_stream": None,
            "default_all_public_streams": False,
        }
    ]
    # GET /bots lists the user's own bots only, even for administrators.
    assert assert_json_success(api.get(realm.iago, "bots"))["bots"] == []
    assert [b["full_name"] for b in assert_json_success(api.get(realm.hamlet, "bots"))["bots"]] == [
        "Default Bot"
    ]


def test_outgoing_webhook_and_defaults(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(
        api.post(realm.iago, "channels/create", {"name": "alerts", "subscribers": [realm.iago.id]})
    )
    body = create(
        api,
        realm.iago,
        short_name="hook",
        full_name="Hook",
        bot_type=3,
        payload_url="https://hooks.example/x",
        interface_type=2,
        default_sending_stream="alerts",
        default_events_register_stream="alerts",
        default_all_public_streams=True,
    )
    assert body["default_sending_stream"] == "alerts"
    assert body["default_events_register_stream"] == "alerts"
    assert body["default_all_public_streams"] is True
    # The add event describes the finished bot, so no updates follow it.
    [(added, _)] = events.of_type("realm_bot", "add")
    assert events.of_type("realm_bot", "update") == []
    [service] = added["bot"].pop("services")
    token = service.pop("token")
    assert len(token) == 32
    assert service == {"base_url": "https://hooks.example/x", "interface": 2}
    assert added["bot"] == {
        "user_id": body["user_id"],
        "full_name": "Hook",
        "email": f"hook-bot@{realm.host}",
        "api_key": body["api_key"],
        "bot_type": 3,
        "is_active": True,
        "avatar_url": body["avatar_url"],
        "owner_id": realm.iago.id,
        "default_sending_stream": "alerts",
        "default_events_register_stream": "alerts",
        "default_all_public_streams": True,
    }
    listed = assert_json_success(api.get(realm.iago, "bots"))["bots"]
    assert [(b["default_sending_stream"], b["default_all_public_streams"]) for b in listed] == [
        ("alerts", True)
    ]
    # /register gives the same Bot object as the add event.
    state = assert_json_success(api.post(realm.iago, "register", {"fetch_event_types": ["realm_bot"]}))
    [registered] = [b for b in state["realm_bots"] if b["user_id"] == body["user_id"]]
    assert registered == {**added["bot"], "services": [{**service, "token": token}]}

    events.clear()
    result = assert_json_success(
        api.patch(
            realm.iago,
            f"bots/{body['user_id']}",
            {"service_payload_url": "https://hooks.example/y", "default_sending_stream": ""},
        )
    )
    assert result["service_payload_url"] == "https://hooks.example/y"
    assert result["default_sending_stream"] is None
    changes = [e["bot"] for e, _ in events.of_type("realm_bot", "update")]
    assert {"user_id": body["user_id"], "default_sending_stream": None} in changes
    assert any(c.get("services", [{}])[0].get("base_url") == "https://hooks.example/y" for c in changes)


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"short_name": "  "}, "Bad name or username"),
        ({"short_name": "a b"}, "Bad name or username"),
        ({"full_name": " "}, "Name too short!"),
        ({"bot_type": 7}, "Invalid bot type"),
        ({"bot_type": 4}, "Invalid embedded bot name."),
        ({"bot_type": 3, "payload_url": "nope"}, "payload_url is not a URL"),
        ({"bot_type": 3, "payload_url": '"nope"'}, "payload_url is not a URL"),
        ({"bot_type": 3, "payload_url": '"https://x.example/'}, "payload_url is not a URL"),
        ({"interface_type": 9}, "Invalid interface type"),
        ({"default_sending_stream": "no such channel"}, "Invalid channel name 'no such channel'"),
        ({"full_name": "King Hamlet"}, "Name is already in use!"),
    ],
)
def test_create_errors(
    api: Api, realm: SeededRealm, events: EventRecorder, data: dict[str, Any], msg: str
) -> None:
    assert_json_error(api.post(realm.hamlet, "bots", {"full_name": "Bot", "short_name": "bot", **data}), msg)
    assert [b["full_name"] for b in assert_json_success(api.get(realm.hamlet, "bots"))["bots"]] == [
        "Default Bot"
    ]
    assert events.published == []


def test_create_permissions(api: Api, realm: SeededRealm) -> None:
    create(api, realm.hamlet, short_name="dup")
    assert_json_error(
        api.post(realm.hamlet, "bots", {"full_name": "Other", "short_name": "dup"}), "Username already in use"
    )
    assert_json_error(
        api.post(realm.polonius, "bots", {"full_name": "G", "short_name": "g"}), "Not allowed for guest users"
    )
    assert_json_error(
        api.post(realm.default_bot, "bots", {"full_name": "B", "short_name": "b"}),
        "This endpoint does not accept bot requests.",
    )
    assert_json_error(api.post(realm.hamlet, "bots", {"short_name": "x"}), "Missing 'full_name' argument")


def test_update_and_owner_change(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    bot_id = create(api, realm.hamlet, short_name="helper", full_name="Helper")["user_id"]
    events.clear()
    result = assert_json_success(api.patch(realm.hamlet, f"bots/{bot_id}", {"full_name": "Helper Two"}))
    assert result["full_name"] == "Helper Two"
    assert result["bot_owner"] == realm.hamlet.email
    [(event, users)] = events.of_type("realm_bot", "update")
    assert event["bot"] == {"user_id": bot_id, "full_name": "Helper Two"}
    assert users == sorted([realm.desdemona.id, realm.iago.id, realm.hamlet.id])

    events.clear()
    assert_json_success(api.patch(realm.hamlet, f"bots/{bot_id}", {"bot_owner_id": realm.othello.id}))
    [(deleted, to)] = events.of_type("realm_bot", "delete")
    assert deleted["bot"] == {"user_id": bot_id} and to == [realm.hamlet.id]
    [(added, to)] = events.of_type("realm_bot", "add")
    assert added["bot"]["owner_id"] == realm.othello.id and to == [realm.othello.id]
    [(updated, to)] = events.of_type("realm_bot", "update")
    assert updated["bot"] == {"user_id": bot_id, "owner_id": realm.othello.id}
    assert to == sorted([realm.desdemona.id, realm.iago.id])
    [(person, to)] = events.of_type("realm_user", "update")
    assert person["person"] == {"user_id": bot_id, "bot_owner_id": realm.othello.id}
    assert realm.hamlet.id in to

    # The old owner no longer manages the bot; the new one and administrators do.
    assert_json_error(
        api.patch(realm.hamlet, f"bots/{bot_id}", {"full_name": "X"}), "Insufficient permission"
    )
    assert [b["user_id"] for b in assert_json_success(api.get(realm.othello, "bots"))["bots"]] == [bot_id]
    assert_json_success(api.patch(realm.iago, f"bots/{bot_id}", {"full_name": "By Admin"}))


def test_avatar_upload_on_update(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    bot_id = create(api, realm.hamlet, short_name="pictured", full_name="Pictured")["user_id"]
    events.clear()
    # Zulip's web app names the file field after the file.
    picture = {"file-0": ("bot.png", image_bytes(120, 80, "PNG"), "image/png")}
    result = assert_json_success(
        api.patch(realm.hamlet, f"bots/{bot_id}", {"full_name": "Pictured Two"}, files=picture)
    )
    url = result["avatar_url"]
    assert url.startswith(f"/user_avatars/{realm.id}/avatars/") and result["full_name"] == "Pictured Two"
    bot_updates = [event["bot"] for event, _ in events.of_type("realm_bot", "update")]
    assert {"user_id": bot_id, "avatar_url": url} in bot_updates
    [(_, to)] = [(e, users) for e, users in events.of_type("realm_bot", "update") if "avatar_url" in e["bot"]]
    assert to == sorted([realm.desdemona.id, realm.iago.id, realm.hamlet.id])
    [(person, _)] = events.of_type("realm_user", "update")[-1:]
    assert person["person"]["avatar_url"] == url and person["person"]["avatar_source"] == "U"
    # Administrators change any bot's picture; others only their own bots'.
    assert_json_success(api.patch(realm.iago, f"bots/{bot_id}", files=picture))
    assert_json_error(api.patch(realm.othello, f"bots/{bot_id}", files=picture), "Insufficient permission")
    # Not an image: nothing changes.
    events.clear()
    bad = {"file": ("x.png", b"not an image", "image/png")}
    assert api.patch(realm.hamlet, f"bots/{bot_id}", files=bad).json()["result"] == "error"
    # Nor the name sent with it.
    refused = api.patch(realm.hamlet, f"bots/{bot_id}", {"full_name": "Never Saved"}, files=bad)
    assert refused.status_code == 400 and refused.json()["result"] == "error"
    assert not events.of_type("realm_bot", "update")
    names = [b["full_name"] for b in assert_json_success(api.get(realm.hamlet, "bots"))["bots"]]
    assert "Never Saved" not in names


def test_update_errors(api: Api, realm: SeededRealm) -> None:
    bot_id = create(api, realm.hamlet, short_name="helper", full_name="Helper")["user_id"]
    assert_json_error(
        api.patch(realm.hamlet, f"bots/{bot_id}", {"bot_owner_id": 2**31}),
        "Failed to change owner, no such user",
    )
    assert_json_error(
        api.patch(realm.hamlet, f"bots/{bot_id}", {"bot_owner_id": realm.default_bot.id}),
        "Failed to change owner, bots can't own other bots",
    )
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    assert_json_error(
        api.patch(realm.hamlet, f"bots/{bot_id}", {"bot_owner_id": realm.cordelia.id}),
        "Failed to change owner, user is deactivated",
    )
    assert_json_error(
        api.patch(realm.hamlet, f"bots/{bot_id}", {"full_name": "Othello, the Moor of Venice"}),
        "Name is already in use!",
    )
    assert_json_error(
        api.patch(realm.hamlet, f"bots/{bot_id}", {"role": 200}), "Must be an organization administrator"
    )
    assert_json_error(
        api.patch(realm.hamlet, f"bots/{bot_id}", {"service_payload_url": "https://x.example/"}),
        "This bot has no outgoing webhook service",
    )
    for bad in (realm.hamlet.id, 0, 999999, 2**31, 2**62):
        assert_json_error(api.patch(realm.hamlet, f"bots/{bad}", {"full_name": "Z"}), "No such bot")
        assert_json_error(api.delete(realm.hamlet, f"bots/{bad}"), "No such bot")
        assert_json_error(api.post(realm.hamlet, f"bots/{bad}/api_key/regenerate"), "No such bot")
    assert_json_error(api.delete(realm.othello, f"bots/{bot_id}"), "Insufficient permission")


def test_regenerate_key_and_deactivate(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    body = create(api, realm.hamlet, short_name="keyed", full_name="Keyed")
    bot_id = body["user_id"]
    events.clear()
    new_key = assert_json_success(api.post(realm.hamlet, f"bots/{bot_id}/api_key/regenerate"))["api_key"]
    assert new_key != body["api_key"]
    [(event, _)] = events.of_type("realm_bot", "update")
    assert event["bot"] == {"user_id": bot_id, "api_key": new_key}
    old = as_bot(realm, body, "keyed")
    assert api.get(old, "users/me").status_code == 401
    assert_json_success(api.get(as_bot(realm, {**body, "api_key": new_key}, "keyed"), "users/me"))

    events.clear()
    assert_json_success(api.delete(realm.hamlet, f"bots/{bot_id}"))
    [(event, users)] = events.of_type("realm_bot", "update")
    assert event["bot"] == {"user_id": bot_id, "is_active": False}
    assert realm.hamlet.id in users
    assert [b["user_id"] for b in assert_json_success(api.get(realm.hamlet, "bots"))["bots"]] == [
        realm.default_bot.id
    ]
    assert_json_error(api.delete(realm.hamlet, f"bots/{bot_id}"), "User is already deactivated")


def test_payload_url_json_encoded_as_zulips_web_app_sends_it(api: Api, realm: SeededRealm) -> None:
    """Zulip's server reads payload_url and service_payload_url as JSON; its web app sends
    them so. A bare URL is taken as well."""
    body = create(
        api,
        realm.iago,
        short_name="jsonhook",
        full_name="JSON Hook",
        bot_type=3,
        payload_url=json.dumps("https://hooks.example/json"),
    )
    state = assert_json_success(api.post(realm.iago, "register", {"fetch_event_types": ["realm_bot"]}))
    [bot] = [b for b in state["realm_bots"] if b["user_id"] == body["user_id"]]
    assert bot["services"][0]["base_url"] == "https://hooks.example/json"
    updated = assert_json_success(
        api.patch(
            realm.iago,
            f"bots/{body['user_id']}",
            {"service_payload_url": json.dumps("https://hooks.example/new")},
        )
    )
    assert updated["service_payload_url"] == "https://hooks.example/new"
