"""Navigation views: list, add, update, remove (the user's own only), keyed by URL fragment."""

from __future__ import annotations

from palaver.actions.navigation_views import (
    do_add_navigation_view,
    do_remove_navigation_view,
    do_update_navigation_view,
)
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.navigation_views import format_navigation_view, get_navigation_views

router = ApiRouter()


@router.get("/navigation_views")
def list_navigation_views(ctx: Ctx) -> JsonDict:
    return {
        "navigation_views": [
            format_navigation_view(v) for v in get_navigation_views(ctx.session, ctx.requester.user_id)
        ]
    }


@router.post("/navigation_views")
def add_navigation_view(ctx: Ctx, fragment: str, is_pinned: bool, name: str | None = None) -> JsonDict:
    do_add_navigation_view(ctx.session, ctx.requester, fragment, is_pinned=is_pinned, name=name)
    return {}


# Fragments contain slashes ("narrow/is/starred"), so the key takes the rest of the path.
@router.patch("/navigation_views/{fragment:path}")
def update_navigation_view(
    ctx: Ctx, fragment: str, is_pinned: bool | None = None, name: str | None = None
) -> JsonDict:
    do_update_navigation_view(ctx.session, ctx.requester, fragment, is_pinned=is_pinned, name=name)
    return {}


@router.delete("/navigation_views/{fragment:path}")
def remove_navigation_view(ctx: Ctx, fragment: str) -> JsonDict:
    do_remove_navigation_view(ctx.session, ctx.requester, fragment)
    return {}
