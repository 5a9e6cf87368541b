"""Personal message flags: by message ID, over a range of a narrow, and "mark as read"."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from palaver.actions.message_flags import (
    do_mark_all_as_read,
    do_mark_stream_as_read,
    do_mark_topic_as_read,
    do_update_message_flags,
    do_update_message_flags_for_narrow,
)
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.message_fetch import parse_anchor

router = ApiRouter()

NonNegative = Annotated[int, Field(ge=0)]


@router.post("/messages/flags")
def update_message_flags(ctx: Ctx, messages: list[int], op: str, flag: str) -> JsonDict:
    result = do_update_message_flags(ctx.session, ctx.requester, op, flag, messages)
    body: JsonDict = {"messages": result.messages}
    if result.ignored_because_not_subscribed_channels is not None:
        body["ignored_because_not_subscribed_channels"] = result.ignored_because_not_subscribed_channels
    return body


@router.post("/messages/flags/narrow")
def update_message_flags_for_narrow(
    ctx: Ctx,
    anchor: str | int,
    num_before: NonNegative,
    num_after: NonNegative,
    narrow: list[Any],
    op: str,
    flag: str,
    include_anchor: bool = True,
) -> JsonDict:
    return do_update_message_flags_for_narrow(
        ctx.session,
        ctx.requester,
        anchor=parse_anchor(anchor, use_first_unread_anchor=False),
        include_anchor=include_anchor,
        num_before=num_before,
        num_after=num_after,
        narrow=narrow,
        op=op,
        flag=flag,
    )


@router.post("/mark_all_as_read")
def mark_all_as_read(ctx: Ctx) -> JsonDict:
    do_mark_all_as_read(ctx.session, ctx.requester)
    return {"complete": True}


@router.post("/mark_stream_as_read")
def mark_stream_as_read(ctx: Ctx, stream_id: int) -> JsonDict:
    do_mark_stream_as_read(ctx.session, ctx.requester, stream_id)
    return {}


@router.post("/mark_topic_as_read")
def mark_topic_as_read(ctx: Ctx, stream_id: int, topic_name: str) -> JsonDict:
    do_mark_topic_as_read(ctx.session, ctx.requester, stream_id, topic_name)
    return {}
