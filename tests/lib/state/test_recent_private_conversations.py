"""recent_private_conversations in POST /register, and that message events keep it current."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from palaver.lib.state import recent_private_conversations as module
from tests.api.test_channels import create_channel
from tests.helpers import Api, SeededRealm, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser

KEY = "recent_private_conversations"


def register(api: Api, user: TestUser, **params: Any) -> dict[str, Any]:
    return assert_json_success(api.post(user, "register", {"fetch_event_types": [KEY], **params}))


def send_dm(api: Api, sender: TestUser, to: list[TestUser], content: str = "hi") -> int:
    data = {"type": "direct", "to": [u.id for u in to], "content": content}
    message_id: int = assert_json_success(api.post(sender, "messages", data))["id"]
    return message_id


def apply_message_event(state: dict[str, Any], event: dict[str, Any], me: int) -> None:
    """What a client does with a message event (as Zulip's apply_event does)."""
    message = event["message"]
    if message["type"] != "private":
        return
    user_ids = sorted(r["id"] for r in message["display_recipient"] if r["id"] != me)
    conversations = state[KEY]
    found = next((c for c in conversations if c["user_ids"] == user_ids), None)
    if found is None:
        found = {"max_message_id": 0, "user_ids": user_ids}
        conversations.append(found)
    found["max_message_id"] = max(found["max_message_id"], message["id"])
    conversations.sort(key=lambda c: c["max_message_id"], reverse=True)


def test_recent_conversations_newest_first(api: Api, realm: SeededRealm) -> None:
    assert register(api, realm.hamlet)[KEY] == []
    first = send_dm(api, realm.hamlet, [realm.othello])
    group = send_dm(api, realm.cordelia, [realm.hamlet, realm.othello])
    own = send_dm(api, realm.hamlet, [realm.hamlet])
    reply = send_dm(api, realm.othello, [realm.hamlet])
    create_channel(api, realm.hamlet, "chat", [realm.hamlet.id])
    assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "stream", "to": "chat", "topic": "t", "content": "x"})
    )
    # A conversation hamlet is not part of is not his.
    others = send_dm(api, realm.iago, [realm.othello])

    assert register(api, realm.hamlet)[KEY] == [
        {"max_message_id": reply, "user_ids": [realm.othello.id]},
        {"max_message_id": own, "user_ids": []},
        {"max_message_id": group, "user_ids": sorted([realm.othello.id, realm.cordelia.id])},
    ]
    assert first < reply
    assert register(api, realm.othello)[KEY] == [
        {"max_message_id": others, "user_ids": [realm.iago.id]},
        {"max_message_id": reply, "user_ids": [realm.hamlet.id]},
        {"max_message_id": group, "user_ids": sorted([realm.hamlet.id, realm.cordelia.id])},
    ]


def test_only_the_newest_direct_messages_count(
    api: Api, realm: SeededRealm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "RECENT_CONVERSATIONS_LIMIT", 3)
    send_dm(api, realm.hamlet, [realm.iago])
    for _ in range(2):
        send_dm(api, realm.hamlet, [realm.othello])
    newest = send_dm(api, realm.cordelia, [realm.hamlet])
    # The window holds the newest three: iago's conversation has dropped out.
    assert register(api, realm.hamlet)[KEY] == [
        {"max_message_id": newest, "user_ids": [realm.cordelia.id]},
        {"max_message_id": newest - 1, "user_ids": [realm.othello.id]},
    ]


def test_applying_message_events_matches_a_fresh_register(api: Api, realm: SeededRealm) -> None:
    send_dm(api, realm.othello, [realm.hamlet])
    state = register(api, realm.hamlet, event_types=["message"])
    send_dm(api, realm.hamlet, [realm.othello])
    send_dm(api, realm.hamlet, [realm.cordelia, realm.iago])
    send_dm(api, realm.hamlet, [realm.hamlet])
    send_dm(api, realm.iago, [realm.hamlet, realm.cordelia])
    send_dm(api, realm.polonius, [realm.hamlet])
    events = assert_json_success(
        api.get(
            realm.hamlet, "events", {"queue_id": state["queue_id"], "last_event_id": -1, "dont_block": True}
        )
    )["events"]
    assert len(events) == 5
    for event in events:
        apply_message_event(state, event, realm.hamlet.id)
    assert state[KEY] == register(api, realm.hamlet)[KEY]
