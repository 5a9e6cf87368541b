"""GET /messages/{id}/history and the edit fields of message objects."""

from __future__ import annotations

from palaver.services import Services
from tests.api.edit_helpers import edit_ok
from tests.api.test_messages_send import create_channel, fetch_one, send_dm, send_stream, set_realm
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success


def history(api: Api, realm: SeededRealm, message_id: int, **params: object) -> list[dict[str, object]]:
    body = assert_json_success(api.get(realm.hamlet, f"messages/{message_id}/history", dict(params)))
    result: list[dict[str, object]] = body["message_history"]
    return result


def test_unedited_message_has_one_snapshot(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "h")
    message_id = send_stream(api, realm.hamlet, "h", "t", "hello")
    [snapshot] = history(api, realm, message_id)
    timestamp = fetch_one(api, realm.hamlet, message_id)["timestamp"]
    assert snapshot == {
        "content": "hello",
        "rendered_content": "<p>hello</p>",
        "timestamp": timestamp,
        "topic": "t",
        "user_id": realm.hamlet.id,
    }
    message = fetch_one(api, realm.hamlet, message_id)
    assert "edit_history" not in message and "last_edit_timestamp" not in message


def test_snapshots_after_edits_and_moves(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "h", [realm.hamlet, realm.othello])
    other = create_channel(api, realm.hamlet, "other", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "h", "t", "one")
    edit_ok(api, realm.hamlet, message_id, content="two")
    edit_ok(api, realm.othello, message_id, topic="t2", send_notification_to_new_thread=False)
    edit_ok(api, realm.hamlet, message_id, stream_id=other, send_notification_to_new_thread=False)
    snapshots = history(api, realm, message_id)
    assert [s["content"] for s in snapshots] == ["one", "two", "two", "two"]
    assert [s["topic"] for s in snapshots] == ["t", "t", "t2", "t2"]
    assert [s["user_id"] for s in snapshots] == [
        realm.hamlet.id,
        realm.hamlet.id,
        realm.othello.id,
        realm.hamlet.id,
    ]
    assert snapshots[1]["prev_content"] == "one"
    assert snapshots[1]["prev_rendered_content"] == "<p>one</p>"
    assert snapshots[1]["rendered_content"] == "<p>two</p>"
    diff = snapshots[1]["content_html_diff"]
    assert isinstance(diff, str)
    assert '<span class="highlight_text_inserted">two</span>' in diff
    assert '<span class="highlight_text_deleted">one</span>' in diff
    assert snapshots[2]["prev_topic"] == "t"
    assert "prev_content" not in snapshots[2]
    assert "stream" in snapshots[3] and "prev_stream" in snapshots[3]
    assert snapshots[3]["stream"] == other
    assert all(isinstance(s["timestamp"], int) for s in snapshots)

    message = fetch_one(api, realm.hamlet, message_id)
    assert [set(e) - {"user_id", "timestamp"} for e in message["edit_history"]] == [
        {"prev_stream", "stream"},
        {"prev_topic", "topic"},
        {"prev_content", "prev_rendered_content"},
    ]
    assert message["last_edit_timestamp"] <= message["last_moved_timestamp"]


def test_empty_topic_in_history(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "h")
    message_id = send_stream(api, realm.hamlet, "h", "", "x")
    edit_ok(api, realm.hamlet, message_id, topic="named", send_notification_to_new_thread=False)
    assert [s.get("prev_topic") for s in history(api, realm, message_id)] == [None, "general chat"]
    assert [s["topic"] for s in history(api, realm, message_id, allow_empty_topic_name=True)] == ["", "named"]
    assert fetch_one(api, realm.hamlet, message_id)["edit_history"][0]["prev_topic"] == "general chat"


def test_history_access(api: Api, realm: SeededRealm, services: Services) -> None:
    message_id = send_dm(api, realm.hamlet, [realm.othello], "private")
    assert_json_error(api.get(realm.cordelia, f"messages/{message_id}/history"), "Invalid message(s)")
    assert_json_error(api.get(realm.hamlet, f"messages/{2**40}/history"), "Invalid message(s)")
    edit_ok(api, realm.hamlet, message_id, content="edited")
    set_realm(services, realm, allow_edit_history=False)
    assert_json_error(
        api.get(realm.hamlet, f"messages/{message_id}/history"),
        "Message edit history is disabled in this organization",
    )
    message = fetch_one(api, realm.hamlet, message_id)
    assert "edit_history" not in message
    assert "last_edit_timestamp" in message
