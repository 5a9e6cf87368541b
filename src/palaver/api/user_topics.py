"""POST /user_topics: mute, unmute or follow a topic, or clear its policy."""

from __future__ import annotations

from palaver.actions.user_topics import do_set_user_topic_visibility_policy
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.channels import access_stream_by_id
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_send import normalize_topic
from palaver.models.user_topics import VisibilityPolicy

router = ApiRouter()


@router.post("/user_topics")
def update_user_topic(ctx: Ctx, stream_id: int, topic: str, visibility_policy: int) -> JsonDict:
    if visibility_policy not in set(VisibilityPolicy):
        raise JsonableError("Invalid visibility_policy")
    stream = access_stream_by_id(ctx.session, ctx.requester, stream_id)
    do_set_user_topic_visibility_policy(
        ctx.session, ctx.requester, stream, normalize_topic(topic), visibility_policy
    )
    return {}
