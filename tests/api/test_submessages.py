"""Widgets: /poll and /todo messages carry their widget; POST /submessage adds to it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from palaver.lib.widgets import widget_for_content
from tests.api.test_messages_send import create_channel, fetch_one, send_dm, send_stream
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "/poll Lunch?\nPizza\n- Sushi\n* Salad\n\n",
            ("poll", {"question": "Lunch?", "options": ["Pizza", "Sushi", "Salad"]}),
        ),
        ("/poll", ("poll", {"question": "", "options": []})),
        (
            "/todo Launch\nWrite docs: the README\n- Ship",
            (
                "todo",
                {
                    "task_list_title": "Launch",
                    "tasks": [{"task": "Write docs", "desc": "the README"}, {"task": "Ship", "desc": ""}],
                },
            ),
        ),
        ("/pollster what", None),
        ("Let's /poll later", None),
        ("/me waves", None),
    ],
)
def test_widget_for_content(content: str, expected: Any) -> None:
    assert widget_for_content(content) == expected


def widget_of(message: dict[str, Any]) -> dict[str, Any]:
    [sub] = message["submessages"]
    assert sub["msg_type"] == "widget"
    assert sub["message_id"] == message["id"]
    assert sub["sender_id"] == message["sender_id"]
    content: dict[str, Any] = json.loads(sub["content"])
    return content


def test_poll_message_has_its_widget_everywhere(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "lunch", [realm.hamlet, realm.othello])
    events.clear()
    message_id = send_stream(api, realm.hamlet, "lunch", "today", "/poll Where?\nCanteen\nPark")
    expected = {"widget_type": "poll", "extra_data": {"question": "Where?", "options": ["Canteen", "Park"]}}
    # One event per group of flags (sender, others): each carries the widget.
    message_events = events.of_type("message")
    assert {u for _, users in message_events for u in users} == {realm.hamlet.id, realm.othello.id}
    for event, _ in message_events:
        assert widget_of(event["message"]) == expected
    assert widget_of(fetch_one(api, realm.othello, message_id)) == expected
    fetched = assert_json_success(
        api.get(realm.othello, "messages", {"anchor": message_id, "num_before": 0, "num_after": 0})
    )
    assert widget_of(fetched["messages"][0]) == expected
    # Ordinary messages have none.
    plain = send_stream(api, realm.hamlet, "lunch", "today", "no widget here")
    assert fetch_one(api, realm.othello, plain)["submessages"] == []


def vote(api: Api, user: Any, message_id: int, data: dict[str, Any], msg_type: str = "widget") -> Any:
    return api.post(
        user, "submessage", {"message_id": message_id, "msg_type": msg_type, "content": json.dumps(data)}
    )


def test_voting_sends_submessage_events(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "lunch", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "lunch", "today", "/poll Where?\nCanteen\nPark")
    events.clear()
    assert_json_success(vote(api, realm.othello, message_id, {"type": "vote", "key": "canned,0", "vote": 1}))
    [(event, users)] = events.of_type("submessage")
    assert event["message_id"] == message_id
    assert event["sender_id"] == realm.othello.id
    assert event["msg_type"] == "widget"
    assert json.loads(event["content"]) == {"type": "vote", "key": "canned,0", "vote": 1}
    assert set(users) >= {realm.hamlet.id, realm.othello.id}
    subs = fetch_one(api, realm.hamlet, message_id)["submessages"]
    assert [s["sender_id"] for s in subs] == [realm.hamlet.id, realm.othello.id]
    assert subs[1]["id"] == event["submessage_id"]
    assert_json_success(
        vote(api, realm.othello, message_id, {"type": "new_option", "idx": 1, "option": "Roof"})
    )
    # Only the author edits the question.
    assert_json_error(
        vote(api, realm.othello, message_id, {"type": "question", "question": "Why?"}),
        "You can't edit a question unless you are the author.",
    )
    assert_json_success(vote(api, realm.hamlet, message_id, {"type": "question", "question": "Why?"}))


def test_submessage_validation(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "lunch", [realm.hamlet, realm.othello])
    poll = send_stream(api, realm.hamlet, "lunch", "today", "/poll Where?")
    assert_json_error(
        vote(api, realm.othello, poll, {"type": "vote", "key": "x", "vote": 2}),
        'poll data["vote"] must be 1 or -1',
    )
    assert_json_error(
        vote(api, realm.othello, poll, {"type": "vote", "key": 3, "vote": 1}),
        'poll data["key"] is missing or of the wrong type',
    )
    assert_json_error(vote(api, realm.othello, poll, {"type": "bogus"}), "Unknown type for poll data: bogus")
    bad_json = api.post(
        realm.othello, "submessage", {"message_id": poll, "msg_type": "widget", "content": "{"}
    )
    assert_json_error(bad_json, "Invalid json for submessage")
    # Others cannot start a widget on someone else's plain message; the sender can.
    plain = send_stream(api, realm.hamlet, "lunch", "today", "plain")
    assert_json_error(
        vote(api, realm.othello, plain, {"x": 1}), "You cannot attach a submessage to this message."
    )
    assert_json_success(vote(api, realm.hamlet, plain, {"x": 1}))


def test_submessage_needs_read_access(api: Api, realm: SeededRealm) -> None:
    dm = send_dm(api, realm.hamlet, [realm.othello], "/poll Secret?")
    assert_json_error(
        vote(api, realm.cordelia, dm, {"type": "vote", "key": "a", "vote": 1}), "Invalid message(s)"
    )
    assert_json_error(
        vote(api, realm.cordelia, 10**12, {"type": "vote", "key": "a", "vote": 1}), "Invalid message(s)"
    )
    assert_json_success(vote(api, realm.othello, dm, {"type": "vote", "key": "a", "vote": 1}))


def test_todo_widget(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "work", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "work", "plans", "/todo Launch\nDocs: README\nShip")
    assert widget_of(fetch_one(api, realm.othello, message_id)) == {
        "widget_type": "todo",
        "extra_data": {
            "task_list_title": "Launch",
            "tasks": [{"task": "Docs", "desc": "README"}, {"task": "Ship", "desc": ""}],
        },
    }
    assert_json_success(
        vote(
            api,
            realm.othello,
            message_id,
            {"type": "new_task", "key": 2, "task": "Party", "desc": "", "completed": False},
        )
    )
    assert_json_success(vote(api, realm.othello, message_id, {"type": "strike", "key": "0,canned"}))
    assert_json_error(
        vote(api, realm.othello, message_id, {"type": "new_task_list_title", "title": "Mine"}),
        "You can't edit the task list title unless you are the author.",
    )
    assert_json_error(
        vote(
            api,
            realm.othello,
            message_id,
            {"type": "new_task", "key": True, "task": "x", "desc": "", "completed": False},
        ),
        'todo data["key"] is missing or of the wrong type',
    )
