"""Writes to named user groups: creation, edits, members, subgroups, deactivation.

Every change is announced to all active users of the realm, as each of them keeps the
whole list of groups (``realm_user_groups``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from palaver.actions.group_settings import default_group_setting, set_group_setting, store_group_setting_value
from palaver.cache import realm_settings
from palaver.db.locks import lock_row
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import (
    CREATOR,
    GroupSettingRule,
    GroupSettingUpdate,
    GroupSettingValue,
    ResolvedValue,
    check_expected_value,
    parse_group_setting_value,
    render_group_setting,
    user_has_permission,
)
from palaver.lib.ids import get_row, storable_ids
from palaver.lib.realm import active_user_ids
from palaver.lib.user_group_format import format_user_groups
from palaver.lib.user_groups import (
    NOBODY,
    check_group_description,
    check_group_name,
    check_group_permission,
    direct_member_ids,
    direct_subgroup_ids,
    get_named_group,
    get_named_group_by_name,
    get_system_groups,
    group_objections,
    recursive_subgroup_ids,
)
from palaver.models import GroupGroupMembership, UserGroup, UserGroupMembership, UserProfile
from palaver.models.groups import GROUP_PERMISSION_SETTINGS
from palaver.models.requester import Requester
from palaver.timeutil import utcnow

# What each setting of a new group holds, and which values it refuses.
USER_GROUP_RULES: dict[str, GroupSettingRule] = {
    "can_add_members_group": GroupSettingRule(NOBODY),
    "can_join_group": GroupSettingRule(NOBODY),
    "can_leave_group": GroupSettingRule("role:everyone"),
    "can_manage_group": GroupSettingRule(CREATOR, allow_everyone_group=False),
    "can_mention_group": GroupSettingRule("role:everyone"),
    "can_remove_members_group": GroupSettingRule(NOBODY),
}
assert tuple(USER_GROUP_RULES) == GROUP_PERMISSION_SETTINGS

# System groups a setting may not name, beyond what GroupSettingRule expresses: mentioning
# only the owners would let a group's mention reach nobody else's attention.
_FORBIDDEN_SYSTEM_GROUPS = {"can_mention_group": frozenset({"role:owners"})}


@dataclass(frozen=True)
class NewUserGroup:
    name: str
    description: str
    members: list[int]
    subgroups: list[int] = field(default_factory=list)
    group_settings: dict[str, GroupSettingValue] = field(default_factory=dict)


@dataclass(frozen=True)
class UserGroupChanges:
    name: str | None = None
    description: str | None = None
    group_settings: dict[str, GroupSettingUpdate] = field(default_factory=dict)


def _recipients(session: Session, realm_id: int) -> list[int]:
    return active_user_ids(session, realm_id)


def _group_payload(session: Session, group: UserGroup) -> ev.UserGroupPayload:
    (formatted,) = format_user_groups(session, [group])
    return ev.UserGroupPayload(**formatted)


def _check_users(session: Session, realm_id: int, user_ids: Iterable[int]) -> list[int]:
    """Active users of the realm, in the order given; the first unknown one is named."""
    wanted = list(dict.fromkeys(user_ids))
    valid = storable_ids(wanted)
    found = set(
        session.scalars(
            select(UserProfile.id).where(
                UserProfile.id.in_(valid), UserProfile.realm_id == realm_id, UserProfile.is_active
            )
        )
    )
    for user_id in wanted:
        if user_id not in found:
            raise JsonableError(f"Invalid user ID: {user_id}")
    return wanted


def _check_subgroups(session: Session, realm_id: int, group_ids: Iterable[int]) -> list[int]:
    wanted = list(dict.fromkeys(group_ids))
    valid = storable_ids(wanted)
    groups = {
        g.id: g
        for g in session.scalars(
            select(UserGroup).where(
                UserGroup.id.in_(valid), UserGroup.realm_id == realm_id, UserGroup.name.is_not(None)
            )
        )
    }
    for group_id in wanted:
        if group_id not in groups:
            raise JsonableError(f"Invalid user group ID: {group_id}")
        if groups[group_id].deactivated:
            raise JsonableError(f"User group {group_id} is deactivated.")
    return wanted


def _resolve_setting(
    session: Session, realm_id: int, setting: str, value: GroupSettingValue
) -> ResolvedValue:
    resolved = parse_group_setting_value(session, realm_id, setting, value, USER_GROUP_RULES[setting])
    forbidden = _FORBIDDEN_SYSTEM_GROUPS.get(setting, frozenset())
    if forbidden:
        systems = get_system_groups(session, realm_id)
        named = [resolved.group_id] if resolved.group_id is not None else sorted(resolved.subgroups)
        for name in sorted(forbidden):
            if systems[name].id in named:
                raise JsonableError(f"'{setting}' setting cannot be set to '{name}' group.")
    return resolved


def _check_name_free(session: Session, realm_id: int, name: str, group_id: int | None = None) -> None:
    existing = get_named_group_by_name(session, realm_id, name)
    if existing is not None and existing.id != group_id:
        raise JsonableError(f"User group '{name}' already exists.")


def do_create_user_group(session: Session, creator: Requester, new: NewUserGroup) -> UserGroup:
    name = check_group_name(new.name)
    description = check_group_description(new.description)
    realm_id = creator.realm_id
    with transaction(session) as tx:
        if not user_has_permission(session, creator, realm_settings(session, realm_id).can_create_groups):
            raise JsonableError("Insufficient permission")
        _check_name_free(session, realm_id, name)
        members = _check_users(session, realm_id, new.members)
        # Any group may be nested in a new one: it cannot be part of a cycle yet.
        subgroups = _check_subgroups(session, realm_id, new.subgroups)
        resolved = {
            setting: _resolve_setting(session, realm_id, setting, value)
            for setting, value in new.group_settings.items()
        }
        group = UserGroup(
            realm_id=realm_id,
            name=name,
            description=description,
            is_system_group=False,
            creator_id=creator.user_id,
            date_created=utcnow(),
        )
        for setting, rule in USER_GROUP_RULES.items():
            if setting in resolved:
                group_id = store_group_setting_value(session, realm_id, resolved[setting])
            else:
                group_id = default_group_setting(session, realm_id, rule, creator.user_id)
            setattr(group, setting, group_id)
        session.add(group)
        session.flush()
        session.add_all(UserGroupMembership(user_group_id=group.id, user_profile_id=u) for u in members)
        session.add_all(GroupGroupMembership(supergroup_id=group.id, subgroup_id=g) for g in subgroups)
        session.flush()
        tx.send_event(
            realm_id, ev.UserGroupAdd(group=_group_payload(session, group)), _recipients(session, realm_id)
        )
    return group


def _rendered(session: Session, group_id: int) -> ev.GroupSettingPayload:
    value = render_group_setting(session, group_id)
    return value if isinstance(value, int) else ev.GroupSettingObject(**value)


def do_update_user_group(
    session: Session, acting_user: Requester, group_id: int, changes: UserGroupChanges
) -> None:
    if changes.name is None and changes.description is None and not changes.group_settings:
        raise JsonableError("No new data supplied")
    with transaction(session) as tx:
        group = get_named_group(session, acting_user.realm_id, group_id)
        tx.lock(group)
        check_group_permission(session, acting_user, group)
        data: dict[str, Any] = {}
        if changes.name is not None:
            name = check_group_name(changes.name)
            if name != group.name:
                _check_name_free(session, group.realm_id, name, group.id)
                group.name = data["name"] = name
        if changes.description is not None:
            description = check_group_description(changes.description)
            if description != group.description:
                group.description = data["description"] = description
        for setting, update in changes.group_settings.items():
            current: int = getattr(group, setting)
            check_expected_value(session, current, update.old)
            resolved = _resolve_setting(session, group.realm_id, setting, update.new)
            if set_group_setting(session, group, setting, resolved, group.realm_id):
                data[setting] = _rendered(session, getattr(group, setting))
        session.flush()
        if data:
            event = ev.UserGroupUpdate(
                group_id=group.id,
                data=ev.UserGroupChange(**data),
                group_is_deactivated=True if group.deactivated else None,
            )
            tx.send_event(group.realm_id, event, _recipients(session, group.realm_id))


def _access_active_group_for_update(session: Session, user: Requester, group_id: int) -> UserGroup:
    group = get_named_group(session, user.realm_id, group_id)
    lock_row(session, group)
    if group.deactivated:
        raise JsonableError("User group is deactivated.")
    return group


def _send_membership_events(
    tx: Tx, session: Session, group: UserGroup, added: list[int], removed: list[int]
) -> None:
    recipients = _recipients(session, group.realm_id)
    if removed:
        tx.send_event(
            group.realm_id, ev.UserGroupRemoveMembers(group_id=group.id, user_ids=sorted(removed)), recipients
        )
    if added:
        tx.send_event(
            group.realm_id, ev.UserGroupAddMembers(group_id=group.id, user_ids=sorted(added)), recipients
        )


def do_set_provider_group_membership(
    session: Session, group: UserGroup, user_id: int, *, member: bool
) -> bool:
    """Put the user in the group or take them out, as their sign-in provider's groups say
    (``[auth.oidc.NAME]`` ``group_map``): the server's decision, not a member's, so the
    group's permission settings do not apply. Whether anything changed."""
    with transaction(session) as tx:
        current = user_id in direct_member_ids(session, [group.id])[group.id]
        if current == member or group.deactivated:
            return False
        if member:
            session.add(UserGroupMembership(user_group_id=group.id, user_profile_id=user_id))
            session.flush()
            _send_membership_events(tx, session, group, [user_id], [])
        else:
            session.execute(
                delete(UserGroupMembership).where(
                    UserGroupMembership.user_group_id == group.id,
                    UserGroupMembership.user_profile_id == user_id,
                )
            )
            _send_membership_events(tx, session, group, [], [user_id])
    return True


def do_update_user_group_members(
    session: Session,
    acting_user: Requester,
    group_id: int,
    *,
    add: list[int],
    delete_ids: list[int],
    add_subgroups: list[int],
    delete_subgroups: list[int],
) -> None:
    """Change members and subgroups together: all of it applies, or none."""
    with transaction(session) as tx:
        group = _access_active_group_for_update(session, acting_user, group_id)
        realm_id = group.realm_id
        current = set(direct_member_ids(session, [group.id])[group.id])
        if delete_ids:
            removed = _check_users(session, realm_id, delete_ids)
            # Leaving is a permission of its own; removing others is another.
            if removed == [acting_user.user_id]:
                check_group_permission(
                    session, acting_user, group, "can_leave_group", "can_remove_members_group"
                )
            else:
                check_group_permission(session, acting_user, group, "can_remove_members_group")
            for user_id in removed:
                if user_id not in current:
                    raise JsonableError(f"There is no member '{user_id}' in this user group")
            session.execute(
                delete(UserGroupMembership).where(
                    UserGroupMembership.user_group_id == group.id,
                    UserGroupMembership.user_profile_id.in_(removed),
                )
            )
            _send_membership_events(tx, session, group, [], removed)
        if add:
            added = _check_users(session, realm_id, add)
            if added == [acting_user.user_id]:
                check_group_permission(session, acting_user, group, "can_join_group", "can_add_members_group")
            else:
                check_group_permission(session, acting_user, group, "can_add_members_group")
            for user_id in added:
                if user_id in current and user_id not in (delete_ids or []):
                    raise JsonableError(f"User {user_id} is already a member of this group")
            session.add_all(UserGroupMembership(user_group_id=group.id, user_profile_id=u) for u in added)
            session.flush()
            _send_membership_events(tx, session, group, added, [])
        if delete_subgroups:
            _remove_subgroups(tx, session, acting_user, group, delete_subgroups)
        if add_subgroups:
            _add_subgroups(tx, session, acting_user, group, add_subgroups)


def _add_subgroups(tx: Tx, session: Session, user: Requester, group: UserGroup, ids: list[int]) -> None:
    check_group_permission(session, user, group, "can_add_members_group")
    subgroups = _check_subgroups(session, group.realm_id, ids)
    existing = set(direct_subgroup_ids(session, [group.id])[group.id])
    for subgroup_id in subgroups:
        if subgroup_id in existing:
            raise JsonableError(f"User group {subgroup_id} is already a subgroup of this group.")
    # A group may not contain itself, however deep: membership would have no end.
    if group.id in recursive_subgroup_ids(session, subgroups):
        raise JsonableError(f"User group {group.id} is already a subgroup of one of the passed subgroups.")
    session.add_all(GroupGroupMembership(supergroup_id=group.id, subgroup_id=g) for g in subgroups)
    session.flush()
    tx.send_event(
        group.realm_id,
        ev.UserGroupAddSubgroups(group_id=group.id, direct_subgroup_ids=sorted(subgroups)),
        _recipients(session, group.realm_id),
    )


def _remove_subgroups(tx: Tx, session: Session, user: Requester, group: UserGroup, ids: list[int]) -> None:
    check_group_permission(session, user, group, "can_remove_members_group")
    wanted = list(dict.fromkeys(ids))
    existing = set(direct_subgroup_ids(session, [group.id])[group.id])
    for subgroup_id in wanted:
        if subgroup_id not in existing:
            # Unknown and foreign IDs read the same as groups that are simply not nested here.
            if get_row(session, UserGroup, subgroup_id) is None:
                raise JsonableError(f"Invalid user group ID: {subgroup_id}")
            raise JsonableError(f"User group {subgroup_id} is not a subgroup of this group.")
    session.execute(
        delete(GroupGroupMembership).where(
            GroupGroupMembership.supergroup_id == group.id, GroupGroupMembership.subgroup_id.in_(wanted)
        )
    )
    tx.send_event(
        group.realm_id,
        ev.UserGroupRemoveSubgroups(group_id=group.id, direct_subgroup_ids=sorted(wanted)),
        _recipients(session, group.realm_id),
    )


def do_update_user_group_subgroups(
    session: Session, acting_user: Requester, group_id: int, *, add: list[int], delete_ids: list[int]
) -> None:
    with transaction(session) as tx:
        group = _access_active_group_for_update(session, acting_user, group_id)
        if delete_ids:
            _remove_subgroups(tx, session, acting_user, group, delete_ids)
        if add:
            _add_subgroups(tx, session, acting_user, group, add)


class CannotDeactivateGroupInUseError(JsonableError):
    code = "CANNOT_DEACTIVATE_GROUP_IN_USE"

    def __init__(self, objections: list[dict[str, Any]]) -> None:
        super().__init__("Cannot deactivate user group in use.", objections=objections)


def do_deactivate_user_group(session: Session, acting_user: Requester, group_id: int) -> None:
    with transaction(session) as tx:
        group = _access_active_group_for_update(session, acting_user, group_id)
        check_group_permission(session, acting_user, group)
        objections = group_objections(session, group)
        if objections:
            raise CannotDeactivateGroupInUseError(objections)
        group.deactivated = True
        session.flush()
        # The queue layer turns this into a remove event for clients without the
        # include_deactivated_groups capability (events/tailoring.user_group_event_for_client).
        tx.send_event(
            group.realm_id,
            ev.UserGroupUpdate(group_id=group.id, data=ev.UserGroupChange(deactivated=True)),
            _recipients(session, group.realm_id),
        )
