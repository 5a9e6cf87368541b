"""GET /streams/{stream_id}/email_address: a channel's incoming email address."""

from __future__ import annotations

from palaver.actions.email_gateway import do_get_channel_email_address
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict

router = ApiRouter()


@router.get("/streams/{stream_id:int}/email_address")
def get_stream_email_address(ctx: Ctx, stream_id: int, sender_id: int | None = None) -> JsonDict:
    email = do_get_channel_email_address(
        ctx.session, ctx.requester, stream_id, sender_id, ctx.services.settings
    )
    return {"email": email}
