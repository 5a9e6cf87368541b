"""Group-setting values: who holds a permission, as a user group or a set of users and groups.

A value arrives as a group ID or as ``{"direct_members": [...], "direct_subgroups": [...]}``.
Settings are stored as one user_group ID: a named group as it is, an object as an anonymous
group (``name`` None) made for that one setting. Clients get back the ID of a named group, or
the object with deactivated members left out.

Storing a value (making its anonymous group) is a write: ``actions/group_settings.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.cache import known_system_group_id, user_group_ids, user_realm_id
from palaver.lib.exceptions import JsonableError
from palaver.lib.user_groups import NOBODY
from palaver.models import GroupGroupMembership, UserGroup, UserGroupMembership, UserProfile
from palaver.models.requester import Requester


class AnonymousGroupValue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    direct_members: list[int] = Field(default_factory=list)
    direct_subgroups: list[int] = Field(default_factory=list)


GroupSettingValue = int | AnonymousGroupValue
RenderedGroupSetting = int | dict[str, list[int]]


class GroupSettingUpdate(BaseModel):
    """The PATCH form of a group setting: the new value and, optionally, the expected old one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    new: GroupSettingValue
    old: GroupSettingValue | None = None


# A default naming the user who creates the object (a channel's first administrator).
CREATOR = "creator"


@dataclass(frozen=True)
class GroupSettingRule:
    """Which values a setting accepts, and what it holds for a new object."""

    default: str
    allow_internet_group: bool = False
    allow_everyone_group: bool = True
    allow_nobody_group: bool = True
    require_system_group: bool = False


@dataclass(frozen=True)
class ResolvedValue:
    """A validated value: a named group, or the members and subgroups of an anonymous one."""

    group_id: int | None = None
    members: frozenset[int] = frozenset()
    subgroups: frozenset[int] = frozenset()


def _invalid_group() -> JsonableError:
    return JsonableError("Invalid user group")


def _named_group(session: Session, realm_id: int, group_id: int) -> UserGroup:
    group = session.get(UserGroup, group_id)
    if group is None or group.realm_id != realm_id or group.name is None or group.deactivated:
        raise _invalid_group()
    return group


def _check_named_group(setting_name: str, group: UserGroup, rule: GroupSettingRule) -> None:
    forbidden = {
        "role:internet": not rule.allow_internet_group,
        "role:everyone": not rule.allow_everyone_group,
        NOBODY: not rule.allow_nobody_group,
    }
    if group.is_system_group and forbidden.get(group.name or ""):
        raise JsonableError(f"'{setting_name}' setting cannot be set to '{group.name}' group.")
    if rule.require_system_group and not group.is_system_group:
        raise JsonableError(f"'{setting_name}' must be a system user group.")


def system_group_id(session: Session, realm_id: int, name: str) -> int:
    # Creating a channel asks for several, after its first anonymous group was written.
    known = known_system_group_id(session, realm_id, name)
    if known is not None:
        return known
    group_id = session.scalar(
        select(UserGroup.id).where(
            UserGroup.realm_id == realm_id, UserGroup.is_system_group, UserGroup.name == name
        )
    )
    assert group_id is not None, f"realm {realm_id} lacks system group {name}"
    return group_id


def parse_group_setting_value(
    session: Session, realm_id: int, setting_name: str, value: GroupSettingValue, rule: GroupSettingRule
) -> ResolvedValue:
    """Validate a value for one setting; a lone subgroup or an empty object become named groups."""
    if isinstance(value, AnonymousGroupValue):
        members = frozenset(value.direct_members)
        subgroups = frozenset(value.direct_subgroups)
        if not members and len(subgroups) == 1:
            value = next(iter(subgroups))
        elif not members and not subgroups:
            value = system_group_id(session, realm_id, NOBODY)
        else:
            if rule.require_system_group:
                raise JsonableError(f"'{setting_name}' must be a system user group.")
            for group_id in sorted(subgroups):
                group = _named_group(session, realm_id, group_id)
                # A subgroup holding everyone makes the whole value hold everyone.
                if group.name != NOBODY:
                    _check_named_group(setting_name, group, rule)
            found = set(
                session.scalars(
                    select(UserProfile.id).where(
                        UserProfile.id.in_(members), UserProfile.realm_id == realm_id, UserProfile.is_active
                    )
                )
            )
            missing = sorted(members - found)
            if missing:
                raise JsonableError(f"Invalid user ID: {missing[0]}")
            return ResolvedValue(members=members, subgroups=subgroups)
    group = _named_group(session, realm_id, value)
    _check_named_group(setting_name, group, rule)
    return ResolvedValue(group_id=group.id)


def _anonymous_contents(session: Session, group_id: int) -> tuple[frozenset[int], frozenset[int]]:
    members = session.scalars(
        select(UserGroupMembership.user_profile_id)
        .join(UserProfile, UserProfile.id == UserGroupMembership.user_profile_id)
        .where(UserGroupMembership.user_group_id == group_id, UserProfile.is_active)
    )
    subgroups = session.scalars(
        select(GroupGroupMembership.subgroup_id).where(GroupGroupMembership.supergroup_id == group_id)
    )
    return frozenset(members), frozenset(subgroups)


def current_value(session: Session, group_id: int) -> ResolvedValue:
    group = session.get(UserGroup, group_id)
    assert group is not None
    if group.name is not None:
        return ResolvedValue(group_id=group_id)
    members, subgroups = _anonymous_contents(session, group_id)
    return ResolvedValue(members=members, subgroups=subgroups)


def _same_value(expected: GroupSettingValue, current: ResolvedValue) -> bool:
    if isinstance(expected, AnonymousGroupValue):
        members, subgroups = frozenset(expected.direct_members), frozenset(expected.direct_subgroups)
        if members or len(subgroups) != 1:
            return current.group_id is None and (members, subgroups) == (current.members, current.subgroups)
        expected = next(iter(subgroups))
    return current.group_id == expected


def check_expected_value(session: Session, group_id: int, expected: GroupSettingValue | None) -> None:
    """Refuse an update whose ``old`` value no longer matches, so concurrent edits are not lost."""
    if expected is not None and not _same_value(expected, current_value(session, group_id)):
        raise JsonableError("'old' value does not match the expected value.", code="EXPECTATION_MISMATCH")


def render_group_settings(session: Session, group_ids: Iterable[int]) -> dict[int, RenderedGroupSetting]:
    """How clients see each setting value, for many at once (a list of channels)."""
    ids = set(group_ids)
    if not ids:
        return {}
    names = session.execute(select(UserGroup.id, UserGroup.name).where(UserGroup.id.in_(ids)))
    named = {group_id: name for group_id, name in names}
    anonymous = {gid for gid, name in named.items() if name is None}
    members: dict[int, list[int]] = {gid: [] for gid in anonymous}
    subgroups: dict[int, list[int]] = {gid: [] for gid in anonymous}
    if anonymous:
        # Two queries, not a join: joined, SQLite's planner scans every user and probes the
        # memberships with the whole IN list per user (seconds at 10,000 users and 1,000
        # channels' settings); by group first, it reads only these groups' rows.
        rows = session.execute(
            select(UserGroupMembership.user_group_id, UserGroupMembership.user_profile_id).where(
                UserGroupMembership.user_group_id.in_(anonymous)
            )
        ).all()
        member_ids = {uid for _, uid in rows}
        active: set[int] = set()
        if member_ids:
            query = select(UserProfile.id).where(UserProfile.id.in_(member_ids), UserProfile.is_active)
            active = set(session.scalars(query))
        for gid, uid in rows:
            if uid in active:
                members[gid].append(uid)
        for gid, sub in session.execute(
            select(GroupGroupMembership.supergroup_id, GroupGroupMembership.subgroup_id).where(
                GroupGroupMembership.supergroup_id.in_(anonymous)
            )
        ):
            subgroups[gid].append(sub)
    return {
        gid: {"direct_members": sorted(members[gid]), "direct_subgroups": sorted(subgroups[gid])}
        if gid in anonymous
        else gid
        for gid in ids
    }


def render_group_setting(session: Session, group_id: int) -> RenderedGroupSetting:
    return render_group_settings(session, [group_id])[group_id]


def groups_containing_user(session: Session, user_id: int) -> set[int]:
    """Every group the user belongs to, directly or through subgroups, for checking many settings.

    Read from the realm-state cache (``cache/``): sending and fetching messages ask
    this on every request, and the role groups alone nest eight deep for a member.
    """
    realm_id = user_realm_id(session, user_id)
    return set() if realm_id is None else set(user_group_ids(session, realm_id, user_id))


def user_has_permission(session: Session, user: Requester, group_id: int | None) -> bool:
    """Whether an active user holds the permission a setting grants."""
    if group_id is None or not user.is_active:
        return False
    return group_id in user_group_ids(session, user.realm_id, user.user_id)
