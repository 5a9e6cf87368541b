"""GET /messages/{message_id}/read_receipts."""

from __future__ import annotations

from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.read_receipts import read_receipt_user_ids

router = ApiRouter()


@router.get("/messages/{message_id:int}/read_receipts")
def get_read_receipts(ctx: Ctx, message_id: int) -> JsonDict:
    return {"user_ids": read_receipt_user_ids(ctx.session, ctx.requester, message_id)}
