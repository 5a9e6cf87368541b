"""Default channel groups: create, rename or describe, change channels, remove (administrators)."""

from __future__ import annotations

from palaver.actions.default_stream_groups import (
    do_change_default_stream_group_streams,
    do_create_default_stream_group,
    do_remove_default_stream_group,
    do_update_default_stream_group,
)
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.channels import access_stream_by_name
from palaver.lib.default_stream_groups import access_group
from palaver.lib.exceptions import OrganizationAdministratorRequiredError
from palaver.models.channels import Stream

router = ApiRouter()


def _admin(ctx: Ctx) -> None:
    if not ctx.requester.is_realm_admin:
        raise OrganizationAdministratorRequiredError()


def _streams(ctx: Ctx, names: list[str]) -> list[Stream]:
    return [access_stream_by_name(ctx.session, ctx.requester, name) for name in names]


@router.post("/default_stream_groups/create")
def create_default_stream_group(
    ctx: Ctx, group_name: str, description: str, stream_names: list[str]
) -> JsonDict:
    _admin(ctx)
    do_create_default_stream_group(
        ctx.session, ctx.requester.realm_id, group_name, description, _streams(ctx, stream_names)
    )
    return {}


@router.patch("/default_stream_groups/{group_id:int}")
def update_default_stream_group(
    ctx: Ctx, group_id: int, new_group_name: str | None = None, new_description: str | None = None
) -> JsonDict:
    _admin(ctx)
    group = access_group(ctx.session, ctx.requester.realm_id, group_id)
    do_update_default_stream_group(
        ctx.session, group, new_name=new_group_name, new_description=new_description
    )
    return {}


@router.patch("/default_stream_groups/{group_id:int}/streams")
def update_default_stream_group_streams(
    ctx: Ctx, group_id: int, op: str, stream_names: list[str]
) -> JsonDict:
    _admin(ctx)
    group = access_group(ctx.session, ctx.requester.realm_id, group_id)
    do_change_default_stream_group_streams(ctx.session, group, op, _streams(ctx, stream_names))
    return {}


@router.delete("/default_stream_groups/{group_id:int}")
def remove_default_stream_group(ctx: Ctx, group_id: int) -> JsonDict:
    _admin(ctx)
    do_remove_default_stream_group(ctx.session, access_group(ctx.session, ctx.requester.realm_id, group_id))
    return {}
