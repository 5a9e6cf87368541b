"""Announcement channels: the realm settings naming them, and new-channel announcements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from palaver.services import Services
from tests.api.edit_helpers import bot_messages
from tests.api.test_channels import create_channel, ids
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success, seed_realm

if TYPE_CHECKING:
    from tests.helpers import TestUser

SETTINGS = (
    "new_stream_announcements_stream_id",
    "signup_announcements_stream_id",
    "zulip_update_announcements_stream_id",
)


def everyone(realm: SeededRealm) -> list[int]:
    return sorted(u.id for u in realm.users.values())


def realm_state(api: Api, user: TestUser) -> dict[str, Any]:
    return assert_json_success(api.post(user, "register", {"fetch_event_types": ["realm"]}))


def mention(user: TestUser) -> str:
    return f"@_**{user.full_name}|{user.id}**"


def fetch_one(api: Api, user: TestUser, message_id: int) -> dict[str, Any]:
    message: dict[str, Any] = assert_json_success(api.get(user, f"messages/{message_id}"))["message"]
    return message


def announcements(api: Api, user: TestUser, stream_id: int) -> list[str]:
    return [m["content"] for m in bot_messages(api, user, stream_id, "new channels")]


@pytest.fixture
def announce_channel(api: Api, realm: SeededRealm) -> int:
    stream_id = create_channel(api, realm.iago, "announce", ids(realm, "iago", "hamlet", "othello"))
    assert_json_success(api.patch(realm.iago, "realm", {"new_stream_announcements_stream_id": stream_id}))
    return stream_id


# Realm settings -------------------------------------------------------------------------------


def test_settings_start_unset(api: Api, realm: SeededRealm) -> None:
    state = realm_state(api, realm.hamlet)
    for name in SETTINGS:
        assert state[f"realm_{name}"] == -1


@pytest.mark.parametrize("name", SETTINGS)
def test_set_and_unset(api: Api, realm: SeededRealm, events: EventRecorder, name: str) -> None:
    stream_id = create_channel(api, realm.iago, "notices")
    events.clear()
    assert_json_success(api.patch(realm.iago, "realm", {name: stream_id}))
    [(event, users)] = events.of_type("realm", "update")
    assert event == {"type": "realm", "op": "update", "property": name, "value": stream_id}
    assert users == everyone(realm)
    assert realm_state(api, realm.hamlet)[f"realm_{name}"] == stream_id
    # The same value again changes nothing and tells nobody.
    events.clear()
    assert_json_success(api.patch(realm.iago, "realm", {name: stream_id}))
    assert events.of_type("realm") == []
    assert_json_success(api.patch(realm.iago, "realm", {name: -1}))
    [(event, _)] = events.of_type("realm", "update")
    assert event["value"] == -1
    assert realm_state(api, realm.hamlet)[f"realm_{name}"] == -1


def test_set_errors(api: Api, realm: SeededRealm, services: Services) -> None:
    name = "new_stream_announcements_stream_id"
    stream_id = create_channel(api, realm.iago, "notices")
    for user in (realm.shiva, realm.hamlet, realm.polonius):
        assert_json_error(
            api.patch(user, "realm", {name: stream_id}), "Must be an organization administrator"
        )
    for bad in (0, 10**12, stream_id + 10_000):
        assert_json_error(api.patch(realm.iago, "realm", {name: bad}), "Invalid channel ID")
    # A private channel the administrator cannot read is as good as missing to them.
    secret = create_channel(api, realm.hamlet, "secret", invite_only=True)
    assert_json_error(api.patch(realm.iago, "realm", {name: secret}), "Invalid channel ID")
    mine = create_channel(api, realm.iago, "admins only", invite_only=True)
    assert_json_success(api.patch(realm.iago, "realm", {name: mine}))
    archived = create_channel(api, realm.iago, "archived")
    assert_json_success(api.delete(realm.iago, f"streams/{archived}"))
    assert_json_error(api.patch(realm.iago, "realm", {name: archived}), "Invalid channel ID")
    # Another organization's channel is not one of this organization's.
    other = seed_realm(services)
    foreign = create_channel(Api(api.client, other), other.iago, "foreign")
    assert_json_error(api.patch(realm.iago, "realm", {name: foreign}), "Invalid channel ID")
    assert realm_state(api, realm.iago)[f"realm_{name}"] == mine


def test_archiving_the_channel_turns_settings_off(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    stream_id = create_channel(api, realm.iago, "notices")
    other = create_channel(api, realm.iago, "other")
    data = {SETTINGS[0]: stream_id, SETTINGS[1]: other, SETTINGS[2]: stream_id}
    assert_json_success(api.patch(realm.iago, "realm", data))
    events.clear()
    assert_json_success(api.delete(realm.iago, f"streams/{stream_id}"))
    changes = [(e["property"], e["value"], users) for e, users in events.of_type("realm", "update")]
    assert changes == [(SETTINGS[0], -1, everyone(realm)), (SETTINGS[2], -1, everyone(realm))]
    state = realm_state(api, realm.hamlet)
    assert [state[f"realm_{n}"] for n in SETTINGS] == [-1, other, -1]


# New-channel announcements --------------------------------------------------------------------


def test_subscribe_announces_new_channel(api: Api, realm: SeededRealm, announce_channel: int) -> None:
    body = {"subscriptions": [{"name": "Verona"}], "announce": True}
    assert_json_success(api.post(realm.othello, "users/me/subscriptions", body))
    verona = assert_json_success(api.get(realm.othello, "get_stream_id", {"stream": "Verona"}))["stream_id"]
    [notice] = bot_messages(api, realm.hamlet, announce_channel, "new channels")
    assert notice["content"] == f"{mention(realm.othello)} created a new channel #**Verona**."
    rendered = fetch_one(api, realm.hamlet, notice["id"])["content"]
    assert f'data-stream-id="{verona}"' in rendered
    # The creator has read the announcement; others have not.
    assert "read" in fetch_one(api, realm.othello, notice["id"])["flags"]
    assert "read" not in fetch_one(api, realm.hamlet, notice["id"])["flags"]
    # Subscribing to existing channels announces nothing.
    assert_json_success(api.post(realm.hamlet, "users/me/subscriptions", body))
    assert len(announcements(api, realm.hamlet, announce_channel)) == 1


def test_subscribe_announces_several_channels_once(
    api: Api, realm: SeededRealm, announce_channel: int
) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    names = ["Denmark", "Verona", "Elsinore"]
    body = {"subscriptions": [{"name": n} for n in names], "announce": True}
    assert_json_success(api.post(realm.othello, "users/me/subscriptions", body))
    assert announcements(api, realm.hamlet, announce_channel) == [
        f"{mention(realm.othello)} created the following channels: #**Verona**, #**Elsinore**."
    ]


def test_no_announcement_unless_asked_and_configured(api: Api, realm: SeededRealm) -> None:
    target = create_channel(api, realm.iago, "announce", ids(realm, "iago", "hamlet"))
    body: dict[str, Any] = {"subscriptions": [{"name": "quiet"}], "announce": True}
    assert_json_success(api.post(realm.hamlet, "users/me/subscriptions", body))
    assert announcements(api, realm.hamlet, target) == []
    assert_json_success(api.patch(realm.iago, "realm", {"new_stream_announcements_stream_id": target}))
    body = {"subscriptions": [{"name": "also quiet"}]}
    assert_json_success(api.post(realm.hamlet, "users/me/subscriptions", body))
    create_channel(api, realm.hamlet, "quiet too")
    assert announcements(api, realm.hamlet, target) == []


def test_channels_create_announces(
    api: Api, realm: SeededRealm, announce_channel: int, events: EventRecorder
) -> None:
    events.clear()
    create_channel(api, realm.hamlet, "Elsinore", announce=True)
    assert announcements(api, realm.othello, announce_channel) == [
        f"{mention(realm.hamlet)} created a new channel #**Elsinore**."
    ]
    # The announcement reaches the announcement channel's subscribers as message events.
    messages = events.of_type("message")
    assert {e["message"]["display_recipient"] for e, _ in messages} == {"announce"}
    bot_id = messages[0][0]["message"]["sender_id"]
    recipients = sorted(u for _, users in messages for u in users if u != bot_id)
    assert recipients == ids(realm, "iago", "hamlet", "othello")


def test_announcement_into_private_channel_and_odd_names(api: Api, realm: SeededRealm) -> None:
    # The bot posts to a private announcement channel it is not subscribed to.
    target = create_channel(api, realm.iago, "staff", invite_only=True)
    assert_json_success(api.patch(realm.iago, "realm", {"new_stream_announcements_stream_id": target}))
    create_channel(api, realm.hamlet, "a*b", announce=True)
    [content] = announcements(api, realm.iago, target)
    assert content.startswith(f"{mention(realm.hamlet)} created a new channel [#a*b](#narrow/channel/")


def test_failed_creation_announces_nothing(api: Api, realm: SeededRealm, announce_channel: int) -> None:
    create_channel(api, realm.iago, "secret", invite_only=True)
    body = {"subscriptions": [{"name": "Verona"}, {"name": "secret"}], "announce": True}
    response = api.post(realm.hamlet, "users/me/subscriptions", body)
    assert_json_error(response, "Unable to access channel (secret).")
    assert announcements(api, realm.hamlet, announce_channel) == []
    assert_json_error(
        api.get(realm.hamlet, "get_stream_id", {"stream": "Verona"}), "Invalid channel name 'Verona'"
    )
