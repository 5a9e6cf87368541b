"""Linkifiers: list (everyone), add, edit, remove and reorder (administrators)."""

from __future__ import annotations

from palaver.actions.linkifiers import (
    do_add_linkifier,
    do_remove_linkifier,
    do_reorder_linkifiers,
    do_update_linkifier,
)
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.linkifiers import format_linkifier, get_linkifiers

router = ApiRouter()


@router.get("/realm/linkifiers")
def list_linkifiers(ctx: Ctx) -> JsonDict:
    return {"linkifiers": [format_linkifier(f) for f in get_linkifiers(ctx.session, ctx.requester.realm_id)]}


@router.patch("/realm/linkifiers")
def reorder_linkifiers(ctx: Ctx, ordered_linkifier_ids: list[int]) -> JsonDict:
    do_reorder_linkifiers(ctx.session, ctx.requester, ordered_linkifier_ids)
    return {}


@router.post("/realm/filters")
def add_linkifier(ctx: Ctx, pattern: str, url_template: str) -> JsonDict:
    linkifier = do_add_linkifier(ctx.session, ctx.requester, pattern, url_template)
    return {"id": linkifier.id}


@router.patch("/realm/filters/{filter_id:int}")
def update_linkifier(ctx: Ctx, filter_id: int, pattern: str, url_template: str) -> JsonDict:
    do_update_linkifier(ctx.session, ctx.requester, filter_id, pattern, url_template)
    return {}


@router.delete("/realm/filters/{filter_id:int}")
def remove_linkifier(ctx: Ctx, filter_id: int) -> JsonDict:
    do_remove_linkifier(ctx.session, ctx.requester, filter_id)
    return {}
