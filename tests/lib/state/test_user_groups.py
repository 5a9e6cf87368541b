"""User group state in POST /register against a plain reading of the memberships."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from palaver.lib.user_group_format import format_user_groups
from palaver.lib.user_groups import get_named_groups
from palaver.models import UserGroupMembership, UserProfile
from palaver.services import Services
from tests.helpers import Api, SeededRealm, assert_json_success


def _reference_members(services: Services, group_ids: list[int]) -> dict[int, list[int]]:
    """Active direct members, sorted, joined to their users in SQL."""
    with services.db.session() as session:
        members: dict[int, list[int]] = {gid: [] for gid in group_ids}
        for group_id, user_id in session.execute(
            select(UserGroupMembership.user_group_id, UserGroupMembership.user_profile_id)
            .join(UserProfile, UserProfile.id == UserGroupMembership.user_profile_id)
            .where(UserGroupMembership.user_group_id.in_(group_ids), UserProfile.is_active)
            .order_by(UserGroupMembership.user_profile_id)
        ):
            members[group_id].append(user_id)
        return members


def test_register_user_groups_match_format_user_groups(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    created = assert_json_success(
        api.post(
            realm.iago,
            "user_groups/create",
            {
                "name": "support",
                "description": "",
                "members": [realm.hamlet.id, realm.cordelia.id, realm.othello.id],
            },
        )
    )
    assert created
    # Deactivated users are in no member list.
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    for viewer in (realm.desdemona, realm.hamlet, realm.polonius):
        for deactivated in (False, True):
            state = assert_json_success(
                api.post(
                    viewer,
                    "register",
                    {
                        "fetch_event_types": ["realm_user_groups"],
                        "client_capabilities": {"include_deactivated_groups": deactivated},
                    },
                )
            )
            with services.db.session() as session:
                groups = get_named_groups(session, realm.id, include_deactivated=deactivated)
                expected: list[dict[str, Any]] = format_user_groups(session, groups)
            assert state["realm_user_groups"] == expected
            members = _reference_members(services, [g["id"] for g in expected])
            assert {g["id"]: g["members"] for g in state["realm_user_groups"]} == members
            support = [g for g in expected if g["name"] == "support"]
            assert support and support[0]["members"] == sorted([realm.hamlet.id, realm.othello.id])
