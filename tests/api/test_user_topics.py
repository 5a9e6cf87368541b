"""POST /user_topics: visibility policies, their events and /register state."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_messages_send import create_channel
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def set_policy(api: Api, realm: SeededRealm, stream_id: int, topic: str, policy: int) -> None:
    data = {"stream_id": stream_id, "topic": topic, "visibility_policy": policy}
    assert_json_success(api.post(realm.hamlet, "user_topics", data))


def state(api: Api, realm: SeededRealm, fetch: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = dict(extra)
    if fetch is not None:
        data["fetch_event_types"] = fetch
    return assert_json_success(api.post(realm.hamlet, "register", data))


def test_mute_follow_and_clear(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    set_policy(api, realm, stream_id, "dinner", 1)
    [(event, users)] = events.of_type("user_topic")
    assert users == [realm.hamlet.id]
    assert (event["stream_id"], event["topic_name"], event["visibility_policy"]) == (stream_id, "dinner", 1)
    [(legacy, users)] = events.of_type("muted_topics")
    assert legacy["muted_topics"] == [["Denmark", "dinner", event["last_updated"]]]
    assert users == [realm.hamlet.id]

    current = state(api, realm)
    assert current["user_topics"] == [
        {
            "stream_id": stream_id,
            "topic_name": "dinner",
            "last_updated": event["last_updated"],
            "visibility_policy": 1,
        }
    ]
    assert current["muted_topics"] == [["Denmark", "dinner", event["last_updated"]]]
    assert "muted_topics" not in state(api, realm, ["user_topic"])
    assert state(api, realm, ["muted_topics"])["muted_topics"] == current["muted_topics"]

    # Topics are one conversation regardless of case.
    events.clear()
    set_policy(api, realm, stream_id, "DINNER", 3)
    [(event, _)] = events.of_type("user_topic")
    assert event["visibility_policy"] == 3
    [entry] = state(api, realm, ["user_topic"])["user_topics"]
    assert entry["visibility_policy"] == 3
    assert state(api, realm, ["muted_topics"])["muted_topics"] == []

    events.clear()
    set_policy(api, realm, stream_id, "dinner", 0)
    [(event, _)] = events.of_type("user_topic")
    assert event["visibility_policy"] == 0
    assert state(api, realm, ["user_topic"])["user_topics"] == []
    # Clearing a topic without a policy changes nothing.
    events.clear()
    set_policy(api, realm, stream_id, "dinner", 0)
    assert events.of_type("user_topic") == []


def test_empty_topic(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "general")
    set_policy(api, realm, stream_id, "", 2)
    assert state(api, realm, ["user_topic"])["user_topics"][0]["topic_name"] == "general chat"
    with_capability = state(api, realm, ["user_topic"], client_capabilities={"empty_topic_name": True})
    assert with_capability["user_topics"][0]["topic_name"] == ""


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"visibility_policy": 4}, "Invalid visibility_policy"),
        ({"visibility_policy": -1}, "Invalid visibility_policy"),
        ({"stream_id": 99999}, "Invalid channel ID"),
        ({"stream_id": 2**40}, "Invalid channel ID"),
        ({"topic": "bad\x07topic"}, "Invalid character in topic, at position 4!"),
        ({"visibility_policy": "muted"}, 'Argument "visibility_policy" is not valid JSON.'),
    ],
)
def test_invalid(api: Api, realm: SeededRealm, data: dict[str, Any], msg: str) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    full = {"stream_id": stream_id, "topic": "dinner", "visibility_policy": 1, **data}
    assert_json_error(api.post(realm.hamlet, "user_topics", full), msg)


def test_private_channel_needs_access(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.iago, "secret", invite_only=True)
    data = {"stream_id": stream_id, "topic": "t", "visibility_policy": 1}
    assert_json_error(api.post(realm.hamlet, "user_topics", data), "Invalid channel ID")
