"""Widget data: POST /submessage."""

from __future__ import annotations

from palaver.actions.submessages import do_add_submessage
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict

router = ApiRouter()


@router.post("/submessage")
def add_submessage(ctx: Ctx, message_id: int, msg_type: str, content: str) -> JsonDict:
    do_add_submessage(ctx.session, ctx.requester, message_id, msg_type, content)
    return {}
