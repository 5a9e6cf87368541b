"""Message state: the newest message ID, unread messages, starred messages."""

from __future__ import annotations

from palaver.lib.message_flags import max_message_id, starred_message_ids
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.unreads import unread_msgs_state


@state_provider("message")
def message_state(ctx: StateContext) -> StateDict:
    return {"max_message_id": max_message_id(ctx.session, ctx.user)}


@state_provider("update_message_flags")
def unread_msgs(ctx: StateContext) -> StateDict:
    # Unread counts follow message and flag events together, so both must be wanted.
    if not ctx.wants("message"):
        return {}
    allow_empty = ctx.client.has_capability("empty_topic_name")
    return {"unread_msgs": unread_msgs_state(ctx.session, ctx.user, allow_empty_topic_name=allow_empty)}


@state_provider("starred_messages")
def starred_messages(ctx: StateContext) -> StateDict:
    return {"starred_messages": starred_message_ids(ctx.session, ctx.user)}
