"""User status: setting text and emoji, the deprecated away, events, state and errors."""

from __future__ import annotations

from typing import Any

import httpx

from palaver.services import Services
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def test_set_and_get_status(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}/status"))["status"] == {}
    data = {
        "status_text": "  on vacation ",
        "emoji_name": "car",
        "emoji_code": "1f697",
        "reaction_type": "unicode_emoji",
    }
    assert_json_success(api.post(realm.othello, "users/me/status", data))
    [(event, users)] = events.of_type("user_status")
    assert event == {
        "type": "user_status",
        "user_id": realm.othello.id,
        "status_text": "on vacation",
        "emoji_name": "car",
        "emoji_code": "1f697",
        "reaction_type": "unicode_emoji",
    }
    assert realm.hamlet.id in users and realm.othello.id in users
    expected = {
        "status_text": "on vacation",
        "emoji_name": "car",
        "emoji_code": "1f697",
        "reaction_type": "unicode_emoji",
    }
    assert (
        assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}/status"))["status"] == expected
    )
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["user_status"]}))
    assert state["user_status"] == {str(realm.othello.id): expected}

    # Only what is passed changes; the event carries only that.
    events.clear()
    assert_json_success(api.post(realm.othello, "users/me/status", {"status_text": "back soon"}))
    [(event, _)] = events.of_type("user_status")
    assert event == {"type": "user_status", "user_id": realm.othello.id, "status_text": "back soon"}
    status = assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}/status"))["status"]
    assert status["emoji_name"] == "car" and status["status_text"] == "back soon"

    # Emoji by name alone; then clearing everything.
    assert_json_success(api.post(realm.othello, "users/me/status", {"emoji_name": "smile"}))
    status = assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}/status"))["status"]
    assert (status["emoji_name"], status["reaction_type"]) == ("smile", "unicode_emoji")
    assert_json_success(api.post(realm.othello, "users/me/status", {"status_text": "", "emoji_name": ""}))
    assert assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}/status"))["status"] == {}
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["user_status"]}))
    assert state["user_status"] == {}


def test_away_is_presence_enabled(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.post(realm.othello, "users/me/status", {"away": True}))
    [(event, _)] = events.of_type("user_status")
    assert event == {"type": "user_status", "user_id": realm.othello.id, "away": True}
    [(setting, users)] = events.of_type("user_settings")
    assert (setting["property"], setting["value"], users) == ("presence_enabled", False, [realm.othello.id])
    assert assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}/status"))["status"] == {
        "away": True
    }
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["user_status"]}))
    assert state["user_status"] == {str(realm.othello.id): {"away": True}}
    assert_json_success(api.post(realm.othello, "users/me/status", {"away": False}))
    assert assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}/status"))["status"] == {}


def test_zulip_extra_and_custom_emoji(api: Api, realm: SeededRealm, services: Services) -> None:
    data = {"emoji_name": "zulip", "emoji_code": "zulip", "reaction_type": "zulip_extra_emoji"}
    assert_json_success(api.post(realm.othello, "users/me/status", data))
    assert_json_success(api.post(realm.othello, "users/me/status", {"emoji_name": "zulip"}))
    assert_json_error(
        api.post(
            realm.othello,
            "users/me/status",
            {"emoji_name": "x", "emoji_code": "1", "reaction_type": "realm_emoji"},
        ),
        "Invalid custom emoji.",
    )


def test_errors(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    def post(**data: Any) -> httpx.Response:
        return api.post(realm.othello, "users/me/status", data)

    assert_json_error(post(), "Client did not pass any new values.")
    assert_json_error(post(status_text="x" * 61), "status_text is too long (limit: 60 characters)")
    assert_json_success(post(status_text="x" * 60))
    assert_json_error(
        post(status_text="a", emoji_code="1f697"),
        "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
    )
    assert_json_error(post(emoji_name="invalid"), "Emoji 'invalid' does not exist")
    assert_json_error(
        post(emoji_name="car", emoji_code="1f600", reaction_type="unicode_emoji"),
        "Invalid emoji name.",
    )
    assert_json_error(
        post(emoji_name="car", emoji_code="zzz", reaction_type="unicode_emoji"),
        "Invalid emoji code.",
    )
    assert_json_error(
        post(emoji_name="car", emoji_code="1f697", reaction_type="other"), "Invalid emoji type."
    )
    assert_json_error(post(away="maybe"), 'Argument "away" is not valid JSON.')
    assert_json_error(api.get(realm.hamlet, "users/99999/status"), "No such user")
    assert_json_error(api.get(realm.hamlet, f"users/{2**40}/status"), "No such user")
    assert [e for e, _ in events.of_type("user_status")] == [
        {"type": "user_status", "user_id": realm.othello.id, "status_text": "x" * 60}
    ]
