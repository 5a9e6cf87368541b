"""Reminders: GET/POST /reminders, DELETE /reminders/{id}."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.helpers import TestUser as User


def later(seconds: int = 3600) -> int:
    return int(time.time()) + seconds


def send_direct(api: Api, sender: User, to: User, content: str = "hello") -> int:
    body = assert_json_success(
        api.post(sender, "messages", {"type": "direct", "to": [to.id], "content": content})
    )
    message_id: int = body["id"]
    return message_id


def remind(api: Api, user: User, message_id: int, **params: Any) -> int:
    body = assert_json_success(
        api.post(
            user, "reminders", {"message_id": message_id, "scheduled_delivery_timestamp": later(), **params}
        )
    )
    reminder_id: int = body["reminder_id"]
    return reminder_id


def listed(api: Api, user: User) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = assert_json_success(api.get(user, "reminders"))["reminders"]
    return items


def test_create_and_list(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    message_id = send_direct(api, realm.othello, realm.hamlet, "call me")
    events.clear()
    when = later()
    reminder_id = assert_json_success(
        api.post(
            realm.hamlet,
            "reminders",
            {"message_id": message_id, "scheduled_delivery_timestamp": when, "note": "about the call"},
        )
    )["reminder_id"]
    [item] = listed(api, realm.hamlet)
    assert item["reminder_id"] == reminder_id
    assert item["message_id"] == item["reminder_target_message_id"] == message_id
    assert (item["type"], item["to"], item["failed"]) == ("private", [realm.hamlet.id], False)
    assert item["scheduled_delivery_timestamp"] == when
    assert item["note"] == "about the call"
    assert "You requested a reminder for [the following direct message]" in item["content"]
    assert "> about the call" in item["content"] and "call me" in item["content"]
    [(event, users)] = events.of_type("reminders", "add")
    assert event["reminders"] == [item] and users == [realm.hamlet.id]
    assert listed(api, realm.othello) == []


def test_channel_message_reminder_links_the_topic(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(
        api.post(
            realm.iago, "channels/create", {"name": "Verona", "subscribers": [realm.iago.id, realm.hamlet.id]}
        )
    )
    message_id = assert_json_success(
        api.post(
            realm.iago, "messages", {"type": "stream", "to": body["id"], "topic": "plans", "content": "x"}
        )
    )["id"]
    remind(api, realm.hamlet, message_id)
    [item] = listed(api, realm.hamlet)
    assert f"#narrow/channel/{body['id']}-Verona/topic/plans/near/{message_id}" in item["content"]
    assert item["note"] == ""


def test_errors(api: Api, realm: SeededRealm) -> None:
    message_id = send_direct(api, realm.othello, realm.hamlet)
    past = {"message_id": message_id, "scheduled_delivery_timestamp": 10}
    assert_json_error(
        api.post(realm.hamlet, "reminders", past), "Scheduled delivery time must be in the future."
    )
    for bad in (message_id + 1000, 2**31, 2**40):
        response = api.post(
            realm.hamlet, "reminders", {"message_id": bad, "scheduled_delivery_timestamp": later()}
        )
        assert_json_error(response, "Invalid message(s)")
    # Messages the user cannot read look missing too.
    response = api.post(
        realm.cordelia, "reminders", {"message_id": message_id, "scheduled_delivery_timestamp": later()}
    )
    assert_json_error(response, "Invalid message(s)")
    response = api.post(
        realm.hamlet,
        "reminders",
        {"message_id": message_id, "scheduled_delivery_timestamp": later(), "note": "n" * 1001},
    )
    assert_json_error(response, "Maximum reminder note length: 1000 characters")
    assert_json_error(
        api.post(realm.hamlet, "reminders", {"message_id": message_id}),
        "Missing 'scheduled_delivery_timestamp' argument",
    )
    assert listed(api, realm.hamlet) == []


@pytest.mark.parametrize("reminder_id", ["999999", str(2**31), str(2**40)])
def test_delete_unknown(api: Api, realm: SeededRealm, reminder_id: str) -> None:
    assert_json_error(api.delete(realm.hamlet, f"reminders/{reminder_id}"), "Reminder does not exist", 404)


def test_delete(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    reminder_id = remind(api, realm.hamlet, send_direct(api, realm.othello, realm.hamlet))
    assert_json_error(api.delete(realm.othello, f"reminders/{reminder_id}"), "Reminder does not exist", 404)
    events.clear()
    assert_json_success(api.delete(realm.hamlet, f"reminders/{reminder_id}"))
    assert listed(api, realm.hamlet) == []
    assert [e for e, _ in events.of_type("reminders", "remove")] == [
        {"type": "reminders", "op": "remove", "reminder_id": reminder_id}
    ]


def test_register_state(api: Api, realm: SeededRealm) -> None:
    reminder_id = remind(api, realm.hamlet, send_direct(api, realm.othello, realm.hamlet))
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["reminders"]}))
    assert [r["reminder_id"] for r in state["reminders"]] == [reminder_id]
