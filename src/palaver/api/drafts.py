"""Drafts: list, create, edit, delete (the user's own only)."""

from __future__ import annotations

from palaver.actions.drafts import do_create_drafts, do_delete_draft, do_edit_draft
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.drafts import DraftData, check_drafts_enabled, format_draft, get_drafts

router = ApiRouter()


@router.get("/drafts")
def list_drafts(ctx: Ctx) -> JsonDict:
    check_drafts_enabled(ctx.me)
    drafts = [format_draft(d) for d in get_drafts(ctx.session, ctx.requester.user_id)]
    return {"count": len(drafts), "drafts": drafts}


@router.post("/drafts")
def create_drafts(ctx: Ctx, drafts: list[DraftData]) -> JsonDict:
    created = do_create_drafts(ctx.session, ctx.requester, drafts)
    return {"ids": [d.id for d in created]}


@router.patch("/drafts/{draft_id:int}")
def edit_draft(ctx: Ctx, draft_id: int, draft: DraftData) -> JsonDict:
    do_edit_draft(ctx.session, ctx.requester, draft_id, draft)
    return {}


@router.delete("/drafts/{draft_id:int}")
def delete_draft(ctx: Ctx, draft_id: int) -> JsonDict:
    do_delete_draft(ctx.session, ctx.requester, draft_id)
    return {}
