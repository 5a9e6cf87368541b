"""Channels: creation, reads, edits, archiving, default channels, and who hears of each."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from palaver.lib.user_groups import get_system_groups
from palaver.models import Realm
from palaver.services import Services
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def create_channel(
    api: Api, user: TestUser, name: str, subscribers: list[int] | None = None, **extra: Any
) -> int:
    data = {"name": name, "subscribers": subscribers if subscribers is not None else [user.id], **extra}
    stream_id: int = assert_json_success(api.post(user, "channels/create", data))["id"]
    return stream_id


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


def ids(realm: SeededRealm, *names: str) -> list[int]:
    return sorted(realm.users[n].id for n in names)


NON_GUESTS = ("desdemona", "iago", "shiva", "hamlet", "othello", "cordelia", "default_bot")


def get_stream(api: Api, user: TestUser, stream_id: int) -> dict[str, Any]:
    stream: dict[str, Any] = assert_json_success(api.get(user, f"streams/{stream_id}"))["stream"]
    return stream


# Creation -------------------------------------------------------------------------------------


def test_create_public_channel(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    stream_id = create_channel(
        api,
        realm.hamlet,
        "Denmark",
        [realm.hamlet.id, realm.othello.id],
        description="A *country*",
        announce=True,
    )
    groups = system_groups(services, realm)
    stream = get_stream(api, realm.cordelia, stream_id)
    assert stream["name"] == "Denmark"
    assert stream["rendered_description"] == "<p>A <em>country</em></p>"
    assert stream["creator_id"] == realm.hamlet.id
    assert (stream["invite_only"], stream["is_web_public"], stream["history_public_to_subscribers"]) == (
        False,
        False,
        True,
    )
    assert stream["subscriber_count"] == 2
    assert stream["stream_post_policy"] == 1 and stream["is_announcement_only"] is False
    assert stream["topics_policy"] == "inherit" and stream["folder_id"] is None
    assert stream["can_send_message_group"] == groups["role:everyone"]
    assert stream["can_remove_subscribers_group"] == groups["role:administrators"]
    assert stream["can_subscribe_group"] == groups["role:nobody"]
    assert stream["can_administer_channel_group"] == {
        "direct_members": [realm.hamlet.id],
        "direct_subgroups": [],
    }

    [(create, users)] = events.of_type("stream", "create")
    assert users == ids(realm, *NON_GUESTS)
    assert create["streams"][0]["stream_id"] == stream_id
    added = {u[0]: e for e, u in events.of_type("subscription", "add")}
    assert set(added) == {realm.hamlet.id, realm.othello.id}
    assert added[realm.othello.id]["subscriptions"][0]["subscribers"] == ids(realm, "hamlet", "othello")
    [(peer, peer_users)] = events.of_type("subscription", "peer_add")
    assert peer == {
        "type": "subscription",
        "op": "peer_add",
        "stream_ids": [stream_id],
        "user_ids": ids(realm, "hamlet", "othello"),
    }
    assert peer_users == ids(realm, "desdemona", "iago", "shiva", "cordelia", "default_bot")


def test_create_private_channel_tells_only_those_who_may_see_it(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    stream_id = create_channel(api, realm.hamlet, "secret", [realm.othello.id], invite_only=True)
    creates = events.of_type("stream", "create")
    told = sorted(u for _, users in creates for u in users)
    assert told == ids(realm, "desdemona", "iago", "hamlet", "othello")
    [(_, peer_users)] = events.of_type("subscription", "peer_add")
    assert peer_users == ids(realm, "desdemona", "iago", "hamlet")
    stream = get_stream(api, realm.othello, stream_id)
    assert stream["history_public_to_subscribers"] is False
    for outsider in (realm.cordelia, realm.shiva, realm.polonius):
        assert_json_error(api.get(outsider, f"streams/{stream_id}"), "Invalid channel ID")
    # Organization administrators see the channel's metadata without being subscribed.
    assert get_stream(api, realm.iago, stream_id)["invite_only"] is True


def test_create_with_group_settings_and_options(api: Api, realm: SeededRealm, services: Services) -> None:
    groups = system_groups(services, realm)
    folder = assert_json_success(api.post(realm.iago, "channel_folders/create", {"name": "Ops"}))
    stream_id = create_channel(
        api,
        realm.desdemona,
        "ops",
        [],
        folder_id=folder["channel_folder_id"],
        message_retention_days="unlimited",
        topics_policy="disable_empty_topic",
        can_send_message_group=groups["role:moderators"],
        can_add_subscribers_group={
            "direct_members": [realm.hamlet.id],
            "direct_subgroups": [groups["role:moderators"]],
        },
        can_resolve_topics_group={"direct_members": [], "direct_subgroups": [groups["role:members"]]},
        is_default_stream=True,
    )
    stream = get_stream(api, realm.hamlet, stream_id)
    assert stream["folder_id"] == folder["channel_folder_id"]
    assert stream["message_retention_days"] == -1
    assert stream["topics_policy"] == "disable_empty_topic"
    assert stream["can_send_message_group"] == groups["role:moderators"]
    assert stream["stream_post_policy"] == 4
    assert stream["can_add_subscribers_group"] == {
        "direct_members": [realm.hamlet.id],
        "direct_subgroups": [groups["role:moderators"]],
    }
    assert stream["can_resolve_topics_group"] == groups["role:members"]
    assert stream["subscriber_count"] == 0
    assert assert_json_success(api.get(realm.hamlet, "default_streams"))["default_streams"] == [stream_id]
    retained = create_channel(api, realm.desdemona, "kept", [], message_retention_days=30)
    assert get_stream(api, realm.hamlet, retained)["message_retention_days"] == 30


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"name": "   "}, "Channel name can't be empty."),
        ({"name": "x" * 61}, "Channel name too long (limit: 60 characters)."),
        ({"name": "a\x01b"}, "Invalid character in channel name, at position 2."),
        ({"name": "ok", "description": "d" * 1025}, "Channel description too long (limit: 1024 characters)."),
        ({"name": "ok", "subscribers": [99999]}, "No such user"),
        ({"name": "ok", "message_retention_days": 30}, "Must be an organization owner"),
        ({"name": "ok", "is_default_stream": True}, "Must be an organization administrator"),
        ({"name": "ok", "folder_id": 99999}, "Invalid channel folder ID"),
        ({"name": "ok", "topics_policy": "disable_empty_topic"}, "Insufficient permission"),
        ({"name": "ok", "is_web_public": True}, "Web-public channels are not enabled."),
        ({"name": "ok", "can_send_message_group": 99999}, "Invalid user group"),
        ({"name": "ok", "can_send_message_group": {"direct_members": [99999]}}, "Invalid user ID: 99999"),
        (
            {"name": "ok", "can_send_message_group": "everyone"},
            'Argument "can_send_message_group" is not valid JSON.',
        ),
    ],
)
def test_create_errors(api: Api, realm: SeededRealm, data: dict[str, Any], msg: str) -> None:
    data = {"subscribers": [], **data}
    assert_json_error(api.post(realm.hamlet, "channels/create", data), msg)


def test_create_errors_needing_setup(api: Api, realm: SeededRealm, services: Services) -> None:
    groups = system_groups(services, realm)
    create_channel(api, realm.hamlet, "Verona")
    response = api.post(realm.othello, "channels/create", {"name": "verona", "subscribers": []})
    assert_json_error(response, "Channel 'verona' already exists", code="CHANNEL_ALREADY_EXISTS")
    response = api.post(realm.polonius, "channels/create", {"name": "guests", "subscribers": []})
    assert_json_error(response, "Insufficient permission")
    assert_json_error(
        api.post(realm.hamlet, "channels/create", {"name": "x"}), "Missing 'subscribers' argument"
    )
    for setting in ("can_subscribe_group", "can_add_subscribers_group", "can_administer_channel_group"):
        response = api.post(
            realm.hamlet,
            "channels/create",
            {"name": "x", "subscribers": [], setting: groups["role:everyone"]},
        )
        assert_json_error(response, f"'{setting}' setting cannot be set to 'role:everyone' group.")
    response = api.post(
        realm.hamlet,
        "channels/create",
        {"name": "x", "subscribers": [], "can_remove_subscribers_group": groups["role:nobody"]},
    )
    assert_json_error(
        response, "'can_remove_subscribers_group' setting cannot be set to 'role:nobody' group."
    )
    response = api.post(
        realm.hamlet,
        "channels/create",
        {"name": "x", "subscribers": [], "can_send_message_group": groups["role:internet"]},
    )
    assert_json_error(response, "'can_send_message_group' setting cannot be set to 'role:internet' group.")
    response = api.post(
        realm.hamlet,
        "channels/create",
        {
            "name": "x",
            "subscribers": [],
            "invite_only": True,
            "can_create_topic_group": groups["role:members"],
        },
    )
    assert_json_error(
        response, "Unsupported parameter combination: can_create_topic_group, history_public_to_subscribers"
    )
    response = api.post(
        realm.iago,
        "channels/create",
        {"name": "x", "subscribers": [], "invite_only": True, "is_default_stream": True},
    )
    assert_json_error(response, "A default channel cannot be private.")
    response = api.post(
        realm.desdemona, "channels/create", {"name": "x", "subscribers": [], "message_retention_days": 0}
    )
    assert_json_error(response, "Bad value for 'message_retention_days': 0")
    response = api.post(
        realm.desdemona, "channels/create", {"name": "x", "subscribers": [], "topics_policy": "sometimes"}
    )
    assert_json_error(response, "Invalid topics_policy")
    # Nothing of a failed creation remains.
    names = [
        s["name"]
        for s in assert_json_success(api.get(realm.iago, "streams", {"include_all": True}))["streams"]
    ]
    assert names == ["Verona"]


def test_private_channel_with_protected_history_and_topic_group(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(
        api, realm.hamlet, "shared", invite_only=True, history_public_to_subscribers=True
    )
    assert get_stream(api, realm.hamlet, stream_id)["history_public_to_subscribers"] is True
    public = create_channel(api, realm.hamlet, "pub", history_public_to_subscribers=False)
    assert get_stream(api, realm.hamlet, public)["history_public_to_subscribers"] is True


def test_web_public_channels_need_spectator_access_and_permission(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    set_realm(services, realm, enable_spectator_access=True)
    response = api.post(
        realm.iago, "channels/create", {"name": "web", "subscribers": [], "is_web_public": True}
    )
    assert_json_error(response, "Insufficient permission")
    response = api.post(
        realm.desdemona,
        "channels/create",
        {"name": "web", "subscribers": [], "is_web_public": True, "invite_only": True},
    )
    assert_json_error(response, "Invalid parameters")
    stream_id = create_channel(api, realm.desdemona, "web", [], is_web_public=True)
    [(_, users)] = events.of_type("stream", "create")
    assert realm.polonius.id in users
    assert get_stream(api, realm.polonius, stream_id)["is_web_public"] is True
    streams = assert_json_success(api.get(realm.polonius, "streams", {"include_web_public": True}))["streams"]
    assert [s["stream_id"] for s in streams] == [stream_id]


# Reads ----------------------------------------------------------------------------------------


def test_list_streams_by_role(api: Api, realm: SeededRealm) -> None:
    public = create_channel(api, realm.othello, "public", [realm.othello.id])
    mine = create_channel(api, realm.hamlet, "mine", [realm.hamlet.id, realm.polonius.id], invite_only=True)
    theirs = create_channel(api, realm.othello, "theirs", [realm.othello.id], invite_only=True)

    def listed(user: TestUser, **params: Any) -> list[int]:
        body = assert_json_success(api.get(user, "streams", params))
        return sorted(s["stream_id"] for s in body["streams"])

    assert listed(realm.hamlet) == sorted([public, mine])
    assert listed(realm.hamlet, include_subscribed=False) == [public]
    assert listed(realm.hamlet, include_public=False) == [mine]
    assert listed(realm.iago) == [public]
    assert listed(realm.iago, include_all=True) == sorted([public, mine, theirs])
    assert listed(realm.iago, include_all_active=True) == sorted([public, mine, theirs])
    assert listed(realm.hamlet, include_all=True) == sorted([public, mine])
    assert listed(realm.hamlet, include_can_access_content=True) == sorted([public, mine])
    # Guests see what they are subscribed to, never all public channels.
    assert listed(realm.polonius) == [mine]
    assert listed(realm.polonius, include_all=True) == [mine]
    response = api.get(realm.hamlet, "streams", {"include_all_active": True})
    assert_json_error(response, "User not authorized for this query")


def test_list_streams_defaults_archived_and_owner(api: Api, realm: SeededRealm) -> None:
    default = create_channel(api, realm.iago, "welcome", [], is_default_stream=True)
    other = create_channel(api, realm.iago, "other", [realm.iago.id])
    archived = create_channel(api, realm.iago, "old", [realm.hamlet.id])
    assert_json_success(api.delete(realm.iago, f"streams/{archived}"))
    body = assert_json_success(
        api.get(realm.cordelia, "streams", {"include_default": True, "include_public": False})
    )
    assert [(s["stream_id"], s["is_default"]) for s in body["streams"]] == [(default, True)]
    body = assert_json_success(api.get(realm.cordelia, "streams", {"exclude_archived": False}))
    listed = {s["stream_id"]: s["is_archived"] for s in body["streams"]}
    assert listed == {default: False, other: False, archived: True}
    assert "is_default" not in body["streams"][0]
    # A bot may list the channels its owner is in, even private ones.
    secret = create_channel(api, realm.hamlet, "secret", [realm.hamlet.id], invite_only=True)
    bot_view = assert_json_success(
        api.get(realm.default_bot, "streams", {"include_public": False, "include_owner_subscribed": True})
    )
    assert [s["stream_id"] for s in bot_view["streams"]] == [secret]


def test_get_stream_errors_look_the_same(api: Api, realm: SeededRealm) -> None:
    secret = create_channel(api, realm.hamlet, "secret", invite_only=True)
    for path in ("streams/99999", f"streams/{secret}", f"streams/{secret}/members", "streams/99999/members"):
        assert_json_error(api.get(realm.cordelia, path), "Invalid channel ID", code="BAD_REQUEST")


def test_get_stream_id(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    secret = create_channel(api, realm.hamlet, "secret", invite_only=True)
    assert (
        assert_json_success(api.get(realm.othello, "get_stream_id", {"stream": "denmark"}))["stream_id"]
        == stream_id
    )
    assert (
        assert_json_success(api.get(realm.hamlet, "get_stream_id", {"stream": "secret"}))["stream_id"]
        == secret
    )
    for name in ("secret", "nonexistent"):
        response = api.get(realm.othello, "get_stream_id", {"stream": name})
        assert_json_error(response, f"Invalid channel name '{name}'")
    assert_json_error(api.get(realm.othello, "get_stream_id"), "Missing 'stream' argument")


def test_stream_members(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet.id, realm.othello.id])
    body = assert_json_success(api.get(realm.cordelia, f"streams/{stream_id}/members"))
    assert body["subscribers"] == ids(realm, "hamlet", "othello")
    secret = create_channel(api, realm.hamlet, "secret", [realm.hamlet.id], invite_only=True)
    assert assert_json_success(api.get(realm.iago, f"streams/{secret}/members"))["subscribers"] == [
        realm.hamlet.id
    ]


# Edits ----------------------------------------------------------------------------------------


def test_rename_and_describe(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    events.clear()
    response = api.patch(
        realm.hamlet, f"streams/{stream_id}", {"new_name": "Danmark", "description": "Hej *verden*"}
    )
    assert_json_success(response)
    updates = events.of_type("stream", "update")
    assert [(e["property"], e["value"]) for e, _ in updates] == [
        ("name", "Danmark"),
        ("description", "Hej *verden*"),
    ]
    assert updates[0][0]["name"] == "Denmark"
    assert updates[1][0]["rendered_description"] == "<p>Hej <em>verden</em></p>"
    assert all(users == ids(realm, *NON_GUESTS) for _, users in updates)
    # The legacy parameter name and a case-only rename both work.
    assert_json_success(api.patch(realm.iago, f"streams/{stream_id}", {"name": "DANMARK"}))
    assert get_stream(api, realm.hamlet, stream_id)["name"] == "DANMARK"


def test_edit_errors(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    create_channel(api, realm.hamlet, "Sweden")
    path = f"streams/{stream_id}"
    assert_json_error(
        api.patch(realm.hamlet, path, {"new_name": "Denmark"}), "Channel already has that name."
    )
    assert_json_error(api.patch(realm.hamlet, path, {"new_name": "sweden"}), "Channel name already in use.")
    assert_json_error(api.patch(realm.hamlet, path, {"new_name": ""}), "Channel name can't be empty.")
    denied = "You do not have permission to administer this channel."
    assert_json_error(api.patch(realm.othello, path, {"description": "mine"}), denied)
    assert_json_error(api.patch(realm.shiva, path, {"description": "mine"}), denied)
    assert_json_error(
        api.patch(realm.iago, path, {"message_retention_days": 10}), "Must be an organization owner"
    )
    assert_json_error(
        api.patch(realm.hamlet, path, {"is_default_stream": True}), "Must be an organization administrator"
    )
    assert_json_error(
        api.patch(realm.hamlet, path, {"history_public_to_subscribers": False}), "Invalid parameters"
    )
    assert_json_error(
        api.patch(realm.hamlet, path, {"topics_policy": "empty_topic_only"}), "Insufficient permission"
    )
    assert_json_error(api.patch(realm.hamlet, path, {"folder_id": 99999}), "Invalid channel folder ID")
    assert_json_error(api.patch(realm.hamlet, "streams/99999", {"description": "x"}), "Invalid channel ID")
    for value in ({"old": 1}, {"new": {"members": [1]}}):
        response = api.patch(realm.hamlet, path, {"can_send_message_group": value})
        body = response.json()
        assert body["code"] == "REQUEST_VARIABLE_INVALID"
        assert body["msg"].startswith("Invalid can_send_message_group")
    assert get_stream(api, realm.hamlet, stream_id)["name"] == "Denmark"


def test_privacy_changes_move_visibility(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet.id, realm.othello.id])
    path = f"streams/{stream_id}"
    events.clear()
    assert_json_success(api.patch(realm.hamlet, path, {"is_private": True}))
    [(update, users)] = events.of_type("stream", "update")
    assert (update["property"], update["value"]) == ("invite_only", True)
    assert update["history_public_to_subscribers"] is True and update["is_web_public"] is False
    assert users == ids(realm, "desdemona", "iago", "hamlet", "othello")
    [(delete, lost)] = events.of_type("stream", "delete")
    assert delete["stream_ids"] == [stream_id] and delete["streams"] == [{"stream_id": stream_id}]
    assert lost == ids(realm, "shiva", "cordelia", "default_bot")
    assert_json_error(api.get(realm.cordelia, path), "Invalid channel ID")

    events.clear()
    assert_json_success(api.patch(realm.hamlet, path, {"is_private": False}))
    [(_, gained)] = events.of_type("stream", "create")
    assert gained == ids(realm, "shiva", "cordelia", "default_bot")
    [(peer, peer_users)] = events.of_type("subscription", "peer_add")
    assert peer["user_ids"] == ids(realm, "hamlet", "othello") and peer_users == gained

    events.clear()
    assert_json_success(
        api.patch(realm.hamlet, path, {"is_private": True, "history_public_to_subscribers": False})
    )
    props = [e["property"] for e, _ in events.of_type("stream", "update")]
    assert props == ["invite_only", "history_public_to_subscribers"]
    stream = get_stream(api, realm.hamlet, stream_id)
    assert (stream["invite_only"], stream["history_public_to_subscribers"]) == (True, False)


def test_privacy_needs_content_access_even_for_administrators(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "secret", [realm.hamlet.id], invite_only=True)
    path = f"streams/{stream_id}"
    response = api.patch(realm.iago, path, {"is_private": False})
    assert_json_error(response, "Channel content access is required.")
    # Organization administrators may still rename a private channel they can only see.
    assert_json_success(api.patch(realm.iago, path, {"new_name": "renamed"}))
    assert_json_error(api.patch(realm.othello, path, {"new_name": "x"}), "Invalid channel ID")


def test_web_public_edits(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.desdemona, "news", [realm.desdemona.id])
    path = f"streams/{stream_id}"
    assert_json_error(
        api.patch(realm.desdemona, path, {"is_web_public": True}), "Web-public channels are not enabled."
    )
    set_realm(services, realm, enable_spectator_access=True)
    events.clear()
    assert_json_success(api.patch(realm.desdemona, path, {"is_web_public": True}))
    [(update, _)] = events.of_type("stream", "update")
    assert (update["property"], update["value"]) == ("is_web_public", True)
    [(_, gained)] = events.of_type("stream", "create")
    assert gained == [realm.polonius.id]
    assert_json_error(
        api.patch(realm.desdemona, path, {"is_private": True, "is_web_public": True}), "Invalid parameters"
    )
    # Making it private also ends web-public access.
    assert_json_success(api.patch(realm.desdemona, path, {"is_private": True}))
    assert get_stream(api, realm.desdemona, stream_id)["is_web_public"] is False


def test_retention_folder_and_topics_policy(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.desdemona, "ops")
    folder_id = assert_json_success(api.post(realm.iago, "channel_folders/create", {"name": "Ops"}))[
        "channel_folder_id"
    ]
    path = f"streams/{stream_id}"
    events.clear()
    assert_json_success(api.patch(realm.desdemona, path, {"message_retention_days": 90}))
    assert_json_success(api.patch(realm.desdemona, path, {"message_retention_days": "realm_default"}))
    assert_json_success(api.patch(realm.desdemona, path, {"folder_id": folder_id}))
    assert_json_success(api.patch(realm.desdemona, path, {"folder_id": None}))
    assert_json_success(api.patch(realm.desdemona, path, {"topics_policy": "allow_empty_topic"}))
    changes = [(e["property"], e["value"]) for e, _ in events.of_type("stream", "update")]
    assert changes == [
        ("message_retention_days", 90),
        ("message_retention_days", None),
        ("folder_id", folder_id),
        ("folder_id", None),
        ("topics_policy", "allow_empty_topic"),
    ]
    events.clear()
    assert_json_success(api.patch(realm.desdemona, path, {"topics_policy": "allow_empty_topic"}))
    assert events.published == []
    assert_json_error(
        api.patch(realm.desdemona, path, {"message_retention_days": "forever"}),
        "Bad value for 'message_retention_days': forever",
    )


def test_empty_topic_only_needs_every_message_in_the_empty_topic(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    stream_id = create_channel(api, realm.desdemona, "chat")
    path = f"streams/{stream_id}"

    def post(topic: str) -> None:
        data = {"type": "stream", "to": stream_id, "topic": topic, "content": "hi"}
        assert_json_success(api.post(realm.desdemona, "messages", data))

    post("")
    assert_json_success(api.patch(realm.desdemona, path, {"topics_policy": "empty_topic_only"}))
    assert_json_success(api.patch(realm.desdemona, path, {"topics_policy": "allow_empty_topic"}))
    post("named")
    events.clear()
    assert_json_error(
        api.patch(realm.desdemona, path, {"topics_policy": "empty_topic_only"}),
        'To enable this configuration, all messages in this channel must be in the "general chat" topic.',
    )
    assert events.published == []
    assert get_stream(api, realm.desdemona, stream_id)["topics_policy"] == "allow_empty_topic"
    # Other policies stay free to choose.
    assert_json_success(api.patch(realm.desdemona, path, {"topics_policy": "disable_empty_topic"}))
    # A new channel has no messages, so it may start out as empty-topic-only.
    create_channel(api, realm.desdemona, "lounge", topics_policy="empty_topic_only")


def test_group_setting_updates(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    groups = system_groups(services, realm)
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    path = f"streams/{stream_id}"
    events.clear()
    new = {"direct_members": [realm.othello.id], "direct_subgroups": [groups["role:moderators"]]}
    response = api.patch(
        realm.hamlet, path, {"can_send_message_group": {"new": new, "old": groups["role:everyone"]}}
    )
    assert_json_success(response)
    [(update, users)] = events.of_type("stream", "update")
    assert (update["property"], update["value"]) == ("can_send_message_group", new)
    assert users == ids(realm, *NON_GUESTS)
    response = api.patch(
        realm.hamlet,
        path,
        {"can_send_message_group": {"new": groups["role:members"], "old": groups["role:everyone"]}},
    )
    body = assert_json_error(response, "'old' value does not match the expected value.")
    assert body["code"] == "EXPECTATION_MISMATCH"
    response = api.patch(
        realm.hamlet, path, {"can_send_message_group": {"new": groups["role:members"], "old": new}}
    )
    assert_json_success(response)
    stream = get_stream(api, realm.hamlet, stream_id)
    assert stream["can_send_message_group"] == groups["role:members"]
    # Handing administration to administrators only locks the creator out.
    assert_json_success(
        api.patch(
            realm.hamlet, path, {"can_administer_channel_group": {"new": groups["role:administrators"]}}
        )
    )
    denied = "You do not have permission to administer this channel."
    assert_json_error(api.patch(realm.hamlet, path, {"description": "x"}), denied)
    response = api.patch(realm.iago, path, {"can_remove_subscribers_group": {"new": groups["role:nobody"]}})
    assert_json_error(
        response, "'can_remove_subscribers_group' setting cannot be set to 'role:nobody' group."
    )


def test_channel_administrator_group_grants_metadata_access(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    stream_id = create_channel(api, realm.hamlet, "secret", [realm.hamlet.id], invite_only=True)
    path = f"streams/{stream_id}"
    assert_json_error(api.get(realm.cordelia, path), "Invalid channel ID")
    events.clear()
    value = {"new": {"direct_members": [realm.hamlet.id, realm.cordelia.id], "direct_subgroups": []}}
    assert_json_success(api.patch(realm.hamlet, path, {"can_administer_channel_group": value}))
    [(_, gained)] = events.of_type("stream", "create")
    assert gained == [realm.cordelia.id]
    assert get_stream(api, realm.cordelia, stream_id)["name"] == "secret"
    assert_json_success(api.patch(realm.cordelia, path, {"description": "now mine too"}))


def test_default_channel_cannot_become_private(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.iago, "welcome", is_default_stream=True)
    path = f"streams/{stream_id}"
    assert_json_error(
        api.patch(realm.iago, path, {"is_private": True}), "A default channel cannot be private."
    )
    assert_json_success(api.patch(realm.iago, path, {"is_private": True, "is_default_stream": False}))
    assert assert_json_success(api.get(realm.iago, "default_streams"))["default_streams"] == []
    assert_json_error(
        api.patch(realm.iago, path, {"is_default_stream": True}), "Private channels cannot be made default."
    )


# Archiving ------------------------------------------------------------------------------------


def test_archive(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", is_default_stream=False)
    assert_json_success(api.post(realm.iago, "default_streams", {"stream_id": stream_id}))
    path = f"streams/{stream_id}"
    assert_json_error(
        api.delete(realm.othello, path), "You do not have permission to administer this channel."
    )
    events.clear()
    assert_json_success(api.delete(realm.hamlet, path))
    [(delete, users)] = events.of_type("stream", "delete")
    assert delete["stream_ids"] == [stream_id]
    assert users == ids(realm, *NON_GUESTS)
    [(defaults, _)] = events.of_type("default_streams")
    assert defaults["default_streams"] == []
    assert get_stream(api, realm.othello, stream_id)["is_archived"] is True
    assert assert_json_success(api.get(realm.hamlet, "streams"))["streams"] == []
    assert assert_json_success(api.get(realm.hamlet, "users/me/subscriptions"))["subscriptions"] == []
    assert_json_error(api.delete(realm.hamlet, path), "Channel is already deactivated")
    assert_json_error(api.post(realm.iago, "default_streams", {"stream_id": stream_id}), "Invalid channel ID")
    # The name stays taken by the archived channel.
    response = api.post(realm.hamlet, "channels/create", {"name": "Denmark", "subscribers": []})
    assert_json_error(response, "Channel 'Denmark' already exists")


# Default channels -----------------------------------------------------------------------------


def test_default_streams(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "welcome")
    secret = create_channel(api, realm.hamlet, "secret", invite_only=True)
    assert_json_error(
        api.post(realm.hamlet, "default_streams", {"stream_id": stream_id}),
        "Must be an organization administrator",
    )
    events.clear()
    assert_json_success(api.post(realm.iago, "default_streams", {"stream_id": stream_id}))
    [(event, users)] = events.of_type("default_streams")
    assert event == {"type": "default_streams", "default_streams": [stream_id]}
    assert users == ids(realm, *NON_GUESTS)
    events.clear()
    assert_json_success(api.post(realm.iago, "default_streams", {"stream_id": stream_id}))
    assert events.published == []
    assert_json_error(
        api.post(realm.iago, "default_streams", {"stream_id": secret}),
        "Private channels cannot be made default.",
    )
    assert_json_error(api.post(realm.iago, "default_streams", {"stream_id": 99999}), "Invalid channel ID")
    assert assert_json_success(api.get(realm.polonius, "default_streams"))["default_streams"] == [stream_id]
    assert_json_error(
        api.delete(realm.hamlet, "default_streams", {"stream_id": stream_id}),
        "Must be an organization administrator",
    )
    assert_json_success(api.delete(realm.iago, "default_streams", {"stream_id": stream_id}))
    assert assert_json_success(api.get(realm.iago, "default_streams"))["default_streams"] == []


def test_legacy_post_policy_follows_can_send_message_group(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    groups = system_groups(services, realm)
    stream_id = create_channel(api, realm.hamlet, "news")
    events.clear()
    value = {"new": groups["role:administrators"]}
    assert_json_success(api.patch(realm.hamlet, f"streams/{stream_id}", {"can_send_message_group": value}))
    changes = [(e["property"], e["value"]) for e, _ in events.of_type("stream", "update")]
    assert changes == [("can_send_message_group", groups["role:administrators"]), ("stream_post_policy", 2)]
    stream = get_stream(api, realm.hamlet, stream_id)
    assert (stream["stream_post_policy"], stream["is_announcement_only"]) == (2, True)
