"""Editing and moving messages (PATCH /messages/{id}) and their edit history."""

from __future__ import annotations

from typing import Annotated, Literal

from palaver.actions.message_edit import do_update_message
from palaver.actions.message_edit_plan import EditContext, MessageEdit
from palaver.api.context import Ctx
from palaver.api.params import ApiParam
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.message_edit import message_history
from palaver.lib.realm import realm_email_host, realm_url

router = ApiRouter()


@router.patch("/messages/{message_id:int}")
def update_message(
    ctx: Ctx,
    message_id: int,
    topic: Annotated[str | None, ApiParam(aliases=("subject",))] = None,
    propagate_mode: Literal["change_one", "change_later", "change_all"] = "change_one",
    send_notification_to_old_thread: bool = False,
    send_notification_to_new_thread: bool = True,
    content: str | None = None,
    prev_content_sha256: str | None = None,
    stream_id: int | None = None,
) -> JsonDict:
    edit = MessageEdit(
        topic=topic,
        stream_id=stream_id,
        content=content,
        propagate_mode=propagate_mode,
        send_notification_to_old_thread=send_notification_to_old_thread,
        send_notification_to_new_thread=send_notification_to_new_thread,
        prev_content_sha256=prev_content_sha256,
    )
    settings = ctx.services.settings
    context = EditContext(
        realm_url(settings, realm_settings(ctx.session, ctx.realm_id)),
        realm_email_host(settings, realm_settings(ctx.session, ctx.realm_id)),
    )
    return {"detached_uploads": do_update_message(ctx.session, ctx.requester, message_id, edit, context)}


@router.get("/messages/{message_id:int}/history")
def get_message_history(ctx: Ctx, message_id: int, allow_empty_topic_name: bool = False) -> JsonDict:
    return {
        "message_history": message_history(
            ctx.session, ctx.requester, message_id, allow_empty_topic_name=allow_empty_topic_name
        )
    }
