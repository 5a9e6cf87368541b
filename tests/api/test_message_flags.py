"""Personal message flags: POST /messages/flags, /messages/flags/narrow, and the mark-as-read calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from palaver.models.messages import MessageFlag
from palaver.services import Services
from tests.api.test_messages_send import (
    create_channel,
    fetch_one,
    flags_of,
    send_dm,
    send_stream,
    subscribe,
    unsubscribe,
)
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def flag(api: Api, user: TestUser, messages: list[int], op: str, name: str) -> dict[str, Any]:
    return assert_json_success(
        api.post(user, "messages/flags", {"messages": messages, "op": op, "flag": name})
    )


def flag_events(events: EventRecorder) -> list[tuple[dict[str, Any], list[int]]]:
    return events.of_type("update_message_flags")


def test_star_and_unstar(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    a = send_stream(api, realm.hamlet, "Denmark", "t", "a")
    b = send_stream(api, realm.hamlet, "Denmark", "t", "b")
    events.clear()
    body = flag(api, realm.othello, [a, b, a], "add", "starred")
    assert body == {"result": "success", "msg": "", "messages": [a, b]}
    [(event, users)] = flag_events(events)
    assert users == [realm.othello.id]
    assert event == {
        "type": "update_message_flags",
        "op": "add",
        "operation": "add",
        "flag": "starred",
        "messages": [a, b],
        "all": False,
    }
    assert fetch_one(api, realm.othello, a)["flags"] == ["starred"]
    # Only messages whose flag changes are reported.
    assert flag(api, realm.othello, [a, b], "add", "starred")["messages"] == []
    events.clear()
    assert flag(api, realm.othello, [b], "remove", "starred")["messages"] == [b]
    [(event, _)] = flag_events(events)
    assert event["op"] == "remove" and "message_details" not in event
    assert "ignored_because_not_subscribed_channels" not in flag(api, realm.othello, [b], "remove", "starred")
    assert flag(api, realm.othello, [a], "add", "collapsed")["messages"] == [a]
    assert fetch_one(api, realm.othello, a)["flags"] == ["starred", "collapsed"]


def test_read_and_unread(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    in_channel = send_stream(api, realm.hamlet, "Denmark", "castle", "hi @**Othello, the Moor of Venice**")
    dm = send_dm(api, realm.hamlet, [realm.othello, realm.cordelia], "group")
    body = flag(api, realm.othello, [in_channel, dm, 999999], "add", "read")
    assert body["messages"] == [in_channel, dm]
    events.clear()
    body = flag(api, realm.othello, [in_channel, dm], "remove", "read")
    assert body["messages"] == [in_channel, dm]
    assert body["ignored_because_not_subscribed_channels"] == []
    [(event, _)] = flag_events(events)
    assert event["message_details"] == {
        str(in_channel): {"type": "stream", "stream_id": stream_id, "topic": "castle", "mentioned": True},
        str(dm): {"type": "private", "user_ids": sorted([realm.hamlet.id, realm.cordelia.id])},
    }


def test_unread_only_in_subscribed_channels(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "x")
    # Cordelia never received it, and is not subscribed: she cannot make it unread.
    body = flag(api, realm.cordelia, [message_id], "remove", "read")
    assert body["messages"] == [] and body["ignored_because_not_subscribed_channels"] == [stream_id]
    assert flags_of(services, realm.cordelia, message_id) is None
    # Once subscribed she can: her copy is made, historical and unread.
    subscribe(api, realm.cordelia, "Denmark")
    assert flag(api, realm.cordelia, [message_id], "remove", "read")["messages"] == [message_id]
    assert flags_of(services, realm.cordelia, message_id) == int(MessageFlag.HISTORICAL)


def test_historical_star(api: Api, realm: SeededRealm, services: Services) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet])
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "x")
    assert flag(api, realm.othello, [message_id], "add", "starred")["messages"] == [message_id]
    assert fetch_one(api, realm.othello, message_id)["flags"] == ["read", "starred", "historical"]
    # Reading a message that already shows as read changes nothing and makes no copy.
    other = send_stream(api, realm.hamlet, "Denmark", "t", "y")
    assert flag(api, realm.othello, [other], "add", "read")["messages"] == []
    assert flags_of(services, realm.othello, other) is None
    dm = send_dm(api, realm.hamlet, [realm.iago], "private")
    assert_json_error(
        api.post(realm.othello, "messages/flags", {"messages": [dm], "op": "add", "flag": "starred"}),
        "Invalid message(s)",
    )
    assert_json_error(
        api.post(realm.othello, "messages/flags", {"messages": [999999], "op": "add", "flag": "starred"}),
        "Invalid message(s)",
    )


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"messages": [1], "op": "add", "flag": "shiny"}, "Invalid flag: 'shiny'"),
        ({"messages": [1], "op": "add", "flag": "is_private"}, "Invalid flag: 'is_private'"),
        ({"messages": [1], "op": "add", "flag": "mentioned"}, "Flag not editable: 'mentioned'"),
        ({"messages": [1], "op": "remove", "flag": "historical"}, "Flag not editable: 'historical'"),
        (
            {"messages": [1], "op": "add", "flag": "wildcard_mentioned"},
            "Flag not editable: 'wildcard_mentioned'",
        ),
        ({"messages": [1], "op": "toggle", "flag": "read"}, "Invalid message flag operation: 'toggle'"),
        ({"messages": "[1, 2", "op": "add", "flag": "read"}, 'Argument "messages" is not valid JSON.'),
        ({"op": "add", "flag": "read"}, "Missing 'messages' argument"),
    ],
)
def test_flag_errors(api: Api, realm: SeededRealm, data: dict[str, Any], msg: str) -> None:
    assert_json_error(api.post(realm.hamlet, "messages/flags", data), msg)


# Ranges of a narrow ---------------------------------------------------------------------------


def test_flags_for_narrow(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    ids = [send_stream(api, realm.hamlet, "Denmark", f"t{i % 2}", str(i)) for i in range(6)]
    flag(api, realm.othello, [ids[0]], "add", "read")
    events.clear()
    data = {
        "anchor": "oldest",
        "num_before": 0,
        "num_after": 100,
        "narrow": [{"operator": "channel", "operand": "Denmark"}, {"operator": "topic", "operand": "t0"}],
        "op": "add",
        "flag": "read",
    }
    body = assert_json_success(api.post(realm.othello, "messages/flags/narrow", data))
    assert body == {
        "result": "success",
        "msg": "",
        "processed_count": 3,
        "updated_count": 2,
        "first_processed_id": ids[0],
        "last_processed_id": ids[4],
        "found_oldest": True,
        "found_newest": True,
    }
    [(event, _)] = flag_events(events)
    assert event["messages"] == [ids[2], ids[4]]
    body = assert_json_success(
        api.post(
            realm.othello,
            "messages/flags/narrow",
            {**data, "anchor": ids[3], "num_after": 1, "narrow": [], "op": "remove", "include_anchor": False},
        )
    )
    assert (body["processed_count"], body["first_processed_id"], body["found_newest"]) == (1, ids[4], False)
    assert body["ignored_because_not_subscribed_channels"] == []
    empty = assert_json_success(
        api.post(realm.othello, "messages/flags/narrow", {**data, "narrow": [["is", "starred"]]})
    )
    assert empty["processed_count"] == 0 and empty["first_processed_id"] is None
    assert_json_error(
        api.post(realm.othello, "messages/flags/narrow", {**data, "num_before": 1, "include_anchor": False}),
        "The anchor can only be excluded at an end of the range",
    )
    assert_json_error(
        api.post(realm.othello, "messages/flags/narrow", {**data, "flag": "mentioned"}),
        "Flag not editable: 'mentioned'",
    )
    assert_json_error(
        api.post(realm.othello, "messages/flags/narrow", {k: v for k, v in data.items() if k != "anchor"}),
        "Missing 'anchor' argument",
    )


# Mark as read ---------------------------------------------------------------------------------


def test_mark_all_as_read(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "x")
    events.clear()
    assert assert_json_success(api.post(realm.othello, "mark_all_as_read"))["complete"] is True
    [(event, users)] = flag_events(events)
    assert users == [realm.othello.id]
    assert event["all"] is True and event["messages"] == [] and event["flag"] == "read"
    assert fetch_one(api, realm.othello, message_id)["flags"] == ["read"]


def test_mark_stream_and_topic_as_read(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    other = create_channel(api, realm.hamlet, "Verona", [realm.hamlet, realm.othello])
    a = send_stream(api, realm.hamlet, "Denmark", "castle", "x")
    b = send_stream(api, realm.hamlet, "Denmark", "moat", "x")
    c = send_stream(api, realm.hamlet, "Verona", "castle", "x")
    events.clear()
    assert_json_success(
        api.post(realm.othello, "mark_topic_as_read", {"stream_id": stream_id, "topic_name": "CASTLE"})
    )
    [(event, _)] = flag_events(events)
    assert event["messages"] == [a]
    events.clear()
    assert_json_success(api.post(realm.othello, "mark_stream_as_read", {"stream_id": stream_id}))
    [(event, _)] = flag_events(events)
    assert event["messages"] == [b]
    assert fetch_one(api, realm.othello, c)["flags"] == []
    events.clear()
    assert_json_success(api.post(realm.othello, "mark_stream_as_read", {"stream_id": other}))
    assert_json_success(api.post(realm.othello, "mark_stream_as_read", {"stream_id": other}))
    assert len(flag_events(events)) == 1

    assert_json_error(
        api.post(realm.othello, "mark_topic_as_read", {"stream_id": stream_id, "topic_name": "nothing"}),
        "No such topic 'nothing'",
    )
    assert_json_error(
        api.post(realm.othello, "mark_stream_as_read", {"stream_id": 999999}), "Invalid channel ID"
    )
    secret = create_channel(api, realm.hamlet, "secret", [realm.hamlet], invite_only=True)
    assert_json_error(
        api.post(realm.othello, "mark_stream_as_read", {"stream_id": secret}), "Invalid channel ID"
    )
    assert_json_error(
        api.post(realm.othello, "mark_topic_as_read", {"stream_id": secret, "topic_name": "t"}),
        "Invalid channel ID",
    )


def test_unsubscribing_marks_channel_read(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "x")
    dm = send_dm(api, realm.hamlet, [realm.othello], "stays unread")
    events.clear()
    unsubscribe(api, realm.othello, "Denmark")
    [(event, users)] = flag_events(events)
    assert users == [realm.othello.id] and event["messages"] == [message_id] and event["flag"] == "read"
    assert fetch_one(api, realm.othello, dm)["flags"] == []


def test_unread_and_starred_state(api: Api, realm: SeededRealm, services: Services) -> None:
    from palaver.lib.message_flags import starred_message_ids
    from palaver.lib.unreads import unread_msgs_state
    from palaver.models import UserProfile

    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    topic_msg = send_stream(api, realm.hamlet, "Denmark", "", "@**Othello, the Moor of Venice**")
    dm = send_dm(api, realm.hamlet, [realm.othello], "x")
    group = send_dm(api, realm.cordelia, [realm.othello, realm.hamlet], "x")
    read = send_stream(api, realm.hamlet, "Denmark", "t", "x")
    flag(api, realm.othello, [read], "add", "read")
    flag(api, realm.othello, [read, dm], "add", "starred")
    with services.db.session() as session:
        othello = session.get(UserProfile, realm.othello.id)
        assert othello is not None
        state = unread_msgs_state(session, othello, allow_empty_topic_name=False)
        assert starred_message_ids(session, othello) == [dm, read]
    assert state == {
        "count": 3,
        "pms": [{"other_user_id": realm.hamlet.id, "sender_id": realm.hamlet.id, "unread_message_ids": [dm]}],
        "streams": [{"stream_id": stream_id, "topic": "general chat", "unread_message_ids": [topic_msg]}],
        "huddles": [
            {
                "user_ids_string": ",".join(
                    str(i) for i in sorted([realm.hamlet.id, realm.othello.id, realm.cordelia.id])
                ),
                "unread_message_ids": [group],
            }
        ],
        "mentions": [topic_msg],
        "old_unreads_missing": False,
    }
