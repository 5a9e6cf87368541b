"""POST /streams/{stream_id}/delete_topic: delete every message of a topic, in batches."""

from __future__ import annotations

from palaver.actions.delete_topic import do_delete_topic
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.channels import access_stream_by_id
from palaver.models.topic_names import topic_for_lookup

router = ApiRouter()


@router.post("/streams/{stream_id:int}/delete_topic")
def delete_topic(ctx: Ctx, stream_id: int, topic_name: str) -> JsonDict:
    stream = access_stream_by_id(ctx.session, ctx.requester, stream_id)
    complete = do_delete_topic(ctx.session, ctx.requester, stream, topic_for_lookup(topic_name))
    return {"complete": complete}
