"""Message reminders: list, create, cancel (the user's own only)."""

from __future__ import annotations

from palaver.actions.messages import SendContext
from palaver.actions.reminders import do_create_reminder, do_delete_reminder
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.cache import realm_settings
from palaver.lib.message_send import client_name_from_user_agent
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.scheduled_messages import (
    check_delivery_time,
    check_reminder_note,
    format_reminder,
    get_reminders,
)

router = ApiRouter()


@router.get("/reminders")
def list_reminders(ctx: Ctx) -> JsonDict:
    return {
        "reminders": [format_reminder(item) for item in get_reminders(ctx.session, ctx.requester.user_id)]
    }


@router.post("/reminders")
def create_reminder(
    ctx: Ctx, message_id: int, scheduled_delivery_timestamp: int, note: str | None = None
) -> JsonDict:
    deliver_at = check_delivery_time(scheduled_delivery_timestamp)
    settings = ctx.services.settings
    context = SendContext(
        realm_url=realm_url(settings, realm_settings(ctx.session, ctx.realm_id)),
        email_host=realm_email_host(settings, realm_settings(ctx.session, ctx.realm_id)),
        client=client_name_from_user_agent(ctx.user_agent),
    )
    item = do_create_reminder(
        ctx.session, ctx.requester, message_id, deliver_at, check_reminder_note(note), context
    )
    return {"reminder_id": item.id}


@router.delete("/reminders/{reminder_id:int}")
def delete_reminder(ctx: Ctx, reminder_id: int) -> JsonDict:
    do_delete_reminder(ctx.session, ctx.requester, reminder_id)
    return {}
