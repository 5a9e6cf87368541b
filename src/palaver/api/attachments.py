"""The user's uploaded files: list them, delete one."""

from __future__ import annotations

from palaver.actions.attachments import do_delete_attachment
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.lib.attachments import format_attachments, upload_space_used, user_attachments
from palaver.lib.storage import make_storage

router = ApiRouter()


@router.get("/attachments")
def get_attachments(ctx: Ctx) -> JsonDict:
    return {
        "attachments": format_attachments(ctx.session, user_attachments(ctx.session, ctx.requester)),
        "upload_space_used": upload_space_used(ctx.session, ctx.requester.realm_id),
    }


@router.delete("/attachments/{attachment_id:int}")
def remove_attachment(ctx: Ctx, attachment_id: int) -> JsonDict:
    do_delete_attachment(ctx.session, make_storage(ctx.services.settings), ctx.requester, attachment_id)
    return {}
