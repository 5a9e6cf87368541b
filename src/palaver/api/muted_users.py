"""Muting users: POST and DELETE /users/me/muted_users/{muted_user_id}."""

from __future__ import annotations

from palaver.actions.muted_users import do_mute_user, do_unmute_user
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.exceptions import JsonableError
from palaver.lib.users import access_user_by_id

router = ApiRouter()


@router.post("/users/me/muted_users/{muted_user_id:int}")
def mute_user(ctx: Ctx, muted_user_id: int) -> JsonDict:
    if muted_user_id == ctx.requester.user_id:
        raise JsonableError("Cannot mute self")
    # Bots are not muted (their owners manage them); deactivated people still may be.
    muted = access_user_by_id(
        ctx.session, ctx.requester, muted_user_id, allow_deactivated=True, allow_bots=False
    )
    do_mute_user(ctx.session, ctx.requester, muted)
    return {}


@router.delete("/users/me/muted_users/{muted_user_id:int}")
def unmute_user(ctx: Ctx, muted_user_id: int) -> JsonDict:
    muted = access_user_by_id(
        ctx.session, ctx.requester, muted_user_id, allow_deactivated=True, allow_bots=False
    )
    do_unmute_user(ctx.session, ctx.requester, muted)
    return {}
