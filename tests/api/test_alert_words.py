"""Alert words: the user's list, its events, and the has_alert_word flag on new messages."""

from __future__ import annotations

from typing import Any

import pytest

from palaver.lib.alert_words import user_ids_with_alert_words_in
from palaver.services import Services
from tests.api.test_messages_send import create_channel, flags_by_user, send_dm, send_stream
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

URL = "users/me/alert_words"


def test_add_list_remove(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert assert_json_success(api.get(realm.hamlet, URL))["alert_words"] == []
    body = assert_json_success(
        api.post(realm.hamlet, URL, {"alert_words": ["Coffee", " tea ", "", "coffee"]})
    )
    assert body["alert_words"] == ["coffee", "tea"]
    [(event, users)] = events.of_type("alert_words")
    assert event == {"type": "alert_words", "alert_words": ["coffee", "tea"]}
    assert users == [realm.hamlet.id]
    # Words already present are ignored, whatever their case.
    body = assert_json_success(api.post(realm.hamlet, URL, {"alert_words": ["TEA", "lunch break"]}))
    assert body["alert_words"] == ["coffee", "tea", "lunch break"]
    body = assert_json_success(api.delete(realm.hamlet, URL, {"alert_words": ["COFFEE", "unknown"]}))
    assert body["alert_words"] == ["tea", "lunch break"]
    assert assert_json_success(api.get(realm.hamlet, URL))["alert_words"] == ["tea", "lunch break"]
    # Other users' words are their own.
    assert assert_json_success(api.get(realm.othello, URL))["alert_words"] == []
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["alert_words"]}))
    assert state["alert_words"] == ["tea", "lunch break"]


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"alert_words": ["x" * 101]}, "alert_words[0] is too long (limit: 100 characters)"),
        ({"alert_words": "coffee"}, 'Argument "alert_words" is not valid JSON.'),
        ({"alert_words": [1]}, "alert_words[0] is not a string"),
        ({}, "Missing 'alert_words' argument"),
    ],
)
def test_invalid(api: Api, realm: SeededRealm, data: dict[str, Any], msg: str) -> None:
    assert_json_error(api.post(realm.hamlet, URL, data), msg)


@pytest.mark.parametrize(
    ("content", "alerts"),
    [
        ("Time for coffee", True),
        ("COFFEE!", True),
        ("(coffee)", True),
        ("*coffee*", True),
        ("decaf-coffee", False),
        ("coffeehouse", False),
        ("A lunch break now?", True),
        ("lunch breaks", False),
    ],
)
def test_matching(services: Services, realm: SeededRealm, api: Api, content: str, alerts: bool) -> None:
    assert_json_success(api.post(realm.hamlet, URL, {"alert_words": ["coffee", "Lunch Break"]}))
    with services.db.session() as session:
        found = user_ids_with_alert_words_in(session, realm.id, [realm.hamlet.id, realm.othello.id], content)
    assert found == ({realm.hamlet.id} if alerts else set())


def test_flag_on_new_messages(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.post(realm.hamlet, URL, {"alert_words": ["coffee"]}))
    assert_json_success(api.post(realm.othello, URL, {"alert_words": ["coffee"]}))
    create_channel(api, realm.iago, "kitchen", [realm.iago, realm.hamlet, realm.othello])
    events.clear()
    send_stream(api, realm.othello, "kitchen", "break", "Coffee anyone?")
    flags = flags_by_user(events)
    assert "has_alert_word" in flags[realm.hamlet.id]
    assert "has_alert_word" not in flags[realm.othello.id]  # the sender's own message
    assert "has_alert_word" not in flags[realm.iago.id]
    events.clear()
    send_dm(api, realm.iago, [realm.hamlet], "no drinks here")
    assert "has_alert_word" not in flags_by_user(events)[realm.hamlet.id]
