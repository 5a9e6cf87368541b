"""PATCH /messages/{id} moves: topics, channels, propagate modes, permissions, time limits."""

from __future__ import annotations

from typing import Any

import pytest

from palaver.events.queues import ClientDescriptor, event_for_client
from palaver.models.messages import MessageFlag
from palaver.services import Services
from tests.api.edit_helpers import (
    age_messages,
    bot_messages,
    edit_ok,
    one_update,
    patch,
)
from tests.api.test_messages_send import (
    create_channel,
    fetch,
    fetch_one,
    flags_of,
    send_stream,
    set_realm,
    set_stream,
    subscribe,
    system_groups,
)
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error


def topic_of(api: Api, realm: SeededRealm, message_id: int) -> str:
    subject: str = fetch_one(api, realm.hamlet, message_id)["subject"]
    return subject


def three_in_topic(api: Api, realm: SeededRealm, name: str = "moves") -> tuple[int, list[int]]:
    stream_id = create_channel(api, realm.hamlet, name, [realm.hamlet, realm.othello])
    ids = [send_stream(api, realm.hamlet, name, "old", f"m{i}") for i in range(3)]
    return stream_id, ids


@pytest.mark.parametrize(
    ("mode", "moved"), [("change_one", [1]), ("change_later", [1, 2]), ("change_all", [0, 1, 2])]
)
def test_propagate_modes(
    api: Api, realm: SeededRealm, events: EventRecorder, mode: str, moved: list[int]
) -> None:
    stream_id, ids = three_in_topic(api, realm)
    events.clear()
    edit_ok(
        api, realm.hamlet, ids[1], topic="new", propagate_mode=mode, send_notification_to_new_thread=False
    )
    for i, message_id in enumerate(ids):
        assert topic_of(api, realm, message_id) == ("new" if i in moved else "old")
    event, users = one_update(events)
    assert sorted(users) == sorted([realm.hamlet.id, realm.othello.id])
    assert event["message_ids"] == [ids[i] for i in moved]
    assert event["message_id"] == ids[1]
    assert (event["orig_subject"], event["subject"], event["propagate_mode"]) == ("old", "new", mode)
    assert event["topic_links"] == []
    assert event["stream_id"] == stream_id
    assert "new_stream_id" not in event
    assert "content" not in event
    moved_message = fetch_one(api, realm.hamlet, ids[moved[0]])
    assert "last_moved_timestamp" in moved_message
    assert "last_edit_timestamp" not in moved_message
    [entry] = moved_message["edit_history"]
    assert (entry["prev_topic"], entry["topic"], entry["user_id"]) == ("old", "new", realm.hamlet.id)
    assert "prev_content" not in entry


def test_move_notifications(api: Api, realm: SeededRealm) -> None:
    stream_id, ids = three_in_topic(api, realm)
    edit_ok(
        api,
        realm.hamlet,
        ids[0],
        topic="new",
        propagate_mode="change_all",
        send_notification_to_old_thread=True,
    )
    mention = f"@_**{realm.hamlet.full_name}|{realm.hamlet.id}**"
    [new_notice] = bot_messages(api, realm.hamlet, stream_id, "new")
    assert new_notice["content"] == f"This topic was moved here from #**moves>old** by {mention}."
    [old_notice] = bot_messages(api, realm.hamlet, stream_id, "old")
    assert old_notice["content"] == f"This topic was moved to #**moves>new** by {mention}."
    # The mover has read the notices; others have not.
    assert "read" in fetch_one(api, realm.hamlet, new_notice["id"])["flags"]
    assert "read" not in fetch_one(api, realm.othello, new_notice["id"])["flags"]


def test_partial_move_notifications(api: Api, realm: SeededRealm) -> None:
    stream_id, ids = three_in_topic(api, realm)
    edit_ok(api, realm.hamlet, ids[2], topic="one", send_notification_to_old_thread=True)
    [new_notice] = bot_messages(api, realm.hamlet, stream_id, "one")
    assert new_notice["content"].startswith("[A message](http://")
    assert (
        f"/#narrow/channel/{stream_id}-moves/topic/one/near/{ids[2]}) was moved here from"
        in (new_notice["content"])
    )
    [old_notice] = bot_messages(api, realm.hamlet, stream_id, "old")
    assert old_notice["content"].startswith("A message was moved from this topic to #**moves>one** by")
    edit_ok(
        api,
        realm.hamlet,
        ids[0],
        topic="two",
        propagate_mode="change_later",
        send_notification_to_old_thread=True,
    )
    notices = [m["content"] for m in bot_messages(api, realm.hamlet, stream_id, "two")]
    # The old topic's own notice moved along with the rest, which was all of it.
    assert notices[0].startswith("A message was moved from this topic")
    assert notices[1].startswith("This topic was moved here from #**moves>old** by")
    # Defaults: no notice to the old topic, one to the new.
    edit_ok(api, realm.hamlet, ids[0], topic="three", propagate_mode="change_all")
    assert len(bot_messages(api, realm.hamlet, stream_id, "three")) == 3
    assert bot_messages(api, realm.hamlet, stream_id, "two") == []


def test_empty_topic_names(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "moves")
    message_id = send_stream(api, realm.hamlet, "moves", "old", "x")
    events.clear()
    edit_ok(api, realm.hamlet, message_id, topic="general chat", send_notification_to_new_thread=False)
    assert fetch_one(api, realm.hamlet, message_id)["subject"] == "general chat"
    message = assert_ok_message(api, realm, message_id, allow_empty_topic_name=True)
    assert message["subject"] == ""
    event, _ = one_update(events)
    assert event["subject"] == ""
    plain = ClientDescriptor(queue_id="q", user_id=realm.hamlet.id, realm_id=realm.id)
    capable = ClientDescriptor(
        queue_id="r",
        user_id=realm.hamlet.id,
        realm_id=realm.id,
        client_capabilities={"empty_topic_name": True},
    )
    assert (event_for_client(plain, {**event, "flags": []}) or {})["subject"] == "general chat"
    assert (event_for_client(capable, {**event, "flags": []}) or {})["subject"] == ""

    edit_ok(api, realm.hamlet, message_id, topic="named", send_notification_to_new_thread=False)
    set_stream(services, stream_id, topics_policy="disable_empty_topic")
    for name in ("", "(no topic)", "general chat"):
        assert_json_error(
            patch(api, realm.hamlet, message_id, topic=name),
            "Sending messages to the general chat is not allowed in this channel.",
        )
    set_stream(services, stream_id, topics_policy="empty_topic_only")
    assert_json_error(
        patch(api, realm.hamlet, message_id, topic="other"),
        "Only the general chat topic is allowed in this channel.",
    )
    edit_ok(api, realm.hamlet, message_id, topic="(no topic)", send_notification_to_new_thread=False)


def assert_ok_message(api: Api, realm: SeededRealm, message_id: int, **params: Any) -> dict[str, Any]:
    from tests.helpers import assert_json_success

    message: dict[str, Any] = assert_json_success(api.get(realm.hamlet, f"messages/{message_id}", params))[
        "message"
    ]
    return message


def test_topic_move_permissions(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id, ids = three_in_topic(api, realm)
    groups = system_groups(services, realm)
    # Anyone may move (the default), not only the sender.
    edit_ok(api, realm.othello, ids[0], topic="by othello", send_notification_to_new_thread=False)
    set_realm(services, realm, can_move_messages_between_topics_group=groups["role:moderators"])
    assert_json_error(
        patch(api, realm.othello, ids[0], topic="again"),
        "You don't have permission to edit this message",
        code="BAD_REQUEST",
    )
    assert_json_error(
        patch(api, realm.hamlet, ids[0], topic="again"), "You don't have permission to edit this message"
    )
    edit_ok(api, realm.shiva, ids[0], topic="by shiva", send_notification_to_new_thread=False)
    # The channel's own setting grants it too.
    set_stream(services, stream_id, can_move_messages_within_channel_group=groups["role:members"])
    edit_ok(api, realm.othello, ids[0], topic="channel grant", send_notification_to_new_thread=False)


def test_can_create_topic_group_applies_to_moves(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id, ids = three_in_topic(api, realm)
    send_stream(api, realm.hamlet, "moves", "existing", "x")
    groups = system_groups(services, realm)
    set_stream(services, stream_id, can_create_topic_group=groups["role:moderators"])
    assert_json_error(
        patch(api, realm.othello, ids[0], topic="brand new"),
        "You do not have permission to create new topics in this channel.",
    )
    edit_ok(api, realm.othello, ids[0], topic="existing", send_notification_to_new_thread=False)


def test_time_limit_change_all(api: Api, realm: SeededRealm, services: Services) -> None:
    _, ids = three_in_topic(api, realm)
    set_realm(services, realm, move_messages_within_stream_limit_seconds=3600)
    age_messages(services, ids[:2], 7200)
    body = assert_json_error(
        patch(api, realm.othello, ids[2], topic="new", propagate_mode="change_all"),
        "You only have permission to move the 1/3 most recent messages in this topic.",
        code="MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
    )
    assert body == {
        "result": "error",
        "msg": "You only have permission to move the 1/3 most recent messages in this topic.",
        "code": "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
        "first_message_id_allowed_to_move": ids[2],
        "total_messages_in_topic": 3,
        "total_messages_allowed_to_move": 1,
    }
    assert topic_of(api, realm, ids[2]) == "old"
    # Following the hint works.
    edit_ok(api, realm.othello, ids[2], topic="new", propagate_mode="change_later")
    # A message past the limit cannot be moved alone either; none is allowed in this topic.
    body = assert_json_error(
        patch(api, realm.othello, ids[0], topic="newer"),
        "You only have permission to move the 0/2 most recent messages in this topic.",
        code="MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
    )
    assert body["first_message_id_allowed_to_move"] is None
    # Moderators and administrators are exempt.
    for user in (realm.shiva, realm.iago):
        edit_ok(api, user, ids[0], topic=f"by {user.full_name}", propagate_mode="change_all")


def test_time_limit_does_not_count_inaccessible_history(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    stream_id = create_channel(
        api, realm.hamlet, "secret", [realm.hamlet], invite_only=True, history_public_to_subscribers=False
    )
    old_ids = [send_stream(api, realm.hamlet, "secret", "t", f"before {i}") for i in range(2)]
    age_messages(services, old_ids, 7200)
    assert_json_success_subscribe(api, realm, "secret")
    new_ids = [send_stream(api, realm.othello, "secret", "t", f"after {i}") for i in range(2)]
    set_realm(services, realm, move_messages_within_stream_limit_seconds=3600)
    edit_ok(api, realm.othello, new_ids[0], topic="moved", propagate_mode="change_all")
    # Only what othello could see moved; the older messages stayed.
    for message_id in old_ids:
        assert topic_of(api, realm, message_id) == "t"
    for message_id in new_ids:
        assert topic_of(api, realm, message_id) == "moved"
    notices = bot_messages(api, realm.hamlet, stream_id, "moved")
    assert notices[0]["content"].startswith("This topic was moved here from")


def assert_json_success_subscribe(api: Api, realm: SeededRealm, name: str) -> None:
    from tests.helpers import assert_json_success

    data = {"subscriptions": [{"name": name}], "principals": [realm.othello.id]}
    assert_json_success(api.post(realm.hamlet, "users/me/subscriptions", data))


def test_move_between_channels(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    source = create_channel(api, realm.hamlet, "source", [realm.hamlet, realm.othello, realm.polonius])
    target = create_channel(api, realm.hamlet, "target", [realm.hamlet, realm.cordelia])
    ids = [send_stream(api, realm.hamlet, "source", "t", f"m{i}") for i in range(2)]
    events.clear()
    edit_ok(
        api,
        realm.hamlet,
        ids[0],
        stream_id=target,
        propagate_mode="change_all",
        send_notification_to_old_thread=True,
    )
    for message_id in ids:
        message = fetch_one(api, realm.hamlet, message_id)
        assert (message["stream_id"], message["display_recipient"], message["subject"]) == (
            target,
            "target",
            "t",
        )
        [entry] = message["edit_history"]
        assert (entry["prev_stream"], entry["stream"]) == (source, target)
        assert "prev_topic" not in entry
    event, users = one_update(events)
    assert (event["stream_id"], event["new_stream_id"], event["orig_subject"]) == (source, target, "t")
    assert "subject" not in event
    assert event["propagate_mode"] == "change_all"
    # The guest could read the old channel only by subscription: the messages are gone for them.
    [(deleted, deleted_for)] = events.of_type("delete_message")
    assert deleted_for == [realm.polonius.id]
    assert deleted == {
        "type": "delete_message",
        "message_type": "stream",
        "message_ids": sorted(ids),
        "stream_id": source,
        "topic": "t",
    }
    assert realm.polonius.id not in users
    assert realm.othello.id in users and realm.cordelia.id in users
    assert flags_of(services, realm.polonius, ids[0]) is None
    # Othello is not in the public target channel: he loses his copy but may still read it.
    assert flags_of(services, realm.othello, ids[0]) is None
    assert fetch_one(api, realm.othello, ids[0])["stream_id"] == target
    mention = f"@_**{realm.hamlet.full_name}|{realm.hamlet.id}**"
    assert bot_messages(api, realm.hamlet, target, "t")[0]["content"] == (
        f"This topic was moved here from #**source>t** by {mention}."
    )
    assert bot_messages(api, realm.hamlet, source, "t")[0]["content"] == (
        f"This topic was moved to #**target>t** by {mention}."
    )


def test_move_to_protected_private_channel(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    create_channel(api, realm.hamlet, "public", [realm.hamlet, realm.othello])
    target = create_channel(
        api,
        realm.hamlet,
        "private",
        [realm.hamlet, realm.cordelia],
        invite_only=True,
        history_public_to_subscribers=False,
    )
    message_id = send_stream(api, realm.hamlet, "public", "t", "secret soon")
    events.clear()
    edit_ok(
        api, realm.hamlet, message_id, stream_id=target, topic="moved", send_notification_to_new_thread=False
    )
    # Cordelia needs a copy to read it in a channel with protected history.
    assert flags_of(services, realm.cordelia, message_id) == int(MessageFlag.READ)
    assert flags_of(services, realm.othello, message_id) is None
    [(_, deleted_for)] = events.of_type("delete_message")
    assert deleted_for == [realm.othello.id]
    assert_json_error(api.get(realm.othello, f"messages/{message_id}"), "Invalid message(s)")
    event, users = one_update(events)
    assert realm.cordelia.id in users and realm.othello.id not in users
    assert (event["orig_subject"], event["subject"], event["new_stream_id"]) == ("t", "moved", target)


def test_channel_move_permissions(api: Api, realm: SeededRealm, services: Services) -> None:
    source = create_channel(api, realm.hamlet, "source", [realm.hamlet, realm.othello, realm.polonius])
    target = create_channel(api, realm.hamlet, "target", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "source", "t", "x")
    groups = system_groups(services, realm)
    # Guests are outside the default role:members.
    assert_json_error(patch(api, realm.polonius, message_id, stream_id=target), "Invalid channel ID")
    set_realm(services, realm, can_move_messages_between_channels_group=groups["role:administrators"])
    assert_json_error(
        patch(api, realm.othello, message_id, stream_id=target),
        "You don't have permission to move this message",
    )
    set_stream(services, source, can_move_messages_out_of_channel_group=groups["role:members"])
    set_stream(services, target, can_send_message_group=groups["role:administrators"])
    assert_json_error(
        patch(api, realm.othello, message_id, stream_id=target),
        "You do not have permission to post in this channel.",
    )
    set_stream(services, target, can_send_message_group=groups["role:everyone"])
    edit_ok(api, realm.othello, message_id, stream_id=target, send_notification_to_new_thread=False)
    # The channel time limit.
    set_realm(services, realm, move_messages_between_streams_limit_seconds=60)
    age_messages(services, [message_id], 3600)
    set_stream(services, target, can_move_messages_out_of_channel_group=groups["role:members"])
    body = assert_json_error(
        patch(api, realm.othello, message_id, stream_id=source),
        "You only have permission to move the 0/1 most recent messages in this topic.",
        code="MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
    )
    assert body["first_message_id_allowed_to_move"] is None
    edit_ok(api, realm.iago, message_id, stream_id=source)


def test_fetch_by_new_topic(api: Api, realm: SeededRealm) -> None:
    stream_id, ids = three_in_topic(api, realm)
    edit_ok(
        api,
        realm.hamlet,
        ids[0],
        topic="found",
        propagate_mode="change_all",
        send_notification_to_new_thread=False,
    )
    narrow = [{"operator": "channel", "operand": stream_id}, {"operator": "topic", "operand": "found"}]
    assert [m["id"] for m in fetch(api, realm.othello, narrow=narrow)["messages"]] == ids
    subscribe(api, realm.cordelia, "moves")
