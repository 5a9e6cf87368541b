"""Typing notifications: POST /typing and POST /messages/{id}/typing, their errors,
events and who receives them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from palaver.actions import typing as typing_actions
from palaver.services import Services
from tests.api.test_messages_send import create_channel, send_dm, send_stream, set_user
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def typing(api: Api, user: TestUser, **data: Any) -> Any:
    return api.post(user, "typing", data)


def test_direct_typing_start_and_stop(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(typing(api, realm.hamlet, op="start", to=[realm.othello.id, realm.cordelia.id]))
    [(event, users)] = events.of_type("typing", "start")
    assert event["message_type"] == "direct"
    assert event["sender"] == {"user_id": realm.hamlet.id, "email": realm.hamlet.email}
    # The sender is among the recipients, as the conversation includes them.
    assert [r["user_id"] for r in event["recipients"]] == sorted(
        [realm.hamlet.id, realm.othello.id, realm.cordelia.id]
    )
    assert sorted(users) == sorted([realm.hamlet.id, realm.othello.id, realm.cordelia.id])
    assert "stream_id" not in event and "topic" not in event

    events.clear()
    assert_json_success(typing(api, realm.hamlet, op="stop", to=[realm.othello.id], type="direct"))
    [(event, users)] = events.of_type("typing", "stop")
    assert sorted(users) == sorted([realm.hamlet.id, realm.othello.id])
    # The legacy type name still works.
    events.clear()
    assert_json_success(typing(api, realm.hamlet, op="start", to=[realm.othello.id], type="private"))
    assert len(events.of_type("typing", "start")) == 1


def test_recipients_who_opted_out_get_nothing(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    set_user(services, realm.othello, receives_typing_notifications=False)
    assert_json_success(typing(api, realm.hamlet, op="start", to=[realm.othello.id, realm.cordelia.id]))
    [(event, users)] = events.of_type("typing", "start")
    assert realm.othello.id not in users
    assert realm.othello.id in [r["user_id"] for r in event["recipients"]]
    assert sorted(users) == sorted([realm.hamlet.id, realm.cordelia.id])

    # Deactivated recipients are named but not notified.
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    events.clear()
    assert_json_success(typing(api, realm.hamlet, op="start", to=[realm.cordelia.id]))
    [(_, users)] = events.of_type("typing", "start")
    assert users == [realm.hamlet.id]


def test_direct_typing_errors(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    assert_json_error(typing(api, realm.hamlet, op="start"), "Missing 'to' argument")
    assert_json_error(typing(api, realm.hamlet, op="start", to=[]), "Empty 'to' list")
    assert_json_error(typing(api, realm.hamlet, op="start", to=[99999]), "Invalid user ID 99999")
    assert_json_error(typing(api, realm.hamlet, op="start", to=[2**40]), "Invalid user ID 1099511627776")
    assert_json_error(typing(api, realm.hamlet, op="begin", to=[realm.othello.id]), "Invalid op")
    assert_json_error(typing(api, realm.hamlet, to=[realm.othello.id]), "Missing 'op' argument")
    assert_json_error(typing(api, realm.hamlet, op="start", to="x"), 'Argument "to" is not valid JSON.')
    assert_json_error(typing(api, realm.hamlet, op="start", type="huddle", to=[1]), "Invalid type")
    set_user(services, realm.hamlet, send_private_typing_notifications=False)
    assert_json_error(
        typing(api, realm.hamlet, op="start", to=[realm.othello.id]),
        "User has disabled typing notifications for direct messages",
    )
    assert events.of_type("typing") == []


def test_channel_typing(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "typing", [realm.hamlet, realm.othello, realm.cordelia])
    set_user(services, realm.cordelia, receives_typing_notifications=False)
    events.clear()
    for type_ in ("stream", "channel"):
        assert_json_success(
            typing(api, realm.hamlet, op="start", type=type_, stream_id=stream_id, topic="lunch")
        )
        [(event, users)] = events.of_type("typing", "start")
        assert event["message_type"] == "stream"
        assert (event["stream_id"], event["topic"]) == (stream_id, "lunch")
        assert "recipients" not in event
        assert sorted(users) == sorted([realm.hamlet.id, realm.othello.id])
        events.clear()
    # "(no topic)" names the empty topic.
    assert_json_success(
        typing(api, realm.hamlet, op="stop", type="channel", stream_id=stream_id, topic="(no topic)")
    )
    [(event, _)] = events.of_type("typing", "stop")
    assert event["topic"] == ""


def test_no_channel_typing_in_a_big_channel(
    api: Api, realm: SeededRealm, events: EventRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the reference's max_stream_size_for_typing_notifications: above the size, the
    request succeeds and nobody is notified."""
    stream_id = create_channel(api, realm.hamlet, "crowded", [realm.hamlet, realm.othello, realm.cordelia])
    monkeypatch.setattr(typing_actions, "MAX_CHANNEL_SIZE_FOR_TYPING", 2)
    events.clear()
    assert_json_success(typing(api, realm.hamlet, op="start", type="channel", stream_id=stream_id, topic="t"))
    assert events.of_type("typing", "start") == []


def test_channel_typing_errors(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    private = create_channel(api, realm.othello, "secret", invite_only=True)
    public = create_channel(api, realm.othello, "open")
    assert_json_error(typing(api, realm.hamlet, op="start", type="stream", topic="t"), "Missing channel ID")
    assert_json_error(typing(api, realm.hamlet, op="start", type="stream", stream_id=public), "Missing topic")
    assert_json_error(
        typing(api, realm.hamlet, op="start", type="stream", stream_id=private, topic="t"),
        "Invalid channel ID",
    )
    assert_json_error(
        typing(api, realm.hamlet, op="start", type="stream", stream_id=99999, topic="t"), "Invalid channel ID"
    )
    assert_json_error(
        typing(api, realm.hamlet, op="start", type="stream", stream_id=2**40, topic="t"), "Invalid channel ID"
    )
    set_user(services, realm.hamlet, send_stream_typing_notifications=False)
    assert_json_error(
        typing(api, realm.hamlet, op="start", type="stream", stream_id=public, topic="t"),
        "User has disabled typing notifications for channel messages",
    )
    assert events.of_type("typing") == []


def test_channel_typing_reaches_only_capable_clients(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "capable", [realm.hamlet, realm.othello])
    old = assert_json_success(api.post(realm.othello, "register", {"event_types": ["typing"]}))["queue_id"]
    new = assert_json_success(
        api.post(
            realm.othello,
            "register",
            {"event_types": ["typing"], "client_capabilities": {"stream_typing_notifications": True}},
        )
    )["queue_id"]
    assert_json_success(typing(api, realm.hamlet, op="start", type="stream", stream_id=stream_id, topic="t"))
    assert_json_success(typing(api, realm.hamlet, op="start", to=[realm.othello.id]))

    def received(queue_id: str) -> list[str]:
        body = assert_json_success(
            api.get(realm.othello, "events", {"queue_id": queue_id, "last_event_id": -1, "dont_block": True})
        )
        return [e["message_type"] for e in body["events"]]

    assert received(old) == ["direct"]
    assert received(new) == ["stream", "direct"]


def test_message_edit_typing(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "edits", [realm.hamlet, realm.othello, realm.cordelia])
    channel_message = send_stream(api, realm.hamlet, "edits", "topic", "hello")
    set_user(services, realm.cordelia, receives_typing_notifications=False)
    events.clear()
    assert_json_success(api.post(realm.hamlet, f"messages/{channel_message}/typing", {"op": "start"}))
    [(event, users)] = events.of_type("typing_edit_message", "start")
    assert event["sender_id"] == realm.hamlet.id and event["message_id"] == channel_message
    assert event["recipient"]["type"] == "channel" and event["recipient"]["topic"] == "topic"
    assert sorted(users) == sorted([realm.hamlet.id, realm.othello.id])

    dm = send_dm(api, realm.hamlet, [realm.othello], "hi")
    events.clear()
    assert_json_success(api.post(realm.hamlet, f"messages/{dm}/typing", {"op": "stop"}))
    [(event, users)] = events.of_type("typing_edit_message", "stop")
    assert event["recipient"] == {"type": "direct", "user_ids": sorted([realm.hamlet.id, realm.othello.id])}
    assert sorted(users) == sorted([realm.hamlet.id, realm.othello.id])


def test_message_edit_typing_errors(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    dm = send_dm(api, realm.hamlet, [realm.othello], "hi")
    events.clear()
    assert_json_error(
        api.post(realm.cordelia, f"messages/{dm}/typing", {"op": "start"}), "Invalid message(s)"
    )
    assert_json_error(api.post(realm.hamlet, "messages/99999/typing", {"op": "start"}), "Invalid message(s)")
    assert_json_error(api.post(realm.hamlet, f"messages/{dm}/typing", {"op": "go"}), "Invalid op")
    assert_json_error(api.post(realm.hamlet, f"messages/{dm}/typing"), "Missing 'op' argument")
    set_user(services, realm.hamlet, send_private_typing_notifications=False)
    assert_json_error(
        api.post(realm.hamlet, f"messages/{dm}/typing", {"op": "start"}),
        "User has disabled typing notifications for direct messages",
    )
    assert events.of_type("typing_edit_message") == []
