"""GET /messages/{message_id}/read_receipts: who read a message, within privacy settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.api.test_messages_send import create_channel, send_dm, send_stream
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def mark_read(api: Api, user: TestUser, message_id: int) -> None:
    assert_json_success(
        api.post(user, "messages/flags", {"messages": [message_id], "op": "add", "flag": "read"})
    )


def receipts(api: Api, user: TestUser, message_id: int) -> list[int]:
    user_ids: list[int] = assert_json_success(api.get(user, f"messages/{message_id}/read_receipts"))[
        "user_ids"
    ]
    return user_ids


def test_read_receipts(api: Api, realm: SeededRealm) -> None:
    members = [realm.hamlet, realm.othello, realm.cordelia, realm.iago, realm.default_bot]
    create_channel(api, realm.hamlet, "Denmark", members)
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "hello")
    # The sender's message is read for them, but the sender never appears.
    assert receipts(api, realm.othello, message_id) == []
    for user in (realm.othello, realm.cordelia, realm.iago, realm.default_bot):
        mark_read(api, user, message_id)
    assert receipts(api, realm.othello, message_id) == sorted(
        [realm.othello.id, realm.cordelia.id, realm.iago.id, realm.default_bot.id]
    )
    # Users who share no read receipts are left out.
    assert_json_success(api.patch(realm.cordelia, "settings", {"send_read_receipts": False}))
    assert realm.cordelia.id not in receipts(api, realm.othello, message_id)
    # So are users the asker muted, and users who muted the asker.
    assert_json_success(api.post(realm.othello, f"users/me/muted_users/{realm.iago.id}"))
    assert realm.iago.id not in receipts(api, realm.othello, message_id)
    assert realm.othello.id not in receipts(api, realm.iago, message_id)
    assert realm.iago.id in receipts(api, realm.hamlet, message_id)
    # Someone who cannot read the message cannot ask.
    private = create_channel(api, realm.hamlet, "secret", [realm.hamlet], invite_only=True)
    hidden = send_stream(api, realm.hamlet, private, "t", "x")
    assert_json_error(api.get(realm.othello, f"messages/{hidden}/read_receipts"), "Invalid message(s)")
    assert_json_error(api.get(realm.othello, "messages/999999999/read_receipts"), "Invalid message(s)")


def test_read_receipts_of_direct_messages_and_realm_switch(api: Api, realm: SeededRealm) -> None:
    message_id = send_dm(api, realm.hamlet, [realm.othello], "hi")
    mark_read(api, realm.othello, message_id)
    assert receipts(api, realm.hamlet, message_id) == [realm.othello.id]
    assert_json_success(api.patch(realm.iago, "realm", {"enable_read_receipts": False}))
    assert_json_error(
        api.get(realm.hamlet, f"messages/{message_id}/read_receipts"),
        "Read receipts are disabled in this organization.",
    )
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["realm"]}))
    assert state["realm_enable_read_receipts"] is False
