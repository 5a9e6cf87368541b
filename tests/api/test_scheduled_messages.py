"""Scheduled messages: GET/POST /scheduled_messages, PATCH/DELETE /scheduled_messages/{id}."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.helpers import TestUser as User


def create_channel(api: Api, realm: SeededRealm, name: str, members: list[User], **kw: Any) -> int:
    body = assert_json_success(
        api.post(realm.iago, "channels/create", {"name": name, "subscribers": [u.id for u in members], **kw})
    )
    channel_id: int = body["id"]
    return channel_id


def later(seconds: int = 3600) -> int:
    return int(time.time()) + seconds


def schedule(api: Api, user: User, **params: Any) -> int:
    scheduled_id: int = assert_json_success(api.post(user, "scheduled_messages", params))[
        "scheduled_message_id"
    ]
    return scheduled_id


def listed(api: Api, user: User) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = assert_json_success(api.get(user, "scheduled_messages"))[
        "scheduled_messages"
    ]
    return items


def test_schedule_channel_and_direct_messages(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    channel = create_channel(api, realm, "Verona", [realm.iago, realm.hamlet])
    when = later()
    events.clear()
    first = schedule(
        api,
        realm.hamlet,
        type="stream",
        to=channel,
        topic="plans",
        content="**Hi**",
        scheduled_delivery_timestamp=when,
    )
    second = schedule(
        api,
        realm.hamlet,
        type="direct",
        to=[realm.othello.id],
        content="psst",
        scheduled_delivery_timestamp=when - 60,
    )
    items = listed(api, realm.hamlet)
    assert items == [
        {
            "scheduled_message_id": second,
            "type": "private",
            "to": [realm.othello.id],
            "content": "psst",
            "rendered_content": "<p>psst</p>",
            "scheduled_delivery_timestamp": when - 60,
            "failed": False,
        },
        {
            "scheduled_message_id": first,
            "type": "stream",
            "to": channel,
            "topic": "plans",
            "content": "**Hi**",
            "rendered_content": "<p><strong>Hi</strong></p>",
            "scheduled_delivery_timestamp": when,
            "failed": False,
        },
    ]
    added = events.of_type("scheduled_messages", "add")
    assert [(e["scheduled_messages"], users) for e, users in added] == [
        ([items[1]], [realm.hamlet.id]),
        ([items[0]], [realm.hamlet.id]),
    ]
    # Nobody else sees them, and nothing was sent yet.
    assert listed(api, realm.othello) == []
    assert events.of_type("message") == []


def test_direct_message_to_oneself_and_channel_by_list(api: Api, realm: SeededRealm) -> None:
    channel = create_channel(api, realm, "Verona", [realm.hamlet])
    schedule(
        api,
        realm.hamlet,
        type="private",
        to=[realm.hamlet.id],
        content="me",
        scheduled_delivery_timestamp=later(),
    )
    schedule(
        api,
        realm.hamlet,
        type="channel",
        to=[channel],
        topic="t",
        content="x",
        scheduled_delivery_timestamp=later(),
    )
    assert [item["to"] for item in listed(api, realm.hamlet)] == [[realm.hamlet.id], channel]


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"scheduled_delivery_timestamp": 1}, "Scheduled delivery time must be in the future."),
        ({"scheduled_delivery_timestamp": 10**15}, "Invalid scheduled_delivery_timestamp"),
        ({"type": "broadcast"}, "Invalid type"),
        ({"to": [2**40]}, f"Invalid user ID {2**40}"),
        ({"content": "   "}, "Message must not be empty"),
        ({"to": []}, "Message must have recipients"),
    ],
)
def test_schedule_errors(api: Api, realm: SeededRealm, params: dict[str, Any], error: str) -> None:
    base = {
        "type": "direct",
        "to": [realm.othello.id],
        "content": "hi",
        "scheduled_delivery_timestamp": later(),
    }
    assert_json_error(api.post(realm.hamlet, "scheduled_messages", {**base, **params}), error)
    assert listed(api, realm.hamlet) == []


def test_schedule_runs_the_checks_of_sending(api: Api, realm: SeededRealm) -> None:
    secret = create_channel(api, realm, "secret", [realm.iago], invite_only=True)
    when = later()
    response = api.post(
        realm.hamlet,
        "scheduled_messages",
        {"type": "stream", "to": secret, "topic": "t", "content": "hi", "scheduled_delivery_timestamp": when},
    )
    assert_json_error(response, "Not authorized to send to channel 'secret'")
    response = api.post(
        realm.hamlet,
        "scheduled_messages",
        {"type": "stream", "to": 2**40, "topic": "t", "content": "hi", "scheduled_delivery_timestamp": when},
    )
    assert_json_error(response, f"Channel with ID '{2**40}' does not exist", code="STREAM_DOES_NOT_EXIST")
    response = api.post(
        realm.hamlet,
        "scheduled_messages",
        {"type": "stream", "to": secret, "content": "hi", "scheduled_delivery_timestamp": when},
    )
    assert_json_error(response, "Missing topic")
    response = api.post(realm.hamlet, "scheduled_messages", {"type": "direct", "to": [realm.othello.id]})
    assert_json_error(response, "Missing 'content' argument")


def test_edit(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    channel = create_channel(api, realm, "Verona", [realm.hamlet])
    item_id = schedule(
        api,
        realm.hamlet,
        type="direct",
        to=[realm.othello.id],
        content="a",
        scheduled_delivery_timestamp=later(),
    )
    events.clear()
    when = later(7200)
    assert_json_success(
        api.patch(
            realm.hamlet,
            f"scheduled_messages/{item_id}",
            {"content": "b", "scheduled_delivery_timestamp": when},
        )
    )
    [item] = listed(api, realm.hamlet)
    assert (item["content"], item["scheduled_delivery_timestamp"], item["to"]) == (
        "b",
        when,
        [realm.othello.id],
    )
    [(event, users)] = events.of_type("scheduled_messages", "update")
    assert event["scheduled_message"] == item and users == [realm.hamlet.id]

    # Changing the type needs the address (and for channels a topic) too.
    path = f"scheduled_messages/{item_id}"
    assert_json_error(
        api.patch(realm.hamlet, path, {"type": "stream", "to": channel}),
        "Topic required when updating scheduled message type to stream.",
    )
    assert_json_error(
        api.patch(realm.hamlet, path, {"type": "direct"}),
        "Recipient required when updating type of scheduled message.",
    )
    assert_json_success(api.patch(realm.hamlet, path, {"type": "stream", "to": channel, "topic": "moved"}))
    [item] = listed(api, realm.hamlet)
    assert (item["type"], item["to"], item["topic"], item["content"]) == ("stream", channel, "moved", "b")
    assert_json_success(api.patch(realm.hamlet, path, {"topic": "again"}))
    assert listed(api, realm.hamlet)[0]["topic"] == "again"

    assert_json_error(
        api.patch(realm.hamlet, path, {"scheduled_delivery_timestamp": 5}),
        "Scheduled delivery time must be in the future.",
    )
    assert_json_error(
        api.patch(realm.hamlet, path, {"to": 2**40}), f"Channel with ID '{2**40}' does not exist"
    )


@pytest.mark.parametrize("item_id", ["999999", str(2**31), str(2**40)])
def test_unknown_ids(api: Api, realm: SeededRealm, item_id: str) -> None:
    missing = "Scheduled message does not exist"
    assert_json_error(
        api.patch(realm.hamlet, f"scheduled_messages/{item_id}", {"content": "x"}), missing, 404
    )
    assert_json_error(api.delete(realm.hamlet, f"scheduled_messages/{item_id}"), missing, 404)


def test_others_items_look_missing(api: Api, realm: SeededRealm) -> None:
    item_id = schedule(
        api,
        realm.hamlet,
        type="direct",
        to=[realm.othello.id],
        content="a",
        scheduled_delivery_timestamp=later(),
    )
    missing = "Scheduled message does not exist"
    assert_json_error(
        api.patch(realm.othello, f"scheduled_messages/{item_id}", {"content": "x"}), missing, 404
    )
    assert_json_error(api.delete(realm.othello, f"scheduled_messages/{item_id}"), missing, 404)


def test_delete(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    item_id = schedule(
        api,
        realm.hamlet,
        type="direct",
        to=[realm.othello.id],
        content="a",
        scheduled_delivery_timestamp=later(),
    )
    events.clear()
    assert_json_success(api.delete(realm.hamlet, f"scheduled_messages/{item_id}"))
    assert listed(api, realm.hamlet) == []
    assert [(e, u) for e, u in events.of_type("scheduled_messages", "remove")] == [
        ({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": item_id}, [realm.hamlet.id])
    ]


def test_register_state(api: Api, realm: SeededRealm) -> None:
    item_id = schedule(
        api,
        realm.hamlet,
        type="direct",
        to=[realm.othello.id],
        content="a",
        scheduled_delivery_timestamp=later(),
    )
    state = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": ["scheduled_messages"]})
    )
    assert [item["scheduled_message_id"] for item in state["scheduled_messages"]] == [item_id]


def test_a_deleted_newest_scheduled_messages_id_is_not_given_to_the_next(
    api: Api, realm: SeededRealm
) -> None:
    def one() -> int:
        return schedule(
            api,
            realm.hamlet,
            type="direct",
            to=[realm.othello.id],
            content="a",
            scheduled_delivery_timestamp=later(),
        )

    first, newest = one(), one()
    assert_json_success(api.delete(realm.hamlet, f"scheduled_messages/{newest}"))
    assert one() > newest > first
