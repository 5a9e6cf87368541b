"""User groups: create, list, edit, members, subgroups, deactivate."""

from __future__ import annotations

from typing import Any

from palaver.actions.user_groups import (
    NewUserGroup,
    UserGroupChanges,
    do_create_user_group,
    do_deactivate_user_group,
    do_update_user_group,
    do_update_user_group_members,
    do_update_user_group_subgroups,
)
from palaver.api.context import Ctx
from palaver.api.params import with_setting_params
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import GroupSettingUpdate, GroupSettingValue
from palaver.lib.user_group_format import format_user_groups
from palaver.lib.user_groups import (
    direct_member_ids,
    direct_subgroup_ids,
    get_named_group,
    get_named_groups,
    recursive_member_ids,
    recursive_subgroup_ids,
)
from palaver.lib.users import access_user_by_id
from palaver.models.groups import GROUP_PERMISSION_SETTINGS

router = ApiRouter()


def _given(settings: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in settings.items() if value is not None}


def _no_guests(ctx: Ctx) -> None:
    if ctx.requester.is_guest:
        raise JsonableError("Not allowed for guest users")


@router.post("/user_groups/create")
@with_setting_params(GROUP_PERMISSION_SETTINGS, GroupSettingValue)
def create_user_group(
    ctx: Ctx,
    name: str,
    description: str,
    members: list[int],
    subgroups: list[int] | None = None,
    **group_settings: GroupSettingValue | None,
) -> JsonDict:
    new = NewUserGroup(
        name=name,
        description=description,
        members=members,
        subgroups=subgroups or [],
        group_settings=_given(group_settings),
    )
    group = do_create_user_group(ctx.session, ctx.requester, new)
    return {"group_id": group.id}


@router.get("/user_groups")
def list_user_groups(ctx: Ctx, include_deactivated_groups: bool = False) -> JsonDict:
    _no_guests(ctx)
    groups = get_named_groups(ctx.session, ctx.realm_id, include_deactivated=include_deactivated_groups)
    return {"user_groups": format_user_groups(ctx.session, groups)}


@router.patch("/user_groups/{user_group_id:int}")
@with_setting_params(GROUP_PERMISSION_SETTINGS, GroupSettingUpdate)
def update_user_group(
    ctx: Ctx,
    user_group_id: int,
    name: str | None = None,
    description: str | None = None,
    **group_settings: GroupSettingUpdate | None,
) -> JsonDict:
    changes = UserGroupChanges(name=name, description=description, group_settings=_given(group_settings))
    do_update_user_group(ctx.session, ctx.requester, user_group_id, changes)
    return {}


@router.post("/user_groups/{user_group_id:int}/members")
def update_user_group_members(
    ctx: Ctx,
    user_group_id: int,
    add: list[int] | None = None,
    delete: list[int] | None = None,
    add_subgroups: list[int] | None = None,
    delete_subgroups: list[int] | None = None,
) -> JsonDict:
    do_update_user_group_members(
        ctx.session,
        ctx.requester,
        user_group_id,
        add=add or [],
        delete_ids=delete or [],
        add_subgroups=add_subgroups or [],
        delete_subgroups=delete_subgroups or [],
    )
    return {}


@router.get("/user_groups/{user_group_id:int}/members")
def get_user_group_members(ctx: Ctx, user_group_id: int, direct_member_only: bool = False) -> JsonDict:
    group = get_named_group(ctx.session, ctx.realm_id, user_group_id)
    if direct_member_only:
        members = direct_member_ids(ctx.session, [group.id])[group.id]
    else:
        members = sorted(recursive_member_ids(ctx.session, group.id))
    return {"members": members}


@router.get("/user_groups/{user_group_id:int}/members/{user_id:int}")
def get_is_user_group_member(
    ctx: Ctx, user_group_id: int, user_id: int, direct_member_only: bool = False
) -> JsonDict:
    group = get_named_group(ctx.session, ctx.realm_id, user_group_id)
    target = access_user_by_id(ctx.session, ctx.requester, user_id, allow_deactivated=True)
    if not target.is_active:
        # Deactivated users belong to no group, as far as clients are concerned.
        return {"is_user_group_member": False}
    if direct_member_only:
        members = set(direct_member_ids(ctx.session, [group.id])[group.id])
    else:
        members = recursive_member_ids(ctx.session, group.id)
    return {"is_user_group_member": target.id in members}


@router.post("/user_groups/{user_group_id:int}/subgroups")
def update_user_group_subgroups(
    ctx: Ctx,
    user_group_id: int,
    add: list[int] | None = None,
    delete: list[int] | None = None,
) -> JsonDict:
    do_update_user_group_subgroups(
        ctx.session, ctx.requester, user_group_id, add=add or [], delete_ids=delete or []
    )
    return {}


@router.get("/user_groups/{user_group_id:int}/subgroups")
def get_user_group_subgroups(ctx: Ctx, user_group_id: int, direct_subgroup_only: bool = False) -> JsonDict:
    group = get_named_group(ctx.session, ctx.realm_id, user_group_id)
    if direct_subgroup_only:
        return {"subgroups": direct_subgroup_ids(ctx.session, [group.id])[group.id]}
    return {"subgroups": sorted(recursive_subgroup_ids(ctx.session, [group.id]) - {group.id})}


@router.post("/user_groups/{user_group_id:int}/deactivate")
def deactivate_user_group(ctx: Ctx, user_group_id: int) -> JsonDict:
    do_deactivate_user_group(ctx.session, ctx.requester, user_group_id)
    return {}
