"""Editing messages: new content, and moves to another topic and/or channel.

One transaction covers the whole edit: the message rows, each user's copy (flags, and rows
gained or lost when messages change channel), attachment links, the ``update_message`` and
``delete_message`` events, and the Notification Bot's notices about the move.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.actions.attachments import update_message_attachments
from palaver.actions.message_edit_notices import send_edit_notifications
from palaver.actions.message_edit_plan import EditContext, EditPlan, MessageEdit, plan_edit
from palaver.actions.message_mentions import mentioned_users
from palaver.actions.message_moves import change_channel_rows, move_messages
from palaver.actions.messages import note_messages_arrived
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.alert_words import user_ids_with_alert_words_in
from palaver.lib.channels import Viewer, subscriber_ids, viewer_for
from palaver.lib.markdown.urls import topic_links
from palaver.lib.message_access import access_message
from palaver.lib.message_edit import (
    TopicMessage,
    check_move_time_limit,
    edit_history_entries,
    is_exempt_from_move_limits,
    move_deadline,
    topic_messages_for_user,
)
from palaver.lib.message_flags import flag_names
from palaver.lib.topics import topic_participant_ids
from palaver.models import UserProfile
from palaver.models.messages import Message, MessageFlag, UserMessage
from palaver.models.requester import Requester
from palaver.timeutil import to_timestamp, utcnow

_MENTION_BITS = (
    MessageFlag.MENTIONED | MessageFlag.STREAM_WILDCARD_MENTIONED | MessageFlag.TOPIC_WILDCARD_MENTIONED
)


def do_update_message(
    session: Session, user: Requester, message_id: int, edit: MessageEdit, context: EditContext
) -> list[dict[str, Any]]:
    """Apply an edit; returns the detached uploads (the editor's files no message links now)."""
    with transaction(session) as tx:
        message, _ = access_message(session, user, message_id)
        # Concurrent edits of one message apply one after the other (SQLite: the write lock).
        session.execute(select(Message.id).where(Message.id == message.id).with_for_update())
        session.refresh(message)
        viewer = viewer_for(session, user)
        plan = plan_edit(session, user, viewer, message, edit, context.realm_url)
        return _apply(tx, session, user, viewer, plan, edit, context)


# Applying -------------------------------------------------------------------------------------


def _messages_to_move(session: Session, viewer: Viewer, plan: EditPlan, mode: str) -> list[TopicMessage]:
    message = plan.message
    assert plan.orig_stream is not None
    if mode == "change_one":
        return [TopicMessage(message.id, message.date_sent)]
    from_id = message.id if mode == "change_later" else None
    found = topic_messages_for_user(session, viewer, plan.orig_stream, plan.orig_topic, from_id=from_id)
    if all(m.id != message.id for m in found):
        found = sorted([*found, TopicMessage(message.id, message.date_sent)], key=lambda m: m.id)
    return found


def _apply(
    tx: Tx,
    session: Session,
    user: Requester,
    viewer: Viewer,
    plan: EditPlan,
    edit: MessageEdit,
    context: EditContext,
) -> list[dict[str, Any]]:
    message = plan.message
    to_move: list[TopicMessage] = []
    if plan.moved:
        to_move = _messages_to_move(session, viewer, plan, edit.propagate_mode)
        deadline = move_deadline(
            viewer.realm,
            topic_changed=plan.topic_edited and not (plan.resolved or plan.unresolved),
            stream_changed=plan.stream_edited,
        )
        if deadline is not None and not is_exempt_from_move_limits(user):
            assert plan.orig_stream is not None
            topic_messages = topic_messages_for_user(session, viewer, plan.orig_stream, plan.orig_topic)
            check_move_time_limit(message, to_move, topic_messages, deadline)

    now = utcnow()
    timestamp = to_timestamp(now)
    entry: dict[str, Any] = {"user_id": user.user_id, "timestamp": timestamp}
    event_fields: dict[str, Any] = {}
    detached: list[dict[str, Any]] = []

    if plan.content is not None:
        assert plan.rendered is not None
        entry["prev_content"] = message.content
        entry["prev_rendered_content"] = message.rendered_content
        event_fields.update(
            orig_content=message.content,
            orig_rendered_content=message.rendered_content,
            content=plan.content,
            rendered_content=plan.rendered.html,
            is_me_message=plan.rendered.is_me_message,
        )
        message.content = plan.content
        message.rendered_content = plan.rendered.html
        message.has_image = plan.rendered.has_image
        message.has_link = plan.rendered.has_link
        message.last_edit_time = now
        _update_mention_flags(session, plan)
        detached = update_message_attachments(tx, session, user, message, plan.rendered.links)

    moved_ids = [m.id for m in to_move]
    if plan.moved:
        move_messages(session, plan, moved_ids, entry, now)
    else:
        message.edit_history = orjson.dumps([entry, *edit_history_entries(message)]).decode()
    session.flush()

    if plan.orig_stream is None:
        audience = _user_message_flags(session, message.id)
        _send_update_events(
            tx, message, audience, _event_base(user, message, timestamp, [message.id], event_fields)
        )
        return detached

    assert plan.target_stream is not None
    losing_access: set[int] = set()
    if plan.stream_edited:
        losing_access = change_channel_rows(tx, session, plan, moved_ids)
    if plan.moved:
        event_fields["propagate_mode"] = edit.propagate_mode
    if plan.topic_edited:
        event_fields.update(
            orig_subject=plan.orig_topic,
            subject=plan.target_topic,
            topic_links=[ev.TopicLink(**link) for link in topic_links(plan.target_topic, ())],
        )
    if plan.stream_edited:
        event_fields.update(orig_subject=plan.orig_topic, new_stream_id=plan.target_stream.id)
    event_fields.update(stream_name=plan.orig_stream.name, stream_id=plan.orig_stream.id)
    audience = _channel_audience(session, plan, losing_access)
    ids = sorted(moved_ids) if plan.moved else [message.id]
    _send_update_events(tx, message, audience, _event_base(user, message, timestamp, ids, event_fields))

    if plan.stream_edited and moved_ids:
        note_messages_arrived(tx, session, plan.target_stream, min(moved_ids))
    if plan.moved:
        send_edit_notifications(session, user, viewer, plan, edit, context, moved_ids)
    return detached


def _update_mention_flags(session: Session, plan: EditPlan) -> None:
    """Mentions and alert words as the new content has them, for everyone who has the message."""
    assert plan.rendered is not None
    rendered = plan.rendered
    message = plan.message
    mentioned = mentioned_users(session, rendered)
    participants: set[int] = set()
    if plan.orig_stream is not None and rendered.topic_wildcard:
        participants = topic_participant_ids(session, message.recipient_id, plan.target_topic) | {
            message.sender_id
        }
    rows = list(session.scalars(select(UserMessage).where(UserMessage.message_id == message.id)))
    others = {row.user_profile_id for row in rows} - {message.sender_id}
    alerted = user_ids_with_alert_words_in(session, message.realm_id, others, plan.content or "")
    for row in rows:
        bits = row.flags & ~int(_MENTION_BITS | MessageFlag.HAS_ALERT_WORD)
        if row.user_profile_id in alerted:
            bits |= MessageFlag.HAS_ALERT_WORD
        if row.user_profile_id in mentioned:
            bits |= MessageFlag.MENTIONED
        if rendered.stream_wildcard and plan.orig_stream is not None:
            bits |= MessageFlag.STREAM_WILDCARD_MENTIONED
        if row.user_profile_id in participants:
            bits |= MessageFlag.TOPIC_WILDCARD_MENTIONED
        if bits != row.flags:
            row.flags = int(bits)


def _user_message_flags(session: Session, message_id: int) -> dict[int, int]:
    return {
        r.user_profile_id: r.flags
        for r in session.execute(
            select(UserMessage.user_profile_id, UserMessage.flags).where(UserMessage.message_id == message_id)
        )
    }


def _channel_audience(session: Session, plan: EditPlan, losing_access: set[int]) -> dict[int, int]:
    """Who hears of the edit, with their flags: everyone holding a copy, and, where the
    channel's history is shared, its subscribers (who can read it without a copy)."""
    old, new = plan.orig_stream, plan.target_stream
    assert old is not None and new is not None
    audience = _user_message_flags(session, plan.message.id)
    if old.history_public_to_subscribers:
        readers = subscriber_ids(session, new)
        if plan.stream_edited:
            old_subscribers = subscriber_ids(session, old)
            # Guests who could not see the old channel would hear of a topic they never saw.
            new_guests = set(
                session.scalars(
                    select(UserProfile.id).where(UserProfile.id.in_(readers), UserProfile.role == 600)
                )
            )
            readers = (readers - (new_guests - old_subscribers)) | old_subscribers
        for user_id in readers - losing_access:
            audience.setdefault(user_id, int(MessageFlag.READ))
    for user_id in losing_access:
        audience.pop(user_id, None)
    return audience


def _event_base(
    user: Requester, message: Message, timestamp: int, message_ids: list[int], fields: dict[str, Any]
) -> dict[str, Any]:
    return {
        "user_id": user.user_id,
        "edit_timestamp": timestamp,
        "message_id": message.id,
        "message_ids": message_ids,
        "rendering_only": False,
        **fields,
    }


def _send_update_events(tx: Tx, message: Message, audience: dict[int, int], base: dict[str, Any]) -> None:
    by_flags: dict[int, list[int]] = defaultdict(list)
    for user_id, bits in audience.items():
        by_flags[int(bits) & ~int(MessageFlag.IS_PRIVATE)].append(user_id)
    for bits, user_ids in sorted(by_flags.items()):
        tx.send_event(message.realm_id, ev.UpdateMessage(**base, flags=flag_names(bits)), user_ids)
