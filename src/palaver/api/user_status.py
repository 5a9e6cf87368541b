"""User status: POST /users/me/status and GET /users/{user_id}/status."""

from __future__ import annotations

from typing import Annotated

from palaver.actions.user_status import do_update_user_status
from palaver.api.context import Ctx
from palaver.api.params import ApiParam
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.emoji import UNICODE_EMOJI
from palaver.lib.emoji_choice import check_emoji, emoji_for_name
from palaver.lib.exceptions import JsonableError
from palaver.lib.user_status import get_user_status
from palaver.lib.users import access_user_by_id
from palaver.models.user_status import MAX_STATUS_TEXT_LENGTH

router = ApiRouter()


@router.post("/users/me/status")
def update_status(
    ctx: Ctx,
    status_text: str | None = None,
    away: bool | None = None,
    emoji_name: str | None = None,
    emoji_code: str | None = None,
    reaction_type: Annotated[str | None, ApiParam(aliases=("emoji_type",))] = None,
) -> JsonDict:
    if status_text is not None:
        status_text = status_text.strip()
    if away is None and status_text is None and emoji_name is None:
        raise JsonableError("Client did not pass any new values.")
    if status_text is not None and len(status_text) > MAX_STATUS_TEXT_LENGTH:
        raise JsonableError(f"status_text is too long (limit: {MAX_STATUS_TEXT_LENGTH} characters)")
    emoji: tuple[str, str, str] | None = None
    if emoji_name == "":
        emoji = ("", "", UNICODE_EMOJI)
    elif emoji_name is not None:
        if emoji_code is None or reaction_type is None:
            emoji_code, reaction_type = emoji_for_name(ctx.session, ctx.realm_id, emoji_name)
        check_emoji(ctx.session, ctx.realm_id, emoji_name, emoji_code, reaction_type, for_status=True)
        emoji = (emoji_name, emoji_code, reaction_type)
    elif emoji_code is not None or reaction_type is not None:
        raise JsonableError("Client must pass emoji_name if they pass either emoji_code or reaction_type.")
    do_update_user_status(ctx.session, ctx.requester, away=away, status_text=status_text, emoji=emoji)
    return {}


@router.get("/users/{user_id:int}/status")
def get_status(ctx: Ctx, user_id: int) -> JsonDict:
    target = access_user_by_id(ctx.session, ctx.requester, user_id, allow_deactivated=True)
    return {"status": get_user_status(ctx.session, target)}
