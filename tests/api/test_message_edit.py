"""PATCH /messages/{id}: content edits, their permissions, limits, mentions and events."""

from __future__ import annotations

import hashlib

import pytest

from palaver.models.messages import MessageFlag
from palaver.services import Services
from tests.api.edit_helpers import age_messages, edit_ok, one_update, patch, update_flags_by_user
from tests.api.test_messages_send import (
    add_users,
    create_channel,
    fetch_one,
    flags_of,
    send_dm,
    send_stream,
    set_realm,
    subscribe,
    system_groups,
)
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error


def test_edit_content(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "edits", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "edits", "t", "first **draft**")
    events.clear()
    body = edit_ok(api, realm.hamlet, message_id, content="second *draft*")
    assert body["detached_uploads"] == []
    message = fetch_one(api, realm.othello, message_id)
    assert message["content"] == "<p>second <em>draft</em></p>"
    assert "last_edit_timestamp" in message
    assert "last_moved_timestamp" not in message
    [entry] = message["edit_history"]
    assert entry["prev_content"] == "first **draft**"
    assert entry["prev_rendered_content"] == "<p>first <strong>draft</strong></p>"
    assert entry["user_id"] == realm.hamlet.id

    event, users = one_update(events)
    assert sorted(users) == sorted([realm.hamlet.id, realm.othello.id])
    assert event["orig_content"] == "first **draft**"
    assert event["content"] == "second *draft*"
    assert event["rendered_content"] == "<p>second <em>draft</em></p>"
    assert event["orig_rendered_content"] == "<p>first <strong>draft</strong></p>"
    assert event["message_ids"] == [message_id]
    assert event["user_id"] == realm.hamlet.id
    assert event["rendering_only"] is False
    assert event["is_me_message"] is False
    assert event["stream_id"] == stream_id
    assert event["stream_name"] == "edits"
    assert "propagate_mode" not in event
    assert "subject" not in event and "orig_subject" not in event


def test_edit_direct_message(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    message_id = send_dm(api, realm.hamlet, [realm.othello], "hi")
    events.clear()
    edit_ok(api, realm.hamlet, message_id, content="/me waves")
    event, users = one_update(events)
    assert sorted(users) == sorted([realm.hamlet.id, realm.othello.id])
    assert event["is_me_message"] is True
    assert "stream_id" not in event
    assert_json_error(patch(api, realm.hamlet, message_id, topic="x"), "Direct messages cannot have topics.")
    assert_json_error(
        patch(api, realm.hamlet, message_id, stream_id=1), "Direct messages cannot be moved to channels."
    )
    assert_json_error(patch(api, realm.cordelia, message_id, content="x"), "Invalid message(s)")


def test_only_the_sender_edits_content(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "edits", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "edits", "t", "mine")
    for user in (realm.othello, realm.iago, realm.desdemona):
        assert_json_error(
            patch(api, user, message_id, content="theirs"),
            "You don't have permission to edit this message",
            code="BAD_REQUEST",
        )


def test_allow_message_editing_off(api: Api, realm: SeededRealm, services: Services) -> None:
    create_channel(api, realm.hamlet, "edits")
    message_id = send_stream(api, realm.hamlet, "edits", "t", "mine")
    set_realm(services, realm, allow_message_editing=False)
    assert_json_error(
        patch(api, realm.hamlet, message_id, content="x"), "Your organization has turned off message editing"
    )


def test_content_edit_time_limit(api: Api, realm: SeededRealm, services: Services) -> None:
    create_channel(api, realm.hamlet, "edits")
    message_id = send_stream(api, realm.hamlet, "edits", "t", "mine")
    set_realm(services, realm, message_content_edit_limit_seconds=60)
    age_messages(services, [message_id], 70)  # inside the grace period
    edit_ok(api, realm.hamlet, message_id, content="ok")
    age_messages(services, [message_id], 100)
    assert_json_error(
        patch(api, realm.hamlet, message_id, content="late"),
        "The time limit for editing this message has passed",
    )
    # Administrators have no exemption for content.
    set_realm(services, realm, message_content_edit_limit_seconds=None)
    edit_ok(api, realm.hamlet, message_id, content="no limit")


def test_request_errors(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.hamlet, "edits")
    other = create_channel(api, realm.hamlet, "other")
    message_id = send_stream(api, realm.hamlet, "edits", "t", "mine")
    assert_json_error(patch(api, realm.hamlet, message_id), "Nothing to change")
    assert_json_error(patch(api, realm.hamlet, message_id, topic="t"), "Nothing to change")
    assert_json_error(patch(api, realm.hamlet, message_id, stream_id=stream_id), "Nothing to change")
    assert_json_error(
        patch(api, realm.hamlet, message_id, content="x", stream_id=other),
        "Cannot change message content while changing channel",
    )
    assert_json_error(
        patch(api, realm.hamlet, message_id, content="x", propagate_mode="change_all"),
        "Invalid propagate_mode without topic edit",
    )
    assert_json_error(
        patch(api, realm.hamlet, message_id, propagate_mode="sideways"), "Invalid propagate_mode"
    )
    assert_json_error(patch(api, realm.hamlet, 2**40, content="x"), "Invalid message(s)")
    assert_json_error(patch(api, realm.hamlet, 999999, content="x"), "Invalid message(s)")
    assert_json_error(patch(api, realm.hamlet, message_id, stream_id=2**40), "Invalid channel ID")
    assert_json_error(patch(api, realm.hamlet, message_id, stream_id=999999), "Invalid channel ID")
    assert_json_error(
        patch(api, realm.hamlet, message_id, topic="a\x07b"), "Invalid character in topic, at position 2!"
    )


def test_prev_content_sha256(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "edits")
    message_id = send_stream(api, realm.hamlet, "edits", "t", "original")
    good = hashlib.sha256(b"original").hexdigest()
    assert_json_error(
        patch(api, realm.hamlet, message_id, content="new", prev_content_sha256="0" * 64),
        "'prev_content_sha256' value does not match the expected value.",
        code="EXPECTATION_MISMATCH",
    )
    edit_ok(api, realm.hamlet, message_id, content="new", prev_content_sha256=good)
    # The hash now has to match the new content.
    assert_json_error(
        patch(api, realm.hamlet, message_id, content="newer", prev_content_sha256=good),
        "'prev_content_sha256' value does not match the expected value.",
    )


def test_empty_content_becomes_deleted(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "edits")
    message_id = send_stream(api, realm.hamlet, "edits", "t", "oops")
    edit_ok(api, realm.hamlet, message_id, content="   ")
    assert fetch_one(api, realm.hamlet, message_id)["content"] == "<p>(deleted)</p>"


def test_mention_flags_follow_the_content(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    create_channel(api, realm.hamlet, "edits", [realm.hamlet, realm.othello, realm.cordelia])
    message_id = send_stream(api, realm.hamlet, "edits", "t", f"hi @**{realm.othello.full_name}**")
    assert (flags_of(services, realm.othello, message_id) or 0) & MessageFlag.MENTIONED
    events.clear()
    edit_ok(api, realm.hamlet, message_id, content=f"hi @**{realm.cordelia.full_name}**")
    assert not (flags_of(services, realm.othello, message_id) or 0) & MessageFlag.MENTIONED
    assert (flags_of(services, realm.cordelia, message_id) or 0) & MessageFlag.MENTIONED
    flags = update_flags_by_user(events)
    assert "mentioned" in flags[realm.cordelia.id]
    assert "mentioned" not in flags[realm.othello.id]
    assert "read" in flags[realm.hamlet.id]

    edit_ok(api, realm.hamlet, message_id, content="@**all** look")
    for user in (realm.othello, realm.cordelia):
        assert (flags_of(services, user, message_id) or 0) & MessageFlag.STREAM_WILDCARD_MENTIONED
    edit_ok(api, realm.hamlet, message_id, content="@**topic** look")
    assert (flags_of(services, realm.hamlet, message_id) or 0) & MessageFlag.TOPIC_WILDCARD_MENTIONED
    assert not (flags_of(services, realm.othello, message_id) or 0) & MessageFlag.TOPIC_WILDCARD_MENTIONED


def test_wildcard_mention_rules_on_edit(api: Api, realm: SeededRealm, services: Services) -> None:
    extra = add_users(services, realm, 16)
    create_channel(api, realm.hamlet, "big", [realm.hamlet, *extra])
    message_id = send_stream(api, realm.hamlet, "big", "t", "hello")
    assert_json_error(
        patch(api, realm.hamlet, message_id, content="@**all** hello"),
        "You do not have permission to use channel wildcard mentions in this channel.",
        code="STREAM_WILDCARD_MENTION_NOT_ALLOWED",
    )
    for user in extra:
        send_stream(api, user, "big", "t", "me too")
    assert_json_error(
        patch(api, realm.hamlet, message_id, content="@**topic** hello"),
        "You do not have permission to use topic wildcard mentions in this topic.",
        code="TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
    )
    groups = system_groups(services, realm)
    set_realm(services, realm, can_mention_many_users_group=groups["role:members"])
    edit_ok(api, realm.hamlet, message_id, content="@**all** hello")


def test_historical_subscriber_hears_of_edit(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "edits")
    message_id = send_stream(api, realm.hamlet, "edits", "t", "before you came")
    subscribe(api, realm.cordelia, "edits")
    events.clear()
    edit_ok(api, realm.hamlet, message_id, content="edited")
    flags = update_flags_by_user(events)
    assert flags[realm.cordelia.id] == ["read"]
    # Users who cannot read the channel hear nothing.
    assert realm.polonius.id not in flags


@pytest.mark.parametrize("alias", ["topic", "subject"])
def test_topic_and_content_together(api: Api, realm: SeededRealm, events: EventRecorder, alias: str) -> None:
    create_channel(api, realm.hamlet, "edits")
    message_id = send_stream(api, realm.hamlet, "edits", "old", "text")
    events.clear()
    edit_ok(api, realm.hamlet, message_id, content="new text", **{alias: "new"})
    message = fetch_one(api, realm.hamlet, message_id)
    assert (message["subject"], message["content"]) == ("new", "<p>new text</p>")
    [entry] = message["edit_history"]
    assert (entry["prev_topic"], entry["topic"], entry["prev_content"]) == ("old", "new", "text")
    event, _ = one_update(events)
    assert (event["orig_subject"], event["subject"], event["content"]) == ("old", "new", "new text")


def test_alert_words_follow_the_content(api: Api, realm: SeededRealm, services: Services) -> None:
    from tests.helpers import assert_json_success

    assert_json_success(api.post(realm.othello, "users/me/alert_words", {"alert_words": ["lunch"]}))
    create_channel(api, realm.hamlet, "edits", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "edits", "t", "hello")
    edit_ok(api, realm.hamlet, message_id, content="lunch time")
    assert (flags_of(services, realm.othello, message_id) or 0) & MessageFlag.HAS_ALERT_WORD
    edit_ok(api, realm.hamlet, message_id, content="never mind")
    assert not (flags_of(services, realm.othello, message_id) or 0) & MessageFlag.HAS_ALERT_WORD
