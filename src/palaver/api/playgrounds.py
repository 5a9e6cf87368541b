"""Code playgrounds: add and remove (administrators); clients read them from /register."""

from __future__ import annotations

from palaver.actions.playgrounds import do_add_playground, do_remove_playground
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict

router = ApiRouter()


@router.post("/realm/playgrounds")
def add_playground(ctx: Ctx, name: str, pygments_language: str, url_template: str) -> JsonDict:
    playground = do_add_playground(
        ctx.session, ctx.requester, name=name, pygments_language=pygments_language, url_template=url_template
    )
    return {"id": playground.id}


@router.delete("/realm/playgrounds/{playground_id:int}")
def remove_playground(ctx: Ctx, playground_id: int) -> JsonDict:
    do_remove_playground(ctx.session, ctx.requester, playground_id)
    return {}
