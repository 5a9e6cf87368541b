"""Group-setting values: validation, anonymous groups, rendering and permission checks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.actions.group_settings import default_group_setting, set_group_setting, store_group_setting_value
from palaver.actions.users import do_deactivate_user
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import (
    CREATOR,
    AnonymousGroupValue,
    GroupSettingRule,
    ResolvedValue,
    check_expected_value,
    groups_containing_user,
    parse_group_setting_value,
    render_group_setting,
    render_group_settings,
    user_has_permission,
)
from palaver.lib.user_groups import get_system_groups
from palaver.models import UserGroup, UserGroupMembership, UserProfile
from palaver.models.requester import Requester
from palaver.services import Services
from tests.helpers import SeededRealm

OPEN = GroupSettingRule("role:everyone")
STRICT = GroupSettingRule(
    "role:nobody", allow_everyone_group=False, allow_nobody_group=False, require_system_group=False
)


@pytest.fixture
def session(services: Services) -> Iterator[Session]:
    with services.db.session() as s:
        yield s


def _groups(session: Session, realm: SeededRealm) -> dict[str, int]:
    return {name: g.id for name, g in get_system_groups(session, realm.id).items()}


def _user(session: Session, user_id: int) -> UserProfile:
    user = session.get(UserProfile, user_id)
    assert user is not None
    return user


class Target:
    """Stands in for a channel or realm: anything with a group-setting attribute."""

    def __init__(self, group_id: int) -> None:
        self.can_do_group = group_id


def _parse(
    session: Session, realm: SeededRealm, value: int | AnonymousGroupValue, rule: GroupSettingRule = OPEN
) -> ResolvedValue:
    return parse_group_setting_value(session, realm.id, "can_do_group", value, rule)


def test_named_group_id_is_kept(session: Session, realm: SeededRealm) -> None:
    groups = _groups(session, realm)
    assert _parse(session, realm, groups["role:members"]) == ResolvedValue(group_id=groups["role:members"])


def test_unknown_or_foreign_group_ids_are_invalid(
    session: Session, realm: SeededRealm, services: Services
) -> None:
    from tests.helpers import seed_realm

    other = seed_realm(services)
    foreign = _groups(session, other)["role:members"]
    for group_id in (999_999, foreign):
        with pytest.raises(JsonableError, match=r"^Invalid user group$"):
            _parse(session, realm, group_id)


def test_anonymous_group_id_is_not_a_valid_integer_value(session: Session, realm: SeededRealm) -> None:
    anonymous = store_group_setting_value(
        session, realm.id, ResolvedValue(members=frozenset({realm.hamlet.id}))
    )
    with pytest.raises(JsonableError, match=r"^Invalid user group$"):
        _parse(session, realm, anonymous)


@pytest.mark.parametrize("name", ["role:internet", "role:everyone", "role:nobody"])
def test_system_groups_the_rule_forbids(session: Session, realm: SeededRealm, name: str) -> None:
    groups = _groups(session, realm)
    rule = STRICT if name != "role:internet" else OPEN
    with pytest.raises(JsonableError) as info:
        _parse(session, realm, groups[name], rule)
    assert info.value.msg == f"'can_do_group' setting cannot be set to '{name}' group."


def test_require_system_group(session: Session, realm: SeededRealm) -> None:
    rule = GroupSettingRule("role:members", require_system_group=True)
    anonymous = AnonymousGroupValue(direct_members=[realm.hamlet.id], direct_subgroups=[])
    with pytest.raises(JsonableError, match="must be a system user group"):
        _parse(session, realm, anonymous, rule)


def test_object_values_normalize_to_named_groups(session: Session, realm: SeededRealm) -> None:
    groups = _groups(session, realm)
    lone = AnonymousGroupValue(direct_members=[], direct_subgroups=[groups["role:moderators"]])
    assert _parse(session, realm, lone) == ResolvedValue(group_id=groups["role:moderators"])
    assert _parse(session, realm, AnonymousGroupValue()) == ResolvedValue(group_id=groups["role:nobody"])
    with pytest.raises(JsonableError, match="cannot be set to 'role:nobody'"):
        _parse(session, realm, AnonymousGroupValue(), STRICT)


def test_object_value_checks_members_and_subgroups(session: Session, realm: SeededRealm) -> None:
    groups = _groups(session, realm)
    with pytest.raises(JsonableError, match=r"^Invalid user ID: 999999$"):
        _parse(session, realm, AnonymousGroupValue(direct_members=[realm.hamlet.id, 999_999]))
    with pytest.raises(JsonableError, match=r"^Invalid user group$"):
        _parse(
            session, realm, AnonymousGroupValue(direct_members=[realm.hamlet.id], direct_subgroups=[999_999])
        )
    everyone = AnonymousGroupValue(
        direct_members=[realm.hamlet.id], direct_subgroups=[groups["role:everyone"]]
    )
    with pytest.raises(JsonableError, match="cannot be set to 'role:everyone'"):
        _parse(session, realm, everyone, STRICT)
    value = _parse(
        session,
        realm,
        AnonymousGroupValue(direct_members=[realm.hamlet.id], direct_subgroups=[groups["role:moderators"]]),
    )
    assert value == ResolvedValue(
        members=frozenset({realm.hamlet.id}), subgroups=frozenset({groups["role:moderators"]})
    )


def test_deactivated_users_cannot_be_named_and_are_not_rendered(session: Session, realm: SeededRealm) -> None:
    group_id = store_group_setting_value(
        session, realm.id, ResolvedValue(members=frozenset({realm.hamlet.id, realm.othello.id}))
    )
    group = session.get(UserGroup, group_id)
    assert group is not None and group.name is None
    do_deactivate_user(session, _user(session, realm.othello.id), acting_user=None)
    assert render_group_setting(session, group_id) == {
        "direct_members": [realm.hamlet.id],
        "direct_subgroups": [],
    }
    with pytest.raises(JsonableError, match=f"Invalid user ID: {realm.othello.id}"):
        _parse(session, realm, AnonymousGroupValue(direct_members=[realm.othello.id]))


def test_render_many_at_once(session: Session, realm: SeededRealm) -> None:
    groups = _groups(session, realm)
    anonymous = store_group_setting_value(
        session,
        realm.id,
        ResolvedValue(members=frozenset({realm.iago.id}), subgroups=frozenset({groups["role:owners"]})),
    )
    rendered = render_group_settings(session, [groups["role:members"], anonymous])
    assert rendered == {
        groups["role:members"]: groups["role:members"],
        anonymous: {"direct_members": [realm.iago.id], "direct_subgroups": [groups["role:owners"]]},
    }
    assert render_group_settings(session, []) == {}


def test_set_group_setting_replaces_and_removes_the_old_anonymous_group(
    session: Session, realm: SeededRealm
) -> None:
    groups = _groups(session, realm)
    old = store_group_setting_value(session, realm.id, ResolvedValue(members=frozenset({realm.hamlet.id})))
    target = Target(old)
    same = ResolvedValue(members=frozenset({realm.hamlet.id}))
    assert set_group_setting(session, target, "can_do_group", same, realm.id) is False
    assert target.can_do_group == old
    changed = set_group_setting(
        session, target, "can_do_group", ResolvedValue(group_id=groups["role:members"]), realm.id
    )
    assert changed and target.can_do_group == groups["role:members"]
    assert session.get(UserGroup, old) is None
    left = session.scalars(select(UserGroupMembership).where(UserGroupMembership.user_group_id == old)).all()
    assert left == []


def test_expected_old_value(session: Session, realm: SeededRealm) -> None:
    groups = _groups(session, realm)
    anonymous = store_group_setting_value(
        session, realm.id, ResolvedValue(members=frozenset({realm.hamlet.id}), subgroups=frozenset())
    )
    check_expected_value(session, groups["role:members"], groups["role:members"])
    check_expected_value(session, groups["role:members"], None)
    check_expected_value(
        session, groups["role:members"], AnonymousGroupValue(direct_subgroups=[groups["role:members"]])
    )
    check_expected_value(session, anonymous, AnonymousGroupValue(direct_members=[realm.hamlet.id]))
    for wrong in (groups["role:owners"], AnonymousGroupValue(direct_members=[realm.iago.id])):
        with pytest.raises(JsonableError) as info:
            check_expected_value(session, anonymous, wrong)
        assert info.value.code == "EXPECTATION_MISMATCH"


def test_permission_follows_subgroups_and_members(session: Session, realm: SeededRealm) -> None:
    groups = _groups(session, realm)
    owner, hamlet, guest = (_user(session, u.id) for u in (realm.desdemona, realm.hamlet, realm.polonius))
    assert user_has_permission(session, Requester.of(owner), groups["role:moderators"])
    assert not user_has_permission(session, Requester.of(hamlet), groups["role:moderators"])
    assert user_has_permission(session, Requester.of(guest), groups["role:everyone"])
    assert not user_has_permission(session, Requester.of(guest), groups["role:members"])
    assert not user_has_permission(session, Requester.of(owner), None)
    mixed = store_group_setting_value(
        session,
        realm.id,
        ResolvedValue(members=frozenset({hamlet.id}), subgroups=frozenset({groups["role:administrators"]})),
    )
    assert user_has_permission(session, Requester.of(hamlet), mixed)
    assert user_has_permission(session, Requester.of(owner), mixed)
    assert not user_has_permission(session, Requester.of(guest), mixed)
    assert mixed in groups_containing_user(session, owner.id)
    assert groups["role:internet"] in groups_containing_user(session, owner.id)
    do_deactivate_user(session, hamlet, acting_user=None)
    assert not user_has_permission(session, Requester.of(hamlet), mixed)


def test_creator_default(session: Session, realm: SeededRealm) -> None:
    rule = GroupSettingRule(CREATOR)
    group_id = default_group_setting(session, realm.id, rule, realm.hamlet.id)
    assert render_group_setting(session, group_id) == {
        "direct_members": [realm.hamlet.id],
        "direct_subgroups": [],
    }
    nobody = default_group_setting(session, realm.id, rule, None)
    assert nobody == _groups(session, realm)["role:nobody"]
    assert default_group_setting(session, realm.id, OPEN, None) == _groups(session, realm)["role:everyone"]


def test_groups_containing_user_follows_every_path_up(services: Services, realm: SeededRealm) -> None:
    from palaver.actions.user_groups import NewUserGroup, do_create_user_group

    with services.db.session() as session:
        owner = Requester.of(session.get_one(UserProfile, realm.desdemona.id))
        # Nested user-defined groups that hamlet reaches through his direct one only, one of
        # them by two paths; the role groups nest above role:members.
        inner = do_create_user_group(session, owner, NewUserGroup("inner", "", [realm.hamlet.id]))
        outer = do_create_user_group(session, owner, NewUserGroup("outer", "", [], [inner.id]))
        top = do_create_user_group(session, owner, NewUserGroup("outermost", "", [], [outer.id, inner.id]))
        session.commit()
        system = get_system_groups(session, realm.id)
        expected = {inner.id, outer.id, top.id} | {
            system[name].id for name in ("role:members", "role:everyone", "role:internet")
        }
        found = groups_containing_user(session, realm.hamlet.id)
        assert expected <= found
        assert system["role:administrators"].id not in found
        assert not {inner.id, outer.id, top.id} & groups_containing_user(session, realm.othello.id)
