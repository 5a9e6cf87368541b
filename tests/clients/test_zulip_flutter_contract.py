"""Zulip's mobile app (zulip-flutter) can decode every answer and event Palaver gives it.

Each request is the one the app makes (``lib/api/route/*.dart``: path, parameters, the
register options and capabilities), and each answer goes through the description of the
class the app decodes it with (``tests/clients/zulip_flutter.py``, from the app at
``APP_COMMIT``): a missing or null key the app requires, a value of the wrong kind, or an
enum value it does not know would make the app throw where this test fails.
"""

from __future__ import annotations

import json
from typing import Any

from palaver.models import Role
from tests.api.test_messages_send import create_channel
from tests.clients.zulip_flutter import (
    APP_COMMIT,
    CLASSES,
    EVENTS,
    REGISTER_PARAMS,
    check_class,
    event_class,
    problems,
)
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.helpers import TestUser as User
from tests.images import PNG


def decoded(answer: Any, name: str) -> dict[str, Any]:
    """The answer's body, which must decode as the app's ``name``."""
    body = assert_json_success(answer)
    found = check_class(body, name)
    assert not found, f"zulip-flutter ({APP_COMMIT[:12]}) cannot decode {name}:\n" + "\n".join(found)
    return body


def test_the_description_covers_what_the_app_decodes() -> None:
    """The data names the app's commit, its register decoder and its event classes."""
    assert len(APP_COMMIT) == 40
    assert "InitialSnapshot" in CLASSES
    assert all(name in CLASSES or name.startswith("RealmUserRemove") for name in EVENTS.values())
    # The key whose absence kept the app from loading any Palaver account.
    field = CLASSES["InitialSnapshot"]["fields"]["realm_wildcard_mention_policy"]
    assert (field["kind"], field["nullable"]) == ("enum", False)


def test_register_as_the_app_does(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.iago, "general", [realm.iago, realm.hamlet])
    assert_json_success(api.post(realm.hamlet, "saved_snippets", {"title": "Hi", "content": "Hello"}))
    assert_json_success(api.post(realm.hamlet, "register_client_device"))
    state = decoded(api.post(realm.hamlet, "register", REGISTER_PARAMS), "InitialSnapshot")
    assert state["realm_wildcard_mention_policy"] in (1, 2, 3, 5, 6, 7)
    # Queues are collected after the server's own idle timeout; the app re-registers then.
    assert state["ignored_parameters_unsupported"] == ["idle_queue_timeout"]
    # As an administrator and a guest too (what they may see differs).
    decoded(api.post(realm.iago, "register", REGISTER_PARAMS), "InitialSnapshot")
    decoded(api.post(realm.polonius, "register", REGISTER_PARAMS), "InitialSnapshot")


def test_server_settings_and_own_user(api: Api, realm: SeededRealm) -> None:
    decoded(api.get(None, "server_settings"), "GetServerSettingsResult")
    decoded(api.get(realm.hamlet, "users/me"), "GetOwnUserResult")


def _message_routes(api: Api, realm: SeededRealm) -> tuple[int, int]:
    stream_id = create_channel(api, realm.iago, "general", [realm.iago, realm.hamlet, realm.othello])
    sent = decoded(
        api.post(
            realm.othello,
            "messages",
            {
                "type": "stream",
                "to": json.dumps(stream_id),
                "topic": "greetings",
                "content": "hi @**King Hamlet**",
            },
        ),
        "SendMessageResult",
    )
    decoded(
        api.post(
            realm.hamlet,
            "messages",
            {"type": "direct", "to": json.dumps([realm.othello.id]), "content": "hello"},
        ),
        "SendMessageResult",
    )
    # The empty topic, which the app shows under the realm's display name.
    decoded(
        api.post(
            realm.hamlet,
            "messages",
            {"type": "stream", "to": json.dumps(stream_id), "topic": "", "content": "x"},
        ),
        "SendMessageResult",
    )
    return stream_id, int(sent["id"])


def test_messages_as_the_app_reads_them(api: Api, realm: SeededRealm) -> None:
    stream_id, message_id = _message_routes(api, realm)
    assert_json_success(api.post(realm.hamlet, f"messages/{message_id}/reactions", {"emoji_name": "smile"}))
    upload = decoded(
        api.post(realm.hamlet, "user_uploads", files={"file": ("dot.png", PNG, "image/png")}),
        "UploadFileResult",
    )
    path = upload["url"].removeprefix("/user_uploads/")
    decoded(api.get(realm.hamlet, f"user_uploads/{path}"), "GetFileTemporaryUrlResult")
    for narrow in (
        [],
        [{"operator": "channel", "operand": stream_id}],
        [{"operator": "is", "operand": "dm"}],
    ):
        params = {
            "narrow": json.dumps(narrow),
            "anchor": "newest",
            "num_before": "100",
            "num_after": "0",
            "apply_markdown": "true",
            "allow_empty_topic_name": "true",
            "client_gravatar": "false",
        }
        body = decoded(api.get(realm.hamlet, "messages", params), "GetMessagesResult")
        assert body["messages"]
    decoded(
        api.get(
            realm.hamlet,
            f"messages/{message_id}",
            {"apply_markdown": "true", "allow_empty_topic_name": "true"},
        ),
        "GetMessageResult",
    )
    decoded(
        api.patch(realm.othello, f"messages/{message_id}", {"content": "edited"}),
        "UpdateMessageResult",
    )
    decoded(
        api.post(
            realm.hamlet,
            "messages/flags",
            {"messages": json.dumps([message_id]), "op": "add", "flag": "read"},
        ),
        "UpdateMessageFlagsResult",
    )
    decoded(
        api.post(
            realm.hamlet,
            "messages/flags/narrow",
            {
                "anchor": "oldest",
                "include_anchor": "true",
                "num_before": "0",
                "num_after": "1000",
                "narrow": "[]",
                "op": "add",
                "flag": "read",
            },
        ),
        "UpdateMessageFlagsForNarrowResult",
    )
    decoded(api.get(realm.hamlet, f"messages/{message_id}/read_receipts"), "GetReadReceiptsResult")
    decoded(
        api.get(realm.hamlet, f"users/me/{stream_id}/topics", {"allow_empty_topic_name": "true"}),
        "GetChannelTopicsResult",
    )
    decoded(
        api.post(
            realm.hamlet,
            "users/me/presence",
            {
                "status": "active",
                "ping_only": "false",
                "new_user_input": "true",
                "last_update_id": "-1",
                "slim_presence": "true",
            },
        ),
        "UpdatePresenceResult",
    )
    decoded(
        api.post(realm.hamlet, "saved_snippets", {"title": "t", "content": "c"}), "CreateSavedSnippetResult"
    )
    decoded(api.post(realm.hamlet, "register_client_device"), "RegisterClientDeviceResult")
    # The report form: the types /register offers, then the report (the app reads no result).
    moderation = create_channel(api, realm.iago, "moderation", [realm.iago], invite_only=True)
    assert_json_success(api.patch(realm.iago, "realm", {"moderation_request_channel_id": str(moderation)}))
    state = decoded(api.post(realm.hamlet, "register", REGISTER_PARAMS), "InitialSnapshot")
    offered = [t["key"] for t in state["server_report_message_types"]]
    assert "other" in offered and state["realm_moderation_request_channel_id"] == moderation
    report = {"report_type": offered[0], "description": "as the app sends it"}
    assert_json_success(api.post(realm.hamlet, f"messages/{message_id}/report", report))


def _poll(api: Api, user: User, queue_id: str) -> list[dict[str, Any]]:
    answer = api.get(user, "events", {"queue_id": queue_id, "last_event_id": "-1", "dont_block": "true"})
    body = decoded(answer, "GetEventsResult")
    events: list[dict[str, Any]] = body["events"]
    return events


def _cause_events(api: Api, realm: SeededRealm) -> None:
    iago, hamlet, othello = realm.iago, realm.hamlet, realm.othello
    stream_id, message_id = _message_routes(api, realm)
    ok = assert_json_success
    ok(api.patch(othello, f"messages/{message_id}", {"content": "changed"}))
    ok(api.patch(iago, f"messages/{message_id}", {"topic": "moved", "propagate_mode": "change_all"}))
    ok(api.post(othello, f"messages/{message_id}/reactions", {"emoji_name": "smile"}))
    ok(api.delete(othello, f"messages/{message_id}/reactions", {"emoji_name": "smile"}))
    ok(
        api.post(
            hamlet, "messages/flags", {"messages": json.dumps([message_id]), "op": "add", "flag": "starred"}
        )
    )
    ok(
        api.post(
            hamlet, "messages/flags", {"messages": json.dumps([message_id]), "op": "remove", "flag": "read"}
        )
    )
    ok(
        api.post(
            othello,
            "typing",
            {"op": "start", "type": "stream", "stream_id": str(stream_id), "topic": "moved"},
        )
    )
    ok(api.post(othello, "typing", {"op": "start", "type": "direct", "to": json.dumps([hamlet.id])}))
    ok(api.post(othello, "users/me/presence", {"status": "active"}))
    ok(api.post(othello, "users/me/status", {"status_text": "busy", "emoji_name": "car"}))
    ok(api.post(hamlet, "users/me/alert_words", {"alert_words": json.dumps(["ping"])}))
    ok(api.patch(hamlet, "settings", {"twenty_four_hour_time": "true"}))
    ok(api.patch(hamlet, "settings", {"emojiset": "text"}))
    ok(api.post(hamlet, f"users/me/muted_users/{realm.cordelia.id}"))
    ok(
        api.post(
            hamlet, "user_topics", {"stream_id": str(stream_id), "topic": "moved", "visibility_policy": "1"}
        )
    )
    ok(
        api.post(
            hamlet,
            "users/me/subscriptions/properties",
            {
                "subscription_data": json.dumps(
                    [
                        {"stream_id": stream_id, "property": "color", "value": "#aabbcc"},
                        {"stream_id": stream_id, "property": "is_muted", "value": True},
                    ]
                )
            },
        )
    )
    other = create_channel(api, iago, "second", [iago])
    ok(
        api.post(
            iago,
            "users/me/subscriptions",
            {"subscriptions": json.dumps([{"name": "second"}]), "principals": json.dumps([hamlet.id])},
        )
    )
    ok(
        api.post(
            iago,
            "users/me/subscriptions",
            {"subscriptions": json.dumps([{"name": "second"}]), "principals": json.dumps([othello.id])},
        )
    )
    ok(
        api.delete(
            iago,
            "users/me/subscriptions",
            {"subscriptions": json.dumps(["second"]), "principals": json.dumps([othello.id])},
        )
    )
    ok(api.patch(iago, f"streams/{other}", {"description": "about"}))
    ok(
        api.delete(
            iago,
            "users/me/subscriptions",
            {"subscriptions": json.dumps(["second"]), "principals": json.dumps([hamlet.id])},
        )
    )
    ok(api.delete(iago, f"streams/{other}"))
    group = ok(
        api.post(
            iago,
            "user_groups/create",
            {"name": "team", "description": "d", "members": json.dumps([hamlet.id])},
        )
    )["group_id"]
    sub = ok(
        api.post(
            iago,
            "user_groups/create",
            {"name": "sub", "description": "d", "members": json.dumps([othello.id])},
        )
    )["group_id"]
    ok(api.patch(iago, f"user_groups/{group}", {"description": "new"}))
    ok(api.post(iago, f"user_groups/{group}/members", {"add": json.dumps([othello.id])}))
    ok(api.post(iago, f"user_groups/{group}/members", {"delete": json.dumps([othello.id])}))
    ok(api.post(iago, f"user_groups/{group}/subgroups", {"add": json.dumps([sub])}))
    ok(api.post(iago, f"user_groups/{group}/subgroups", {"delete": json.dumps([sub])}))
    ok(api.post(iago, f"user_groups/{sub}/deactivate"))
    snippet = ok(api.post(hamlet, "saved_snippets", {"title": "t", "content": "c"}))["saved_snippet_id"]
    ok(api.patch(hamlet, f"saved_snippets/{snippet}", {"title": "t2"}))
    ok(api.delete(hamlet, f"saved_snippets/{snippet}"))
    ok(api.post(iago, "realm/emoji/tick", files={"file": ("tick.png", PNG, "image/png")}))
    ok(api.delete(iago, "realm/emoji/tick"))
    ok(api.post(iago, "realm/profile_fields", {"name": "Phone", "field_type": "1"}))
    folder = ok(api.post(iago, "channel_folders/create", {"name": "Work"}))["channel_folder_id"]
    ok(api.patch(iago, f"channel_folders/{folder}", {"description": "work things"}))
    home = ok(api.post(iago, "channel_folders/create", {"name": "Home"}))["channel_folder_id"]
    ok(api.patch(iago, "channel_folders", {"order": json.dumps([home, folder])}))
    device = ok(api.post(hamlet, "register_client_device"))["device_id"]
    ok(api.post(hamlet, "remove_client_device", {"device_id": str(device)}))
    ok(api.patch(iago, f"users/{othello.id}", {"full_name": "Othello Renamed"}))
    ok(api.patch(iago, f"users/{othello.id}", {"role": str(Role.MODERATOR)}))
    ok(
        api.post(
            iago, "users", {"email": "newbie@example.com", "password": "secret-pass", "full_name": "Newbie"}
        )
    )
    poll = ok(
        api.post(
            hamlet,
            "messages",
            {
                "type": "stream",
                "to": json.dumps(stream_id),
                "topic": "poll",
                "content": "/poll Lunch?\nPizza",
            },
        )
    )["id"]
    ok(
        api.post(
            hamlet,
            "submessage",
            {
                "message_id": str(poll),
                "msg_type": "widget",
                "content": json.dumps({"type": "vote", "key": "canned,0", "vote": 1}),
            },
        )
    )
    ok(api.delete(iago, f"messages/{message_id}"))
    ok(api.delete(iago, f"users/{othello.id}"))


def test_every_event_the_app_parses(api: Api, realm: SeededRealm) -> None:
    queues = {
        user.id: (user, assert_json_success(api.post(user, "register", REGISTER_PARAMS))["queue_id"])
        for user in (realm.hamlet, realm.iago)
    }
    _cause_events(api, realm)
    seen: set[str] = set()
    found: list[str] = []
    for user, queue_id in queues.values():
        for event in _poll(api, user, queue_id):
            name = event_class(event)
            if name is not None:
                seen.add(name)
            found += problems(event, {"kind": "object", "class": "Event", "nullable": False}, "event")
    assert not found, f"zulip-flutter ({APP_COMMIT[:12]}) cannot decode:\n" + "\n".join(found)
    # Events the scenario does not cause: heartbeats (a blocking poll's keep-alive; the
    # long-poll tests cover them), the legacy whole-set emoji event (this client asks for
    # single changes), device updates (push registration),
    # realm_user remove (sent when a user becomes inaccessible to a guest, not on
    # deactivation) and user_group remove (clients with include_deactivated_groups get an
    # update).
    not_caused = {
        "HeartbeatEvent",
        "RealmEmojiUpdateEvent",
        "DeviceUpdateEvent",
        "RealmUserRemoveEvent",
        "UserGroupRemoveEvent",
    }
    missing = set(EVENTS.values()) - seen - not_caused
    assert not missing, f"the scenario never caused these events of the app's: {sorted(missing)}"
