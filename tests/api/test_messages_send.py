"""POST /messages: channel and direct messages, their permissions, mentions and events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from palaver.actions.users import do_create_user
from palaver.lib.realm import realm_email_host
from palaver.lib.user_groups import get_system_groups
from palaver.models import Realm, UserGroup, UserGroupMembership, UserProfile
from palaver.models.channels import Stream
from palaver.models.messages import UserMessage
from palaver.services import Services
from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser

# Helpers shared by the message tests ----------------------------------------------------------


def create_channel(
    api: Api, user: TestUser, name: str, subscribers: list[TestUser] | None = None, **extra: Any
) -> int:
    members = [u.id for u in subscribers] if subscribers is not None else [user.id]
    data = {"name": name, "subscribers": members, **extra}
    stream_id: int = assert_json_success(api.post(user, "channels/create", data))["id"]
    return stream_id


def subscribe(api: Api, user: TestUser, name: str) -> None:
    assert_json_success(api.post(user, "users/me/subscriptions", {"subscriptions": [{"name": name}]}))


def unsubscribe(api: Api, user: TestUser, name: str) -> None:
    assert_json_success(api.delete(user, "users/me/subscriptions", {"subscriptions": [name]}))


def send_stream(api: Api, user: TestUser, channel: str | int, topic: str, content: str, **extra: Any) -> int:
    data = {"type": "stream", "to": channel, "topic": topic, "content": content, **extra}
    message_id: int = assert_json_success(api.post(user, "messages", data))["id"]
    return message_id


def send_dm(api: Api, user: TestUser, to: list[TestUser], content: str, **extra: Any) -> int:
    data = {"type": "direct", "to": [u.id for u in to], "content": content, **extra}
    message_id: int = assert_json_success(api.post(user, "messages", data))["id"]
    return message_id


def fetch(api: Api, user: TestUser, **params: Any) -> dict[str, Any]:
    query = {"anchor": "newest", "num_before": 100, "num_after": 0, **params}
    return assert_json_success(api.get(user, "messages", query))


def fetch_one(api: Api, user: TestUser, message_id: int) -> dict[str, Any]:
    message: dict[str, Any] = assert_json_success(api.get(user, f"messages/{message_id}"))["message"]
    return message


def flags_of(services: Services, user: TestUser, message_id: int) -> int | None:
    with services.db.session() as session:
        return session.scalar(
            select(UserMessage.flags).where(
                UserMessage.user_profile_id == user.id, UserMessage.message_id == message_id
            )
        )


def system_groups(services: Services, realm: SeededRealm) -> dict[str, int]:
    with services.db.session() as session:
        return {name: g.id for name, g in get_system_groups(session, realm.id).items()}


def set_realm(services: Services, realm: SeededRealm, **values: Any) -> None:
    with services.db.session() as session:
        db_realm = session.get(Realm, realm.id)
        assert db_realm is not None
        for name, value in values.items():
            setattr(db_realm, name, value)
        session.commit()


def set_stream(services: Services, stream_id: int, **values: Any) -> None:
    with services.db.session() as session:
        stream = session.get(Stream, stream_id)
        assert stream is not None
        for name, value in values.items():
            setattr(stream, name, value)
        session.commit()


def set_user(services: Services, user: TestUser, **values: Any) -> None:
    with services.db.session() as session:
        db_user = session.get(UserProfile, user.id)
        assert db_user is not None
        for name, value in values.items():
            setattr(db_user, name, value)
        session.commit()


def add_users(services: Services, realm: SeededRealm, count: int, prefix: str = "extra") -> list[TestUser]:
    created = []
    with services.db.session() as session:
        db_realm = session.get(Realm, realm.id)
        assert db_realm is not None
        host = realm_email_host(services.settings, db_realm)
        for i in range(count):
            user = do_create_user(
                session,
                db_realm,
                email=f"{prefix}{i}@{realm.string_id}.example.com",
                full_name=f"{prefix.title()} {i}",
                password_hash=None,
                email_host=host,
            )
            created.append(helpers.TestUser(user.id, user.email, user.api_key, user.full_name, user.role))
    return created


def make_group(
    services: Services, realm: SeededRealm, name: str, members: list[TestUser], can_mention: str
) -> int:
    groups = system_groups(services, realm)
    with services.db.session() as session:
        group = UserGroup(realm_id=realm.id, name=name, description="", can_mention_group=groups[can_mention])
        session.add(group)
        session.flush()
        session.add_all(UserGroupMembership(user_group_id=group.id, user_profile_id=u.id) for u in members)
        session.commit()
        return group.id


def message_events(events: EventRecorder) -> list[tuple[dict[str, Any], list[int]]]:
    return events.of_type("message")


def flags_by_user(events: EventRecorder) -> dict[int, list[str]]:
    result: dict[int, list[str]] = {}
    for event, users in message_events(events):
        for user_id in users:
            assert user_id not in result, "one event per recipient"
            result[user_id] = event["flags"]
    return result


# Channel messages -----------------------------------------------------------------------------


def test_send_to_channel(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello, realm.cordelia])
    events.clear()
    message_id = send_stream(
        api, realm.hamlet, "Denmark", "castle", "Hello @**Othello, the Moor of Venice**", read_by_sender=True
    )
    assert flags_by_user(events) == {
        realm.hamlet.id: ["read"],
        realm.othello.id: ["mentioned"],
        realm.cordelia.id: [],
    }
    event, _ = message_events(events)[0]
    message = event["message"]
    assert message["id"] == message_id
    assert message["type"] == "stream" and message["stream_id"] == stream_id
    assert message["display_recipient"] == "Denmark" and message["subject"] == "castle"
    assert message["content"].startswith('<p>Hello <span class="user-mention"')
    assert event["internal"]["raw_content"] == "Hello @**Othello, the Moor of Venice**"
    assert message["sender_id"] == realm.hamlet.id and message["sender_email"] == realm.hamlet.email
    assert message["sender_realm_str"] == realm.string_id and message["client"] == "testclient"
    assert "local_message_id" not in event
    # The channel's first message is noted, once.
    [(update, audience)] = events.of_type("stream", "update")
    assert update["property"] == "first_message_id" and update["value"] == message_id
    assert realm.polonius.id not in audience
    events.clear()
    send_stream(api, realm.othello, stream_id, "castle", "again")
    assert events.of_type("stream") == []
    assert fetch_one(api, realm.othello, message_id)["flags"] == ["mentioned"]


def test_send_addressing_forms(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    forms: list[dict[str, Any]] = [
        {"type": "stream", "to": "Denmark", "topic": "a"},
        {"type": "channel", "to": "denmark", "subject": "a"},
        {"type": "stream", "to": stream_id, "topic": "a"},
        {"type": "stream", "to": str(stream_id), "topic": "a"},
        {"type": "stream", "to": ["Denmark"], "topic": "a"},
        {"type": "stream", "to": [stream_id], "topic": "a"},
        {"type": "stream", "to": '"Denmark"', "topic": "a"},
    ]
    for form in forms:
        message_id = assert_json_success(api.post(realm.hamlet, "messages", {**form, "content": "x"}))["id"]
        message = fetch_one(api, realm.hamlet, message_id)
        assert (message["stream_id"], message["subject"]) == (stream_id, "a"), form


def test_local_echo_and_read_by_sender(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    events.clear()
    send_stream(api, realm.hamlet, "Denmark", "t", "x", local_id="100.01", queue_id="q-1")
    sent = message_events(events)
    own = [e for e, users in sent if users == [realm.hamlet.id]]
    [mine] = own
    assert mine["local_message_id"] == "100.01" and mine["internal"]["sender_queue_id"] == "q-1"
    assert all("local_message_id" not in e for e, users in sent if realm.hamlet.id not in users)
    events.clear()
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "x", read_by_sender=False)
    assert flags_by_user(events)[realm.hamlet.id] == []
    assert fetch_one(api, realm.hamlet, message_id)["flags"] == []


def test_sender_outside_the_channel_keeps_a_read_copy(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    create_channel(api, realm.othello, "Denmark", [realm.othello])
    events.clear()
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "x", read_by_sender=False)
    assert flags_by_user(events) == {realm.hamlet.id: ["read"], realm.othello.id: []}
    assert fetch(api, realm.hamlet)["messages"][-1]["id"] == message_id


def test_content_and_topic_are_normalized(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    long_content = "a" * 10_050
    message_id = send_stream(
        api, realm.hamlet, "Denmark", "  " + "t" * 70 + " ", "\n\n" + long_content + "  \n"
    )
    response = assert_json_success(
        api.get(realm.hamlet, f"messages/{message_id}", {"allow_empty_topic_name": True})
    )
    assert response["raw_content"] == "a" * (10_000 - 20) + "\n[message truncated]"
    assert len(response["raw_content"]) == 10_000
    assert response["message"]["subject"] == "t" * 57 + "..."
    for empty in ("(no topic)", "general chat", "", "   "):
        message_id = send_stream(api, realm.hamlet, "Denmark", empty, "x")
        body = assert_json_success(
            api.get(realm.hamlet, f"messages/{message_id}", {"allow_empty_topic_name": True})
        )
        assert body["message"]["subject"] == ""
        assert fetch_one(api, realm.hamlet, message_id)["subject"] == "general chat"


@pytest.mark.parametrize(
    ("data", "msg", "code"),
    [
        ({"type": "email", "to": "Denmark", "topic": "t"}, "Invalid message type", None),
        ({"type": "stream", "to": "Denmark"}, "Missing topic", None),
        (
            {"type": "stream", "to": "Nowhere", "topic": "t"},
            "Channel 'Nowhere' does not exist",
            "STREAM_DOES_NOT_EXIST",
        ),
        (
            {"type": "stream", "to": 999999, "topic": "t"},
            "Channel with ID '999999' does not exist",
            "STREAM_DOES_NOT_EXIST",
        ),
        ({"type": "stream", "to": ["Denmark", "Verona"], "topic": "t"}, "Expected exactly one channel", None),
        ({"type": "stream", "to": " ", "topic": "t"}, "Missing channel", None),
        (
            {"type": "stream", "to": "Denmark", "topic": "a\x01b"},
            "Invalid character in topic, at position 2!",
            None,
        ),
        ({"type": "direct", "to": []}, "Message must have recipients", None),
        ({"type": "direct", "to": ""}, "Message must have recipients", None),
        ({"type": "direct", "to": [999999]}, "Invalid user ID 999999", None),
        ({"type": "private", "to": ["nobody@example.com"]}, "Invalid email 'nobody@example.com'", None),
    ],
)
def test_send_errors(api: Api, realm: SeededRealm, data: dict[str, Any], msg: str, code: str | None) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    body = assert_json_error(api.post(realm.hamlet, "messages", {"content": "x", **data}), msg, code=code)
    if code == "STREAM_DOES_NOT_EXIST":
        assert body.get("stream") == "Nowhere" or body.get("stream_id") == 999999


def test_send_content_errors(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    base = {"type": "stream", "to": "Denmark", "topic": "t"}
    assert_json_error(
        api.post(realm.hamlet, "messages", {**base, "content": " \n "}), "Message must not be empty"
    )
    assert_json_error(api.post(realm.hamlet, "messages", base), "Missing 'content' argument")
    response = api.post(realm.hamlet, "messages", {**base, "content": "a\x00b"})
    assert response.status_code == 400 and response.json()["result"] == "error"
    assert_json_error(
        api.post(realm.hamlet, "messages", {"type": "stream", "content": "x"}), "Missing 'to' argument"
    )
    assert_json_error(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": '[1, "a@b.c"]', "content": "x"}),
        "Recipient lists may contain emails or user IDs, but not both.",
    )


# Channel permissions --------------------------------------------------------------------------


def test_can_send_message_group(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.shiva, "news", [realm.shiva, realm.hamlet])
    set_stream(services, stream_id, can_send_message_group=system_groups(services, realm)["role:moderators"])
    data = {"type": "stream", "to": "news", "topic": "t", "content": "x"}
    assert_json_error(
        api.post(realm.hamlet, "messages", data), "You do not have permission to post in this channel."
    )
    assert_json_success(api.post(realm.shiva, "messages", data))
    # A bot posts where its owner may.
    assert_json_error(
        api.post(realm.default_bot, "messages", data), "You do not have permission to post in this channel."
    )
    set_user(services, realm.default_bot, bot_owner_id=realm.shiva.id)
    assert_json_success(api.post(realm.default_bot, "messages", data))


def test_archived_and_private_channels(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.hamlet, "secret", [realm.hamlet], invite_only=True)
    data = {"type": "stream", "to": "secret", "topic": "t", "content": "x"}
    assert_json_error(api.post(realm.othello, "messages", data), "Not authorized to send to channel 'secret'")
    assert_json_success(api.post(realm.hamlet, "messages", data))
    # The owner's subscription lets the bot in.
    assert_json_success(api.post(realm.default_bot, "messages", data))
    create_channel(api, realm.hamlet, "old")
    assert_json_success(api.delete(realm.iago, f"streams/{stream_id}"))
    assert_json_error(api.post(realm.hamlet, "messages", data), "Not authorized to send to channel 'secret'")


def test_guests_post_only_where_subscribed(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet])
    data = {"type": "stream", "to": "Denmark", "topic": "t", "content": "x"}
    assert_json_error(
        api.post(realm.polonius, "messages", data), "Not authorized to send to channel 'Denmark'"
    )
    assert_json_success(
        api.post(
            realm.hamlet,
            "users/me/subscriptions",
            {"subscriptions": [{"name": "Denmark"}], "principals": [realm.polonius.id]},
        )
    )
    assert_json_success(api.post(realm.polonius, "messages", data))


def test_can_create_topic_group(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.shiva, "Denmark", [realm.shiva, realm.hamlet])
    set_stream(services, stream_id, can_create_topic_group=system_groups(services, realm)["role:moderators"])
    data = {"type": "stream", "to": "Denmark", "content": "x"}
    assert_json_error(
        api.post(realm.hamlet, "messages", {**data, "topic": "new"}),
        "You do not have permission to create new topics in this channel.",
    )
    send_stream(api, realm.shiva, "Denmark", "New", "first")
    # An existing topic, in any case, is open to everyone who may post.
    assert_json_success(api.post(realm.hamlet, "messages", {**data, "topic": "new"}))


def test_topics_policy(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    data = {"type": "stream", "to": "Denmark", "content": "x"}
    set_stream(services, stream_id, topics_policy="disable_empty_topic")
    assert_json_error(
        api.post(realm.hamlet, "messages", {**data, "topic": "general chat"}),
        "Sending messages to the general chat is not allowed in this channel.",
    )
    assert_json_success(api.post(realm.hamlet, "messages", {**data, "topic": "t"}))
    set_stream(services, stream_id, topics_policy="empty_topic_only")
    assert_json_error(
        api.post(realm.hamlet, "messages", {**data, "topic": "t"}),
        "Only the general chat topic is allowed in this channel.",
    )
    assert_json_success(api.post(realm.hamlet, "messages", {**data, "topic": ""}))
    set_stream(services, stream_id, topics_policy="inherit")
    set_realm(services, realm, topics_policy="disable_empty_topic")
    assert_json_error(
        api.post(realm.hamlet, "messages", {**data, "topic": ""}),
        "Sending messages to the general chat is not allowed in this channel.",
    )
    set_realm(services, realm, topics_policy="allow_empty_topic", mandatory_topics=True)
    assert_json_error(
        api.post(realm.hamlet, "messages", {**data, "topic": "(no topic)"}),
        "Sending messages to the general chat is not allowed in this channel.",
    )


# Mentions -------------------------------------------------------------------------------------


def test_wildcard_mentions_in_large_channels(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    crowd = add_users(services, realm, 15)
    create_channel(api, realm.hamlet, "small", [realm.hamlet, realm.othello])
    events.clear()
    send_stream(api, realm.hamlet, "small", "t", "@**all** hello")
    flags = flags_by_user(events)
    assert flags[realm.othello.id] == ["stream_wildcard_mentioned", "wildcard_mentioned"]
    create_channel(api, realm.hamlet, "large", [realm.hamlet, *crowd])
    assert_json_error(
        api.post(
            realm.hamlet,
            "messages",
            {"type": "stream", "to": "large", "topic": "t", "content": "@**everyone**"},
        ),
        "You do not have permission to use channel wildcard mentions in this channel.",
        code="STREAM_WILDCARD_MENTION_NOT_ALLOWED",
    )
    # Silent mentions and code spans notify nobody, so they are allowed.
    send_stream(api, realm.hamlet, "large", "t", "`@**all**`")
    subscribe(api, realm.iago, "large")
    send_stream(api, realm.iago, "large", "t", "@**channel** news")


def test_topic_wildcard_mentions(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    crowd = add_users(services, realm, 15)
    create_channel(api, realm.hamlet, "large", [realm.hamlet, realm.othello, *crowd])
    send_stream(api, realm.othello, "large", "small talk", "hi")
    events.clear()
    send_stream(api, realm.hamlet, "large", "small talk", "@**topic** ping")
    flags = flags_by_user(events)
    assert "topic_wildcard_mentioned" in flags[realm.othello.id]
    assert flags[crowd[0].id] == []
    for user in crowd:
        send_stream(api, user, "large", "busy", "hello")
    assert_json_error(
        api.post(
            realm.hamlet,
            "messages",
            {"type": "stream", "to": "large", "topic": "busy", "content": "@**topic**"},
        ),
        "You do not have permission to use topic wildcard mentions in this topic.",
        code="TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
    )
    set_realm(services, realm, can_mention_many_users_group=system_groups(services, realm)["role:members"])
    send_stream(api, realm.hamlet, "large", "busy", "@**topic**")


def test_group_mentions(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello, realm.cordelia])
    make_group(services, realm, "actors", [realm.othello], "role:everyone")
    make_group(services, realm, "admins only", [realm.cordelia], "role:administrators")
    events.clear()
    send_stream(api, realm.hamlet, "Denmark", "t", "@*actors* rehearse")
    flags = flags_by_user(events)
    assert flags[realm.othello.id] == ["mentioned"] and flags[realm.cordelia.id] == []
    assert_json_error(
        api.post(
            realm.hamlet,
            "messages",
            {"type": "stream", "to": "Denmark", "topic": "t", "content": "@*admins only*"},
        ),
        "You are not allowed to mention user group 'admins only'.",
    )
    send_stream(api, realm.hamlet, "Denmark", "t", "@_*admins only* silently")


# Direct messages ------------------------------------------------------------------------------


def test_direct_messages(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    first = send_dm(api, realm.hamlet, [realm.othello], "hi @**Othello, the Moor of Venice**")
    assert flags_by_user(events) == {realm.hamlet.id: ["read"], realm.othello.id: ["mentioned"]}
    [(event, _)] = message_events(events)[:1]
    message = event["message"]
    assert message["type"] == "private" and message["subject"] == "" and "stream_id" not in message
    assert [p["id"] for p in message["display_recipient"]] == sorted([realm.hamlet.id, realm.othello.id])
    assert message["display_recipient"][0].keys() == {"id", "email", "full_name", "is_mirror_dummy"}
    assert event["internal"]["broadcast"] is False
    # Both directions, and any way of naming the people, are one conversation.
    reply = send_dm(api, realm.othello, [realm.hamlet], "hello")
    by_email = assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "private", "to": realm.othello.email, "content": "x"})
    )["id"]
    by_list = assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "private", "to": [realm.othello.email], "content": "x"})
    )["id"]
    by_id = assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": realm.othello.id, "content": "x"})
    )["id"]
    recipient_ids = {
        fetch_one(api, realm.hamlet, i)["recipient_id"] for i in (first, reply, by_email, by_list, by_id)
    }
    assert len(recipient_ids) == 1


def test_group_and_self_direct_messages(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    group = send_dm(api, realm.hamlet, [realm.othello, realm.cordelia, realm.hamlet], "all of us")
    assert set(flags_by_user(events)) == {realm.hamlet.id, realm.othello.id, realm.cordelia.id}
    message = fetch_one(api, realm.cordelia, group)
    assert len(message["display_recipient"]) == 3
    events.clear()
    note = send_dm(api, realm.hamlet, [realm.hamlet], "note to self")
    assert flags_by_user(events) == {realm.hamlet.id: ["read"]}
    assert [p["id"] for p in fetch_one(api, realm.hamlet, note)["display_recipient"]] == [realm.hamlet.id]
    assert fetch_one(api, realm.hamlet, note)["recipient_id"] != message["recipient_id"]


def test_direct_message_to_deactivated_user(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    assert_json_error(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "x"}),
        f"'{realm.othello.email}' is no longer using Zulip.",
    )


def test_direct_message_permission_group(api: Api, realm: SeededRealm, services: Services) -> None:
    groups = system_groups(services, realm)
    set_realm(services, realm, direct_message_permission_group=groups["role:nobody"])
    dm = {"type": "direct", "to": [realm.othello.id], "content": "x"}
    assert_json_error(
        api.post(realm.hamlet, "messages", dm), "Direct messages are disabled in this organization."
    )
    # Bots, and conversations with only bots or oneself, need no permission.
    assert_json_success(api.post(realm.hamlet, "messages", {**dm, "to": [realm.default_bot.id]}))
    assert_json_success(api.post(realm.hamlet, "messages", {**dm, "to": [realm.hamlet.id]}))
    assert_json_success(api.post(realm.default_bot, "messages", dm))
    set_realm(services, realm, direct_message_permission_group=groups["role:administrators"])
    assert_json_error(
        api.post(realm.hamlet, "messages", dm),
        "This conversation does not include any users who can authorize it.",
    )
    assert_json_success(api.post(realm.hamlet, "messages", {**dm, "to": [realm.iago.id]}))


def test_direct_message_initiator_group(api: Api, realm: SeededRealm, services: Services) -> None:
    set_realm(
        services, realm, direct_message_initiator_group=system_groups(services, realm)["role:administrators"]
    )
    assert_json_error(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.iago.id], "content": "x"}),
        "You do not have permission to initiate direct message conversations.",
    )
    send_dm(api, realm.iago, [realm.hamlet], "hello")
    send_dm(api, realm.hamlet, [realm.iago], "a reply is fine")


def test_restricted_guest_reaches_only_known_users(api: Api, realm: SeededRealm, services: Services) -> None:
    set_realm(services, realm, can_access_all_users_group=system_groups(services, realm)["role:members"])
    assert_json_error(
        api.post(realm.polonius, "messages", {"type": "direct", "to": [realm.othello.id], "content": "x"}),
        "You do not have permission to access some of the recipients.",
    )
    create_channel(api, realm.othello, "shared", [realm.othello, realm.polonius])
    send_dm(api, realm.polonius, [realm.othello], "now we share a channel")


def test_max_message_id_follows_history(api: Api, realm: SeededRealm) -> None:
    assert assert_json_success(api.get(realm.othello, "users/me"))["max_message_id"] == -1
    message_id = send_dm(api, realm.hamlet, [realm.othello], "x")
    assert assert_json_success(api.get(realm.othello, "users/me"))["max_message_id"] == message_id
    assert assert_json_success(api.get(realm.cordelia, "users/me"))["max_message_id"] == -1


def test_public_channel_event_reaches_all_public_streams_once(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello, realm.cordelia])
    create_channel(api, realm.hamlet, "secret", [realm.hamlet, realm.othello], invite_only=True)
    events.clear()
    send_stream(api, realm.hamlet, "Denmark", "t", "hi @**Othello, the Moor of Venice**")
    sent = message_events(events)
    [(broadcast, users)] = [(e, u) for e, u in sent if e["internal"]["broadcast"]]
    assert users == [realm.cordelia.id] and broadcast["flags"] == []
    assert broadcast["internal"]["skip_broadcast_user_ids"] == sorted([realm.hamlet.id, realm.othello.id])
    events.clear()
    send_stream(api, realm.hamlet, "secret", "t", "hi")
    assert not any(e["internal"]["broadcast"] for e, _ in message_events(events))


def test_out_of_range_ids_are_unknown(api: Api, realm: SeededRealm) -> None:
    huge = 2**40
    assert_json_error(
        api.post(realm.hamlet, "messages", {"type": "stream", "to": huge, "topic": "t", "content": "x"}),
        f"Channel with ID '{huge}' does not exist",
        code="STREAM_DOES_NOT_EXIST",
    )
    assert_json_error(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [huge], "content": "x"}),
        f"Invalid user ID {huge}",
    )
    assert_json_error(api.get(realm.hamlet, f"messages/{huge}"), "Invalid message(s)")
    assert_json_error(api.delete(realm.hamlet, f"messages/{huge}"), "Invalid message(s)")
    narrow = [{"operator": "channel", "operand": huge}]
    assert_json_error(
        api.get(
            realm.hamlet, "messages", {"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": narrow}
        ),
        f"Invalid narrow operator: unknown channel {huge}",
    )
    body = assert_json_success(
        api.get(
            realm.hamlet,
            "messages",
            {"anchor": huge, "num_before": 1, "num_after": 1, "narrow": [["id", huge]]},
        )
    )
    assert body["messages"] == []
    assert_json_error(
        api.post(realm.hamlet, "messages/flags", {"messages": [huge], "op": "add", "flag": "starred"}),
        "Invalid message(s)",
    )


def test_the_newest_message_deleted_leaves_its_id_unused(api: Api, realm: SeededRealm) -> None:
    """Message IDs only grow: SQLite used to give a deleted newest message's ID to the next."""
    first = send_dm(api, realm.iago, [realm.othello], "first")
    newest = send_dm(api, realm.iago, [realm.othello], "deleted")
    assert_json_success(api.delete(realm.iago, f"messages/{newest}"))
    assert send_dm(api, realm.iago, [realm.othello], "next") > newest > first


def test_muting_and_unmuting_apply_to_the_next_message(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    """Who muted the sender is read from the realm-state cache: a mute or an unmute made
    after a send has loaded it applies to the very next message."""
    from palaver.models.messages import MessageFlag

    def read_by_hamlet(message_id: int) -> bool:
        return bool((flags_of(services, realm.hamlet, message_id) or 0) & MessageFlag.READ)

    assert not read_by_hamlet(send_dm(api, realm.othello, [realm.hamlet], "before"))
    assert_json_success(api.post(realm.hamlet, f"users/me/muted_users/{realm.othello.id}"))
    assert read_by_hamlet(send_dm(api, realm.othello, [realm.hamlet], "muted"))
    assert_json_success(api.delete(realm.hamlet, f"users/me/muted_users/{realm.othello.id}"))
    assert not read_by_hamlet(send_dm(api, realm.othello, [realm.hamlet], "after"))


def test_messages_from_a_muted_sender_arrive_read(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    from palaver.models.messages import MessageFlag

    create_channel(api, realm.othello, "muters", [realm.othello, realm.hamlet, realm.cordelia])
    assert_json_success(api.post(realm.hamlet, f"users/me/muted_users/{realm.othello.id}"))
    events.clear()
    in_channel = send_stream(api, realm.othello, "muters", "t", "hello @**King Hamlet**")
    direct = send_dm(api, realm.othello, [realm.hamlet, realm.cordelia], "hi both")
    for message_id, private in ((in_channel, False), (direct, True)):
        hamlet = flags_of(services, realm.hamlet, message_id)
        cordelia = flags_of(services, realm.cordelia, message_id)
        assert hamlet is not None and cordelia is not None
        assert hamlet & MessageFlag.READ, "muting users get the message as read"
        assert not cordelia & MessageFlag.READ
        assert bool(hamlet & MessageFlag.IS_PRIVATE) == private
    # Other flags stay: the mention is still recorded.
    assert (flags_of(services, realm.hamlet, in_channel) or 0) & MessageFlag.MENTIONED
    hamlet_events = [e for e, users in events.of_type("message") if realm.hamlet.id in users]
    assert [e["message"]["id"] for e in hamlet_events] == [in_channel, direct]
    assert all("read" in e["flags"] for e in hamlet_events)
    cordelia_events = [e for e, users in events.of_type("message") if realm.cordelia.id in users]
    assert all("read" not in e["flags"] for e in cordelia_events)
    flags = {m["id"]: m["flags"] for m in fetch(api, realm.hamlet)["messages"]}
    assert "read" in flags[in_channel] and "read" in flags[direct]
    # The muted user's own messages, and messages to a user who muted nobody, are unaffected.
    back = send_dm(api, realm.hamlet, [realm.othello], "reply")
    assert not (flags_of(services, realm.othello, back) or 0) & MessageFlag.READ
