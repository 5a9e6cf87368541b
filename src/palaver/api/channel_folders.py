"""Channel folders: create, list, update, reorder (administrators manage them; everyone sees them)."""

from __future__ import annotations

from palaver.actions.channel_folders import (
    do_create_channel_folder,
    do_reorder_channel_folders,
    do_update_channel_folder,
)
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.channel_folders import format_channel_folder, get_channel_folder, get_channel_folders
from palaver.lib.exceptions import OrganizationAdministratorRequiredError

router = ApiRouter()


def _require_admin(ctx: Ctx) -> None:
    if not ctx.requester.is_realm_admin:
        raise OrganizationAdministratorRequiredError()


@router.post("/channel_folders/create")
def create_channel_folder(ctx: Ctx, name: str, description: str = "") -> JsonDict:
    _require_admin(ctx)
    folder = do_create_channel_folder(ctx.session, ctx.requester, name=name, description=description)
    return {"channel_folder_id": folder.id}


@router.get("/channel_folders")
def list_channel_folders(ctx: Ctx, include_archived: bool = False) -> JsonDict:
    folders = get_channel_folders(ctx.session, ctx.requester.realm_id, include_archived=include_archived)
    return {"channel_folders": [format_channel_folder(f) for f in folders]}


@router.patch("/channel_folders")
def reorder_channel_folders(ctx: Ctx, order: list[int]) -> JsonDict:
    _require_admin(ctx)
    do_reorder_channel_folders(ctx.session, ctx.requester.realm_id, order)
    return {}


@router.patch("/channel_folders/{channel_folder_id:int}")
def update_channel_folder(
    ctx: Ctx,
    channel_folder_id: int,
    name: str | None = None,
    description: str | None = None,
    is_archived: bool | None = None,
) -> JsonDict:
    _require_admin(ctx)
    folder = get_channel_folder(ctx.session, ctx.requester.realm_id, channel_folder_id)
    do_update_channel_folder(ctx.session, folder, name=name, description=description, is_archived=is_archived)
    return {}
