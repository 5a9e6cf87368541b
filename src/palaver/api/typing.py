"""Typing notifications: POST /typing and POST /messages/{message_id}/typing."""

from __future__ import annotations

from typing import Annotated, Literal

from palaver.actions.typing import do_send_channel_typing, do_send_direct_typing, do_send_message_edit_typing
from palaver.api.context import Ctx
from palaver.api.params import ApiParam
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.channels import access_stream_by_id
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import is_storable_id
from palaver.lib.message_send import normalize_topic

router = ApiRouter()


@router.post("/typing")
def set_typing_status(
    ctx: Ctx,
    op: Literal["start", "stop"],
    # "private" was renamed "direct"; old clients still send it.
    message_type: Annotated[
        Literal["direct", "private", "stream", "channel"], ApiParam(name="type")
    ] = "direct",
    to: list[int] | None = None,
    stream_id: int | None = None,
    topic: str | None = None,
) -> JsonDict:
    if message_type in ("stream", "channel"):
        if stream_id is None:
            raise JsonableError("Missing channel ID")
        if topic is None:
            raise JsonableError("Missing topic")
        requester = ctx.requester
        if not requester.send_stream_typing_notifications:
            raise JsonableError("User has disabled typing notifications for channel messages")
        if not is_storable_id(stream_id):
            # Past PostgreSQL's integer column it names no channel (and must not reach SQL).
            raise JsonableError("Invalid channel ID")
        stream = access_stream_by_id(ctx.session, requester, stream_id, require_content_access=True)
        do_send_channel_typing(ctx.session, requester, stream, normalize_topic(topic), op)
        return {}
    if to is None:
        raise JsonableError("Missing 'to' argument")
    if not to:
        raise JsonableError("Empty 'to' list")
    do_send_direct_typing(ctx.session, ctx.requester, to, op)
    return {}


@router.post("/messages/{message_id:int}/typing")
def set_message_edit_typing_status(ctx: Ctx, message_id: int, op: Literal["start", "stop"]) -> JsonDict:
    do_send_message_edit_typing(ctx.session, ctx.requester, message_id, op)
    return {}
