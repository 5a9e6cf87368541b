"""Custom profile fields: list (everyone); create, edit, delete and reorder (administrators)."""

from __future__ import annotations

from typing import Any

from palaver.actions.profile_fields import (
    do_create_profile_field,
    do_remove_profile_field,
    do_reorder_profile_fields,
    do_update_profile_field,
)
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.profile_fields import format_profile_field, get_profile_fields

router = ApiRouter()


@router.get("/realm/profile_fields")
def list_profile_fields(ctx: Ctx) -> JsonDict:
    fields = get_profile_fields(ctx.session, ctx.requester.realm_id)
    return {"custom_fields": [format_profile_field(f) for f in fields]}


@router.post("/realm/profile_fields")
def create_profile_field(
    ctx: Ctx,
    field_type: int,
    name: str = "",
    hint: str = "",
    field_data: dict[str, Any] | None = None,
    display_in_profile_summary: bool = False,
    required: bool = False,
    editable_by_user: bool = True,
) -> JsonDict:
    field = do_create_profile_field(
        ctx.session,
        ctx.requester,
        name=name,
        hint=hint,
        field_type=field_type,
        field_data=field_data or {},
        display_in_profile_summary=display_in_profile_summary,
        required=required,
        editable_by_user=editable_by_user,
    )
    return {"id": field.id}


@router.patch("/realm/profile_fields")
def reorder_profile_fields(ctx: Ctx, order: list[int]) -> JsonDict:
    do_reorder_profile_fields(ctx.session, ctx.requester, order)
    return {}


@router.patch("/realm/profile_fields/{field_id:int}")
def update_profile_field(
    ctx: Ctx,
    field_id: int,
    name: str | None = None,
    hint: str | None = None,
    field_data: dict[str, Any] | None = None,
    display_in_profile_summary: bool | None = None,
    required: bool | None = None,
    editable_by_user: bool | None = None,
) -> JsonDict:
    do_update_profile_field(
        ctx.session,
        ctx.requester,
        field_id,
        name=name,
        hint=hint,
        field_data=field_data,
        display_in_profile_summary=display_in_profile_summary,
        required=required,
        editable_by_user=editable_by_user,
    )
    return {}


@router.delete("/realm/profile_fields/{field_id:int}")
def delete_profile_field(ctx: Ctx, field_id: int) -> JsonDict:
    do_remove_profile_field(ctx.session, ctx.requester, field_id)
    return {}
