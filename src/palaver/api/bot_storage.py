"""Bot storage: PUT/GET/DELETE /bot_storage, string values a bot keeps on the server."""

from __future__ import annotations

from palaver.actions.bot_storage import do_remove_bot_storage, do_set_bot_storage
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.bot_storage import check_is_bot, get_storage

router = ApiRouter()


@router.put("/bot_storage")
def update_storage(ctx: Ctx, storage: dict[str, str]) -> JsonDict:
    do_set_bot_storage(ctx.session, ctx.requester, storage)
    return {}


@router.get("/bot_storage")
def read_storage(ctx: Ctx, keys: list[str] | None = None) -> JsonDict:
    check_is_bot(ctx.requester)
    return {"storage": get_storage(ctx.session, ctx.requester.user_id, keys)}


@router.delete("/bot_storage")
def remove_storage(ctx: Ctx, keys: list[str] | None = None) -> JsonDict:
    do_remove_bot_storage(ctx.session, ctx.requester, keys)
    return {}
