"""Group reads: system groups, recursive membership, and group-setting checks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import get_row
from palaver.lib.realm import deactivated_user_ids
from palaver.models import GroupGroupMembership, Role, UserGroup, UserGroupMembership, UserProfile
from palaver.models.channels import STREAM_GROUP_SETTINGS, Stream
from palaver.models.groups import GROUP_PERMISSION_SETTINGS
from palaver.models.names import name_key
from palaver.models.realm import REALM_GROUP_SETTINGS, Realm
from palaver.models.requester import Requester

if TYPE_CHECKING:
    pass

# Each system group contains the next as a subgroup, so membership flows from owners
# outwards: owners are administrators, administrators are moderators, and so on.
SYSTEM_GROUP_CHAIN = (
    "role:internet",
    "role:everyone",
    "role:members",
    "role:fullmembers",
    "role:moderators",
    "role:administrators",
    "role:owners",
)
NOBODY = "role:nobody"
SYSTEM_GROUP_NAMES = (*SYSTEM_GROUP_CHAIN, NOBODY)

SYSTEM_GROUP_DESCRIPTIONS = {
    "role:internet": "Everyone on the Internet",
    "role:everyone": "Everyone including guests",
    "role:members": "Everyone except guests",
    "role:fullmembers": "Members of this organization, not including new accounts and guests",
    "role:moderators": "Moderators of this organization, including administrators",
    "role:administrators": "Administrators of this organization, including owners",
    "role:owners": "Owners of this organization",
    "role:nobody": "Nobody",
}


def direct_system_groups_for(role: int, is_full_member: bool) -> list[str]:
    """System groups a user of this role belongs to directly (not through subgroups)."""
    if role == Role.OWNER:
        return ["role:owners"]
    if role == Role.ADMINISTRATOR:
        return ["role:administrators"]
    if role == Role.MODERATOR:
        return ["role:moderators"]
    if role == Role.MEMBER:
        return ["role:members", "role:fullmembers"] if is_full_member else ["role:members"]
    return ["role:everyone"]


def get_system_groups(session: Session, realm_id: int) -> dict[str, UserGroup]:
    groups = session.scalars(
        select(UserGroup).where(UserGroup.realm_id == realm_id, UserGroup.is_system_group)
    )
    return {g.name: g for g in groups if g.name is not None}


def recursive_subgroup_ids(session: Session, group_ids: Iterable[int]) -> set[int]:
    """The groups and every group nested below them (cycles are refused on write)."""
    seen = set(group_ids)
    frontier = set(seen)
    while frontier:
        children = set(
            session.scalars(
                select(GroupGroupMembership.subgroup_id).where(
                    GroupGroupMembership.supergroup_id.in_(frontier)
                )
            )
        )
        frontier = children - seen
        seen |= frontier
    return seen


def recursive_member_ids(session: Session, group_id: int, *, active_only: bool = True) -> set[int]:
    groups = recursive_subgroup_ids(session, [group_id])
    query = (
        select(UserGroupMembership.user_profile_id)
        .join(UserProfile, UserProfile.id == UserGroupMembership.user_profile_id)
        .where(UserGroupMembership.user_group_id.in_(groups))
    )
    if active_only:
        query = query.where(UserProfile.is_active)
    return set(session.scalars(query))


def is_user_in_group(session: Session, user_id: int, group_id: int | None) -> bool:
    if group_id is None:
        return False
    groups = recursive_subgroup_ids(session, [group_id])
    found = session.scalar(
        select(UserGroupMembership.user_profile_id).where(
            UserGroupMembership.user_group_id.in_(groups),
            UserGroupMembership.user_profile_id == user_id,
        )
    )
    return found is not None


# Named groups as clients see them, and access for reading and editing ------------------------

MAX_GROUP_NAME_LENGTH = 100
MAX_GROUP_DESCRIPTION_LENGTH = 1024
# Prefixes that mention syntax and system groups give a meaning of their own.
INVALID_NAME_PREFIXES = ("@", "role:", "user:", "stream:", "channel:")


def check_group_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise JsonableError("User group name can't be empty!")
    if len(name) > MAX_GROUP_NAME_LENGTH:
        raise JsonableError(f"User group name cannot exceed {MAX_GROUP_NAME_LENGTH} characters.")
    for prefix in INVALID_NAME_PREFIXES:
        if name.startswith(prefix):
            raise JsonableError(f"User group name cannot start with '{prefix}'.")
    return name


def check_group_description(description: str) -> str:
    if len(description) > MAX_GROUP_DESCRIPTION_LENGTH:
        raise JsonableError(
            f"User group description cannot exceed {MAX_GROUP_DESCRIPTION_LENGTH} characters."
        )
    return description


def get_named_group_by_name(session: Session, realm_id: int, name: str) -> UserGroup | None:
    """The group whose name equals ``name`` regardless of case (the unique index's rule)."""
    return session.scalar(
        select(UserGroup).where(UserGroup.realm_id == realm_id, UserGroup.name_key == name_key(name))
    )


def get_named_group(session: Session, realm_id: int, group_id: int) -> UserGroup:
    """A named group of the realm (deactivated ones included); anything else is invalid."""
    group = get_row(session, UserGroup, group_id)
    if group is None or group.realm_id != realm_id or group.name is None:
        raise JsonableError("Invalid user group")
    return group


def direct_member_ids(session: Session, group_ids: Iterable[int]) -> dict[int, list[int]]:
    """Active direct members of each group (deactivated users are left out everywhere)."""
    ids = list(group_ids)
    members: dict[int, list[int]] = {gid: [] for gid in ids}
    if not ids:
        return members
    # The role groups of a large organization list every user.
    inactive = deactivated_user_ids(session, select(UserGroup.realm_id).where(UserGroup.id.in_(ids)))
    # Through the connection, row by row: ORM result rows for 20,000 memberships cost
    # three times as much, and holding them all at once wakes the garbage collector.
    rows = session.connection().execute(
        select(UserGroupMembership.user_group_id, UserGroupMembership.user_profile_id).where(
            UserGroupMembership.user_group_id.in_(ids)
        )
    )
    for group_id, user_id in rows:
        if user_id not in inactive:
            members[group_id].append(user_id)
    for group_members in members.values():
        group_members.sort()
    return members


def direct_subgroup_ids(session: Session, group_ids: Iterable[int]) -> dict[int, list[int]]:
    ids = list(group_ids)
    subgroups: dict[int, list[int]] = {gid: [] for gid in ids}
    if not ids:
        return subgroups
    rows = session.execute(
        select(GroupGroupMembership.supergroup_id, GroupGroupMembership.subgroup_id)
        .where(GroupGroupMembership.supergroup_id.in_(ids))
        .order_by(GroupGroupMembership.subgroup_id)
    )
    for group_id, subgroup_id in rows:
        subgroups[group_id].append(subgroup_id)
    return subgroups


def get_named_groups(session: Session, realm_id: int, *, include_deactivated: bool) -> list[UserGroup]:
    query = select(UserGroup).where(UserGroup.realm_id == realm_id, UserGroup.name.is_not(None))
    if not include_deactivated:
        query = query.where(UserGroup.deactivated.is_(False))
    return list(session.scalars(query.order_by(UserGroup.id)))


# Permissions on named groups ----------------------------------------------------------------

INSUFFICIENT_PERMISSION = "Insufficient permission"


def _holds(session: Session, user: Requester, group_id: int | None) -> bool:
    return user.is_active and is_user_in_group(session, user.user_id, group_id)


def can_manage_group(session: Session, user: Requester, group: UserGroup) -> bool:
    """Managing covers every change; the realm may grant it for all groups at once."""
    return _holds(session, user, group.can_manage_group) or _holds(
        session, user, realm_settings(session, user.realm_id).can_manage_all_groups
    )


def check_group_permission(session: Session, user: Requester, group: UserGroup, *settings: str) -> None:
    """Allow the change if the user holds any of the group's ``settings`` or may manage it.

    System groups follow roles alone, so nobody changes them through the API.
    """
    if group.is_system_group:
        raise JsonableError(INSUFFICIENT_PERMISSION)
    if any(_holds(session, user, getattr(group, s)) for s in settings) or can_manage_group(
        session, user, group
    ):
        return
    raise JsonableError(INSUFFICIENT_PERMISSION)


def group_objections(session: Session, group: UserGroup) -> list[dict[str, Any]]:
    """Settings that would lose their meaning if the group were deactivated.

    A setting uses the group when it names it, or names an anonymous group that has it as a
    subgroup.
    """
    anonymous_parents = set(
        session.scalars(
            select(GroupGroupMembership.supergroup_id)
            .join(UserGroup, UserGroup.id == GroupGroupMembership.supergroup_id)
            .where(GroupGroupMembership.subgroup_id == group.id, UserGroup.name.is_(None))
        )
    )
    using = anonymous_parents | {group.id}
    objections: list[dict[str, Any]] = []
    realm = session.get(Realm, group.realm_id)
    assert realm is not None
    realm_settings = [s for s in REALM_GROUP_SETTINGS if getattr(realm, s) in using]
    if realm_settings:
        objections.append({"type": "realm", "settings": realm_settings})
    streams = session.scalars(
        select(Stream)
        .where(Stream.realm_id == group.realm_id, Stream.deactivated.is_(False))
        .order_by(Stream.id)
    )
    for stream in streams:
        settings = [s for s in STREAM_GROUP_SETTINGS if getattr(stream, s) in using]
        if settings:
            objections.append({"type": "channel", "channel_id": stream.id, "settings": settings})
    for other in get_named_groups(session, group.realm_id, include_deactivated=False):
        if other.id == group.id:
            continue
        settings = [s for s in GROUP_PERMISSION_SETTINGS if getattr(other, s) in using]
        if settings:
            objections.append({"type": "user_group", "group_id": other.id, "settings": settings})
    return objections
