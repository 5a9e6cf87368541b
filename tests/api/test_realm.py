"""PATCH /realm: organization settings, who may change them, and the realm events."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def everyone(realm: SeededRealm) -> list[int]:
    return sorted(u.id for u in realm.users.values())


def realm_state(api: Api, realm: SeededRealm) -> dict[str, Any]:
    return assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["realm"]}))


def group_id(api: Api, realm: SeededRealm, name: str) -> int:
    groups = assert_json_success(api.get(realm.desdemona, "user_groups"))["user_groups"]
    found: int = next(g["id"] for g in groups if g["name"] == name)
    return found


@pytest.mark.parametrize(
    ("prop", "value", "state_value"),
    [
        ("name", "New Name", "New Name"),
        ("description", "About *us*", "About *us*"),
        ("allow_edit_history", False, False),
        ("topics_policy", "disable_empty_topic", "disable_empty_topic"),
        ("waiting_period_threshold", 3, 3),
        ("default_language", "de", "de"),
        ("enable_spectator_access", True, True),
        ("org_type", 20, 20),
    ],
)
def test_update_simple_property(
    api: Api, realm: SeededRealm, events: EventRecorder, prop: str, value: Any, state_value: Any
) -> None:
    assert_json_success(api.patch(realm.iago, "realm", {prop: value}))
    event, users = events.of_type("realm", "update")[0]
    assert event == {"type": "realm", "op": "update", "property": prop, "value": value}
    assert users == everyone(realm)
    assert realm_state(api, realm)[f"realm_{prop}"] == state_value
    # Setting the same value again changes nothing and tells nobody.
    events.clear()
    assert_json_success(api.patch(realm.iago, "realm", {prop: value}))
    assert events.of_type("realm") == []


@pytest.mark.parametrize(
    ("prop", "value", "expected"),
    [
        ("allow_message_editing", False, False),
        ("message_content_edit_limit_seconds", 1200, 1200),
        ("message_content_edit_limit_seconds", "unlimited", None),
        ("message_content_delete_limit_seconds", 300, 300),
        ("move_messages_within_stream_limit_seconds", 60, 60),
        ("move_messages_between_streams_limit_seconds", "unlimited", None),
    ],
)
def test_edit_settings_use_update_dict(
    api: Api, realm: SeededRealm, events: EventRecorder, prop: str, value: Any, expected: Any
) -> None:
    assert_json_success(api.patch(realm.iago, "realm", {prop: value}))
    [(event, users)] = events.of_type("realm", "update_dict")
    assert event == {"type": "realm", "op": "update_dict", "property": "default", "data": {prop: expected}}
    assert users == everyone(realm)
    assert realm_state(api, realm)[f"realm_{prop}"] == expected


def test_the_delete_time_limit_is_set_and_lifted(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.iago, "realm", {"message_content_delete_limit_seconds": 600}))
    assert realm_state(api, realm)["realm_message_content_delete_limit_seconds"] == 600
    assert_json_success(api.patch(realm.iago, "realm", {"message_content_delete_limit_seconds": "unlimited"}))
    assert realm_state(api, realm)["realm_message_content_delete_limit_seconds"] is None
    assert_json_error(
        api.patch(realm.iago, "realm", {"message_content_delete_limit_seconds": 0}),
        "Bad value for 'message_content_delete_limit_seconds': 0",
    )


def test_topics_policy_keeps_mandatory_topics(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.iago, "realm", {"topics_policy": "disable_empty_topic"}))
    props = [e["property"] for e, _ in events.of_type("realm", "update")]
    assert props == ["topics_policy", "mandatory_topics"]
    assert realm_state(api, realm)["realm_mandatory_topics"] is True


def test_owner_only_settings(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    for data in (
        {"message_retention_days": 30},
        {"invite_required": False},
        {"emails_restricted_to_domains": True},
    ):
        assert_json_error(api.patch(realm.iago, "realm", data), "Must be an organization owner")
        assert_json_success(api.patch(realm.desdemona, "realm", data))
    assert realm_state(api, realm)["realm_message_retention_days"] == 30
    assert_json_success(api.patch(realm.desdemona, "realm", {"message_retention_days": "unlimited"}))
    last = events.of_type("realm", "update")[-1][0]
    assert (last["property"], last["value"]) == ("message_retention_days", -1)
    assert realm_state(api, realm)["realm_message_retention_days"] == -1


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius", "default_bot"])
def test_administrators_only(api: Api, realm: SeededRealm, user: str) -> None:
    assert_json_error(
        api.patch(realm.users[user], "realm", {"name": "Mine"}), "Must be an organization administrator"
    )


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"name": " "}, "Organization name can't be empty."),
        ({"name": "x" * 41}, "name is too long (limit: 40 characters)"),
        ({"description": "x" * 1001}, "description is too long (limit: 1000 characters)"),
        ({"message_content_edit_limit_seconds": 0}, "Bad value for 'message_content_edit_limit_seconds': 0"),
        (
            {"message_content_edit_limit_seconds": "forever"},
            "Bad value for 'message_content_edit_limit_seconds': forever",
        ),
        (
            {"move_messages_within_stream_limit_seconds": -5},
            "Bad value for 'move_messages_within_stream_limit_seconds': -5",
        ),
        (
            {"move_messages_between_streams_limit_seconds": 2**40},
            "Bad value for 'move_messages_between_streams_limit_seconds': 1099511627776",
        ),
        ({"message_retention_days": 0}, "Bad value for 'message_retention_days': 0"),
        ({"waiting_period_threshold": -1}, "Bad value for 'waiting_period_threshold': -1"),
        ({"default_language": "xx"}, "Invalid language 'xx'"),
        ({"org_type": 7}, "Invalid org_type"),
        ({"topics_policy": "inherit"}, "Invalid topics_policy"),
        ({"allow_message_editing": "yes"}, 'Argument "allow_message_editing" is not valid JSON.'),
        ({"org_type": "true"}, "org_type is not an integer"),
    ],
)
def test_invalid_values(api: Api, realm: SeededRealm, data: dict[str, Any], msg: str) -> None:
    assert_json_error(api.patch(realm.desdemona, "realm", data), msg)


def test_group_settings(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    admins = group_id(api, realm, "role:administrators")
    members = group_id(api, realm, "role:members")
    update = {"new": admins, "old": members}
    assert_json_success(api.patch(realm.iago, "realm", {"can_create_public_channel_group": update}))
    [(event, users)] = events.of_type("realm", "update_dict")
    assert event["data"] == {"can_create_public_channel_group": admins}
    assert users == everyone(realm)
    anonymous = {"direct_members": [realm.hamlet.id], "direct_subgroups": [admins]}
    assert_json_success(
        api.patch(realm.iago, "realm", {"can_create_public_channel_group": {"new": anonymous}})
    )
    assert realm_state(api, realm)["realm_can_create_public_channel_group"] == anonymous
    assert_json_error(
        api.patch(realm.iago, "realm", {"can_create_public_channel_group": {"new": admins, "old": members}}),
        "'old' value does not match the expected value.",
        code="EXPECTATION_MISMATCH",
    )
    internet = group_id(api, realm, "role:internet")
    assert_json_error(
        api.patch(realm.iago, "realm", {"can_invite_users_group": {"new": internet}}),
        "Must be an organization owner",
    )
    assert_json_error(
        api.patch(realm.desdemona, "realm", {"can_invite_users_group": {"new": internet}}),
        "'can_invite_users_group' setting cannot be set to 'role:internet' group.",
    )
    assert_json_error(
        api.patch(realm.iago, "realm", {"can_access_all_users_group": {"new": admins}}),
        "'can_access_all_users_group' setting cannot be set to 'role:administrators' group.",
    )
    assert_json_error(
        api.patch(realm.iago, "realm", {"can_create_groups": {"new": 99999}}), "Invalid user group"
    )
    assert_json_error(
        api.patch(realm.iago, "realm", {"can_create_groups": admins}), "Invalid can_create_groups"
    )


def test_every_group_setting_is_a_parameter(api: Api, realm: SeededRealm) -> None:
    from palaver.models.realm import REALM_GROUP_SETTINGS

    members = group_id(api, realm, "role:members")
    for name in REALM_GROUP_SETTINGS:
        response = api.patch(realm.desdemona, "realm", {name: {"new": members}})
        body = assert_json_success(response)
        assert "ignored_parameters_unsupported" not in body


def test_waiting_period_moves_full_members(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    fullmembers = group_id(api, realm, "role:fullmembers")
    assert_json_success(api.patch(realm.iago, "realm", {"waiting_period_threshold": 10}))
    removed = [e for e, _ in events.of_type("user_group", "remove_members") if e["group_id"] == fullmembers]
    assert {u for e in removed for u in e["user_ids"]} >= {realm.hamlet.id, realm.othello.id}
    assert (
        realm.hamlet.id
        not in assert_json_success(api.get(realm.hamlet, f"user_groups/{fullmembers}/members"))["members"]
    )
