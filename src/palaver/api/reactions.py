"""Emoji reactions: POST and DELETE /messages/{message_id}/reactions."""

from __future__ import annotations

from palaver.actions.reactions import do_add_reaction, do_remove_reaction
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict

router = ApiRouter()


@router.post("/messages/{message_id:int}/reactions")
def add_reaction(
    ctx: Ctx,
    message_id: int,
    emoji_name: str,
    emoji_code: str | None = None,
    reaction_type: str | None = None,
) -> JsonDict:
    do_add_reaction(ctx.session, ctx.requester, message_id, emoji_name, emoji_code, reaction_type)
    return {}


@router.delete("/messages/{message_id:int}/reactions")
def remove_reaction(
    ctx: Ctx,
    message_id: int,
    emoji_name: str | None = None,
    emoji_code: str | None = None,
    reaction_type: str | None = None,
) -> JsonDict:
    do_remove_reaction(ctx.session, ctx.requester, message_id, emoji_name, emoji_code, reaction_type)
    return {}
