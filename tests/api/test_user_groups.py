"""User groups: creation, listing, edits, members, subgroups and deactivation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def everyone(realm: SeededRealm) -> list[int]:
    return sorted(u.id for u in realm.users.values())


def create_group(api: Api, user: TestUser, name: str, members: list[int], **extra: Any) -> int:
    data = {"name": name, "description": f"The {name} team", "members": members, **extra}
    body = assert_json_success(api.post(user, "user_groups/create", data))
    group_id: int = body["group_id"]
    return group_id


def groups_by_name(api: Api, user: TestUser, **params: Any) -> dict[str, dict[str, Any]]:
    body = assert_json_success(api.get(user, "user_groups", params))
    return {g["name"]: g for g in body["user_groups"]}


def system_group(api: Api, realm: SeededRealm, name: str) -> int:
    group_id: int = groups_by_name(api, realm.desdemona)[name]["id"]
    return group_id


def test_create_and_list(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    group_id = create_group(api, realm.hamlet, "backend", [realm.hamlet.id, realm.othello.id])
    [(event, users)] = events.of_type("user_group", "add")
    assert users == everyone(realm)
    group = event["group"]
    assert group["id"] == group_id
    assert (group["name"], group["description"]) == ("backend", "The backend team")
    assert group["members"] == sorted([realm.hamlet.id, realm.othello.id])
    assert group["direct_subgroup_ids"] == []
    assert group["creator_id"] == realm.hamlet.id
    assert isinstance(group["date_created"], int)
    assert (group["is_system_group"], group["deactivated"]) == (False, False)
    # The creator manages the group; everyone may mention or leave it; nobody else may join.
    assert group["can_manage_group"] == {"direct_members": [realm.hamlet.id], "direct_subgroups": []}
    listed = groups_by_name(api, realm.cordelia)
    assert listed["backend"] == group
    assert listed["role:everyone"]["is_system_group"] is True
    assert listed["backend"]["can_mention_group"] == listed["role:everyone"]["id"]
    assert listed["backend"]["can_join_group"] == listed["role:nobody"]["id"]


def test_create_with_every_setting(api: Api, realm: SeededRealm) -> None:
    members = system_group(api, realm, "role:members")
    admins = system_group(api, realm, "role:administrators")
    sub = create_group(api, realm.hamlet, "sub", [realm.cordelia.id])
    anonymous = {"direct_members": [realm.othello.id], "direct_subgroups": [admins]}
    group_id = create_group(
        api,
        realm.hamlet,
        "full",
        [realm.hamlet.id],
        subgroups=[sub],
        can_add_members_group=members,
        can_join_group=members,
        can_leave_group=admins,
        can_manage_group=anonymous,
        can_mention_group=admins,
        can_remove_members_group=admins,
    )
    group = groups_by_name(api, realm.hamlet)["full"]
    assert group["id"] == group_id
    assert group["direct_subgroup_ids"] == [sub]
    assert group["can_add_members_group"] == members
    assert group["can_join_group"] == members
    assert group["can_leave_group"] == admins
    assert group["can_manage_group"] == anonymous
    assert group["can_mention_group"] == admins
    assert group["can_remove_members_group"] == admins


def test_bots_may_create_groups(api: Api, realm: SeededRealm) -> None:
    create_group(api, realm.default_bot, "bots", [realm.default_bot.id])


def test_create_errors(api: Api, realm: SeededRealm) -> None:
    create_group(api, realm.hamlet, "taken", [])

    def fails(data: dict[str, Any], msg: str, user: TestUser | None = None) -> None:
        full = {"name": "new", "description": "", "members": [], **data}
        assert_json_error(api.post(user or realm.hamlet, "user_groups/create", full), msg, code="BAD_REQUEST")

    fails({"members": [realm.hamlet.id, 99999]}, "Invalid user ID: 99999")
    fails({"members": [2**40]}, "Invalid user ID: 1099511627776")
    fails({"name": "TAKEN"}, "User group 'TAKEN' already exists.")
    fails({"name": "  "}, "User group name can't be empty!")
    fails({"name": "x" * 101}, "User group name cannot exceed 100 characters.")
    fails({"name": "role:fake"}, "User group name cannot start with 'role:'.")
    fails({"name": "@all"}, "User group name cannot start with '@'.")
    fails({"subgroups": [99999]}, "Invalid user group ID: 99999")
    fails(
        {"can_manage_group": system_group(api, realm, "role:everyone")},
        "'can_manage_group' setting cannot be set to 'role:everyone' group.",
    )
    fails(
        {"can_manage_group": system_group(api, realm, "role:internet")},
        "'can_manage_group' setting cannot be set to 'role:internet' group.",
    )
    fails(
        {"can_mention_group": system_group(api, realm, "role:owners")},
        "'can_mention_group' setting cannot be set to 'role:owners' group.",
    )
    fails(
        {"can_mention_group": system_group(api, realm, "role:internet")},
        "'can_mention_group' setting cannot be set to 'role:internet' group.",
    )
    fails({"can_join_group": 99999}, "Invalid user group")
    fails({"can_join_group": {"direct_members": [99999], "direct_subgroups": []}}, "Invalid user ID: 99999")
    # Guests are not in the default can_create_groups (role:members).
    fails({}, "Insufficient permission", realm.polonius)
    assert_json_error(
        api.post(realm.hamlet, "user_groups/create", {"name": "x", "description": ""}),
        "Missing 'members' argument",
    )


def test_deactivated_users_are_invalid_members(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    response = api.post(
        realm.hamlet, "user_groups/create", {"name": "g", "description": "", "members": [realm.cordelia.id]}
    )
    assert_json_error(response, f"Invalid user ID: {realm.cordelia.id}")


def test_creation_permission_follows_realm_setting(api: Api, realm: SeededRealm) -> None:
    admins = system_group(api, realm, "role:administrators")
    members = system_group(api, realm, "role:members")
    assert_json_success(
        api.patch(realm.desdemona, "realm", {"can_create_groups": {"new": admins, "old": members}})
    )
    data = {"name": "g", "description": "", "members": []}
    assert_json_error(api.post(realm.hamlet, "user_groups/create", data), "Insufficient permission")
    assert_json_success(api.post(realm.iago, "user_groups/create", data))


def test_list_excludes_deactivated_users_and_groups(api: Api, realm: SeededRealm) -> None:
    group_id = create_group(api, realm.hamlet, "team", [realm.hamlet.id, realm.cordelia.id])
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    assert groups_by_name(api, realm.hamlet)["team"]["members"] == [realm.hamlet.id]
    assert_json_success(api.post(realm.hamlet, f"user_groups/{group_id}/deactivate"))
    assert "team" not in groups_by_name(api, realm.hamlet)
    included = groups_by_name(api, realm.hamlet, include_deactivated_groups=True)
    assert included["team"]["deactivated"] is True


def test_guests_cannot_list(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.get(realm.polonius, "user_groups"), "Not allowed for guest users")


def test_update(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    group_id = create_group(api, realm.hamlet, "old", [realm.hamlet.id])
    events.clear()
    assert_json_success(
        api.patch(realm.hamlet, f"user_groups/{group_id}", {"name": "new", "description": "D"})
    )
    [(event, users)] = events.of_type("user_group", "update")
    assert users == everyone(realm)
    assert event == {
        "type": "user_group",
        "op": "update",
        "group_id": group_id,
        "data": {"name": "new", "description": "D"},
    }

    admins = system_group(api, realm, "role:administrators")
    old = {"direct_members": [realm.hamlet.id], "direct_subgroups": []}
    events.clear()
    update = {"new": {"direct_members": [realm.othello.id], "direct_subgroups": [admins]}, "old": old}
    assert_json_success(api.patch(realm.hamlet, f"user_groups/{group_id}", {"can_manage_group": update}))
    [(event, _)] = events.of_type("user_group", "update")
    assert event["data"] == {"can_manage_group": update["new"]}
    # Hamlet no longer manages it; Othello does.
    assert_json_error(
        api.patch(realm.hamlet, f"user_groups/{group_id}", {"description": "x"}), "Insufficient permission"
    )
    stale = {"can_mention_group": {"new": admins, "old": 12345}}
    assert_json_error(
        api.patch(realm.othello, f"user_groups/{group_id}", stale),
        "'old' value does not match the expected value.",
        code="EXPECTATION_MISMATCH",
    )
    owners = system_group(api, realm, "role:owners")
    assert_json_error(
        api.patch(realm.othello, f"user_groups/{group_id}", {"can_mention_group": {"new": owners}}),
        "'can_mention_group' setting cannot be set to 'role:owners' group.",
    )
    # Owners manage all groups by default.
    assert_json_success(api.patch(realm.desdemona, f"user_groups/{group_id}", {"description": "by owner"}))


def test_update_errors(api: Api, realm: SeededRealm) -> None:
    group_id = create_group(api, realm.hamlet, "g", [])
    create_group(api, realm.hamlet, "other", [])
    assert_json_error(api.patch(realm.hamlet, f"user_groups/{group_id}", {}), "No new data supplied")
    assert_json_error(
        api.patch(realm.hamlet, f"user_groups/{group_id}", {"name": "Other"}),
        "User group 'Other' already exists.",
    )
    assert_json_error(api.patch(realm.hamlet, "user_groups/99999", {"name": "x"}), "Invalid user group")
    assert_json_error(api.patch(realm.hamlet, f"user_groups/{2**40}", {"name": "x"}), "Invalid user group")
    members = system_group(api, realm, "role:members")
    assert_json_error(
        api.patch(realm.desdemona, f"user_groups/{members}", {"name": "x"}), "Insufficient permission"
    )


def test_members(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    group_id = create_group(api, realm.hamlet, "g", [realm.hamlet.id])
    events.clear()
    url = f"user_groups/{group_id}/members"
    assert_json_success(api.post(realm.hamlet, url, {"add": [realm.othello.id, realm.cordelia.id]}))
    [(event, users)] = events.of_type("user_group", "add_members")
    assert event["user_ids"] == sorted([realm.othello.id, realm.cordelia.id])
    assert users == everyone(realm)
    assert_json_success(api.post(realm.hamlet, url, {"delete": [realm.cordelia.id]}))
    [(event, _)] = events.of_type("user_group", "remove_members")
    assert event["user_ids"] == [realm.cordelia.id]
    assert assert_json_success(api.get(realm.polonius, url))["members"] == sorted(
        [realm.hamlet.id, realm.othello.id]
    )

    assert_json_error(
        api.post(realm.hamlet, url, {"add": [realm.othello.id]}),
        f"User {realm.othello.id} is already a member of this group",
    )
    assert_json_error(
        api.post(realm.hamlet, url, {"delete": [realm.cordelia.id]}),
        f"There is no member '{realm.cordelia.id}' in this user group",
    )
    assert_json_error(api.post(realm.hamlet, url, {"add": [99999]}), "Invalid user ID: 99999")
    # Othello is a member but does not manage the group.
    assert_json_error(api.post(realm.othello, url, {"add": [realm.cordelia.id]}), "Insufficient permission")
    assert_json_error(api.post(realm.cordelia, url, {"add": [realm.cordelia.id]}), "Insufficient permission")
    # Anyone may leave (can_leave_group is role:everyone).
    assert_json_success(api.post(realm.othello, url, {"delete": [realm.othello.id]}))
    assert_json_error(api.post(realm.hamlet, "user_groups/99999/members", {"add": []}), "Invalid user group")


def test_join_and_add_permissions(api: Api, realm: SeededRealm) -> None:
    members = system_group(api, realm, "role:members")
    nobody = system_group(api, realm, "role:nobody")
    group_id = create_group(api, realm.hamlet, "g", [], can_join_group=members, can_leave_group=nobody)
    url = f"user_groups/{group_id}/members"
    assert_json_success(api.post(realm.cordelia, url, {"add": [realm.cordelia.id]}))
    assert_json_error(
        api.post(realm.cordelia, url, {"delete": [realm.cordelia.id]}), "Insufficient permission"
    )
    assert_json_error(api.post(realm.polonius, url, {"add": [realm.polonius.id]}), "Insufficient permission")
    assert_json_error(api.post(realm.cordelia, url, {"add": [realm.othello.id]}), "Insufficient permission")


def test_membership_status(api: Api, realm: SeededRealm) -> None:
    inner = create_group(api, realm.hamlet, "inner", [realm.othello.id])
    outer = create_group(api, realm.hamlet, "outer", [realm.hamlet.id], subgroups=[inner])

    def is_member(user_id: int, **params: Any) -> bool:
        body = assert_json_success(api.get(realm.cordelia, f"user_groups/{outer}/members/{user_id}", params))
        result: bool = body["is_user_group_member"]
        return result

    assert is_member(realm.hamlet.id) and is_member(realm.othello.id)
    assert not is_member(realm.othello.id, direct_member_only=True)
    assert not is_member(realm.cordelia.id)
    members = assert_json_success(api.get(realm.cordelia, f"user_groups/{outer}/members"))["members"]
    assert members == sorted([realm.hamlet.id, realm.othello.id])
    direct = assert_json_success(
        api.get(realm.cordelia, f"user_groups/{outer}/members", {"direct_member_only": True})
    )
    assert direct["members"] == [realm.hamlet.id]
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    assert not is_member(realm.othello.id)
    assert_json_error(api.get(realm.cordelia, f"user_groups/{outer}/members/99999"), "No such user")
    assert_json_error(
        api.get(realm.cordelia, f"user_groups/99999/members/{realm.hamlet.id}"), "Invalid user group"
    )


def test_subgroups(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    a = create_group(api, realm.hamlet, "a", [])
    b = create_group(api, realm.hamlet, "b", [])
    c = create_group(api, realm.hamlet, "c", [])
    events.clear()
    assert_json_success(api.post(realm.hamlet, f"user_groups/{a}/subgroups", {"add": [b]}))
    [(event, users)] = events.of_type("user_group", "add_subgroups")
    assert (event["group_id"], event["direct_subgroup_ids"], users) == (a, [b], everyone(realm))
    assert_json_success(api.post(realm.hamlet, f"user_groups/{b}/members", {"add_subgroups": [c]}))
    assert assert_json_success(api.get(realm.hamlet, f"user_groups/{a}/subgroups"))["subgroups"] == [b, c]
    direct = assert_json_success(
        api.get(realm.hamlet, f"user_groups/{a}/subgroups", {"direct_subgroup_only": True})
    )
    assert direct["subgroups"] == [b]

    # Cycles are refused, however long.
    assert_json_error(
        api.post(realm.hamlet, f"user_groups/{c}/subgroups", {"add": [a]}),
        f"User group {c} is already a subgroup of one of the passed subgroups.",
    )
    assert_json_error(
        api.post(realm.hamlet, f"user_groups/{a}/subgroups", {"add": [a]}),
        f"User group {a} is already a subgroup of one of the passed subgroups.",
    )
    assert_json_error(
        api.post(realm.hamlet, f"user_groups/{a}/subgroups", {"add": [b]}),
        f"User group {b} is already a subgroup of this group.",
    )
    assert_json_error(
        api.post(realm.hamlet, f"user_groups/{a}/subgroups", {"add": [99999]}), "Invalid user group ID: 99999"
    )
    assert_json_error(
        api.post(realm.othello, f"user_groups/{a}/subgroups", {"add": [c]}), "Insufficient permission"
    )
    assert_json_error(
        api.post(realm.hamlet, f"user_groups/{a}/subgroups", {"delete": [c]}),
        f"User group {c} is not a subgroup of this group.",
    )
    events.clear()
    assert_json_success(api.post(realm.hamlet, f"user_groups/{a}/subgroups", {"delete": [b]}))
    [(event, _)] = events.of_type("user_group", "remove_subgroups")
    assert event["direct_subgroup_ids"] == [b]


def test_setting_values_resolve_through_subgroups(api: Api, realm: SeededRealm) -> None:
    managers = create_group(api, realm.hamlet, "managers", [])
    team = create_group(api, realm.hamlet, "team", [realm.othello.id])
    assert_json_success(api.post(realm.hamlet, f"user_groups/{managers}/subgroups", {"add": [team]}))
    target = create_group(api, realm.hamlet, "target", [], can_manage_group=managers)
    # Othello manages through team ⊂ managers.
    assert_json_success(api.patch(realm.othello, f"user_groups/{target}", {"description": "mine"}))


def test_deactivate(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    group_id = create_group(api, realm.hamlet, "g", [realm.hamlet.id])
    assert_json_error(
        api.post(realm.othello, f"user_groups/{group_id}/deactivate"), "Insufficient permission"
    )
    events.clear()
    assert_json_success(api.post(realm.hamlet, f"user_groups/{group_id}/deactivate"))
    [(event, users)] = events.of_type("user_group")
    assert event == {
        "type": "user_group",
        "op": "update",
        "group_id": group_id,
        "data": {"deactivated": True},
    }
    assert users == everyone(realm)
    assert_json_error(
        api.post(realm.hamlet, f"user_groups/{group_id}/deactivate"), "User group is deactivated."
    )
    assert_json_error(
        api.post(realm.hamlet, f"user_groups/{group_id}/members", {"add": [realm.othello.id]}),
        "User group is deactivated.",
    )
    # Deactivated groups may be renamed, but not used as values or subgroups.
    assert_json_success(api.patch(realm.hamlet, f"user_groups/{group_id}", {"name": "renamed"}))
    data: dict[str, Any] = {"name": "x", "description": "", "members": [], "subgroups": [group_id]}
    assert_json_error(
        api.post(realm.hamlet, "user_groups/create", data), f"User group {group_id} is deactivated."
    )
    data = {"name": "x", "description": "", "members": [], "can_join_group": group_id}
    assert_json_error(api.post(realm.hamlet, "user_groups/create", data), "Invalid user group")
    members = system_group(api, realm, "role:members")
    assert_json_error(
        api.post(realm.desdemona, f"user_groups/{members}/deactivate"), "Insufficient permission"
    )


def test_cannot_deactivate_group_in_use(api: Api, realm: SeededRealm) -> None:
    group_id = create_group(api, realm.hamlet, "g", [realm.hamlet.id])
    members = system_group(api, realm, "role:members")
    create_group(
        api,
        realm.hamlet,
        "user",
        [],
        can_mention_group={"direct_members": [realm.iago.id], "direct_subgroups": [group_id]},
    )
    assert_json_success(
        api.patch(realm.desdemona, "realm", {"can_create_groups": {"new": group_id, "old": members}})
    )
    body = assert_json_error(
        api.post(realm.hamlet, f"user_groups/{group_id}/deactivate"),
        "Cannot deactivate user group in use.",
        code="CANNOT_DEACTIVATE_GROUP_IN_USE",
    )
    user_group = groups_by_name(api, realm.hamlet)["user"]["id"]
    assert body["objections"] == [
        {"type": "realm", "settings": ["can_create_groups"]},
        {"type": "user_group", "group_id": user_group, "settings": ["can_mention_group"]},
    ]


@pytest.mark.parametrize("fetch", [None, ["realm_user_groups"]])
def test_register_state(api: Api, realm: SeededRealm, fetch: list[str] | None) -> None:
    group_id = create_group(api, realm.hamlet, "g", [realm.hamlet.id])
    deactivated = create_group(api, realm.hamlet, "gone", [])
    assert_json_success(api.post(realm.hamlet, f"user_groups/{deactivated}/deactivate"))
    data: dict[str, Any] = {} if fetch is None else {"fetch_event_types": fetch}
    state = assert_json_success(api.post(realm.othello, "register", data))
    by_id = {g["id"]: g for g in state["realm_user_groups"]}
    assert by_id[group_id] == groups_by_name(api, realm.othello)["g"]
    assert deactivated not in by_id
    data["client_capabilities"] = {"include_deactivated_groups": True}
    state = assert_json_success(api.post(realm.othello, "register", data))
    assert deactivated in {g["id"] for g in state["realm_user_groups"]}


def test_deactivation_event_per_client_capability(api: Api, realm: SeededRealm) -> None:
    group_id = create_group(api, realm.hamlet, "g", [realm.hamlet.id])

    def queue(**capabilities: bool) -> str:
        body = assert_json_success(
            api.post(
                realm.othello,
                "register",
                {"event_types": ["user_group"], "client_capabilities": capabilities},
            )
        )
        return str(body["queue_id"])

    aware, unaware = queue(include_deactivated_groups=True), queue()
    assert_json_success(api.post(realm.hamlet, f"user_groups/{group_id}/deactivate"))

    def received(queue_id: str) -> list[dict[str, Any]]:
        body = assert_json_success(
            api.get(realm.othello, "events", {"queue_id": queue_id, "last_event_id": -1, "dont_block": True})
        )
        return [{k: v for k, v in e.items() if k != "id"} for e in body["events"]]

    assert received(aware) == [
        {"type": "user_group", "op": "update", "group_id": group_id, "data": {"deactivated": True}}
    ]
    # Clients that only know active groups drop it, as they did before deactivation existed.
    assert received(unaware) == [{"type": "user_group", "op": "remove", "group_id": group_id}]


def register_group_queue(api: Api, user: TestUser, **capabilities: bool) -> str:
    data = {"event_types": ["user_group"], "client_capabilities": capabilities}
    return str(assert_json_success(api.post(user, "register", data))["queue_id"])


def queued_events(api: Api, user: TestUser, queue_id: str) -> list[dict[str, Any]]:
    params = {"queue_id": queue_id, "last_event_id": -1, "dont_block": True}
    body = assert_json_success(api.get(user, "events", params))
    return [{k: v for k, v in e.items() if k != "id"} for e in body["events"]]


def test_edits_of_deactivated_group_per_client_capability(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    group_id = create_group(api, realm.hamlet, "g", [realm.hamlet.id])
    admins = system_group(api, realm, "role:administrators")
    assert_json_success(api.post(realm.hamlet, f"user_groups/{group_id}/deactivate"))
    aware = register_group_queue(api, realm.othello, include_deactivated_groups=True)
    unaware = register_group_queue(api, realm.othello)
    events.clear()
    edits: list[dict[str, Any]] = [
        {"name": "renamed"},
        {"description": "still here"},
        {"can_mention_group": {"new": admins}},
    ]
    for edit in edits:
        assert_json_success(api.patch(realm.hamlet, f"user_groups/{group_id}", edit))
    # The published events carry the internal marker; the recorder validated them.
    assert [e.get("group_is_deactivated") for e, _ in events.of_type("user_group")] == [True] * 3

    def update(data: dict[str, Any]) -> dict[str, Any]:
        return {"type": "user_group", "op": "update", "group_id": group_id, "data": data}

    # Aware clients get each edit in the reference's shape, without the marker.
    assert queued_events(api, realm.othello, aware) == [
        update({"name": "renamed"}),
        update({"description": "still here"}),
        update({"can_mention_group": admins}),
    ]
    # The others were told the group was removed, so hear nothing more of it.
    assert queued_events(api, realm.othello, unaware) == []


def test_edits_of_active_group_reach_every_client(api: Api, realm: SeededRealm) -> None:
    group_id = create_group(api, realm.hamlet, "g", [realm.hamlet.id])
    aware = register_group_queue(api, realm.othello, include_deactivated_groups=True)
    unaware = register_group_queue(api, realm.othello)
    assert_json_success(api.patch(realm.hamlet, f"user_groups/{group_id}", {"name": "renamed"}))
    expected = [{"type": "user_group", "op": "update", "group_id": group_id, "data": {"name": "renamed"}}]
    assert queued_events(api, realm.othello, aware) == expected
    assert queued_events(api, realm.othello, unaware) == expected
