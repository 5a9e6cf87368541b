"""Muting users: errors, the muted_users event and state, and muted senders' messages read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from palaver.models.messages import MessageFlag
from palaver.services import Services
from tests.api.test_messages_send import flags_of, send_dm
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def url(user_id: int) -> str:
    return f"users/me/muted_users/{user_id}"


def is_read(services: Services, user: TestUser, message_id: int) -> bool:
    flags = flags_of(services, user, message_id)
    assert flags is not None
    return bool(flags & MessageFlag.READ)


def test_mute_and_unmute(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.post(realm.hamlet, url(realm.othello.id)))
    [(event, users)] = events.of_type("muted_users")
    assert users == [realm.hamlet.id]
    [entry] = event["muted_users"]
    assert entry["id"] == realm.othello.id and isinstance(entry["timestamp"], int)
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["muted_users"]}))
    assert state["muted_users"] == event["muted_users"]
    assert_json_error(api.post(realm.hamlet, url(realm.othello.id)), "User already muted")

    events.clear()
    assert_json_success(api.delete(realm.hamlet, url(realm.othello.id)))
    [(event, users)] = events.of_type("muted_users")
    assert (event["muted_users"], users) == ([], [realm.hamlet.id])
    assert_json_error(api.delete(realm.hamlet, url(realm.othello.id)), "User is not muted")


def test_errors(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.post(realm.hamlet, url(realm.hamlet.id)), "Cannot mute self")
    assert_json_error(api.post(realm.hamlet, url(99999)), "No such user")
    assert_json_error(api.post(realm.hamlet, url(2**40)), "No such user")
    assert_json_error(api.post(realm.hamlet, url(realm.default_bot.id)), "No such user")
    assert_json_error(api.delete(realm.hamlet, url(99999)), "No such user")


def test_deactivated_users_may_be_muted(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    assert_json_success(api.post(realm.hamlet, url(realm.cordelia.id)))


def test_muting_marks_their_messages_read(
    api: Api, realm: SeededRealm, events: EventRecorder, services: Services
) -> None:
    from_othello = send_dm(api, realm.othello, [realm.hamlet], "hello")
    from_cordelia = send_dm(api, realm.cordelia, [realm.hamlet], "hi")
    events.clear()
    assert_json_success(api.post(realm.hamlet, url(realm.othello.id)))
    [(event, users)] = events.of_type("update_message_flags", "add")
    assert (event["flag"], event["messages"], users) == ("read", [from_othello], [realm.hamlet.id])
    assert is_read(services, realm.hamlet, from_othello)
    assert not is_read(services, realm.hamlet, from_cordelia)
