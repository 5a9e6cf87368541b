"""Editing messages: new content, and moves to another topic and/or channel.

One transaction covers the whole edit: the message rows, each user's copy (flags, and rows
gained or lost when messages change channel), attachment links, the ``update_message`` and
``delete_message`` events, and the Notification Bot's notices about the move.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from palaver.actions.attachments import update_message_attachments
from palaver.actions.message_mentions import _check_mentions, _mentioned_user_ids
from palaver.actions.messages import SendContext, note_messages_arrived
from palaver.actions.notification_bot import get_or_create_notification_bot, internal_send_stream_message
from palaver.db import Tx, transaction
from palaver.events import types as ev
from palaver.lib.alert_words import user_ids_with_alert_words_in
from palaver.lib.channels import (
    Viewer,
    access_stream_by_id,
    subscriber_ids,
    viewer_for,
)
from palaver.lib.conversations import stream_for_message
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import is_storable_id
from palaver.lib.markdown.contract import RenderResult
from palaver.lib.markdown.urls import topic_links
from palaver.lib.message_access import access_message
from palaver.lib.message_edit import (
    NO_PERMISSION_TO_EDIT,
    TopicMessage,
    can_move_out_of_channel,
    can_move_within_channel,
    can_resolve_topics,
    check_content_edit_allowed,
    check_move_time_limit,
    check_topic_allowed,
    edit_history_entries,
    is_exempt_from_move_limits,
    is_resolve_toggle,
    marks_empty_topic_resolved,
    move_deadline,
    sha256_hex,
    topic_messages_for_user,
)
from palaver.lib.message_flags import flag_names
from palaver.lib.message_render import render_content
from palaver.lib.message_send import normalize_content, normalize_topic
from palaver.lib.notification_bot import message_link, silent_mention, topic_link_syntax
from palaver.lib.topics import topic_exists, topic_participant_ids
from palaver.models import UserProfile
from palaver.models.channels import Stream, Subscription
from palaver.models.messages import Message, MessageFlag, UserMessage
from palaver.timeutil import to_timestamp, utcnow

_MENTION_BITS = (
    MessageFlag.MENTIONED | MessageFlag.STREAM_WILDCARD_MENTIONED | MessageFlag.TOPIC_WILDCARD_MENTIONED
)


@dataclass(frozen=True)
class MessageEdit:
    """What PATCH /messages/{id} asks for; None leaves a part unchanged."""

    topic: str | None = None
    stream_id: int | None = None
    content: str | None = None
    propagate_mode: str = "change_one"
    send_notification_to_old_thread: bool = False
    send_notification_to_new_thread: bool = True
    prev_content_sha256: str | None = None


@dataclass(frozen=True)
class EditContext:
    realm_url: str
    email_host: str


@dataclass
class _Plan:
    """A validated edit of a channel message (DMs use only the content parts)."""

    message: Message
    orig_stream: Stream | None
    target_stream: Stream | None
    orig_topic: str
    target_topic: str
    topic_edited: bool
    stream_edited: bool
    resolved: bool
    unresolved: bool
    content: str | None
    rendered: RenderResult | None

    @property
    def moved(self) -> bool:
        return self.topic_edited or self.stream_edited

    @property
    def resolve_only(self) -> bool:
        return self.topic_edited and not self.stream_edited and (self.resolved or self.unresolved)


def do_update_message(
    session: Session, user: UserProfile, message_id: int, edit: MessageEdit, context: EditContext
) -> list[dict[str, Any]]:
    """Apply an edit; returns the detached uploads (the editor's files no message links now)."""
    with transaction(session) as tx:
        message, _ = access_message(session, user, message_id)
        # Concurrent edits of one message apply one after the other (SQLite: the write lock).
        session.execute(select(Message.id).where(Message.id == message.id).with_for_update())
        session.refresh(message)
        viewer = viewer_for(session, user)
        plan = _plan_edit(session, user, viewer, message, edit, context.realm_url)
        return _apply(tx, session, user, viewer, plan, edit, context)


# Validation -----------------------------------------------------------------------------------


def _plan_edit(
    session: Session, user: UserProfile, viewer: Viewer, message: Message, edit: MessageEdit, realm_url: str
) -> _Plan:
    if edit.content is not None:
        check_content_edit_allowed(user, message)
    topic = edit.topic
    if topic is not None:
        topic = normalize_topic(topic)
        if message.is_channel_message and topic == message.subject:
            topic = None
    orig_stream = stream_for_message(session, message) if message.is_channel_message else None
    stream_id = edit.stream_id
    if stream_id is not None and orig_stream is not None and stream_id == orig_stream.id:
        stream_id = None

    if topic is None and edit.content is None and stream_id is None:
        raise JsonableError("Nothing to change")
    if not message.is_channel_message:
        if edit.stream_id is not None:
            raise JsonableError("Direct messages cannot be moved to channels.")
        if edit.topic is not None:
            raise JsonableError("Direct messages cannot have topics.")
    if edit.propagate_mode != "change_one" and topic is None and stream_id is None:
        raise JsonableError("Invalid propagate_mode without topic edit")
    if topic is not None and marks_empty_topic_resolved(topic):
        raise JsonableError("General chat cannot be marked as resolved")
    if stream_id is not None and edit.content is not None:
        raise JsonableError("Cannot change message content while changing channel")
    if edit.prev_content_sha256 is not None and edit.prev_content_sha256 != sha256_hex(message.content):
        raise JsonableError(
            "'prev_content_sha256' value does not match the expected value.", code="EXPECTATION_MISMATCH"
        )

    target_stream = orig_stream
    if stream_id is not None:
        if not is_storable_id(stream_id):
            raise JsonableError("Invalid channel ID")
        target_stream = access_stream_by_id(session, user, stream_id, require_content_access=True)
    orig_topic = message.subject
    target_topic = topic if topic is not None else orig_topic
    resolved, unresolved = (
        is_resolve_toggle(orig_topic, target_topic) if topic is not None else (False, False)
    )
    plan = _Plan(
        message=message,
        orig_stream=orig_stream,
        target_stream=target_stream,
        orig_topic=orig_topic,
        target_topic=target_topic,
        topic_edited=topic is not None,
        stream_edited=stream_id is not None,
        resolved=resolved,
        unresolved=unresolved,
        content=None,
        rendered=None,
    )
    if plan.moved:
        assert target_stream is not None
        check_topic_allowed(user.realm, target_stream, target_topic)

    if plan.topic_edited:
        assert orig_stream is not None
        if resolved or unresolved:
            if not can_resolve_topics(viewer, orig_stream):
                raise JsonableError("You don't have permission to resolve topics in this channel.")
        elif not can_move_within_channel(viewer, orig_stream):
            raise JsonableError(NO_PERMISSION_TO_EDIT)

    if edit.content is not None:
        _render_edit(session, user, viewer, plan, edit.content, realm_url)

    if plan.stream_edited:
        assert orig_stream is not None and target_stream is not None
        if not can_move_out_of_channel(viewer, orig_stream):
            raise JsonableError("You don't have permission to move this message")
        if target_stream.can_send_message_group not in viewer.groups:
            raise JsonableError("You do not have permission to post in this channel.")
    if plan.moved and not plan.resolve_only:
        assert target_stream is not None and target_stream.recipient_id is not None
        if target_stream.can_create_topic_group not in viewer.groups and not topic_exists(
            session, target_stream.recipient_id, target_topic
        ):
            raise JsonableError("You do not have permission to create new topics in this channel.")
    return plan


def _render_edit(
    session: Session, user: UserProfile, viewer: Viewer, plan: _Plan, content: str, realm_url: str
) -> None:
    # Emptying a message leaves a visible tombstone, as in Zulip.
    content = normalize_content(content if content.strip() else "(deleted)")
    message = plan.message
    rendered = render_content(session, user, content, realm_url)
    participants: set[int] = set()
    if plan.orig_stream is not None and rendered.topic_wildcard:
        participants = topic_participant_ids(session, message.recipient_id, plan.target_topic) | {
            message.sender_id
        }
    _check_mentions(session, user, rendered, plan.orig_stream, participants, set(viewer.groups))
    plan.content = content
    plan.rendered = rendered


# Applying -------------------------------------------------------------------------------------


def _messages_to_move(session: Session, viewer: Viewer, plan: _Plan, mode: str) -> list[TopicMessage]:
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
    user: UserProfile,
    viewer: Viewer,
    plan: _Plan,
    edit: MessageEdit,
    context: EditContext,
) -> list[dict[str, Any]]:
    message = plan.message
    to_move: list[TopicMessage] = []
    if plan.moved:
        to_move = _messages_to_move(session, viewer, plan, edit.propagate_mode)
        deadline = move_deadline(
            user.realm,
            topic_changed=plan.topic_edited and not (plan.resolved or plan.unresolved),
            stream_changed=plan.stream_edited,
        )
        if deadline is not None and not is_exempt_from_move_limits(user):
            assert plan.orig_stream is not None
            topic_messages = topic_messages_for_user(session, viewer, plan.orig_stream, plan.orig_topic)
            check_move_time_limit(message, to_move, topic_messages, deadline)

    now = utcnow()
    timestamp = to_timestamp(now)
    entry: dict[str, Any] = {"user_id": user.id, "timestamp": timestamp}
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
        _move_messages(session, plan, moved_ids, entry, now)
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
        losing_access = _change_channel_rows(tx, session, plan, moved_ids)
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
        _send_notifications(session, user, viewer, plan, edit, context, moved_ids)
    return detached


def _update_mention_flags(session: Session, plan: _Plan) -> None:
    """Mentions and alert words as the new content has them, for everyone who has the message."""
    assert plan.rendered is not None
    rendered = plan.rendered
    message = plan.message
    mentioned = _mentioned_user_ids(session, rendered)
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


def _move_messages(
    session: Session, plan: _Plan, moved_ids: list[int], entry: dict[str, Any], now: Any
) -> None:
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


def _change_channel_rows(tx: Tx, session: Session, plan: _Plan, moved_ids: list[int]) -> set[int]:
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


def _user_message_flags(session: Session, message_id: int) -> dict[int, int]:
    return {
        r.user_profile_id: r.flags
        for r in session.execute(
            select(UserMessage.user_profile_id, UserMessage.flags).where(UserMessage.message_id == message_id)
        )
    }


def _channel_audience(session: Session, plan: _Plan, losing_access: set[int]) -> dict[int, int]:
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
    user: UserProfile, message: Message, timestamp: int, message_ids: list[int], fields: dict[str, Any]
) -> dict[str, Any]:
    return {
        "user_id": user.id,
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


# Notices --------------------------------------------------------------------------------------


def _send_notifications(
    session: Session,
    user: UserProfile,
    viewer: Viewer,
    plan: _Plan,
    edit: MessageEdit,
    context: EditContext,
    moved_ids: list[int],
) -> None:
    old, new = plan.orig_stream, plan.target_stream
    assert old is not None and new is not None
    send_context = SendContext(realm_url=context.realm_url, email_host=context.email_host)
    mention = silent_mention(user)
    count = len(moved_ids)
    # Whether the user moved everything they can see of the topic decides the wording.
    moved_all = edit.propagate_mode == "change_all" or not topic_messages_for_user(
        session, viewer, old, plan.orig_topic
    )

    def post(stream: Stream, topic: str, text: str) -> int:
        bot = get_or_create_notification_bot(session, user.realm, context.email_host)
        return internal_send_stream_message(
            session, bot, stream, topic, text, send_context, read_by_user_id=user.id
        )

    notice_id = None
    if plan.resolve_only and plan.content is None:
        state = "resolved" if plan.resolved else "unresolved"
        notice_id = post(old, plan.target_topic, f"{mention} has marked this topic as {state}.")

    new_thread = edit.send_notification_to_new_thread and (
        plan.stream_edited or (plan.topic_edited and not (plan.resolved or plan.unresolved))
    )
    if new_thread:
        old_location = topic_link_syntax(old, plan.orig_topic)
        preexisting = [
            m
            for m in topic_messages_for_user(session, viewer, new, plan.target_topic)
            if m.id not in set(moved_ids) and m.id != notice_id
        ]
        if not preexisting and moved_all:
            text = f"This topic was moved here from {old_location} by {mention}."
        elif count == 1:
            link = message_link(context.realm_url, new, plan.target_topic, plan.message.id)
            text = f"[A message]({link}) was moved here from {old_location} by {mention}."
        else:
            text = f"{count} messages were moved here from {old_location} by {mention}."
        post(new, plan.target_topic, text)

    if edit.send_notification_to_old_thread:
        new_location = topic_link_syntax(new, plan.target_topic)
        if moved_all:
            text = f"This topic was moved to {new_location} by {mention}."
        elif count == 1:
            text = f"A message was moved from this topic to {new_location} by {mention}."
        else:
            text = f"{count} messages were moved from this topic to {new_location} by {mention}."
        post(old, plan.orig_topic, text)
