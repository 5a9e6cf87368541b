"""GET /calls/bigbluebutton/create: a video call link for the configured BigBlueButton."""

from __future__ import annotations

from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.calls import big_blue_button_join_url

router = ApiRouter()


@router.get("/calls/bigbluebutton/create")
def create_big_blue_button_call(ctx: Ctx, meeting_name: str, voice_only: bool = False) -> JsonDict:
    url = big_blue_button_join_url(
        ctx.services.settings,
        meeting_name=meeting_name,
        moderator_id=ctx.requester.user_id,
        voice_only=voice_only,
    )
    return {"url": url}
