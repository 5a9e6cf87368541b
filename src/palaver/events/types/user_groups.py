"""Events about user groups: creation, edits, deactivation, members and subgroups."""

from __future__ import annotations

from typing import Literal

from palaver.events.types.base import Event, Payload, omit_none

# group settings (who may do something: a user group's ID, or an anonymous group) -------------


class GroupSettingObject(Payload):
    direct_members: list[int]
    direct_subgroups: list[int]


GroupSettingPayload = int | GroupSettingObject


# user_group membership (system groups follow role changes) -----------------------------


class UserGroupAddMembers(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["add_members"] = "add_members"
    group_id: int
    user_ids: list[int]


class UserGroupRemoveMembers(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["remove_members"] = "remove_members"
    group_id: int
    user_ids: list[int]


# user_group (creation, edits, deactivation, subgroups) --------------------------------------


class UserGroupPayload(Payload):
    id: int
    name: str
    description: str
    members: list[int]
    direct_subgroup_ids: list[int]
    is_system_group: bool
    creator_id: int | None
    date_created: int | None
    deactivated: bool
    can_add_members_group: GroupSettingPayload
    can_join_group: GroupSettingPayload
    can_leave_group: GroupSettingPayload
    can_manage_group: GroupSettingPayload
    can_mention_group: GroupSettingPayload
    can_remove_members_group: GroupSettingPayload


class UserGroupAdd(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["add"] = "add"
    group: UserGroupPayload


class UserGroupChange(Payload):
    """The properties that changed; the others are absent."""

    name: str | None = omit_none()
    description: str | None = omit_none()
    deactivated: bool | None = omit_none()
    can_add_members_group: GroupSettingPayload | None = omit_none()
    can_join_group: GroupSettingPayload | None = omit_none()
    can_leave_group: GroupSettingPayload | None = omit_none()
    can_manage_group: GroupSettingPayload | None = omit_none()
    can_mention_group: GroupSettingPayload | None = omit_none()
    can_remove_members_group: GroupSettingPayload | None = omit_none()


class UserGroupUpdate(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["update"] = "update"
    group_id: int
    data: UserGroupChange
    # Set on edits of a group that is already deactivated, for the queue layer alone: clients
    # without include_deactivated_groups do not know the group, so they must not get the
    # edit. Never delivered (events/tailoring.user_group_event_for_client strips it).
    group_is_deactivated: Literal[True] | None = omit_none()


class UserGroupRemove(Event):
    """A group was deactivated (clients without include_deactivated_groups drop it)."""

    type: Literal["user_group"] = "user_group"
    op: Literal["remove"] = "remove"
    group_id: int


class UserGroupAddSubgroups(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["add_subgroups"] = "add_subgroups"
    group_id: int
    direct_subgroup_ids: list[int]


class UserGroupRemoveSubgroups(Event):
    type: Literal["user_group"] = "user_group"
    op: Literal["remove_subgroups"] = "remove_subgroups"
    group_id: int
    direct_subgroup_ids: list[int]
