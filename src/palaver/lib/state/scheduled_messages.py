"""The user's scheduled messages and reminders, kept current by their events."""

from __future__ import annotations

from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.scheduled_messages import (
    format_reminder,
    format_scheduled_message,
    get_reminders,
    get_scheduled_messages,
)


@state_provider("scheduled_messages")
def scheduled_messages(ctx: StateContext) -> StateDict:
    items = get_scheduled_messages(ctx.session, ctx.user.id)
    return {"scheduled_messages": [format_scheduled_message(item) for item in items]}


@state_provider("reminders")
def reminders(ctx: StateContext) -> StateDict:
    return {"reminders": [format_reminder(item) for item in get_reminders(ctx.session, ctx.user.id)]}
