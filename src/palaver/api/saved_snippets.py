"""Saved snippets: list, create, edit, delete (the user's own only)."""

from __future__ import annotations

from palaver.actions.saved_snippets import (
    do_create_saved_snippet,
    do_delete_saved_snippet,
    do_edit_saved_snippet,
)
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.saved_snippets import format_saved_snippet, get_saved_snippets

router = ApiRouter()


@router.get("/saved_snippets")
def list_saved_snippets(ctx: Ctx) -> JsonDict:
    return {
        "saved_snippets": [
            format_saved_snippet(s) for s in get_saved_snippets(ctx.session, ctx.requester.user_id)
        ]
    }


@router.post("/saved_snippets")
def create_saved_snippet(ctx: Ctx, title: str, content: str) -> JsonDict:
    snippet = do_create_saved_snippet(ctx.session, ctx.requester, title, content)
    return {"saved_snippet_id": snippet.id}


@router.patch("/saved_snippets/{saved_snippet_id:int}")
def edit_saved_snippet(
    ctx: Ctx, saved_snippet_id: int, title: str | None = None, content: str | None = None
) -> JsonDict:
    do_edit_saved_snippet(ctx.session, ctx.requester, saved_snippet_id, title=title, content=content)
    return {}


@router.delete("/saved_snippets/{saved_snippet_id:int}")
def delete_saved_snippet(ctx: Ctx, saved_snippet_id: int) -> JsonDict:
    do_delete_saved_snippet(ctx.session, ctx.requester, saved_snippet_id)
    return {}
