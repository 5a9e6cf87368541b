"""Recent direct-message conversations (``recent_private_conversations``).

Clients list recent conversations from this without fetching messages: one
``{"max_message_id", "user_ids"}`` per conversation (``user_ids`` without the user; empty
for the user's own conversation), newest first. Like Zulip, only the user's newest 1,000
direct messages are considered, so a conversation quiet for longer than that is left out.
Message events keep it current on the client.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import func, literal_column, select
from sqlalchemy.orm import Session

from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.models.channels import Subscription
from palaver.models.messages import Message, MessageFlag, UserMessage

RECENT_CONVERSATIONS_LIMIT = 1000


def recent_private_conversations(session: Session, user_id: int) -> list[dict[str, Any]]:
    # The condition is written as the partial index ix_user_message_private is, so both
    # databases read the user's direct messages from it, newest first.
    private = UserMessage.flags.op("&")(literal_column(str(int(MessageFlag.IS_PRIVATE)))) != literal_column(
        "0"
    )
    window = (
        select(UserMessage.message_id.label("message_id"))
        .where(UserMessage.user_profile_id == user_id, private)
        .order_by(UserMessage.message_id.desc())
        .limit(RECENT_CONVERSATIONS_LIMIT)
        .subquery()
    )
    # Every conversation, one-on-one and with oneself too, has a recipient of its own.
    newest: dict[int, int] = {
        recipient_id: max_id
        for recipient_id, max_id in session.execute(
            select(Message.recipient_id, func.max(Message.id))
            .join(window, window.c.message_id == Message.id)
            .group_by(Message.recipient_id)
        )
    }
    members: dict[int, list[int]] = defaultdict(list)
    if newest:
        rows = session.execute(
            select(Subscription.recipient_id, Subscription.user_profile_id).where(
                Subscription.recipient_id.in_(list(newest)), Subscription.user_profile_id != user_id
            )
        )
        for recipient_id, member_id in rows:
            members[recipient_id].append(member_id)
    ordered = sorted(newest.items(), key=lambda item: item[1], reverse=True)
    return [
        {"max_message_id": max_id, "user_ids": sorted(members[recipient_id])}
        for recipient_id, max_id in ordered
    ]


@state_provider("recent_private_conversations")
def recent_private_conversations_state(ctx: StateContext) -> StateDict:
    return {"recent_private_conversations": recent_private_conversations(ctx.session, ctx.user.id)}
