"""Resolving and unresolving topics by renaming them with the check-mark prefix."""

from __future__ import annotations

from palaver.services import Services
from tests.api.edit_helpers import age_messages, bot_messages, edit_ok, one_update, patch
from tests.api.test_messages_send import (
    create_channel,
    fetch_one,
    send_stream,
    set_realm,
    set_stream,
    system_groups,
)
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error


def test_resolve_and_unresolve(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "help", [realm.hamlet, realm.othello])
    ids = [send_stream(api, realm.hamlet, "help", "bug", f"m{i}") for i in range(2)]
    events.clear()
    edit_ok(api, realm.othello, ids[0], topic="✔ bug", propagate_mode="change_all")
    event, _ = one_update(events)
    assert (event["orig_subject"], event["subject"], event["message_ids"]) == ("bug", "✔ bug", ids)
    for message_id in ids:
        message = fetch_one(api, realm.hamlet, message_id)
        assert message["subject"] == "✔ bug"
        # Resolving is not shown as a move.
        assert "last_moved_timestamp" not in message
        assert message["edit_history"][0]["prev_topic"] == "bug"
    mention = f"@_**{realm.othello.full_name}|{realm.othello.id}**"
    # One notice, and no "moved here" notice despite send_notification_to_new_thread's default.
    assert [m["content"] for m in bot_messages(api, realm.hamlet, stream_id, "✔ bug")] == [
        f"{mention} has marked this topic as resolved."
    ]
    edit_ok(api, realm.othello, ids[0], topic="bug", propagate_mode="change_all")
    notices = [m["content"] for m in bot_messages(api, realm.hamlet, stream_id, "bug")]
    assert notices == [
        f"{mention} has marked this topic as resolved.",
        f"{mention} has marked this topic as unresolved.",
    ]


def test_empty_topic_cannot_be_resolved(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "help")
    message_id = send_stream(api, realm.hamlet, "help", "", "no topic")
    for name in ("✔ ", "✔", "✔ general chat", "✔ (no topic)"):
        assert_json_error(
            patch(api, realm.hamlet, message_id, topic=name, propagate_mode="change_all"),
            "General chat cannot be marked as resolved",
        )


def test_resolve_permission(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.hamlet, "help", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "help", "bug", "x")
    groups = system_groups(services, realm)
    set_realm(
        services,
        realm,
        can_resolve_topics_group=groups["role:moderators"],
        can_move_messages_between_topics_group=groups["role:nobody"],
    )
    assert_json_error(
        patch(api, realm.othello, message_id, topic="✔ bug", propagate_mode="change_all"),
        "You don't have permission to resolve topics in this channel.",
    )
    edit_ok(api, realm.shiva, message_id, topic="✔ bug", propagate_mode="change_all")
    # The channel's setting grants it too; renaming otherwise stays forbidden.
    set_stream(services, stream_id, can_resolve_topics_group=groups["role:members"])
    edit_ok(api, realm.othello, message_id, topic="bug", propagate_mode="change_all")
    assert_json_error(
        patch(api, realm.othello, message_id, topic="bugs", propagate_mode="change_all"),
        "You don't have permission to edit this message",
    )


def test_resolving_ignores_the_move_time_limit(api: Api, realm: SeededRealm, services: Services) -> None:
    create_channel(api, realm.hamlet, "help", [realm.hamlet, realm.othello])
    ids = [send_stream(api, realm.hamlet, "help", "bug", f"m{i}") for i in range(2)]
    set_realm(services, realm, move_messages_within_stream_limit_seconds=60)
    age_messages(services, ids, 3600)
    edit_ok(api, realm.othello, ids[1], topic="✔ bug", propagate_mode="change_all")
    assert fetch_one(api, realm.hamlet, ids[0])["subject"] == "✔ bug"
    # A real rename is still limited.
    assert_json_error(
        patch(api, realm.othello, ids[1], topic="other", propagate_mode="change_all"),
        "You only have permission to move the 1/3 most recent messages in this topic.",
        code="MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
    )


def test_renaming_with_the_mark_but_other_text_is_a_move(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "help")
    message_id = send_stream(api, realm.hamlet, "help", "bug", "x")
    edit_ok(api, realm.hamlet, message_id, topic="✔ other", propagate_mode="change_all")
    [notice] = bot_messages(api, realm.hamlet, stream_id, "✔ other")
    assert notice["content"].startswith("This topic was moved here from #**help>bug**")
    assert "last_moved_timestamp" in fetch_one(api, realm.hamlet, message_id)
