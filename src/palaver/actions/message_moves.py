"""Moving messages to another topic or channel: the message rows, and each user's copy when the channel
changes (rows gained or lost with access).
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from palaver.actions.message_edit_plan import EditPlan
from palaver.db.transaction import Tx
from palaver.events import types as ev
from palaver.lib.message_edit import edit_history_entries
from palaver.models import UserProfile
from palaver.models.channels import Subscription
from palaver.models.messages import Message, MessageFlag, UserMessage


def move_messages(
    session: Session, plan: EditPlan, moved_ids: list[int], entry: dict[str, Any], now: Any
) -> None:
    """Move the messages to the plan's channel and topic, each with its edit-history entry."""
    assert plan.target_stream is not None and plan.target_stream.recipient_id is not None
    move_entry: dict[str, Any] = {"user_id": entry["user_id"], "timestamp": entry["timestamp"]}
    if plan.stream_edited:
        assert plan.orig_stream is not None
        move_entry.update(prev_stream=plan.orig_stream.id, stream=plan.target_stream.id)
    if plan.topic_edited:
        move_entry.update(prev_topic=plan.orig_topic, topic=plan.target_topic)
    # Resolving is not shown as a move (no last_moved_timestamp).
    counts_as_move = not plan.resolve_only
    for moved in session.scalars(select(Message).where(Message.id.in_(moved_ids))):
        own = {**entry, **move_entry} if moved.id == plan.message.id else move_entry
        moved.edit_history = orjson.dumps([own, *edit_history_entries(moved)]).decode()
        moved.subject = plan.target_topic
        moved.recipient_id = plan.target_stream.recipient_id
        if counts_as_move:
            moved.last_moved_time = now


def change_channel_rows(tx: Tx, session: Session, plan: EditPlan, moved_ids: list[int]) -> set[int]:
    """Users' copies when messages change channel; returns who lost access to them.

    Users of the old channel who are not in the new one lose their copies; where that
    takes the messages out of their reach (a private channel, or a guest), they hear of it
    as a deletion. In a channel with protected history every subscriber needs a copy to
    read the messages, so they gain one (read: they were not there when it was sent).
    """
    old, new = plan.orig_stream, plan.target_stream
    assert old is not None and new is not None and new.recipient_id is not None
    old_users = set(
        session.scalars(
            select(Subscription.user_profile_id).where(Subscription.recipient_id == old.recipient_id)
        )
    )
    new_users = set(
        session.scalars(
            select(Subscription.user_profile_id).where(
                Subscription.recipient_id == new.recipient_id, Subscription.active
            )
        )
    )
    losing_rows = old_users - new_users
    if new.invite_only:
        losing_access = set(losing_rows)
    else:
        guests = set(
            session.scalars(
                select(UserProfile.id).where(UserProfile.id.in_(losing_rows), UserProfile.role == 600)
            )
        )
        losing_access = guests
    if not new.history_public_to_subscribers and new_users:
        have = {
            (r.user_profile_id, r.message_id)
            for r in session.execute(
                select(UserMessage.user_profile_id, UserMessage.message_id).where(
                    UserMessage.user_profile_id.in_(new_users), UserMessage.message_id.in_(moved_ids)
                )
            )
        }
        rows = [
            {"user_profile_id": uid, "message_id": mid, "flags": int(MessageFlag.READ)}
            for uid in sorted(new_users)
            for mid in moved_ids
            if (uid, mid) not in have
        ]
        if rows:
            session.execute(insert(UserMessage), rows)
    if losing_rows:
        session.execute(
            delete(UserMessage).where(
                UserMessage.user_profile_id.in_(losing_rows), UserMessage.message_id.in_(moved_ids)
            )
        )
    ids = sorted(moved_ids)
    tx.send_event(
        old.realm_id,
        ev.DeleteMessage(
            message_type="stream",
            message_ids=ids,
            message_id=ids[0] if len(ids) == 1 else None,
            stream_id=old.id,
            topic=plan.orig_topic,
        ),
        losing_access,
    )
    return losing_access
